#!/usr/bin/env python3
"""The sample service with its search batcher on and off, in the same run (issue 21).

Started by benchmarks/batching.sh. Two services run side by side on the CPU backend with the same
data (100k x 384 unit vectors, fixed seed, metric "dot"): one with sample.search.batching.enabled=false
(every request searches on its own, as before issue 21), one with the batcher. For each number of
concurrent single-query clients (1, 4, 16, 64 by default) it measures both in a closed loop over HTTP
(keep-alive, bodies encoded before the clock starts), alternating the two in short windows so that
both see the same machine: q/s and the p50/p99 latency of every request, and the batcher's mean
batch size. It also measures each service's rate at 100 queries per request (the issue's goal
is against that rate), and checks that both services give the same answers, byte for byte, for the
first 200 queries.

Output: a JSON file with every figure and a Markdown table (printed and written next to it).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sample_service_bench as base  # noqa: E402  (dataset, client, service helpers)

K = 10


def start(jar, java, jvm_options, extra, data_dir, port, log_path):
    command = [java, *jvm_options, "-jar", jar, f"--server.port={port}", f"--sample.data-dir={data_dir}",
               "--gpu.backend=cpu", "--sample.memory-budget=4GB", "--sample.limits.max-body-size=64MB",
               "--logging.level.root=WARN", "--logging.level.dev.gpucompute.sample=INFO",
               "--server.tomcat.threads.max=256", *extra]
    out = open(log_path, "w")
    process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.time() + 300
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the service exited with {process.returncode} at start-up (log: {log_path})")
        try:
            client = base.Client(port)
            health = client.request("GET", "/actuator/health")
            client.close()
            if health.get("status") == "UP":
                return process, " ".join(command)
        except (OSError, RuntimeError, base.http.client.HTTPException):
            pass
        time.sleep(0.5)
    process.kill()
    raise RuntimeError(f"the service did not report UP within 300 s (log: {log_path})")


def load(port, x):
    n, d = x.shape
    client = base.Client(port)
    client.request("PUT", "/collections/bench", json.dumps({"dimension": d, "metric": "dot"}).encode())
    rows = max(1, (16 << 20) // (d * 4))
    for first in range(0, n, rows):
        client.request("POST", f"/collections/bench/vectors?idPrefix=&idStart={first}",
                       x[first:first + rows].astype("<f4").tobytes(), "application/octet-stream")
    size = client.request("GET", "/collections/bench")["size"]
    client.close()
    if size != n:
        raise RuntimeError(f"the collection holds {size} vectors, expected {n}")


def raw_answers(port, bodies):
    """The response bodies, as bytes, for byte-for-byte comparison."""
    connection = base.http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    answers = []
    for body in bodies:
        connection.request("POST", "/collections/bench/search", body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {data[:300]!r}")
        answers.append(data)
    connection.close()
    return answers


def closed_loop(port, bodies, clients, seconds):
    """clients threads, each sending one request after the other for `seconds`; every latency kept."""
    latencies = [[] for _ in range(clients)]
    errors = []
    start_gate = threading.Barrier(clients + 1)
    stop = [0.0]

    def worker(index):
        client = base.Client(port)
        try:
            i = index
            start_gate.wait()
            while time.perf_counter() < stop[0]:
                began = time.perf_counter()
                client.request("POST", "/collections/bench/search", bodies[i % len(bodies)])
                latencies[index].append(time.perf_counter() - began)
                i += clients
        except Exception as ex:  # reported below
            errors.append(ex)
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    stop[0] = time.perf_counter() + seconds
    begin = time.perf_counter()
    start_gate.wait()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - begin
    if errors:
        raise RuntimeError(f"{len(errors)} clients failed: {errors[0]}")
    return {"latencies": [v for per in latencies for v in per], "elapsed": elapsed}


def summary(clients, parts):
    """Pooled figures of several closed-loop windows: q/s over their total time, latency percentiles."""
    flat = sorted(v for part in parts for v in part["latencies"])
    elapsed = sum(part["elapsed"] for part in parts)
    return {"clients": clients, "requests": len(flat), "seconds": elapsed, "qps": len(flat) / elapsed,
            "p50_ms": 1000 * flat[len(flat) // 2], "p99_ms": 1000 * flat[min(len(flat) - 1, int(len(flat) * 0.99))],
            "mean_ms": 1000 * sum(flat) / len(flat),
            "window_qps": [len(part["latencies"]) / part["elapsed"] for part in parts]}


def batch_rate(port, batches, seconds):
    client = base.Client(port)
    rate, calls = base.timed_rate(lambda c: client.request("POST", "/collections/bench/search", batches[c % len(batches)]),
                                  base.BATCH, seconds, 3)
    client.close()
    return {"qps": rate, "calls": calls}


def batcher_stats(port):
    client = base.Client(port)
    try:
        return client.request("GET", "/actuator/gpu/batchers")
    finally:
        client.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jar", required=True)
    parser.add_argument("--java", default="java")
    parser.add_argument("--out", required=True)
    parser.add_argument("--clients", default="1,4,16,64")
    parser.add_argument("--seconds", type=float, default=12, help="measured seconds per variant and client count")
    parser.add_argument("--rounds", type=int, default=4, help="alternating windows per variant and client count")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--commit", default="unknown")
    parser.add_argument("--on", default="", help="extra service arguments for the batcher-on variant (space-separated)")
    parser.add_argument("--simd-flag", default="--add-modules=jdk.incubator.vector")
    args = parser.parse_args()
    clients = [int(c) for c in args.clients.split(",")]
    report = {"started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "commit": args.commit, "machine": base.machine(),
              "load_start": base.load_average(), "uptime_start": subprocess.run(["uptime"], capture_output=True,
                                                                                 text=True).stdout.strip(),
              "n": args.n, "d": args.d, "seconds": args.seconds, "rounds": args.rounds, "jar": args.jar}
    base.log(f"data {args.n} x {args.d}")
    x, q = base.dataset(args.n, args.d, 1000)
    singles = [base.search_body(q[i:i + 1]) for i in range(len(q))]
    batches = [base.search_body(q[i:i + base.BATCH]) for i in range(0, len(q), base.BATCH)]
    work = tempfile.mkdtemp(prefix="batching-bench-")
    variants = {"off": ["--sample.search.batching.enabled=false"],
                "on": ["--sample.search.batching.enabled=true", *[a for a in args.on.split(" ") if a]]}
    services = {}
    try:
        for name, extra in variants.items():
            port = base.free_port()
            data = tempfile.mkdtemp(prefix=f"data-{name}-", dir=work)
            log_path = os.path.join(work, f"service-{name}.log")
            process, command = start(args.jar, args.java, [args.simd_flag], extra, data, port, log_path)
            services[name] = {"port": port, "process": process, "command": command, "log": log_path}
            base.log(f"{name}: started on port {port}; loading")
            load(port, x)
            raw_answers(port, singles[:50])  # warm-up (JIT)
        del x
        base.log("answers: batcher on vs off, first 200 queries")
        off = raw_answers(services["off"]["port"], singles[:200])
        on = raw_answers(services["on"]["port"], singles[:200])
        report["same_answers"] = sum(1 for a, b in zip(off, on) if a == b)
        report["answers_compared"] = len(off)
        results = {name: {"single": [], "batch": None} for name in services}
        for name in services:
            results[name]["batch"] = batch_rate(services[name]["port"], batches, args.seconds)
            base.log(f"{name}: 100 per request {results[name]['batch']['qps']:.0f} q/s (load {base.load_average()})")
        for c in clients:
            parts = {name: [] for name in services}
            stats = {}
            for name in services:
                # A short warm-up at this concurrency.
                closed_loop(services[name]["port"], singles, c, min(2.0, args.seconds / 4))
                stats[name] = batcher_stats(services[name]["port"]).get("search", {}).get("stats")
            # The two variants alternate in short windows (the order flips every round), so that both see
            # the same machine: other work on a shared machine moves every figure, not their ratio.
            for r in range(args.rounds):
                order = list(services) if r % 2 == 0 else list(reversed(list(services)))
                for name in order:
                    parts[name].append(closed_loop(services[name]["port"], singles, c, args.seconds / args.rounds))
            loads = base.load_average()
            for name in services:
                figure = summary(c, parts[name])
                after = batcher_stats(services[name]["port"]).get("search", {}).get("stats")
                before = stats[name]
                if before and after and after["batches"] > before["batches"]:
                    figure["mean_batch"] = (after["dispatched"] - before["dispatched"]) / (after["batches"] - before["batches"])
                figure["load"] = loads
                results[name]["single"].append(figure)
                base.log(f"{name}: {c} clients {figure['qps']:.0f} q/s, p50 {figure['p50_ms']:.1f} ms, "
                         f"p99 {figure['p99_ms']:.1f} ms (windows {', '.join(f'{q:.0f}' for q in figure['window_qps'])}; "
                         f"load {loads})")
        report["batcher"] = batcher_stats(services["on"]["port"])
        report["results"] = results
        report["commands"] = {name: s["command"] for name, s in services.items()}
    finally:
        for s in services.values():
            base.stop_service(s["process"])
    report["load_end"] = base.load_average()
    report["uptime_end"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    os.makedirs(args.out, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = os.path.join(args.out, f"batching-{stamp}-{args.commit}")
    with open(path + ".json", "w") as f:
        json.dump(report, f, indent=2)
    text = markdown(report)
    with open(path + ".md", "w") as f:
        f.write(text + "\n")
    print()
    print(text)
    base.log(f"results: {path}.json and {path}.md")
    if os.environ.get("KEEP"):
        base.log(f"service logs and data kept under {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


def markdown(report):
    r = report["results"]
    lines = [f"Sample service, search batcher on and off, {report['started']} (commit {report['commit']}), "
             f"{report['machine']['cpu']}, {report['machine']['cores']} cores, {report['n']:,} x {report['d']}, "
             f"{report['seconds']:.0f} s per figure in {report['rounds']} windows alternating with the other variant.",
             f"`uptime` at the start: {report['uptime_start']}; at the end: {report['uptime_end']}.", "",
             "| clients | off q/s | off p50 ms | off p99 ms | on q/s | on p50 ms | on p99 ms | on / off q/s | "
             "on / off p50 | mean batch (on) | load after |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for off, on in zip(r["off"]["single"], r["on"]["single"]):
        lines.append(f"| {off['clients']} | {off['qps']:,.0f} | {off['p50_ms']:.1f} | {off['p99_ms']:.1f} "
                     f"| {on['qps']:,.0f} | {on['p50_ms']:.1f} | {on['p99_ms']:.1f} "
                     f"| {on['qps'] / off['qps']:.2f}x | {on['p50_ms'] / off['p50_ms']:.2f}x "
                     f"| {on.get('mean_batch', 0):.1f} | {on['load'].split()[0]} |")
    lines += ["", f"100 queries per request: off {r['off']['batch']['qps']:,.0f} q/s, on {r['on']['batch']['qps']:,.0f} "
              f"q/s (large requests bypass the batcher).",
              f"Same answers, byte for byte, batcher on vs off: {report['same_answers']} of {report['answers_compared']}."]
    search = report.get("batcher", {}).get("search")
    if search:
        stats = search["stats"]
        mean = stats["dispatched"] / stats["batches"] if stats["batches"] else 0
        lines.append(f"Batcher 'search' over the run: {stats['batches']:,} batches, {stats['dispatched']:,} requests, "
                     f"mean batch {mean:.1f}, rejected {stats['rejected']}, timed out {stats['expired']}.")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
