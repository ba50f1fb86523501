#!/usr/bin/env bash
# Runs the benchmark suite with short settings (about 6 minutes on 2 cores) and writes the JMH
# JSON, the console log and a Markdown summary (benchmarks/summarize.py) to $RESULTS.
#
#   benchmarks/run.sh                 # everything that can run here
#   benchmarks/run.sh 'Lease|Launch'  # extra arguments go to JMH: a benchmark regexp, -p, -prof ...
#   QUICK=1 benchmarks/run.sh         # 4M-float SAXPY and 1 MiB copies only, fewer iterations
#
# With a CUDA device (found by dev.gpucompute.benchmarks.Probe), the CUDA variants and the raw
# JCuda baselines run too, and so does the CuPy peer (benchmarks/peers/cupy_peer.py) when CuPy
# is installed. Without one, they are left out and the reason is printed.
#
# Environment: RESULTS (default benchmarks/target/results), JMH_OPTS (replaces the default run
# settings), JAVA (default java), BUILD=0 (use the jar as it is).
set -euo pipefail
cd "$(dirname "$0")/.."

JAVA=${JAVA:-java}
JAR=benchmarks/target/benchmarks.jar
RESULTS=${RESULTS:-benchmarks/target/results}
if [[ "${BUILD:-1}" != 0 || ! -f "$JAR" ]]; then
	mvn -q -B -pl benchmarks -am package -DskipTests
fi
mkdir -p "$RESULTS"
stamp=$(date +%Y%m%d-%H%M%S)

if [[ -n "${QUICK:-}" ]]; then
	settings=(-f 1 -wi 1 -w 1s -i 2 -r 1s -p n=4194304 -p bytes=1048576)
else
	settings=(-f 1 -wi 2 -w 1s -i 5 -r 1s)
fi
if [[ -n "${JMH_OPTS:-}" ]]; then
	read -r -a settings <<< "$JMH_OPTS"
fi

if probe=$("$JAVA" -cp "$JAR" dev.gpucompute.benchmarks.Probe); then
	echo "$probe: running the CPU and CUDA variants"
	backends=(-p backend=CPU,CUDA)
	gpu=1
else
	echo "$probe"
	echo "Running the CPU variants only; the cuda_* baselines and the CuPy peer need a CUDA device."
	backends=(-p backend=CPU -e '\.cuda_')
	gpu=0
fi

{
	echo "# $(date -Is)"
	echo "# cores: $(nproc), cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	echo "# java: $("$JAVA" -version 2>&1 | head -1)"
	echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	if [[ $gpu == 1 ]] && command -v nvidia-smi > /dev/null; then
		echo "# gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
	fi
} > "$RESULTS/machine-$stamp.txt"

"$JAVA" -jar "$JAR" "${settings[@]}" "${backends[@]}" -rf json -rff "$RESULTS/jmh-$stamp.json" "$@" \
	| tee "$RESULTS/jmh-$stamp.txt"
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$RESULTS/machine-$stamp.txt"

if [[ $gpu == 1 ]]; then
	if python3 -c 'import cupy' 2> /dev/null; then
		python3 benchmarks/peers/cupy_peer.py --json "$RESULTS/cupy-$stamp.json" ${QUICK:+--quick} \
			| tee "$RESULTS/cupy-$stamp.txt"
	else
		echo "CuPy is not installed: the CuPy peer did not run (pip install cupy-cuda12x)"
	fi
fi

python3 benchmarks/summarize.py "$RESULTS/jmh-$stamp.json" > "$RESULTS/summary-$stamp.md"
echo "Results: $RESULTS/jmh-$stamp.json, summary: $RESULTS/summary-$stamp.md, machine: $RESULTS/machine-$stamp.txt"
