#!/usr/bin/env python3
"""The sample service with its search batcher on and off, in the same run.

Started by benchmarks/batching.sh. Two services run side by side on the CPU backend with the same
data (100k x 384 unit vectors, fixed seed, metric "dot"): one with sample.search.batching.enabled=false
(every request searches on its own, as before the batcher), one with the batcher. For each number of
concurrent single-query clients (1, 4, 16, 64 by default) and each request format (binary:
float32 rows in, application/vnd.gpu-compute.hits out; JSON in and out) it measures both in closed
loops over HTTP, alternating the two in short windows so that both see the same machine: q/s, the
p50/p99 of the round trip, and from each service's meters and /proc/<pid>/stat over each window
the kernel launches per request (gpu.kernel.launches), the mean batch of the `search` batcher
(gpu.batch.size), the server time (http.server.requests) and the service process's CPU seconds per
1,000 queries. Then, on each service, the writers row of gpu_search_bench.py: 16 single-query clients
(binary) without writers and while 2 writers add vectors (16 per request, at most 50 requests/s each),
paired back to back. It also measures each service at 16 and 100 queries per request, each service's CPU
share when idle (no requests for 5 s), the client's own ceiling (the same clients against GET
/actuator/health/liveness of the batcher-on service), and checks that both services give the same
answers, byte for byte, for the first 200 queries (JSON and binary).

The clients are those of gpu_search_bench.py (spawned processes with a few threads each, one
keep-alive connection per client, bodies encoded beforehand, a ramp before each window).

Output: a JSON file with every figure and a Markdown table (printed and written next to it).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts (the client processes import them too)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sample_service_bench as base  # noqa: E402  (dataset, client, service helpers)
import gpu_search_bench as gsb  # noqa: E402  (the closed-loop client pool, meters, CPU time)

K = 10
FORMATS = {
    # format: (path, bodies, content type, accept)
    "binary": (f"/collections/bench/search?k={K}", "binary", gsb.OCTETS, gsb.HITS),
    "json": ("/collections/bench/search", "json", gsb.JSON, None),
}


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


def raw_answers(port, bodies, fmt):
    """The response bodies, as bytes, for byte-for-byte comparison."""
    path, _, content_type, accept = FORMATS[fmt]
    connection = base.http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    answers = []
    headers = {"Content-Type": content_type}
    if accept:
        headers["Accept"] = accept
    for body in bodies:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {data[:300]!r}")
        answers.append(data)
    connection.close()
    return answers


def window(pool, service, fmt, clients, queries_per_request, seconds, ramp):
    path, bodies, content_type, accept = FORMATS[fmt]
    return pool.run(service, "POST", path, f"{bodies}/{queries_per_request}", content_type, accept, clients,
                    seconds, ramp, gsb.SEARCH_URI, queries_per_request)


def writers_rows(pool, services, args, part, rates):
    """The row of gpu_search_bench.py's writers pair, on each service: --writer-clients single-query clients
    (binary where measured, else the first format), in windows without writers and while --writers writers
    add vectors (new ids: the collection grows), paired back to back and alternating between the services
    over --rounds rounds, so that each pair sees nearly the same collection."""
    fmt = "binary" if "binary" in args.formats.split(",") else args.formats.split(",")[0].strip()
    c = args.writer_clients
    bodies = gsb.writer_bodies(args.d, args.writer_rows, 4242)
    parts = {name: {"without": [], "with": []} for name in services}
    writes = {name: [] for name in services}
    for r in range(args.rounds):
        order = list(services) if r % 2 == 0 else list(reversed(list(services)))
        for name in order:
            service = services[name]["service"]
            ramp = gsb.closed_loop_ramp(part, c, rates.get((name, fmt)))
            parts[name]["without"].append(window(pool, service, fmt, c, 1, part, ramp))
            group = gsb.Writers(service.port, "bench", bodies, args.writers, args.writer_rows, args.writer_rate,
                                f"w{r}-")
            group.start()
            try:
                parts[name]["with"].append(window(pool, service, fmt, c, 1, part, ramp))
            finally:
                stats = group.stop()
            if stats["errors"]:
                raise RuntimeError(f"writers failed: {stats['errors'][0]}")
            writes[name].append(stats)
    result = {"clients": c, "format": fmt, "writers": args.writers, "rows_per_write": args.writer_rows,
              "rate_limit_per_writer": args.writer_rate, "services": {}}
    for name in services:
        w = writes[name]
        seconds = sum(x["seconds"] for x in w)
        p50s = sorted(x["write_p50_ms"] for x in w if x["write_p50_ms"] is not None)
        client = base.Client(services[name]["service"].port)
        size = client.request("GET", "/collections/bench")["size"]
        client.close()
        figures = {"without": gsb.summarize(parts[name]["without"]), "with": gsb.summarize(parts[name]["with"]),
                   "writes": sum(x["writes"] for x in w), "rows_added": sum(x["rows_added"] for x in w),
                   "writes_per_s": sum(x["writes"] for x in w) / seconds if seconds else 0.0,
                   "write_p50_ms": p50s[len(p50s) // 2] if p50s else None, "size_after": size}
        result["services"][name] = figures
        base.log(f"{name}: {c} clients, {fmt}, without writers: {gsb.describe(figures['without'])}")
        base.log(f"{name}: {c} clients, {fmt}, {args.writers} writers ({figures['writes_per_s']:,.0f} writes/s, "
                 f"{figures['rows_added']:,} rows added): {gsb.describe(figures['with'])}")
    return result


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
    parser.add_argument("--formats", default="binary,json", help="request formats: binary, json or both")
    parser.add_argument("--seconds", type=float, default=12, help="measured seconds per variant, format and client count")
    parser.add_argument("--rounds", type=int, default=4, help="alternating windows per variant, format and client count")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--commit", default="unknown")
    parser.add_argument("--on", default="", help="extra service arguments for the batcher-on variant (space-separated)")
    parser.add_argument("--simd-flag", default="--add-modules=jdk.incubator.vector")
    parser.add_argument("--client-processes", type=int, default=gsb.default_client_processes())
    parser.add_argument("--writers", type=int, default=2,
                        help="writers adding vectors beside the paired --writer-clients row (0: no such row)")
    parser.add_argument("--writer-clients", type=int, default=16, help="search clients of the writers row")
    parser.add_argument("--writer-rows", type=int, default=16, help="vectors per write request")
    parser.add_argument("--writer-rate", type=float, default=50,
                        help="most write requests per second of each writer (0: a closed loop)")
    args = parser.parse_args()
    clients = [int(c) for c in args.clients.split(",")]
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    for f in formats:
        if f not in FORMATS:
            parser.error(f"unknown format {f!r}: binary or json")
    part = args.seconds / args.rounds
    report = {"started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "commit": args.commit, "machine": base.machine(),
              "load_start": base.load_average(), "uptime_start": subprocess.run(["uptime"], capture_output=True,
                                                                                 text=True).stdout.strip(),
              "n": args.n, "d": args.d, "seconds": args.seconds, "rounds": args.rounds, "jar": args.jar,
              "formats": formats, "client_processes": args.client_processes}
    base.log(f"data {args.n} x {args.d}; clients in {args.client_processes} processes")
    x, q = base.dataset(args.n, args.d, 1000)
    pool = gsb.ClientPool(args.client_processes)
    for size in (1, gsb.SMALL_BATCH, base.BATCH):
        blocks = [q[i:i + size] for i in range(0, len(q) - size + 1, size)][:gsb.CLIENT_BODIES]
        pool.add_bodies(f"json/{size}", [base.search_body(b) for b in blocks])
        pool.add_bodies(f"binary/{size}", [b.astype("<f4").tobytes() for b in blocks])
    singles = {"json": [base.search_body(q[i:i + 1]) for i in range(200)],
               "binary": [q[i:i + 1].astype("<f4").tobytes() for i in range(200)]}
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
            services[name] = {"service": gsb.Service(port, process.pid), "process": process, "command": command,
                              "log": log_path}
            base.log(f"{name}: started on port {port} (pid {process.pid}); loading")
            load(port, x)
            for fmt in FORMATS:
                raw_answers(port, singles[fmt][:50], fmt)  # warm-up (JIT)
        del x
        base.log("answers: batcher on vs off, first 200 queries, JSON and binary")
        report["same_answers"] = {}
        for fmt in FORMATS:
            off = raw_answers(services["off"]["service"].port, singles[fmt], fmt)
            on = raw_answers(services["on"]["service"].port, singles[fmt], fmt)
            report["same_answers"][fmt] = {"same": sum(1 for a, b in zip(off, on) if a == b), "compared": len(off)}
        results = {name: {"single": {f: [] for f in formats}, "batch": {}, "idle": None} for name in services}
        # Batches of 16 and 100 queries per request, one client: each service, both formats, alternating
        # in half as many windows as the clients' figures below.
        rounds = max(1, args.rounds // 2)
        for size in (gsb.SMALL_BATCH, base.BATCH):
            for fmt in formats:
                parts = {name: [] for name in services}
                for r in range(rounds):
                    order = list(services) if r % 2 == 0 else list(reversed(list(services)))
                    for name in order:
                        parts[name].append(window(pool, services[name]["service"], fmt, 1, size, part,
                                                  gsb.ramp_for(part)))
                for name in services:
                    figure = gsb.summarize(parts[name])
                    results[name]["batch"][f"{size}_{fmt}"] = figure
                    base.log(f"{name}: {size} per request, {fmt}: {gsb.describe(figure)}")
        rates = {}
        for c in clients:
            for fmt in formats:
                parts = {name: [] for name in services}
                for name in services:
                    # A short warm-up at this concurrency (also the ramp's estimate of the round trip).
                    warm = gsb.summarize([window(pool, services[name]["service"], fmt, c, 1, min(2.0, part),
                                                 gsb.closed_loop_ramp(part, c, rates.get((name, fmt))))])
                    rates[(name, fmt)] = warm["rps"]
                # The two variants alternate in short windows (the order flips every round), so that both
                # see the same machine: other work on a shared machine moves every figure, not their ratio.
                for r in range(args.rounds):
                    order = list(services) if r % 2 == 0 else list(reversed(list(services)))
                    for name in order:
                        ramp = gsb.closed_loop_ramp(part, c, rates.get((name, fmt)))
                        parts[name].append(window(pool, services[name]["service"], fmt, c, 1, part, ramp))
                loads = base.load_average()
                for name in services:
                    figure = gsb.summarize(parts[name])
                    rates[(name, fmt)] = figure["rps"]
                    figure["load"] = loads
                    results[name]["single"][fmt].append(figure)
                    base.log(f"{name}: {c} clients, {fmt}: {gsb.describe(figure)} (windows "
                             f"{', '.join(f'{v:.0f}' for v in figure['window_rates'])}; load {loads})")
        if args.writers > 0:
            report["writers"] = writers_rows(pool, services, args, part, rates)
        # The client's ceiling: the same clients against a trivial endpoint of the batcher-on service.
        report["ceiling"] = []
        for c in clients:
            figure = gsb.summarize([pool.run(
                services["on"]["service"], "GET", gsb.CEILING_PATH, None, None, None, c, part, gsb.ramp_for(part),
                gsb.CEILING_URI, None)])
            report["ceiling"].append(figure)
            base.log(f"ceiling: {c} clients, GET {gsb.CEILING_PATH}: {gsb.describe(figure)}")
        # Idle: no requests to either service for 5 s (measured over the same seconds).
        idle = gsb.idle_window([s["service"] for s in services.values()])
        for name, figure in zip(services, idle):
            results[name]["idle"] = figure
            base.log(f"{name}: idle {gsb.IDLE_S:.0f} s, {100 * figure['core_share']:.2f}% of one core")
        report["batcher"] = batcher_stats(services["on"]["service"].port)
        report["results"] = results
        report["commands"] = {name: s["command"] for name, s in services.items()}
    finally:
        pool.close()
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


fmt = gsb.fmt


def markdown(report):
    r = report["results"]
    lines = [f"Sample service, search batcher on and off, {report['started']} (commit {report['commit']}), "
             f"{report['machine']['cpu']}, {report['machine']['cores']} cores, {report['n']:,} x {report['d']}, "
             f"{report['seconds']:.0f} s per figure in {report['rounds']} windows alternating with the other variant; "
             f"clients in {report['client_processes']} processes.",
             f"`uptime` at the start: {report['uptime_start']}; at the end: {report['uptime_end']}.", "",
             "| clients | format | off q/s | off p50 / p99 ms | on q/s | on p50 / p99 ms | on / off q/s | "
             "knn_fused per request off / on | mean batch on | server ms off / on | CPU s per 1k q off / on "
             "| client ceiling req/s | load after |",
             "|---" * 13 + "|"]
    ceiling = {c["clients"]: c for c in report.get("ceiling", [])}
    for f in report["formats"]:
        for off, on in zip(r["off"]["single"][f], r["on"]["single"][f]):
            batch = (on["batchers"].get("search") or {}).get("mean")
            lines.append(
                f"| {off['clients']} | {f} | {off['qps']:,.0f} | {fmt(off['p50_ms'], 1)} / {fmt(off['p99_ms'], 1)} "
                f"| {on['qps']:,.0f} | {fmt(on['p50_ms'], 1)} / {fmt(on['p99_ms'], 1)} "
                f"| {on['qps'] / off['qps']:.2f}x "
                f"| {gsb.launches(off, 'knn_fused'):.2f} / {gsb.launches(on, 'knn_fused'):.2f} "
                f"| {fmt(batch, 1) if batch else '-'} | {fmt(off['server_ms'], 1)} / {fmt(on['server_ms'], 1)} "
                f"| {fmt(off['cpu_s_per_1000'], 2)} / {fmt(on['cpu_s_per_1000'], 2)} "
                f"| {fmt((ceiling.get(off['clients']) or {}).get('rps'))} | {on['load'].split()[0]} |")
    lines += ["", "| queries per request (1 client) | format | off q/s | on q/s | off p50 / p99 ms | on p50 / p99 ms "
              "| knn_fused per request off / on | CPU s per 1k q off / on |", "|---" * 8 + "|"]
    for key in r["off"]["batch"]:
        off, on = r["off"]["batch"][key], r["on"]["batch"][key]
        size, _, f = key.partition("_")
        lines.append(f"| {size} | {f} | {off['qps']:,.0f} | {on['qps']:,.0f} | {fmt(off['p50_ms'], 1)} / "
                     f"{fmt(off['p99_ms'], 1)} | {fmt(on['p50_ms'], 1)} / {fmt(on['p99_ms'], 1)} "
                     f"| {gsb.launches(off, 'knn_fused'):.2f} / {gsb.launches(on, 'knn_fused'):.2f} "
                     f"| {fmt(off['cpu_s_per_1000'], 2)} / {fmt(on['cpu_s_per_1000'], 2)} |")
    lines.append("")
    lines.append("Idle (no requests for 5 s), the service's CPU share of one core: " + ", ".join(
        f"{name} {100 * r[name]['idle']['core_share']:.2f}%" for name in ("off", "on")) + " (goal: under 2%).")
    same = report["same_answers"]
    lines.append("Same answers, byte for byte, batcher on vs off: " + ", ".join(
        f"{f} {v['same']} of {v['compared']}" for f, v in same.items()) + ".")
    writers = report.get("writers")
    if writers:
        lines += ["", f"Searches at {writers['clients']} clients ({writers['format']}) without writers and while "
                  f"{writers['writers']} writers add vectors ({writers['rows_per_write']} per request, at most "
                  f"{writers['rate_limit_per_writer']:g} requests/s each; new ids), paired back to back:", "",
                  "| service | without: q/s, p50 / p99 ms | with writers: q/s, p50 / p99 ms | p50 / p99 with / without "
                  "| writes/s, write p50 ms | rows added (size after) |", "|---" * 6 + "|"]
        for name, v in writers["services"].items():
            a, b = v["without"], v["with"]
            lines.append(f"| batcher {name} | {a['qps']:,.0f}, {fmt(a['p50_ms'], 1)} / {fmt(a['p99_ms'], 1)} "
                         f"| {b['qps']:,.0f}, {fmt(b['p50_ms'], 1)} / {fmt(b['p99_ms'], 1)} "
                         f"| {b['p50_ms'] / a['p50_ms']:.2f}x / {b['p99_ms'] / a['p99_ms']:.2f}x "
                         f"| {v['writes_per_s']:,.0f}, {fmt(v['write_p50_ms'], 1)} | {v['rows_added']:,} ({v['size_after']:,}) |")
        lines.append("")
    search = (report.get("batcher") or {}).get("search")
    if search:
        stats = search["stats"]
        mean = stats["dispatched"] / stats["batches"] if stats["batches"] else 0
        lines.append(f"Batcher 'search' over the run: {stats['batches']:,} batches, {stats['dispatched']:,} requests, "
                     f"mean batch {mean:.1f}, rejected {stats['rejected']}, timed out {stats['expired']}.")
    lines.append(f"The client's ceiling: the same clients against GET {gsb.CEILING_PATH} of the batcher-on service "
                 "(column above); a figure near it is a limit of the client, not of the service.")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
