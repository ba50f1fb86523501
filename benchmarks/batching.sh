#!/usr/bin/env bash
# The sample service with its search batcher off and on, in the same run: 1, 4, 16
# and 64 concurrent clients sending one query per request over HTTP, binary and JSON: q/s, p50/p99
# latency, kernel launches per request, the mean batch, server time and the service's CPU seconds per
# 1,000 queries (from its meters and /proc/<pid>/stat over each window); each service at 16 and 100
# queries per request; each service's CPU when idle; the client's own ceiling (GET
# /actuator/health/liveness). 100k x 384 float32 unit vectors on the CPU backend. Two services run side
# by side (the same jar; sample.search.batching.enabled=false for "off"), and each figure alternates the
# two in short windows. About 10 minutes on 2 cores (--formats json: about half).
#
#   benchmarks/batching.sh                         # results in benchmarks/results/batching/
#   benchmarks/batching.sh --clients 1,16 --seconds 5 --formats binary
#   benchmarks/batching.sh --on="--gpu.batching.search.max-queue-delay=5ms"   # tune the "on" variant
#
# It packages the sample jar when there is none (BUILD=1 repackages) and uses the numpy venv of
# benchmarks/sample-service.sh (benchmarks/target/venv-sample; created here when missing). Check
# `uptime` first: the figures are only as good as the machine is idle; it is recorded at the start
# and end, and the load average with every figure.
#
# Environment: JAVA (default java), PYTHON (default python3), RESULTS (default
# benchmarks/results/batching), BUILD=1, PIP_OPTS, KEEP=1 (keep the services' logs and data).
set -euo pipefail
cd "$(dirname "$0")/.."

JAVA=${JAVA:-java}
PYTHON=${PYTHON:-python3}
RESULTS=${RESULTS:-benchmarks/results/batching}
VENV=benchmarks/target/venv-sample

jar=$(ls sample-app/target/gpu-compute-sample-app-*.jar 2>/dev/null | grep -v -e sources -e javadoc | head -1 || true)
if [[ "${BUILD:-0}" == 1 || -z "$jar" ]]; then
	echo "Packaging the sample service (mvn -pl sample-app -am package -DskipTests)"
	mvn -q -B -ntp -pl sample-app -am package -DskipTests
	jar=$(ls sample-app/target/gpu-compute-sample-app-*.jar | grep -v -e sources -e javadoc | head -1)
fi
if [[ ! -x "$VENV/bin/python" ]]; then
	mkdir -p benchmarks/target
	"$PYTHON" -m venv --system-site-packages "$VENV"
fi
if ! "$VENV/bin/python" -c 'import numpy' 2>/dev/null; then
	"$VENV/bin/pip" install -q ${PIP_OPTS:-} numpy
fi
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n "$(git status --porcelain -- sample-app runtime autoconfigure 2>/dev/null)" ]]; then
	commit="$commit+dirty"
fi
echo "Machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); $(uptime)"
echo "Jar: $jar (commit $commit)"
exec "$VENV/bin/python" benchmarks/peers/batching_bench.py --jar "$jar" --java "$JAVA" --out "$RESULTS" \
	--commit "$commit" "$@"
