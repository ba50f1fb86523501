#!/usr/bin/env bash
# The sample's two device search paths against each other, in one JVM on the same data:
# the general path (knn_score into a score matrix + knn_topk passes: main's search before the fused
# kernel) and the fused path (knn_fused + one knn_merge launch at k <= 32, else knn_topk passes),
# alternating over 3 rounds, 1 and 100 queries per search at k = 10, for 1M x 128 and 100k x 384
# (--quick: 200k x 128 and 20k x 384).
# Device time only (no HTTP, no JSON): what the CPU backend's twins cost, or on a GPU the kernels.
#
#   benchmarks/search-paths.sh                # CPU backend, 3 s per figure
#   benchmarks/search-paths.sh --quick        # smaller sets, 1 s per figure
#   BACKEND=cuda benchmarks/search-paths.sh   # on a machine with a GPU
#   benchmarks/search-paths.sh --bodies       # instead: what a 100-query search's bodies cost as JSON and
#                                             # as binary (dev.gpucompute.sample.web.SearchBodiesBench)
#
# Builds the sample's classes (mvn -pl sample-app -am test-compile; never installs) and runs
# dev.gpucompute.sample.search.SearchPathsBench (a main in the sample's test sources, not a test).
# Records `uptime` before and after: compare ratios, which both paths share the machine's load for.
set -euo pipefail
cd "$(dirname "$0")/.."

JAVA=${JAVA:-java}
BACKEND=${BACKEND:-cpu}
seconds=3
quick=
main=dev.gpucompute.sample.search.SearchPathsBench
args=()
case "${1:-}" in
	--quick) seconds=1; quick=quick ;;
	--bodies) main=dev.gpucompute.sample.web.SearchBodiesBench; args=(384 5) ;;
esac
[ ${#args[@]} -gt 0 ] || args=("$BACKEND" "$seconds" $quick)
cp_file=$(mktemp /tmp/search-paths-cp-XXXXXX)
trap 'rm -f "$cp_file"' EXIT
mvn -q -B -ntp -o -pl sample-app -am test-compile dependency:build-classpath -Dmdep.includeScope=test \
	-Dmdep.outputFile="$cp_file" > /dev/null
echo "Machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); before: $(uptime)"
echo "Commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
"$JAVA" --add-modules jdk.incubator.vector -cp "sample-app/target/test-classes:sample-app/target/classes:$(cat "$cp_file")" \
	"$main" "${args[@]}" 2>&1 | grep -v "^WARNING: Using incubator"
echo "after: $(uptime)"
