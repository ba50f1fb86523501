#!/usr/bin/env bash
# Copy throughput of two builds on the same machine at the same time: runs the CPU-backend copy
# benchmarks of BEFORE_JAR and AFTER_JAR alternately, ROUNDS times, so that both see the same load,
# then prints per benchmark and size the median GB/s over every measured iteration of each, their
# ratio (after / before) and the ratio within each round. Writes every JMH JSON and the summary to
# $RESULTS.
#
#   benchmarks/compare-copies.sh BEFORE_JAR AFTER_JAR [extra JMH arguments]
#
# BEFORE_JAR is typically main's benchmarks jar built in a temporary clone:
#   git clone -q . /tmp/main-clone && (cd /tmp/main-clone && git checkout -q main &&
#     mvn -q -B -o -pl benchmarks -am package -DskipTests)
# Environment: ROUNDS (default 3), RESULTS (default benchmarks/target/compare-<time>), JAVA,
# PATTERN (default: the array and direct-buffer copies, which exist in both builds),
# JMH_SETTINGS (default "-f 1 -wi 2 -w 1s -i 3 -r 1s").
set -euo pipefail
cd "$(dirname "$0")/.."

before=${1:?usage: compare-copies.sh BEFORE_JAR AFTER_JAR [JMH arguments]}
after=${2:?usage: compare-copies.sh BEFORE_JAR AFTER_JAR [JMH arguments]}
shift 2
JAVA=${JAVA:-java}
ROUNDS=${ROUNDS:-3}
PATTERN=${PATTERN:-'CopyBenchmark\.ours_(upload|download)(Array)?$'}
RESULTS=${RESULTS:-benchmarks/target/compare-$(date +%Y%m%d-%H%M%S)}
read -r -a settings <<< "${JMH_SETTINGS:--f 1 -wi 2 -w 1s -i 3 -r 1s}"
mkdir -p "$RESULTS"

{
	echo "# $(date -Is)"
	echo "# cores: $(nproc), cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	echo "# java: $("$JAVA" -version 2>&1 | head -1)"
	echo "# before: $before"
	echo "# after: $after"
	echo "# uptime at start: $(uptime)"
} > "$RESULTS/machine.txt"

for round in $(seq 1 "$ROUNDS"); do
	# Alternating which build goes first, so that a load that rises or falls within a round favours neither.
	order="before after"
	(( round % 2 == 0 )) && order="after before"
	for side in $order; do
		jar=$before
		[[ $side == after ]] && jar=$after
		# JMH refuses to start while another JMH run on this machine holds /tmp/jmh.lock: wait for it.
		for attempt in $(seq 1 60); do
			echo "round $round: $side ($(cut -d' ' -f1-3 /proc/loadavg))"
			if "$JAVA" -jar "$jar" "$PATTERN" "${settings[@]}" -p backend=CPU "$@" -rf json \
				-rff "$RESULTS/$side-r$round.json" > "$RESULTS/$side-r$round.txt" 2>&1; then
				break
			fi
			grep -q 'Unable to acquire the JMH lock' "$RESULTS/$side-r$round.txt" || exit 1
			echo "another JMH run holds the lock; waiting (attempt $attempt)"
			sleep 30
		done
	done
done
echo "# uptime at end: $(uptime)" >> "$RESULTS/machine.txt"

python3 - "$RESULTS" "$ROUNDS" << 'EOF' | tee "$RESULTS/summary.md"
import json, statistics, sys
results, rounds = sys.argv[1], int(sys.argv[2])

def load(side, r):
    """GB/s of every measured iteration, by (benchmark, bytes)."""
    out = {}
    for row in json.load(open(f"{results}/{side}-r{r}.json")):
        metric = row.get("secondaryMetrics", {}).get("bytes")
        if metric:
            key = (row["benchmark"].rsplit(".", 1)[1], int(row["params"]["bytes"]))
            out[key] = [value / 1e9 for fork in metric["rawData"] for value in fork]
    return out

before = [load("before", r) for r in range(1, rounds + 1)]
after = [load("after", r) for r in range(1, rounds + 1)]
print(f"Median GB/s over every measured iteration of {rounds} alternating rounds; the ratio of the medians,")
print("and the ratio within each round (its iterations' medians), which shows how much the load moved it.")
print()
print("| copy | bytes | before GB/s | after GB/s | after/before | per round |")
print("|---|---|---|---|---|---|")
for key in sorted(set(before[0]) & set(after[0])):
    b = [v for run in before if key in run for v in run[key]]
    a = [v for run in after if key in run for v in run[key]]
    per_round = [statistics.median(x[key]) / statistics.median(y[key]) for x, y in zip(after, before)
                 if key in x and key in y]
    print(f"| {key[0]} | {key[1] >> 20} MiB | {statistics.median(b):.2f} | {statistics.median(a):.2f} | "
          f"{statistics.median(a) / statistics.median(b):.2f} | {', '.join(f'{r:.2f}' for r in per_round)} |")
EOF
