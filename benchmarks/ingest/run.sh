#!/usr/bin/env bash
# The sample service's storage side: binary ingest rate, the cost of synced writes, and resident memory of the
# sample service, measured against the packaged jar on the CPU backend.
#
#   mvn -B -ntp -o -pl sample-app -am package -DskipTests
#   benchmarks/ingest/run.sh ingest   # 100k x 384, 1,000 and 10,000 vectors per request, warm JVM
#   benchmarks/ingest/run.sh wal      # 1 vector per request, 1 and 16 clients, synced vs sample.storage.sync=false
#   benchmarks/ingest/run.sh rss      # VmRSS/VmHWM after ingest and after a restart, 100k x 384 and 1M x 128
#
# Data directories go under ${BENCH_DIR:-/tmp}: the log's fsync cost is that disk's.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
JAR=${JAR:-$HERE/../../sample-app/target/gpu-compute-sample-app-0.1.0-SNAPSHOT.jar}
BENCH_DIR=${BENCH_DIR:-/tmp}
CLIENT="java $HERE/IngestBench.java"
PID=""

start() { # start <data dir> <sync> [jvm opts...]
	local data=$1 sync=$2; shift 2
	PORT=$((18000 + RANDOM % 1000))
	java "$@" -jar "$JAR" --server.port=$PORT --gpu.backend=cpu --sample.data-dir="$data" \
		--sample.storage.sync="$sync" --sample.memory-budget=2GB --sample.limits.max-body-size=64MB \
		>"$data.log" 2>&1 &
	PID=$!
	for _ in $(seq 1 240); do
		curl -sf "localhost:$PORT/actuator/health" >/dev/null && return 0
		kill -0 $PID 2>/dev/null || { tail -20 "$data.log"; return 1; }
		sleep 0.5
	done
	return 1
}

stop() { # graceful: the store folds its logs; prints the group-commit counts it logged
	kill $PID; wait $PID 2>/dev/null || true
	grep -o "Collection '[a-z]*': [0-9]* writes logged with [0-9]* forces" "$1.log" | sed 's/^/    /' || true
}

rss() { grep -E '^(VmRSS|VmHWM)' /proc/$PID/status | tr -s ' \t' ' ' | tr '\n' ' '; }

ingest() {
	for batch in 1000 10000; do
		for sync in true false; do
			data=$(mktemp -d "$BENCH_DIR/ingest.XXXX")
			start "$data" $sync
			echo "sync=$sync $($CLIENT http://localhost:$PORT warm 100000 384 $batch 1 $PID | tail -1)"
			stop "$data"; rm -rf "$data" "$data.log"
		done
	done
}

wal() {
	for clients in 1 16; do
		for sync in true false; do
			data=$(mktemp -d "$BENCH_DIR/wal.XXXX")
			start "$data" $sync
			n=$((clients == 1 ? 3000 : 12000))
			echo "sync=$sync $($CLIENT http://localhost:$PORT warm $n 384 1 $clients | tail -1)"
			stop "$data"; rm -rf "$data" "$data.log"
		done
	done
}

rss_case() { # rss_case <vectors> <dimension> <batch> [jvm opts for the restart...]
	local n=$1 d=$2 b=$3; shift 3
	data=$(mktemp -d "$BENCH_DIR/rss.XXXX")
	start "$data" true
	echo "ingest (default JVM): $($CLIENT http://localhost:$PORT c $n $d $b 1 $PID | tail -1)"
	stop "$data"
	ls -l "$data" | sed 's/^/    /'
	start "$data" true "$@"
	echo "restart ($*): loaded; $(rss)"
	curl -sf "localhost:$PORT/collections/c" | sed 's/^/    /'; echo
	q=$(python3 -c "import json,random; print(json.dumps({'vectors':[[random.gauss(0,1) for _ in range($d)]],'k':10}))")
	curl -sf -o /dev/null -H 'Content-Type: application/json' -d "$q" "localhost:$PORT/collections/c/search"
	echo "    after a search: $(rss)"
	stop "$data"; rm -rf "$data" "$data.log"
}

rss_all() {
	rss_case 100000 384 10000
	rss_case 1000000 128 20000
	rss_case 1000000 128 20000 -Xmx512m
}

lscpu | grep -E 'Model name|^CPU\(s\)'
df -h "$BENCH_DIR" | tail -1
case "${1:-all}" in
	ingest) ingest ;;
	wal) wal ;;
	rss) rss_all ;;
	all) ingest; wal; rss_all ;;
esac
