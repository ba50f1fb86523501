#!/usr/bin/env bash
# Tests the GPU check's `tests` step (scripts/gpu-check/run.sh) without Java or a GPU: a bundle whose
# payload.deb holds a stub `java` that plays the JUnit console launcher (its --details=testfeed lines, its
# summary table, a thread dump on SIGQUIT) from a script per run. Checks that a run which hangs is cut at
# its limit while every later run still gets its share, that summary.txt names the test that was running
# and the counts so far, that the time an earlier run leaves goes to a later one, that the sample-app
# run's JVM (alone) gets --add-modules jdk.incubator.vector and its default weight, and the usage errors.
# Runs in CI (.ci/run); needs bash, dpkg-deb and coreutils. About a minute: each scenario waits for its cuts.
set -euo pipefail

# The stub launcher below is a bash script that writes its thread dump from a SIGQUIT trap. A shell that
# starts with SIGQUIT ignored (a background job of a non-interactive shell, e.g. `.ci/run &` from a
# script) cannot trap it again, nor can run.sh's `trap - QUIT` give it back, so every dump would be
# missing. A real JVM installs its own SIGQUIT handler whatever it inherits; only the stub needs this.
if [ -z "${TESTS_STEP_SIGNALS_RESET:-}" ] && env --default-signal=QUIT true 2> /dev/null; then
	TESTS_STEP_SIGNALS_RESET=1 exec env --default-signal=QUIT bash "$0" "$@"
fi

here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/gpu-check-tests-step.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
failures=0

fail() { echo "test-tests-step: FAILED: $*" >&2; failures=$((failures + 1)); }
expect() { # description file extended-regex
	grep -qE -- "$3" "$2" || fail "$1: no line matching /$3/ in $(basename "$2")"
}
reject() { # description file extended-regex
	if grep -qE -- "$3" "$2"; then fail "$1: a line matching /$3/ in $(basename "$2")"; fi
}

# ---- The stub bundle.
payload="$tmp/stage/gpu-check"
mkdir -p "$payload/jre/bin" "$payload/lib" "$tmp/bundle"
for module in runtime autoconfigure test-support sample-app; do
	mkdir -p "$payload/$module/classes" "$payload/$module/test-classes"
	: > "$payload/$module/siblings"
	: > "$payload/$module/classpath"
done
: > "$payload/junit-console.jar"
echo "stub bundle for test-tests-step.sh" > "$payload/BUNDLE"
# The stub launcher: the run is the last part of --reports-dir; $STUB_PLAYS/<run> says what its tests do,
# one line each: "pass <name>", "fail <name>", "abort <name>", "hang <name>" (prints STARTED, then waits
# until killed, writing a thread dump on SIGQUIT), "hang-moving <name>" (the same, but on SIGQUIT the test
# passes and "<class> > after()" starts before the dump), "stall <class>" (waits in the class's set-up,
# no test started). A run without a file passes one test.
# Each run's command line (the words after `java`) goes to $STUB_ARGS/<run>.
cat > "$payload/jre/bin/java" << 'STUB'
#!/usr/bin/env bash
if [ "${1:-}" = -version ]; then echo 'openjdk version "17" (stub)'; exit 0; fi
run=unknown
words="$*"
while [ $# -gt 0 ]; do
	case "$1" in --reports-dir) run=$(basename "$2"); shift ;; esac
	shift
done
[ -n "${STUB_ARGS:-}" ] && mkdir -p "$STUB_ARGS" && printf '%s\n' "$words" > "$STUB_ARGS/$run"
dump() {
	if [ "$what" = hang-moving ]; then
		# The JVM is slow to write the dump, and the test ends meanwhile: the next one is running in it.
		echo "JUnit Jupiter > $name :: SUCCESSFUL"
		name="$current > after()"
		echo "JUnit Jupiter > $name :: STARTED"
	fi
	echo "2026-11-27 12:00:00"
	echo "Full thread dump OpenJDK 64-Bit Server VM (stub):"
	echo
	printf '"main" #1 prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x1 nid=0x1 runnable  [0x1]\n'
	printf '   java.lang.Thread.State: RUNNABLE\n'
	if [ "$what" = stall ]; then
		printf '\tat org.springframework.context.support.AbstractApplicationContext.refresh(AbstractApplicationContext.java:1)\n'
		printf '\tat org.junit.jupiter.engine.descriptor.ClassBasedTestDescriptor.before(ClassBasedTestDescriptor.java:1)\n\n'
		return
	fi
	printf '\tat org.assertj.core.util.diff.myers.MyersDiff.buildPath(MyersDiff.java:1)\n'
	printf '\tat dev.stub.%s.%s(StubTest.java:42)\n' "$current" "$(echo "$name" | sed 's/.* > //; s/()$//')"
	printf '\tat jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(java.base@17/Native Method)\n'
	printf '\tat java.lang.reflect.Method.invoke(java.base@17/Unknown Source)\n'
	printf '\tat org.junit.platform.commons.util.ReflectionUtils.invokeMethod(ReflectionUtils.java:701)\n'
	echo
	printf '"Reference Handler" #2 daemon prio=10 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x2 nid=0x2 waiting on condition  [0x2]\n'
	printf '\tat java.lang.ref.Reference.waitForReferencePendingList(java.base@17/Native Method)\n'
	echo
}
trap dump QUIT
passed=0 failed=0 aborted=0
plays=$(cat "$STUB_PLAYS/$run" 2> /dev/null || echo "pass StubTest > passes()")
while read -r what name; do
	current=$(echo "$name" | sed 's/ >.*//')
	[ "$what" = stall ] || echo "JUnit Jupiter > $name :: STARTED"
	case "$what" in
	stall) while :; do sleep 0.2; done ;; # a class's set-up that never ends: no test started
	pass) echo "JUnit Jupiter > $name :: SUCCESSFUL"; passed=$((passed + 1)) ;;
	fail)
		printf 'JUnit Jupiter > %s :: FAILED\n\torg.opentest4j.AssertionFailedError: expected: <1> but was: <2>\n\t\tat dev.stub.StubTest(StubTest.java:7)\n' "$name"
		failed=$((failed + 1))
		;;
	abort)
		printf 'JUnit Jupiter > %s :: ABORTED\n\torg.opentest4j.TestAbortedException: Assumption failed\n' "$name"
		aborted=$((aborted + 1))
		;;
	hang | hang-moving)
		# A stack trace in the test's log, as a leak report writes one: not the thread at the cut.
		printf 'java.lang.Throwable: acquired here\n\tat dev.stub.Logged.trace(Logged.java:1)\n'
		printf '\tat org.junit.platform.commons.util.ReflectionUtils.invokeMethod(ReflectionUtils.java:701)\n'
		while :; do sleep 0.2; done
		;;
	esac
done <<< "$plays"
echo
echo "Test run finished after 1 ms"
for kind in "$((passed + failed + aborted)) tests found" "0 tests skipped" "$((passed + failed + aborted)) tests started" \
	"$aborted tests aborted" "$passed tests successful" "$failed tests failed"; do
	printf '[%10s %-19s]\n' "${kind%% *}" "${kind#* }"
done
[ "$failed" -eq 0 ]
STUB
chmod +x "$payload/jre/bin/java"
mkdir -p "$tmp/stage/DEBIAN"
printf 'Package: gpu-check-stub\nVersion: 0\nArchitecture: all\nMaintainer: none <none@invalid>\nDescription: stub\n' \
	> "$tmp/stage/DEBIAN/control"
dpkg-deb --root-owner-group -Zgzip --build "$tmp/stage" "$tmp/bundle/payload.deb" > /dev/null
cp "$here/run.sh" "$tmp/bundle/run.sh"

# Runs the tests step of the stub bundle. Each call unpacks afresh (its own cache).
call() { # name settings...
	local name=$1
	shift
	mkdir -p "$tmp/$name/plays" "$tmp/$name/out"
	set +e
	env -u TESTS_RUNS -u TESTS_WEIGHTS -u TESTS_TAGS GPU_CHECK_CACHE="$tmp/$name" OUT="$tmp/$name/out" \
		STUB_PLAYS="$tmp/$name/plays" STUB_ARGS="$tmp/$name/args" PYTHON=true "$@" bash "$tmp/bundle/run.sh" tests \
		> "$tmp/$name/stdout" 2>&1
	echo $? > "$tmp/$name/rc"
	set -e
}

# The shares the step printed: "tests: <S> s, kept for each run: <run> <share> s, ..." into share[run];
# checks that each is the fixed 10 s plus the rest of S in proportion to the weights.
declare -A share
read_shares() { # name weights (run=weight ...)
	local line total=0 pair run rest
	line=$(grep -E '^\[[0-9]+s\] tests: [0-9]+ s, kept for each run: ' "$tmp/$1/out/summary.txt") \
		|| { fail "$1: no line with the shares"; return; }
	step_time=$(echo "$line" | sed -E 's/^\[[0-9]+s\] tests: ([0-9]+) s,.*/\1/')
	share=()
	rest=$(echo "$line" | sed -E 's/.*kept for each run: ([^(]*) \(.*/\1/')
	while read -r run seconds; do share[$run]=$seconds; done < <(echo "$rest" | sed 's/, /\n/g' | sed 's/ s$//')
	for pair in $2; do total=$((total + ${pair#*=})); done
	for pair in $2; do
		run=${pair%%=*}
		[ "${share[$run]:-}" = $((10 + (step_time - 10 * $(echo "$2" | wc -w)) * ${pair#*=} / total)) ] \
			|| fail "$1: $run's share ${share[$run]:-none} of $step_time s is not 10 s + its part by weight ($2)"
	done
}

# ---- 1. The first run hangs: it is cut at its limit, with the test that was running and the counts so
# far, and the four later runs each still run, in the time kept for them; test-support hangs too, in a
# class's set-up, and is cut in its own share.
mkdir -p "$tmp/hang-first/plays"
printf 'pass StubTest > one()\nfail StubTest > two()\nabort StubTest > three()\nhang StubTest > hangs()\npass StubTest > never()\n' \
	> "$tmp/hang-first/plays/runtime"
printf 'pass SupportTest > first()\nstall SupportTest\n' > "$tmp/hang-first/plays/test-support"
started=$(date +%s)
call hang-first DEADLINE=75
took=$(($(date +%s) - started))
summary="$tmp/hang-first/out/summary.txt"
[ "$(cat "$tmp/hang-first/rc")" = 3 ] || fail "hang-first: run.sh's status $(cat "$tmp/hang-first/rc"), not 3 (a run cut)"
read_shares hang-first "runtime=90 autoconfigure=5 test-support=5 sample-app=60 runtime-cuda=10"
# The default weights as the step printed them: sample-app's is the one its tests were measured to need.
expect "hang-first" "$summary" 'TESTS_WEIGHTS: runtime=90 autoconfigure=5 test-support=5 sample-app=60 runtime-cuda=10\)$'
# The sample-app run's JVM, alone, starts with the Vector API module (its CPU references' SIMD path),
# before -jar; the step says so.
args="$tmp/hang-first/args"
grep -qx -- '--add-modules jdk.incubator.vector -jar .*/junit-console\.jar execute .*' "$args/sample-app" 2> /dev/null \
	|| fail "hang-first: sample-app's launcher did not start with --add-modules jdk.incubator.vector: $(cat "$args/sample-app" 2> /dev/null || echo 'no command line')"
for run in runtime autoconfigure test-support runtime-cuda; do
	grep -qx -- '-jar .*/junit-console\.jar execute .*' "$args/$run" 2> /dev/null \
		|| fail "hang-first: $run's launcher has JVM options or did not run: $(cat "$args/$run" 2> /dev/null || echo 'no command line')"
done
expect "hang-first" "$summary" '^\[[0-9]+s\]     JVM options of tests sample-app: --add-modules jdk\.incubator\.vector$'
line=$(grep -E 'tests runtime \(gpu-tagged\): CUT at its limit of [0-9]+ s \([0-9]+ s kept for it\); so far 1 passed, 1 failed, 1 aborted, 0 skipped$' "$summary") \
	|| fail "hang-first: no CUT line for runtime with its counts so far"
limit=$(echo "$line" | sed -E 's/.*limit of ([0-9]+) s.*/\1/')
[ "${limit:-99}" -le "${share[runtime]:-0}" ] || fail "hang-first: runtime's limit $limit s is over its share ${share[runtime]:-} s"
expect "hang-first" "$summary" '^    running at the cut: StubTest > hangs\(\)$'
expect "hang-first" "$summary" '^    in "main":$'
expect "hang-first" "$summary" '^          at org\.assertj\.core\.util\.diff\.myers\.MyersDiff\.buildPath'
expect "hang-first" "$summary" '^          at dev\.stub\.StubTest\.hangs\(StubTest\.java:42\)$'
reject "hang-first" "$summary" 'at jdk\.internal\.reflect'
reject "hang-first" "$summary" 'Logged\.trace'
expect "hang-first" "$summary" '^    failed: StubTest > two\(\): org\.opentest4j\.AssertionFailedError: expected: <1> but was: <2>$'
reject "hang-first" "$summary" 'never\(\)'
# test-support: cut in a class's set-up, between two tests.
expect "hang-first" "$summary" 'tests test-support \(gpu-tagged\): CUT at its limit of [0-9]+ s \([0-9]+ s kept for it\); so far 1 passed, 0 failed, 0 aborted, 0 skipped$'
expect "hang-first" "$summary" "^    running at the cut: no test \\(between two, or in a class's set-up; the last to end: SupportTest > first\\(\\)\\)$"
expect "hang-first" "$summary" '^    in "main" \(in no test method\):$'
expect "hang-first" "$summary" '^          at org\.springframework\.context\.support\.AbstractApplicationContext\.refresh'
for run in autoconfigure sample-app; do
	expect "hang-first" "$summary" "tests $run \\(gpu-tagged\\): rc=0 in [0-9]+ s \\(kept for it ${share[$run]:-x} s, limit [0-9]+ s\\): 1 passed, 0 failed"
done
expect "hang-first" "$summary" "tests runtime-cuda \\(dev\\.gpucompute\\.cuda without a device\\): rc=0 in [0-9]+ s \\(kept for it ${share[runtime-cuda]:-x} s, limit [0-9]+ s\\): 1 passed"
expect "hang-first" "$summary" '^\[[0-9]+s\] tests: cut \(deadline\)'
expect "hang-first" "$tmp/hang-first/out/gpu-check.log" '^Full thread dump'
expect "hang-first" "$tmp/hang-first/out/gpu-check.log" '^===== .*tests runtime .*rc=124 .*SIGQUIT at [0-9]+ s, SIGKILL at [0-9]+ s, gone at [0-9]+ s'
[ "$took" -le 80 ] || fail "hang-first: the call took $took s, past its deadline of 75 s"
[ "$(find "$tmp/hang-first/out" -type f | wc -l)" -le 8 ] || fail "hang-first: more than 8 files in \$OUT"

# ---- 2. What an earlier run leaves goes to the later ones: sample-app hangs after autoconfigure passed
# at once, and its limit is more than its share: autoconfigure's unused time, less runtime-cuda's share.
# Its JVM is slow to write the thread dump: the summary follows the dump, not the moment of the cut.
mkdir -p "$tmp/flow/plays"
printf 'pass SampleTest > first()\nhang-moving SampleTest > hangs()\n' > "$tmp/flow/plays/sample-app"
call flow DEADLINE=75 TESTS_RUNS=autoconfigure,sample-app,runtime-cuda TESTS_WEIGHTS="autoconfigure=0 sample-app=0 runtime-cuda=30"
summary="$tmp/flow/out/summary.txt"
read_shares flow "autoconfigure=0 sample-app=0 runtime-cuda=30"
# The counts and the running test as at the thread dump, which came after a test ended.
line=$(grep -E 'tests sample-app \(gpu-tagged\): CUT at its limit of [0-9]+ s \(10 s kept for it\); so far 2 passed, 0 failed, 0 aborted, 0 skipped$' "$summary") \
	|| fail "flow: no CUT line for sample-app with its counts at the thread dump"
limit=$(echo "$line" | sed -E 's/.*limit of ([0-9]+) s.*/\1/')
[ "${limit:-0}" -ge 12 ] || fail "flow: sample-app's limit ${limit:-none} s: autoconfigure's unused time did not come to it"
expect "flow" "$summary" '^    running at the cut: SampleTest > after\(\)$'
expect "flow" "$summary" '^          at dev\.stub\.SampleTest\.after\(StubTest\.java:42\)$'
line=$(grep -E 'tests runtime-cuda .*: rc=0 in [0-9]+ s \(kept for it [0-9]+ s, limit [0-9]+ s\): 1 passed' "$summary") \
	|| fail "flow: runtime-cuda did not run"
limit=$(echo "$line" | sed -E 's/.*limit ([0-9]+) s.*/\1/')
[ "${limit:-0}" -ge $((${share[runtime-cuda]:-99} - 7)) ] || fail "flow: runtime-cuda's limit ${limit:-none} s is well under its share ${share[runtime-cuda]:-} s"
reject "flow" "$summary" 'tests runtime \('

# ---- 3. Usage errors: status 2 before anything runs.
call bad-run TESTS_RUNS="runtime gpu"
[ "$(cat "$tmp/bad-run/rc")" = 2 ] && grep -q "TESTS_RUNS: unknown run 'gpu'" "$tmp/bad-run/stdout" \
	|| fail "bad-run: status $(cat "$tmp/bad-run/rc"): $(cat "$tmp/bad-run/stdout")"
call bad-weight TESTS_WEIGHTS="runtime=fast"
[ "$(cat "$tmp/bad-weight/rc")" = 2 ] && grep -q "TESTS_WEIGHTS: 'runtime=fast'" "$tmp/bad-weight/stdout" \
	|| fail "bad-weight: status $(cat "$tmp/bad-weight/rc"): $(cat "$tmp/bad-weight/stdout")"

if [ "$failures" -gt 0 ]; then
	for name in hang-first flow; do
		echo "---- $name: summary.txt" >&2
		cat "$tmp/$name/out/summary.txt" >&2 || true
	done
	echo "test-tests-step: $failures failed" >&2
	exit 1
fi
echo "test-tests-step: all passed (the tests step's shares, cuts and usage errors, against a stub launcher)"
