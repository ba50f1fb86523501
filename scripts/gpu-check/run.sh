#!/usr/bin/env bash
# The GPU side of scripts/gpu-check.sh: runs on a machine with a GPU and python3 (numpy; CuPy and
# PyTorch for the peers), without Java or network, from the bundle .gpu-check/ (this script beside
# payload.deb). The payload is unpacked once per bundle into $GPU_CHECK_CACHE/gpu-check-<checksum>
# (default /tmp) by dpkg-deb, whose xz decoder is built in (no xz program needed); without dpkg-deb,
# by python3's tarfile.
#
# Usage: bash .gpu-check/run.sh [step ...]      (no step: all)
#   tests    every module's gpu-tagged tests through the JUnit console launcher (runtime, autoconfigure,
#            test-support, sample-app), then the CUDA package's tests that need no device (NVRTC binding, native
#            loading). The sample-app run's JVM gets --add-modules jdk.incubator.vector, as Surefire's argLine
#            gives it: its tests score their CPU references with the SIMD path, not the scalar one.
#            Each of these five runs keeps a share of the step's time that no other run can use (10 s
#            and the rest by TESTS_WEIGHTS); what a run leaves unused goes to the later ones. A run that reaches
#            its limit gets SIGQUIT (a thread dump into gpu-check.log), then SIGKILL 3 s later, and summary.txt
#            names the test that was running, the thread's frames and the counts so far (from the launcher's
#            test feed, which comes as the tests run).
#   kernels  the sample app's kernels loaded by each route (prebuilt fatbin, NVRTC, disk cache), timed; then
#            knn_merge's device time against the knn_topk passes it replaced, at 1, 16 and 100 queries,
#            k = 10 and 32, on the lists knn_fused writes for a 1M-row shard (MergeTimes, from the runtime's
#            kernel timing: what gpu.kernel.duration reports), on $SAMPLE_BACKEND
#   sample   the sample app on gpu.backend=$SAMPLE_BACKEND, searched over HTTP and checked against a
#            brute-force ranking (numpy, float64): k = 1, 10, 100 and the whole-row path above 1024
#   bench    the JMH benchmarks with backend=$BENCH_BACKEND and their raw JCuda baselines, one JMH run per
#            class, then the CuPy peer
#   search   benchmarks/peers/gpu_search_bench.py (the sample service against a PyTorch peer) when the
#            bundle holds it; else it says "not packed" and succeeds. SEARCH_ARGS adds options, e.g.
#            SEARCH_ARGS=--service-arg=--gpu.batching.search.max-concurrent-batches=2 (a service setting)
#   all      tests kernels sample bench search
# Device calls, one or more steps each, with the bundle carried along:
#   run(command="bash .gpu-check/run.sh tests sample", carry=[".gpu-check"], timeout_s=600)
#
# One deadline per command: DEADLINE seconds (default 540, a 600 s device call with a margin) from the
# start. Each step's timeout is what is left, less the least time each later step needs, capped by what
# the step may use; a step with less than its least time left is not run and says so.
#
# What the command leaves in $OUT (else $REPORT_DIR, else .gpu-check/report), written as each step ends
# so that a crash or a cut still leaves what finished; never more than 8 files (a device call returns 8):
#   summary.txt            one line per step and per test run (counts, failures), the machine, the bundle
#   gpu-check.log          every step's full output, in order
#   junit-reports.tar.gz   the JUnit XML reports of every test run so far (refreshed after each)
#   jmh.json               the JMH results of every finished class, merged (refreshed after each)
#   cupy.json, search.json the CuPy peer's and the search benchmark's results
#
# Environment: GPU_REQUIRED, CUDA_COMPILER_REQUIRED, NVRTC_REQUIRED (default 1: a GPU test that would skip
# fails instead), SAMPLE_BACKEND (cuda), BENCH_BACKEND (CUDA), BENCH_CLASSES (Launch Graph Copy Saxpy Lease
# Event Streams Allocator SmallUpload ExpressionKernel; spaces or commas), JMH_SETTINGS (-f 1 -wi 1 -w 1s -i 3 -r 1s), PYTHON (python3),
# DEADLINE (540), GPU_CHECK_UNPACK=python (unpack with python3 even where dpkg-deb exists); for the tests step:
# TESTS_RUNS (runtime autoconfigure test-support sample-app runtime-cuda: which runs, in this order),
# TESTS_WEIGHTS (runtime=90 autoconfigure=5 test-support=5 sample-app=60 runtime-cuda=10: seconds beyond a
# run's fixed 10 s; the step's time is shared in these proportions), TESTS_TAGS (gpu: the tag expression
# of the first four runs; e.g. '!gpu' runs the tests CI runs, long enough to rehearse a cut without a GPU).
# Exit status: 0 every step passed; 1 a step failed; 2 bad usage or bundle; 3 none failed, but a step
# was cut or left out for the deadline.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
started=$(date +%s)
deadline=${DEADLINE:-540}
report=${REPORT_DIR:-${OUT:-$here/report}}
python=${PYTHON:-python3}
export GPU_REQUIRED=${GPU_REQUIRED:-1} CUDA_COMPILER_REQUIRED=${CUDA_COMPILER_REQUIRED:-1} NVRTC_REQUIRED=${NVRTC_REQUIRED:-1}
sample_backend=${SAMPLE_BACKEND:-cuda}
bench_backend=${BENCH_BACKEND:-CUDA}
BENCH_CLASSES=${BENCH_CLASSES:-Launch Graph Copy Saxpy Lease Event Streams Allocator SmallUpload ExpressionKernel}
log_limit=$((15 * 1024 * 1024))

elapsed() { echo $(($(date +%s) - started)); }
left() { echo $((deadline - $(elapsed))); }

# ---- Arguments: steps in the order given, "all" expanded, each once.
all_steps=(tests kernels sample bench search)
steps=()
for arg in "${@:-all}"; do
	case "$arg" in
	all) candidates=("${all_steps[@]}") ;;
	tests | kernels | sample | bench | search) candidates=("$arg") ;;
	-h | --help)
		sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "run.sh: unknown step '$arg' (steps: ${all_steps[*]} all)" >&2
		exit 2
		;;
	esac
	for step in "${candidates[@]}"; do
		[[ " ${steps[*]} " == *" $step "* ]] || steps+=("$step")
	done
done

# ---- The tests step's runs, in order, and their weights: seconds each took on an NVIDIA H200 beyond the
# fixed cost of a run (2026-11-27: runtime 89 s, autoconfigure 3 s, test-support 4 s, the CUDA tests
# without a device 7 s). sample-app's run was cut at 30 s on the H200 (its weight then was a guess), so
# its weight comes from its gpu-tagged tests run without a GPU, the CPU backend standing in for CUDA
# (2026-12-07, 2 cores): 37 to 39 s of CPU time (user + sys) for the whole JVM with this run's
# --add-modules jdk.incubator.vector, 43 to 44 s without it. On a GPU the device does half of that
# kernel work, and CUDA's start-up and kernel loads come in: 60 s beyond the fixed 10 s keeps a margin.
all_runs=(runtime autoconfigure test-support sample-app runtime-cuda)
declare -A test_weight=([runtime]=90 [autoconfigure]=5 [test-support]=5 [sample-app]=60 [runtime-cuda]=10)
# JVM options of a run's launcher, before -jar: the sample's CPU references need the Vector API module
# (without it they take the scalar path: the same bits, slower), as its Surefire argLine says.
declare -A test_jvm_options=([sample-app]="--add-modules jdk.incubator.vector")
runs_text=${TESTS_RUNS:-${all_runs[*]}}
read -r -a test_runs <<< "${runs_text//,/ }"
for i in "${!test_runs[@]}"; do
	run=${test_runs[$i]}
	[[ " ${all_runs[*]} " == *" $run "* ]] || { echo "run.sh: TESTS_RUNS: unknown run '$run' (runs: ${all_runs[*]})" >&2; exit 2; }
	[[ " ${test_runs[*]:0:$i} " != *" $run "* ]] || { echo "run.sh: TESTS_RUNS: '$run' twice" >&2; exit 2; }
done
[ ${#test_runs[@]} -gt 0 ] || { echo "run.sh: TESTS_RUNS names no run (runs: ${all_runs[*]})" >&2; exit 2; }
weights_text=${TESTS_WEIGHTS:-}
for pair in ${weights_text//,/ }; do
	run=${pair%%=*} weight=${pair#*=}
	if [[ " ${all_runs[*]} " != *" $run "* ]] || ! [[ "$weight" =~ ^[0-9]+$ ]]; then
		echo "run.sh: TESTS_WEIGHTS: '$pair' is not <run>=<whole seconds> (runs: ${all_runs[*]})" >&2
		exit 2
	fi
	test_weight[$run]=$weight
done
test_tags=${TESTS_TAGS:-gpu}

# ---- Reports: only this script's files are replaced; $OUT of a device call starts empty anyway.
mkdir -p "$report"
summary="$report/summary.txt"
log="$report/gpu-check.log"
rm -f "$summary" "$log" "$report"/{junit-reports.tar.gz,jmh.json,cupy.json,search.json}
work=$(mktemp -d /tmp/gpu-check-work.XXXXXX)
app_pid=
test_pid=
cleanup() {
	[ -n "$app_pid" ] && kill -KILL "$app_pid" 2> /dev/null
	[ -n "$test_pid" ] && { kill -KILL -- "-$test_pid" || kill -KILL "$test_pid"; } 2> /dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'note "gpu-check: stopped by a signal"; exit 1' INT TERM

note() { echo "[$(elapsed)s] $*" | tee -a "$summary"; }
# Appends a file to the combined log under a heading, up to the log's limit (a device call returns
# files of 16 MiB at most).
append_log() { # heading file
	local size
	size=$(stat -c %s "$log" 2> /dev/null || echo 0)
	{
		echo "===== [$(elapsed)s] $1"
		if [ "$size" -lt "$log_limit" ]; then
			head -c $((log_limit - size)) "$2"
		else
			echo "(left out: the log is over $((log_limit / 1048576)) MiB)"
		fi
		echo
	} >> "$log"
}

# ---- The payload: unpacked once per bundle, into a directory named after its checksum.
if [ ! -f "$here/payload.deb" ]; then
	echo "run.sh: $here/payload.deb is missing: build the bundle with scripts/gpu-check.sh" >&2
	exit 2
fi
unpack_with_python() { # package directory
	"$python" - "$1" "$2" << 'PY'
import io, sys, tarfile
package, target = sys.argv[1:3]
with open(package, "rb") as f:
    if f.read(8) != b"!<arch>\n":
        sys.exit(f"{package}: not a Debian package")
    while True:
        header = f.read(60)
        if len(header) < 60:
            sys.exit(f"{package}: no data.tar member")
        name, size = header[:16].decode().strip().rstrip("/"), int(header[48:58])
        if name.startswith("data.tar"):
            with tarfile.open(fileobj=io.BytesIO(f.read(size)), mode="r:*") as tar:
                if hasattr(tarfile, "tar_filter"):
                    tar.extractall(target, filter="tar")
                else:
                    tar.extractall(target)
            break
        f.seek(size + (size & 1), 1)
PY
}
bundle=${GPU_CHECK_CACHE:-/tmp}/gpu-check-$(cksum < "$here/payload.deb" | cut -d' ' -f1)
if [ ! -f "$bundle/.unpacked" ]; then
	t0=$(date +%s)
	unpacking=$(mktemp -d "${bundle}.unpacking.XXXXXX")
	if command -v dpkg-deb > /dev/null && [ "${GPU_CHECK_UNPACK:-}" != python ]; then
		how=dpkg-deb
		dpkg-deb -x "$here/payload.deb" "$unpacking"
	else
		how=python3
		unpack_with_python "$here/payload.deb" "$unpacking"
	fi || {
		echo "run.sh: could not unpack $here/payload.deb with $how" >&2
		exit 2
	}
	rm -rf "$bundle"
	mv "$unpacking/gpu-check" "$bundle" && rm -rf "$unpacking" && touch "$bundle/.unpacked"
	unpacked="unpacked with $how in $(($(date +%s) - t0)) s"
else
	unpacked="unpacked earlier"
fi
java="$bundle/jre/bin/java"

# A module's class path: its classes, its test classes (not for "app": the sample app run as a
# service), its siblings' classes, its jars.
classpath() { # module [app]
	local module=$1 entries=("$bundle/$1/classes")
	[ "${2:-}" != app ] && [ -d "$bundle/$module/test-classes" ] && entries+=("$bundle/$module/test-classes")
	while read -r entry; do [ -n "$entry" ] && entries+=("$bundle/$entry"); done < "$bundle/$module/siblings"
	while read -r entry; do [ -n "$entry" ] && entries+=("$bundle/$entry"); done < "$bundle/$module/classpath"
	local IFS=:
	echo "${entries[*]}"
}

{
	echo "# gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname): ${steps[*]} (deadline ${deadline} s)"
	if command -v nvidia-smi > /dev/null; then
		echo "# gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -3 | paste -sd';' -)"
	else
		echo "# gpu: none found (no nvidia-smi)"
	fi
	echo "# bundle: $(cat "$bundle/BUNDLE" 2> /dev/null), $unpacked"
	echo "# java: $("$java" -version 2>&1 | head -1); cores: $(nproc); python: $("$python" --version 2>&1)"
	echo "# GPU_REQUIRED=$GPU_REQUIRED CUDA_COMPILER_REQUIRED=$CUDA_COMPILER_REQUIRED NVRTC_REQUIRED=$NVRTC_REQUIRED SAMPLE_BACKEND=$sample_backend BENCH_BACKEND=$bench_backend"
} | tee "$summary"

failed=()
incomplete=()

# A part's time: what is left before the deadline, less what the later parts need at least (and a few
# seconds for the reports), capped by what this part may use. Prints nothing when that is under its
# least time.
budget() { # least most later_least
	local t=$(($(left) - $3 - 5))
	[ "$t" -gt "$2" ] && t=$2
	[ "$t" -ge "$1" ] && echo "$t"
}

# ---- tests
refresh_junit() {
	tar -C "$work" -czf "$report/junit-reports.tar.gz.part" junit 2> /dev/null \
		&& mv -f "$report/junit-reports.tar.gz.part" "$report/junit-reports.tar.gz"
}
# The launcher's test feed (--details=testfeed) comes as the tests run: "<engine> > <class> > <test> ::
# STARTED" when a test starts, the same name with ":: SUCCESSFUL", "FAILED" or "ABORTED" (then its stack
# trace, indented) when it ends, ":: SKIPPED" for a test not run. A run cut short leaves its feed, where
# the summary table and the XML reports come only at the end. Prints "counts <passed> <failed> <aborted>
# <skipped>", then "running <name>" for each test started and not ended, "last <name>" for the last test
# that ended, then "failed <name>: <the exception's first line>" (containers too: a failing @BeforeAll
# fails its class).
read_feed() { # file
	awk '
	pending != "" {
		if ($0 ~ /^\t/) { message = $0; sub(/^\t+/, "", message); reason[pending] = substr(message, 1, 200) }
		pending = ""
	}
	match($0, / :: (STARTED|SUCCESSFUL|FAILED|ABORTED|SKIPPED)$/) {
		name = substr($0, 1, RSTART - 1)
		status = substr($0, RSTART + 4)
		sub(/^JUnit [A-Za-z ]* > /, "", name)
		if (status == "STARTED") { running[name] = 1; order[++started] = name; next }
		if (status == "SKIPPED") { count["SKIPPED"]++; next }
		if (name in running) { count[status]++; delete running[name]; last = name }
		if (status == "FAILED") { failures[++failed] = name; pending = failed }
	}
	END {
		printf "counts %d %d %d %d\n", count["SUCCESSFUL"], count["FAILED"], count["ABORTED"], count["SKIPPED"]
		for (i = 1; i <= started; i++) if (order[i] in running) print "running " order[i]
		if (last != "") print "last " last
		for (i = 1; i <= failed; i++) print "failed " failures[i] (i in reason ? ": " reason[i] : "")
	}' "$1"
}
# From the last thread dump in a file (the JVM writes one to its standard output on SIGQUIT): the thread
# that was inside a test or lifecycle method (JUnit calls them through ReflectionUtils.invokeMethod), its
# first frames and the test's own frames (those just above the reflective call); else "main"'s first
# frames. Only thread blocks count: a dump's quoted thread line, its frames, the blank line after them
# (a stack trace the tests logged has the same "at" lines).
test_thread_at_cut() { # file
	awk '
	function flush(   k, first, line) {
		if (thread == "") return
		first = frames
		for (k = 1; k <= frames; k++) if (frame[k] ~ /^(jdk\.internal\.reflect\.|java\.lang\.reflect\.Method\.invoke)/) { first = k - 1; break }
		line = "in " thread ":"
		for (k = 1; k <= first; k++) {
			if (first > 8 && k == 6) { line = line "\n      ... " (first - 7) " more"; k = first - 2; continue }
			line = line "\n      at " frame[k]
		}
		if (injunit) found = line
		else if (thread == "\"main\"" && frames > 0) {
			main = "in \"main\" (in no test method):"
			for (k = 1; k <= frames && k <= 6; k++) main = main "\n      at " frame[k]
		}
		thread = ""
	}
	/^Full thread dump/ { flush(); indump = 1; found = ""; main = ""; next }
	indump && /^"/ { flush(); match($0, /^"[^"]*"/); thread = substr($0, RSTART, RLENGTH); frames = 0; injunit = 0; next }
	indump && thread != "" && /^\tat / {
		frame[++frames] = substr($0, 5)
		if ($0 ~ /org\.junit\.platform\.commons\.util\.ReflectionUtils\.invokeMethod/) injunit = 1
		next
	}
	/^[ \t]*$/ { flush() }
	END { flush(); if (found != "") print found; else if (main != "") print main }' "$1"
}
# Runs a command, its output into a file, until it ends or its limit. At the limit: the size of the output
# so far goes to <file>.cut (what the command wrote before it was stopped), SIGQUIT to the command alone
# (a JVM writes a thread dump to its output and goes on), SIGKILL to its process group 3 s later (setsid
# gave it one: the child processes of tests go too); then at most 5 s for it to go (a large JVM can take
# seconds to end on a busy machine; its output is complete once it is killed). <file>.cut's second line
# says when each happened, in seconds from the start. Returns the command's status, 124 when cut.
run_watched() { # limit file command...
	local start=$(date +%s) stop=$(($(date +%s) + $1)) file=$2 rc quit killed
	shift 2
	rm -f "$file.cut"
	# A script's background job starts with SIGQUIT ignored: the subshell gives the command the default back.
	# It is no process group leader, so setsid makes the new group without forking.
	if command -v setsid > /dev/null; then
		(trap - QUIT && exec setsid "$@") > "$file" 2>&1 &
	else
		(trap - QUIT && exec "$@") > "$file" 2>&1 &
	fi
	test_pid=$!
	# bash reaps an ended child at once, so kill -0 fails as soon as the command has ended.
	while kill -0 "$test_pid" 2> /dev/null && [ "$(date +%s)" -lt "$stop" ]; do sleep 0.5; done
	if kill -0 "$test_pid" 2> /dev/null; then
		stat -c %s "$file" > "$file.cut"
		kill -QUIT "$test_pid" 2> /dev/null
		quit=$(($(date +%s) - start))
		sleep 3
		{ kill -KILL -- "-$test_pid" || kill -KILL "$test_pid"; } 2> /dev/null
		killed=$(($(date +%s) - start))
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$test_pid" 2> /dev/null || break; sleep 0.5; done
		if kill -0 "$test_pid" 2> /dev/null; then
			echo "SIGQUIT at $quit s, SIGKILL at $killed s, still ending at $(($(date +%s) - start)) s" >> "$file.cut"
		else
			wait "$test_pid" 2> /dev/null
			echo "SIGQUIT at $quit s, SIGKILL at $killed s, gone at $(($(date +%s) - start)) s" >> "$file.cut"
		fi
		test_pid=
		return 124
	fi
	wait "$test_pid"
	rc=$?
	test_pid=
	return $rc
}
step_tests() { # seconds
	local seconds=$1 end=$(($(date +%s) + $1)) total=0 spare i run module later t limit rc out t0 took feed kept
	local -A share=()
	local status=0 fixed=10 shares=
	for run in "${test_runs[@]}"; do total=$((total + test_weight[$run])); done
	# Each run keeps a share of the step's time that no other run can take: a fixed 10 s (the JVM, the
	# class path scan) and the rest in proportion to its weight. A run may use what is left before the
	# step's end less the later runs' shares, so what an earlier run did not use goes to the later ones.
	spare=$((seconds - fixed * ${#test_runs[@]}))
	for run in "${test_runs[@]}"; do
		if [ "$spare" -gt 0 ]; then
			share[$run]=$((fixed + spare * test_weight[$run] / total))
		else
			share[$run]=$((seconds / ${#test_runs[@]}))
		fi
		shares="${shares:+$shares, }$run ${share[$run]} s"
	done
	note "tests: $seconds s, kept for each run: $shares (TESTS_WEIGHTS: $(for run in "${test_runs[@]}"; do printf '%s=%s ' "$run" "${test_weight[$run]}"; done | sed 's/ $//'))"
	for run in "${test_runs[@]}"; do
		[ -n "${test_jvm_options[$run]:-}" ] && note "    JVM options of tests $run: ${test_jvm_options[$run]}"
	done
	if [ "$seconds" -lt $((fixed * ${#test_runs[@]} + total)) ]; then
		note "    under the $((fixed * ${#test_runs[@]} + total)) s the weights ask for: a run may be cut before its tests end"
	fi
	for i in "${!test_runs[@]}"; do
		run=${test_runs[$i]}
		module=${run%-cuda}
		later=0
		for next in "${test_runs[@]:$((i + 1))}"; do later=$((later + share[$next])); done
		t=$((end - $(date +%s) - later))
		if [ "$t" -lt "$fixed" ]; then
			note "tests $run: NOT RUN: $t s left before the step's end beyond the later runs' shares ($later s)"
			status=3
			continue
		fi
		local select=(--scan-class-path "$bundle/$module/test-classes" --include-tag "$test_tags") what="tagged $test_tags"
		[ "$test_tags" = gpu ] && what="gpu-tagged"
		if [ "$run" = runtime-cuda ]; then
			select=(--select-package dev.gpucompute.cuda --exclude-tag gpu)
			what="dev.gpucompute.cuda without a device"
		fi
		out="$work/tests-$run.txt"
		# At the limit: a thread dump, 3 s, the kill (run_watched); 2 s more for this step's reports.
		limit=$((t - 5))
		t0=$(date +%s)
		# The tests' class path goes to the launcher's --class-path: java.class.path holds only the launcher,
		# as the tests that start child JVMs must cope with.
		# (stderr: bash's "Killed" notice for a cut run, nothing else run_watched prints.)
		local options=()
		read -r -a options <<< "${test_jvm_options[$run]:-}"
		run_watched "$limit" "$out" "$java" "${options[@]}" -jar "$bundle/junit-console.jar" execute --class-path "$(classpath "$module")" \
			"${select[@]}" --reports-dir "$work/junit/$run" --details=testfeed --disable-banner --disable-ansi-colors 2> /dev/null
		rc=$?
		took=$(($(date +%s) - t0))
		append_log "tests $run ($what), rc=$rc in $took s (limit $limit s$([ -f "$out.cut" ] && sed -n 's/^/; /; 2p' "$out.cut"))" "$out"
		refresh_junit
		# The feed as it stood at the thread dump (a busy JVM may take a second to write it, and a test may
		# end meanwhile), else when the run was stopped. What came after (a test failing as its child
		# processes are killed) is in the log, not in the counts.
		if [ -f "$out.cut" ]; then
			local upto dump
			upto=$(head -n 1 "$out.cut")
			dump=$(tail -c +$((upto + 1)) "$out" | grep -a -b -m 1 '^Full thread dump' | cut -d: -f1)
			[ -n "$dump" ] && upto=$((upto + dump))
			feed=$(head -c "$upto" "$out" | read_feed -)
		else
			feed=$(read_feed "$out")
		fi
		local passed failed aborted skipped counts kind n
		read -r _ passed failed aborted skipped <<< "$(echo "$feed" | sed -n 1p)"
		kept="kept for it ${share[$run]} s, limit $limit s"
		if [ -f "$out.cut" ]; then
			note "tests $run ($what): CUT at its limit of $limit s (${share[$run]} s kept for it); so far $passed passed, $failed failed, $aborted aborted, $skipped skipped"
			if echo "$feed" | grep -q '^running '; then
				echo "$feed" | sed -n 's/^running /    running at the cut: /p' | tee -a "$summary"
			else
				echo "    running at the cut: no test (between two, or in a class's set-up; the last to end: $(echo "$feed" | sed -n 's/^last //p' | grep . || echo none))" \
					| tee -a "$summary"
			fi
			test_thread_at_cut "$out" | sed 's/^/    /' | tee -a "$summary"
			[ $status -eq 0 ] && status=3
		else
			# Ended by itself: the launcher's summary table has the counts; the feed where it has none (a crash).
			counts=
			for kind in successful failed aborted skipped; do
				n=$(sed -n "s/^\[ *\([0-9]*\) tests $kind *\]\$/\1/p" "$out")
				[ -n "$n" ] && counts="${counts:+$counts, }$n $kind"
			done
			counts=$(echo "$counts" | sed 's/successful/passed/; s/aborted/aborted (assumption not met)/')
			[ -n "$counts" ] || counts="no summary from the launcher (see gpu-check.log); its feed: $passed passed, $failed failed, $aborted aborted, $skipped skipped"
			note "tests $run ($what): rc=$rc in $took s ($kept): $counts"
			[ $rc -ne 0 ] && status=1
		fi
		echo "$feed" | sed -n 's/^failed /    failed: /p' | head -12 | tee -a "$summary"
	done
	return $status
}

# ---- kernels
step_kernels() { # seconds
	local end=$(($(date +%s) + $1)) out="$work/kernels.txt" merges="$work/merge-times.txt" rc t status=0 reps=200
	# KernelLoadTimes first, leaving MergeTimes its least 20 s when the step has them.
	t=$1
	[ "$t" -ge 45 ] && t=$((t - 20))
	timeout -k 10 "$t" "$java" -cp "$(classpath benchmarks)" dev.gpucompute.benchmarks.KernelLoadTimes \
		"$bundle/sample-app/classes/gpu/kernels" > "$out" 2>&1
	rc=$?
	append_log "kernels (KernelLoadTimes), rc=$rc" "$out"
	if grep -q '^SKIPPED' "$out"; then
		note "kernels: $(grep -m1 '^SKIPPED' "$out")"
		[ "$GPU_REQUIRED" = 1 ] && status=1
	else
		note "kernels: rc=$rc"
		tail -n 8 "$out" | sed 's/^/    /' | tee -a "$summary"
		if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then status=3; elif [ $rc -ne 0 ]; then status=1; fi
	fi
	# knn_merge against the knn_topk passes it replaced, on the backend the sample runs on (the CPU
	# backend's twins in a rehearsal: fewer repetitions).
	t=$((end - $(date +%s) - 2))
	if [ "$t" -lt 20 ]; then
		note "kernels: knn_merge vs knn_topk (MergeTimes): NOT RUN: $t s left in the step"
		[ $status -eq 0 ] && status=3
		return $status
	fi
	[ "$sample_backend" = cpu ] && reps=25
	timeout -k 5 "$t" "$java" --add-modules jdk.incubator.vector -cp "$(classpath sample-app)" \
		dev.gpucompute.sample.search.MergeTimes "$sample_backend" "$reps" > "$merges" 2>&1
	rc=$?
	append_log "kernels: knn_merge vs knn_topk (MergeTimes $sample_backend $reps), rc=$rc" "$merges"
	note "kernels: knn_merge vs the knn_topk passes (MergeTimes, backend $sample_backend, $reps of each): rc=$rc"
	grep -E '^(knn_merge|  )' "$merges" | sed 's/^/    /' | tee -a "$summary"
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		[ $status -eq 0 ] && status=3
	elif [ $rc -ne 0 ]; then
		status=1
	fi
	return $status
}

# ---- sample
free_port() {
	"$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
step_sample() { # seconds
	local port data out="$work/sample-check.txt" app_log="$work/sample-app.txt" rc app_rc
	port=$(free_port) || return 1
	data=$(mktemp -d /tmp/gpu-check-data.XXXXXX)
	# The flag as README and the Dockerfile start the sample: the CPU rehearsal scores with SIMD.
	"$java" --add-modules jdk.incubator.vector -cp "$(classpath sample-app app)" dev.gpucompute.sample.SampleApplication --server.port="$port" \
		--gpu.backend="$sample_backend" --sample.data-dir="$data" --sample.limits.max-body-size=32MB \
		> "$app_log" 2>&1 &
	app_pid=$!
	timeout -k 5 $(($1 - 25)) "$python" "$bundle/sample_check.py" --url "http://127.0.0.1:$port" \
		--backend "$sample_backend" --pid "$app_pid" > "$out" 2>&1
	rc=$?
	# SIGTERM as a platform would send it: the service drains and exits by itself.
	kill -TERM "$app_pid" 2> /dev/null
	for _ in $(seq 1 20); do kill -0 "$app_pid" 2> /dev/null || break; sleep 1; done
	kill -KILL "$app_pid" 2> /dev/null && echo "(killed: still running 20 s after SIGTERM)" >> "$app_log"
	wait "$app_pid" 2> /dev/null
	app_rc=$?
	app_pid=
	rm -rf "$data"
	append_log "sample check, rc=$rc" "$out"
	append_log "sample app (gpu.backend=$sample_backend), exit $app_rc" "$app_log"
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		note "sample (gpu.backend=$sample_backend): CUT after $(($1 - 25)) s; passed so far:"
		grep -E '^OK' "$out" | sed 's/^/    /' | tee -a "$summary"
		return 3
	fi
	note "sample (gpu.backend=$sample_backend): rc=$rc, the app exited with $app_rc after SIGTERM"
	grep -E '^(OK|FAILED)' "$out" | sed 's/^/    /' | tee -a "$summary"
	# 143: the JVM's status for SIGTERM when a shutdown hook ran (Spring Boot's graceful shutdown).
	[ $rc -eq 0 ] && { [ $app_rc -eq 0 ] || [ $app_rc -eq 143 ]; } || return 1
}

# ---- bench
merge_jmh() { # JMH writes one JSON array per run: one array of all finished runs, rewritten each time
	local first=1 file body
	{
		echo "["
		for file in "$work"/jmh-*.json; do
			[ -s "$file" ] || continue
			# The array's own brackets are the only unindented ones.
			body=$(sed -e '/^\[[[:space:]]*$/d' -e '/^\][[:space:]]*$/d' "$file")
			[ -n "$(echo "$body" | tr -d '[:space:]')" ] || continue
			[ $first = 1 ] || echo ","
			echo "$body"
			first=0
		done
		echo "]"
	} > "$report/jmh.json.part" && mv -f "$report/jmh.json.part" "$report/jmh.json"
}
step_bench() { # seconds
	local end=$(($(date +%s) + $1)) cupy_least=40 status=0 cls t rc out rows skips settings exclude
	read -r -a settings <<< "${JMH_SETTINGS:--f 1 -wi 1 -w 1s -i 3 -r 1s}"
	# The pure-Java baselines say nothing about a GPU; without a device the raw JCuda ones cannot run.
	exclude='baseline_java|baseline_hostCopy|MachineBenchmark'
	[ "${bench_backend^^}" = CPU ] && exclude="$exclude|\\.cuda_"
	for cls in ${BENCH_CLASSES//,/ }; do
		t=$((end - $(date +%s) - cupy_least))
		if [ "$t" -lt 20 ]; then
			note "bench ${cls}Benchmark: not run: the step's time is spent"
			status=3
			continue
		fi
		out="$work/jmh-$cls.txt"
		local t0=$(date +%s)
		timeout -k 10 "$t" "$java" -cp "$(classpath benchmarks)" org.openjdk.jmh.Main "^dev\\.gpucompute\\.benchmarks\\.${cls}Benchmark\\." \
			"${settings[@]}" -p backend="${bench_backend^^}" -e "$exclude" -rf json -rff "$work/jmh-$cls.json" > "$out" 2>&1
		rc=$?
		append_log "bench ${cls}Benchmark (JMH, backend=${bench_backend^^}), rc=$rc" "$out"
		merge_jmh
		rows=$(grep -cE "^${cls}Benchmark\\.[A-Za-z_0-9]+ " "$out")
		skips=$(grep -c 'SKIPPED' "$out")
		if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
			note "bench ${cls}Benchmark: CUT after $t s; the finished rows are in gpu-check.log, not in jmh.json"
			status=3
		else
			note "bench ${cls}Benchmark: rc=$rc in $(($(date +%s) - t0)) s: $rows result rows, $skips skipped at setup"
			if [ $rc -ne 0 ] || { [ "$GPU_REQUIRED" = 1 ] && [ "$rows" -eq 0 ]; }; then status=1; fi
		fi
		grep -o 'SKIPPED: .*' "$out" | sort -u | head -3 | sed 's/^/    /' | tee -a "$summary"
	done
	grep -hE '^[A-Za-z]+Benchmark\.' "$work"/jmh-*.txt 2> /dev/null | sed 's/^/    /' | tee -a "$summary" > /dev/null
	if "$python" -c 'import cupy' > /dev/null 2>&1; then
		t=$((end - $(date +%s)))
		local quick=()
		[ "$t" -lt 60 ] && quick=(--quick)
		out="$work/cupy.txt"
		timeout -k 5 "$t" "$python" "$bundle/cupy_peer.py" --json "$report/cupy.json" "${quick[@]}" > "$out" 2>&1
		rc=$?
		append_log "bench CuPy peer ${quick[*]}, rc=$rc" "$out"
		note "bench CuPy peer ${quick[*]}: rc=$rc"
		sed 's/^/    /' "$out" | tail -n 8 | tee -a "$summary"
		[ $rc -ne 0 ] && [ $status -eq 0 ] && status=1
	else
		note "bench CuPy peer: not run: CuPy is not importable by $python"
	fi
	return $status
}

# ---- search
step_search() { # seconds
	local out="$work/search.txt" rc
	if [ ! -f "$bundle/gpu_search_bench.py" ]; then
		note "search: not packed (benchmarks/peers/gpu_search_bench.py was not in the tree the bundle was built from)"
		return 0
	fi
	timeout -k 10 "$1" "$python" "$bundle/gpu_search_bench.py" --java "$java" --classpath "$(classpath sample-app app)" \
		--main dev.gpucompute.sample.SampleApplication --backend "$sample_backend" --budget $(($1 - 30)) \
		--json "$report/search.json" ${SEARCH_ARGS:-} > "$out" 2>&1
	rc=$?
	append_log "search (gpu_search_bench.py --backend $sample_backend), rc=$rc" "$out"
	note "search (gpu_search_bench.py --backend $sample_backend --budget $(($1 - 30))): rc=$rc"
	# The goals and the figures reported beside them end the output.
	tail -n 40 "$out" | sed 's/^/    /' | tee -a "$summary"
	[ $rc -eq 124 ] || [ $rc -eq 137 ] && return 3
	return $rc
}

# ---- The steps, within the deadline. Least and most seconds each.
declare -A least=([tests]=60 [kernels]=20 [sample]=60 [bench]=60 [search]=60)
declare -A most=([tests]=420 [kernels]=120 [sample]=240 [bench]=420 [search]=420)
for i in "${!steps[@]}"; do
	step=${steps[$i]}
	later=0
	for next in "${steps[@]:$((i + 1))}"; do later=$((later + least[$next])); done
	if ! seconds=$(budget "${least[$step]}" "${most[$step]}" "$later"); then
		note "$step: NOT RUN: $(left) s left before the deadline, the step needs ${least[$step]} s and the later steps $later s"
		incomplete+=("$step")
		continue
	fi
	t0=$(date +%s)
	"step_$step" "$seconds"
	rc=$?
	case $rc in
	0) result=passed ;;
	3) result="cut (deadline)" && incomplete+=("$step") ;;
	*) result=FAILED && failed+=("$step") ;;
	esac
	note "$step: $result in $(($(date +%s) - t0)) s (its time: $seconds s)"
done

status=0
[ ${#incomplete[@]} -gt 0 ] && status=3
[ ${#failed[@]} -gt 0 ] && status=1
files=$(find "$report" -maxdepth 1 -type f | wc -l)
note "gpu-check: done in $(elapsed) s; failed: ${failed[*]:-none}; cut or not run: ${incomplete[*]:-none}; $files files in $report; status $status"
[ "$files" -le 8 ] || note "gpu-check: more than 8 files in $report: a device call returns 8"
exit $status
