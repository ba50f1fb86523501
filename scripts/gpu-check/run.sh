#!/usr/bin/env bash
# The GPU side of scripts/gpu-check.sh: runs on a machine with a GPU, without Java or network, from
# the unpacked .gpu-check/ folder. Reports go to $REPORT_DIR, else $OUT, else .gpu-check/report; the
# last lines printed are a summary. Environment: GPU_REQUIRED, CUDA_COMPILER_REQUIRED and
# NVRTC_REQUIRED (default 1: a skip is a failure here), SAMPLE_BACKEND (default cuda), PYTHON
# (default python3), JMH_SETTINGS (default a short run), PHASES (default "tests kernels sample bench").
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
report=${REPORT_DIR:-${OUT:-$here/report}}
work=$(mktemp -d /tmp/gpu-check.XXXXXX)
mkdir -p "$report" "$work/logs"
export GPU_REQUIRED=${GPU_REQUIRED:-1} CUDA_COMPILER_REQUIRED=${CUDA_COMPILER_REQUIRED:-1} NVRTC_REQUIRED=${NVRTC_REQUIRED:-1}
python=${PYTHON:-python3}
phases=${PHASES:-tests kernels sample bench}
started=$(date +%s)
summary="$work/logs/summary.txt"

# Unpacked once per bundle: the directory is named after the archive's checksum.
jre=/tmp/gpu-compute-jre-$(cksum < "$here/jre.tar.xz" | cut -d' ' -f1)
[ -x "$jre/bin/java" ] || { mkdir -p "$jre" && tar -C "$jre" --strip-components=1 -xJf "$here/jre.tar.xz"; }
java="$jre/bin/java"
note() { echo "$*" | tee -a "$summary"; }

# A module's class path: its classes and test classes, its siblings' classes, its jars.
classpath() {
	local module=$1
	local entries=("$here/$module/classes")
	[ -d "$here/$module/test-classes" ] && entries+=("$here/$module/test-classes")
	while read -r sibling; do [ -n "$sibling" ] && entries+=("$here/$sibling"); done < "$here/$module/siblings"
	while read -r jar; do entries+=("$here/$jar"); done < "$here/$module/classpath"
	local IFS=:
	echo "${entries[*]}"
}

{
	echo "# gpu-check $(date -Is) on $(hostname)"
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || echo "nvidia-smi: not found"
	"$java" -version 2>&1 | head -1
	echo "cores: $(nproc)"
} > "$work/logs/machine.txt"
cat "$work/logs/machine.txt"

status=0
# --- 1. GPU tests, per module, through the console launcher's --class-path (java.class.path holds
# only the launcher, as child-JVM tests must cope with).
if [[ " $phases " == *" tests "* ]]; then
	# runtime-cuda: the CUDA backend's tests that need no device (NVRTC binding, native loading, child
	# JVMs, allocator and completion bookkeeping) run here too, on the machine they are about.
	for run in runtime autoconfigure test-support sample-app runtime-cuda; do
		module=${run%-cuda}
		if [ "$run" = runtime-cuda ]; then
			select=(--select-package dev.gpucompute.cuda --exclude-tag gpu)
		else
			select=(--scan-class-path "$here/$module/test-classes" --include-tag gpu)
		fi
		t0=$(date +%s)
		timeout 300 "$java" -jar "$here/junit-console.jar" execute --class-path "$(classpath "$module")" "${select[@]}" \
			--reports-dir "$work/junit-$run" --details=tree --disable-banner --disable-ansi-colors \
			> "$work/logs/tests-$run.log" 2>&1
		rc=$?
		[ $rc -ne 0 ] && status=1
		counts=$(grep -E "tests (successful|failed|skipped|aborted)" "$work/logs/tests-$run.log" | sed 's/[^0-9a-z ]//g' | tr -s ' ' | paste -sd, -)
		note "tests $run: rc=$rc in $(( $(date +%s) - t0 )) s:$counts"
	done
fi

# --- 2. Kernel load times by route.
if [[ " $phases " == *" kernels "* ]]; then
	timeout 120 "$java" -cp "$(classpath benchmarks)" dev.gpucompute.benchmarks.KernelLoadTimes \
		"$here/sample-app/classes/gpu/kernels" > "$work/logs/kernel-load-times.txt" 2>&1
	rc=$?
	note "kernel load times: rc=$rc"
	tail -8 "$work/logs/kernel-load-times.txt" | tee -a "$summary"
fi

# --- 3. The sample app on CUDA against a brute-force ranking.
if [[ " $phases " == *" sample "* ]]; then
	port=18080
	data=$(mktemp -d /tmp/gpu-check-data.XXXXXX)
	"$java" -cp "$(classpath sample-app)" dev.gpucompute.sample.SampleApplication --server.port=$port \
		--gpu.backend="${SAMPLE_BACKEND:-cuda}" --sample.data-dir="$data" --sample.limits.max-body-size=32MB \
		> "$work/logs/sample-app.log" 2>&1 &
	app=$!
	timeout 300 "$python" "$here/sample_check.py" --url "http://localhost:$port" --backend "${SAMPLE_BACKEND:-cuda}" \
		> "$work/logs/sample-check.log" 2>&1
	rc=$?
	kill "$app" 2> /dev/null
	wait "$app" 2> /dev/null
	rm -rf "$data"
	[ $rc -ne 0 ] && status=1
	note "sample app (gpu.backend=${SAMPLE_BACKEND:-cuda}): rc=$rc; $(tail -1 "$work/logs/sample-check.log")"
fi

# --- 4. CUDA benchmarks with their raw JCuda baselines, then the CuPy peer.
if [[ " $phases " == *" bench "* ]]; then
	read -r -a settings <<< "${JMH_SETTINGS:--f 1 -wi 1 -w 1s -i 3 -r 1s}"
	# Within the 9-minute budget (8.5 minutes to here at most, 60 s kept for the CuPy peer and the report).
	left=$(( 510 - ($(date +%s) - started) - 60 ))
	[ $left -lt 60 ] && left=60
	# The pure-Java baselines say nothing about the GPU: left out here.
	timeout $left "$java" -cp "$(classpath benchmarks)" org.openjdk.jmh.Main "${settings[@]}" -p backend=CUDA \
		-e 'baseline_java|baseline_hostCopy|MachineBenchmark' -rf json -rff "$work/logs/jmh.json" > "$work/logs/jmh.txt" 2>&1
	rc=$?
	[ $rc -eq 124 ] && note "benchmarks: stopped after $left s (the budget); the results so far are in jmh.txt"
	note "benchmarks: rc=$rc ($(grep -c 'SKIPPED' "$work/logs/jmh.txt" 2> /dev/null || echo 0) setup skips); $(grep -cE '^[A-Za-z]+Benchmark\.' "$work/logs/jmh.txt") result rows"
	if "$python" -c 'import cupy' 2> /dev/null; then
		timeout 60 "$python" "$here/cupy_peer.py" --json "$work/logs/cupy.json" --quick > "$work/logs/cupy.txt" 2>&1
		note "cupy peer: rc=$?"
	else
		note "cupy peer: CuPy not importable by $python"
	fi
fi

note "gpu-check: done in $(( $(date +%s) - started )) s, status $status"
# At most a few files come back from a device run: the summary, the logs and reports as one archive.
cp "$summary" "$report/summary.txt"
cp "$work/logs/machine.txt" "$report/machine.txt"
[ -f "$work/logs/jmh.json" ] && cp "$work/logs/jmh.json" "$report/jmh.json"
[ -f "$work/logs/jmh.txt" ] && grep -E '^(Benchmark|[A-Za-z]+Benchmark\.)' "$work/logs/jmh.txt" > "$report/jmh-table.txt"
tar -C "$work" -czf "$report/gpu-check-logs.tar.gz" logs $(cd "$work" && ls -d junit-* 2> /dev/null)
rm -rf "$work"
exit $status
