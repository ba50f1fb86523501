#!/usr/bin/env bash
# Alternates single-fork runs of the generated and the hand-written kernel, so that the shared host's
# load drifts over both alike.
cd "$(dirname "$0")/../../../.."   # the repository root
for round in 1 2 3 4; do
  for b in saxpy_generated saxpy_handWritten sum_handWritten sum_generated; do
    java -jar benchmarks/target/benchmarks.jar "ExpressionKernelBenchmark.$b\$" -f 1 -wi 3 -w 1s -i 4 -r 1s -rf json -rff benchmarks/results/cpu-2core-expression/interleaved/i-$round-$b.json > benchmarks/results/cpu-2core-expression/interleaved/i-$round-$b.log 2>&1
    echo "$round $b $(uptime | sed 's/.*load average: //')" >> benchmarks/results/cpu-2core-expression/interleaved/interleave-load.txt
  done
done
