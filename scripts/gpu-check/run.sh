#!/usr/bin/env bash
# The GPU side of scripts/gpu-check.sh: runs on a machine with a GPU and python3 (numpy; CuPy and
# PyTorch for the peers), without Java or network, from the bundle .gpu-check/ (this script beside
# payload.deb). The payload is unpacked once per bundle into $GPU_CHECK_CACHE/gpu-check-<checksum>
# (default /tmp) by dpkg-deb, whose xz decoder is built in (no xz program needed); without dpkg-deb,
# by python3's tarfile.
#
# Usage: bash .gpu-check/run.sh [step ...]      (no step: all)
#   tests    every module's gpu-tagged tests through the JUnit console launcher (runtime, autoconfigure,
#            test-support, sample-app), then the CUDA package's tests that need no device (NVRTC binding, native loading)
#   kernels  the sample app's kernels loaded by each route (prebuilt fatbin, NVRTC, disk cache), timed
#   sample   the sample app on gpu.backend=$SAMPLE_BACKEND, searched over HTTP and checked against a
#            brute-force ranking (numpy, float64): k = 1, 10, 100 and the whole-row path above 1024
#   bench    the JMH benchmarks with backend=$BENCH_BACKEND and their raw JCuda baselines, one JMH run per
#            class, then the CuPy peer
#   search   benchmarks/peers/gpu_search_bench.py (the sample service against a PyTorch peer) when the
#            bundle holds it; else it says "not packed" and succeeds
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
# fails instead), SAMPLE_BACKEND (cuda), BENCH_BACKEND (CUDA), BENCH_CLASSES (Launch Copy Saxpy Lease
# Event Streams Allocator SmallUpload; spaces or commas), JMH_SETTINGS (-f 1 -wi 1 -w 1s -i 3 -r 1s), PYTHON (python3),
# DEADLINE (540), GPU_CHECK_UNPACK=python (unpack with python3 even where dpkg-deb exists).
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
BENCH_CLASSES=${BENCH_CLASSES:-Launch Copy Saxpy Lease Event Streams Allocator SmallUpload}
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

# ---- Reports: only this script's files are replaced; $OUT of a device call starts empty anyway.
mkdir -p "$report"
summary="$report/summary.txt"
log="$report/gpu-check.log"
rm -f "$summary" "$log" "$report"/{junit-reports.tar.gz,jmh.json,cupy.json,search.json}
work=$(mktemp -d /tmp/gpu-check-work.XXXXXX)
app_pid=
cleanup() {
	[ -n "$app_pid" ] && kill -KILL "$app_pid" 2> /dev/null
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
step_tests() { # seconds
	local end=$(($(date +%s) + $1)) runs=(runtime autoconfigure test-support sample-app runtime-cuda) i run module t rc out counts
	local -A most=([runtime]=240 [autoconfigure]=120 [test-support]=60 [sample-app]=120 [runtime-cuda]=150)
	local status=0
	for i in "${!runs[@]}"; do
		run=${runs[$i]}
		module=${run%-cuda}
		# The runs in order of importance: a later one keeps only 10 s each from an earlier one.
		t=$((end - $(date +%s) - 10 * (${#runs[@]} - i - 1)))
		[ "$t" -gt "${most[$run]}" ] && t=${most[$run]}
		if [ "$t" -lt 15 ]; then
			note "tests $run: not run: the step's time is spent"
			status=3
			continue
		fi
		local select=(--scan-class-path "$bundle/$module/test-classes" --include-tag gpu) what="gpu-tagged"
		if [ "$run" = runtime-cuda ]; then
			select=(--select-package dev.gpucompute.cuda --exclude-tag gpu)
			what="dev.gpucompute.cuda without a device"
		fi
		out="$work/tests-$run.txt"
		local t0=$(date +%s)
		# The tests' class path goes to the launcher's --class-path: java.class.path holds only the launcher,
		# as the tests that start child JVMs must cope with.
		timeout -k 10 "$t" "$java" -jar "$bundle/junit-console.jar" execute --class-path "$(classpath "$module")" \
			"${select[@]}" --reports-dir "$work/junit/$run" --details=tree --disable-banner --disable-ansi-colors \
			> "$out" 2>&1
		rc=$?
		append_log "tests $run ($what), rc=$rc" "$out"
		refresh_junit
		counts=
		local kind
		for kind in successful failed aborted skipped; do
			local n=$(sed -n "s/^\[ *\([0-9]*\) tests $kind *\]\$/\1/p" "$out")
			[ -n "$n" ] && counts="${counts:+$counts, }$n $kind"
		done
		counts=$(echo "$counts" | sed 's/successful/passed/; s/aborted/aborted (assumption not met)/')
		if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
			note "tests $run ($what): CUT after $t s (the step's share of the deadline); ${counts:-no counts}"
			[ $status -eq 0 ] && status=3
		else
			note "tests $run ($what): rc=$rc in $(($(date +%s) - t0)) s: ${counts:-no counts (see gpu-check.log)}"
			[ $rc -ne 0 ] && status=1
		fi
		grep -E '✘' "$out" | sed 's/^[│├└─ ]*//' | head -12 | sed 's/^/    failed: /' | tee -a "$summary"
	done
	return $status
}

# ---- kernels
step_kernels() { # seconds
	local out="$work/kernels.txt" rc
	timeout -k 10 "$1" "$java" -cp "$(classpath benchmarks)" dev.gpucompute.benchmarks.KernelLoadTimes \
		"$bundle/sample-app/classes/gpu/kernels" > "$out" 2>&1
	rc=$?
	append_log "kernels (KernelLoadTimes), rc=$rc" "$out"
	if grep -q '^SKIPPED' "$out"; then
		note "kernels: $(grep -m1 '^SKIPPED' "$out")"
		[ "$GPU_REQUIRED" = 1 ] && return 1
		return 0
	fi
	note "kernels: rc=$rc"
	tail -n 8 "$out" | sed 's/^/    /' | tee -a "$summary"
	[ $rc -eq 124 ] || [ $rc -eq 137 ] && return 3
	return $rc
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
		--json "$report/search.json" > "$out" 2>&1
	rc=$?
	append_log "search (gpu_search_bench.py --backend $sample_backend), rc=$rc" "$out"
	note "search (gpu_search_bench.py --backend $sample_backend --budget $(($1 - 30))): rc=$rc"
	# The goals of issues 28 and 34 and the figures reported beside them end the output.
	tail -n 40 "$out" | sed 's/^/    /' | tee -a "$summary"
	[ $rc -eq 124 ] || [ $rc -eq 137 ] && return 3
	return $rc
}

# ---- The steps, within the deadline. Least and most seconds each.
declare -A least=([tests]=60 [kernels]=20 [sample]=60 [bench]=60 [search]=60)
declare -A most=([tests]=420 [kernels]=90 [sample]=240 [bench]=420 [search]=420)
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
