#!/usr/bin/env bash
# The sample service against FAISS on the same machine and data. Measures, for 100k x 384
# and 1M x 128 float32 unit vectors (fixed seeds): binary ingest rate, q/s for one query per request
# (sequential and concurrent clients) and 100 per request, recall@10 against FAISS IndexFlatIP, and the
# service's resident size after loading; FAISS's add rate and search rates (2 threads) in the same run.
# The 1M x 128 set also runs with -Xmx512m. About 5-10 minutes on 2 cores; --quick: about 2.
#
#   benchmarks/sample-service.sh            # full run; results in benchmarks/results/sample-service/
#   benchmarks/sample-service.sh --quick    # 20k x 384 and 200k x 128, short windows
#   benchmarks/sample-service.sh --only 384 # one data set (any option of the Python script passes through)
#
# It packages the sample jar when there is none (BUILD=1 repackages), creates a virtual environment
# with numpy and faiss-cpu under benchmarks/target/venv-sample (FAISS is skipped, with the reason,
# when it cannot be installed) and runs benchmarks/peers/sample_service_bench.py. The service runs
# with the CPU backend, a fresh temporary data directory and --add-modules=jdk.incubator.vector (the
# SIMD scoring path; its start-up line "CPU scoring: ..." is recorded). Check `uptime` first: the
# figures are only as good as the machine is idle; the load at the start and end is recorded.
#
# Environment: JAVA (default java), PYTHON (default python3), RESULTS (default
# benchmarks/results/sample-service), BUILD=1, PIP_OPTS (extra pip arguments).
set -euo pipefail
cd "$(dirname "$0")/.."

JAVA=${JAVA:-java}
PYTHON=${PYTHON:-python3}
RESULTS=${RESULTS:-benchmarks/results/sample-service}
VENV=benchmarks/target/venv-sample

jar=$(ls sample-app/target/gpu-compute-sample-app-*.jar 2>/dev/null | grep -v -e sources -e javadoc | head -1 || true)
if [[ "${BUILD:-0}" == 1 || -z "$jar" ]]; then
	echo "Packaging the sample service (mvn -pl sample-app -am package -DskipTests)"
	mvn -q -B -ntp -pl sample-app -am package -DskipTests
	jar=$(ls sample-app/target/gpu-compute-sample-app-*.jar | grep -v -e sources -e javadoc | head -1)
fi

if [[ ! -x "$VENV/bin/python" ]]; then
	mkdir -p benchmarks/target
	"$PYTHON" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import numpy' 2>/dev/null; then
	"$VENV/bin/pip" install -q ${PIP_OPTS:-} numpy
fi
if ! "$VENV/bin/python" -c 'import faiss' 2>/dev/null; then
	if ! "$VENV/bin/pip" install -q ${PIP_OPTS:-} faiss-cpu; then
		echo "faiss-cpu could not be installed: FAISS is skipped (the service is still measured; no recall check)"
	fi
fi

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n "$(git status --porcelain -- sample-app 2>/dev/null)" ]]; then
	commit="$commit+dirty"
fi
echo "Machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); $(uptime)"
echo "Jar: $jar (commit $commit)"
exec "$VENV/bin/python" benchmarks/peers/sample_service_bench.py --jar "$jar" --java "$JAVA" --out "$RESULTS" \
	--commit "$commit" "$@"
