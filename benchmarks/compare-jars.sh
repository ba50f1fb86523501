#!/usr/bin/env bash
# Before/after in one run: the same JMH benchmarks from two benchmark jars (e.g. main's and a
# branch's), alternated for a number of rounds so that both see the same machine, and a table of
# each benchmark's best and median score per jar and their ratios. For changes to code the benchmarks call
# (the stream pool: LeaseBenchmark), where one jar cannot hold both versions.
#
#   git archive main | tar -x -C /tmp/main && (cd /tmp/main && mvn -q -B -pl benchmarks -am package -DskipTests)
#   mvn -q -B -pl benchmarks -am package -DskipTests
#   benchmarks/compare-jars.sh /tmp/main/benchmarks/target/benchmarks.jar benchmarks/target/benchmarks.jar Lease
#
# Arguments: JAR_BEFORE JAR_AFTER [REGEXP, default LeaseBenchmark]. Environment: ROUNDS (default 3),
# JMH_OPTS (default "-f 1 -wi 2 -w 1s -i 5 -r 1s -p backend=CPU"), JAVA, RESULTS (default
# benchmarks/target/results). Prints `uptime` at the start and the end: share the machine with
# nobody, or say so with the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
before=$1
after=$2
regexp=${3:-LeaseBenchmark}
JAVA=${JAVA:-java}
ROUNDS=${ROUNDS:-3}
RESULTS=${RESULTS:-benchmarks/target/results}
read -r -a settings <<< "${JMH_OPTS:--f 1 -wi 2 -w 1s -i 5 -r 1s -p backend=CPU}"
stamp=$(date +%Y%m%d-%H%M%S)
out="$RESULTS/compare-$stamp"
mkdir -p "$out"
echo "uptime at the start: $(uptime)" | tee "$out/machine.txt"
for round in $(seq 1 "$ROUNDS"); do
	for side in before after; do
		jar=$before
		[[ $side == after ]] && jar=$after
		echo "round $round: $side ($jar)"
		# JMH refuses to run beside another JMH run on the machine (its lock file); wait for it.
		until "$JAVA" -jar "$jar" "$regexp" "${settings[@]}" -rf json -rff "$out/$side-$round.json" > "$out/$side-$round.log" 2>&1; do
			if ! grep -q "Unable to acquire the JMH lock" "$out/$side-$round.log"; then
				cat "$out/$side-$round.log" >&2
				exit 1
			fi
			echo "  another JMH run holds the lock; waiting"
			sleep 20
		done
	done
done
echo "uptime at the end: $(uptime)" | tee -a "$out/machine.txt"
python3 - "$out" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
scores = {"before": {}, "after": {}}
for side in scores:
    for r in range(1, rounds + 1):
        for b in json.load(open(f"{out}/{side}-{r}.json")):
            name = b["benchmark"].rsplit(".", 1)[1] + "".join(f" {k}={v}" for k, v in sorted(b.get("params", {}).items()))
            scores[side].setdefault(name, []).append(b["primaryMetric"]["score"])
unit = "ns/op"
# On a shared machine interference only adds time: the best round is the steadier estimate, the
# median is shown beside it.
lines = [f"| benchmark | before: best, median of {rounds} | after: best, median of {rounds} | after / before (best) | "
         "after / before (median) | rounds before | rounds after |",
         "|---|---|---|---|---|---|---|"]
for name in sorted(scores["before"]):
    b = scores["before"][name]
    a = scores["after"].get(name, [])
    if not a:
        continue
    mb, ma = statistics.median(b), statistics.median(a)
    lines.append(f"| {name} | {min(b):,.1f}, {mb:,.1f} {unit} | {min(a):,.1f}, {ma:,.1f} {unit} | {min(a) / min(b):.2f} "
                 f"| {ma / mb:.2f} | {', '.join(f'{x:.0f}' for x in b)} | {', '.join(f'{x:.0f}' for x in a)} |")
text = "\n".join(lines)
open(f"{out}/summary.md", "w").write(text + "\n")
print(text)
PY
echo "results: $out"
