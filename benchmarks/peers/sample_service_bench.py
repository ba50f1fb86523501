#!/usr/bin/env python3
"""The sample service against FAISS (IndexFlatIP, exact search) on the same data, in the same run.

Started by benchmarks/sample-service.sh, which creates the virtual environment (numpy, faiss-cpu) and
finds the packaged jar; run it with --help for the options. For each data set it:

  1. generates the vectors and queries deterministically (numpy default_rng, fixed seeds, float32,
     normalised to unit length, so cosine = dot and the collection is created with metric "dot");
  2. measures FAISS (if importable): IndexFlatIP.add rate, search one query at a time, 100-query
     batches, with faiss.omp_set_num_threads(THREADS); its top 10 is the reference for recall;
  3. for each service variant (JVM options), starts the jar on the CPU backend with a fresh temporary
     data directory, ingests through the binary endpoint (POST /collections/{name}/vectors,
     application/octet-stream, ids by idPrefix/idStart), reads VmRSS/VmHWM from /proc, then measures
     1 query per request (sequential and CONCURRENT clients) and 100 queries per request, checks
     recall@10 against FAISS, and stops the service.

Every request body is encoded before the clock starts; a client keeps its connection open. Output:
a JSON file with every figure and a Markdown table with the ratios (printed and written next to it).
"""

import argparse
import http.client
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

K = 10
QUERY_COUNT = 1000
BATCH = 100


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def proc_status(pid):
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) * 1024
    return values


def dataset(n, d, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = np.random.default_rng(seed + 1).standard_normal((QUERY_COUNT, d), dtype=np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return x, q


def timed_rate(fn, units_per_call, seconds, min_calls):
    """Calls fn() until `seconds` passed and at least min_calls were made; returns (units/s, calls)."""
    calls = 0
    start = time.perf_counter()
    while True:
        fn(calls)
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and calls >= min_calls:
            return units_per_call * calls / elapsed, calls


# ---- FAISS ------------------------------------------------------------------------------------

def run_faiss(x, q, threads, seconds):
    try:
        import faiss
    except ImportError as ex:
        return {"skipped": f"faiss not importable: {ex}"}
    faiss.omp_set_num_threads(threads)
    rss_before = proc_status(os.getpid())["VmRSS"]
    index = faiss.IndexFlatIP(x.shape[1])
    start = time.perf_counter()
    index.add(x)
    add_seconds = time.perf_counter() - start
    rss_after = proc_status(os.getpid())["VmRSS"]
    reference_d, reference_i = index.search(q, K)
    index.search(q[:BATCH], K)  # warm-up
    single, single_calls = timed_rate(lambda c: index.search(q[c % len(q):c % len(q) + 1], K), 1, seconds, 20)
    batch, batch_calls = timed_rate(
        lambda c: index.search(q[(c * BATCH) % len(q):(c * BATCH) % len(q) + BATCH], K), BATCH, seconds, 3)
    # FAISS 1.15.1 sends a 100-query search to BLAS only above distance_compute_blas_threshold (128000 in
    # this version; 20 in older ones), so a 100-query batch is its SIMD scan by default. The goal
    # is against FAISS "with BLAS batching": measured with the threshold lowered to 20 as well.
    threshold = faiss.cvar.distance_compute_blas_threshold
    faiss.cvar.distance_compute_blas_threshold = 20
    index.search(q[:BATCH], K)
    blas, blas_calls = timed_rate(
        lambda c: index.search(q[(c * BATCH) % len(q):(c * BATCH) % len(q) + BATCH], K), BATCH, seconds, 3)
    faiss.cvar.distance_compute_blas_threshold = threshold
    return {
        "version": faiss.__version__,
        "threads": threads,
        "add_vectors_per_s": len(x) / add_seconds,
        "rss_added_bytes": rss_after - rss_before,
        "single_qps": single,
        "single_ms": 1000 / single,
        "batch_qps": batch,
        "batch_blas_qps": blas,
        "blas_threshold_default": threshold,
        "calls": {"single": single_calls, "batch": batch_calls, "batch_blas": blas_calls},
        "reference": (reference_d, reference_i),
    }


# ---- the service ------------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client:

    def __init__(self, port):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def request(self, method, path, body=None, content_type="application/json"):
        headers = {"Content-Type": content_type} if body is not None else {}
        self.connection.request(method, path, body=body, headers=headers)
        response = self.connection.getresponse()
        data = response.read()
        if response.status >= 300:
            raise RuntimeError(f"{method} {path}: HTTP {response.status}: {data[:500]!r}")
        return json.loads(data) if data else None

    def close(self):
        self.connection.close()


def search_body(rows):
    return json.dumps({"vectors": [[float(v) for v in row] for row in rows], "k": K}).encode()


def start_service(jar, java, jvm_options, data_dir, port, log_path):
    command = [java, *jvm_options, "-jar", jar, f"--server.port={port}", f"--sample.data-dir={data_dir}",
               "--gpu.backend=cpu", "--sample.memory-budget=4GB", "--sample.limits.max-body-size=64MB",
               "--logging.level.root=WARN", "--logging.level.dev.gpucompute.sample=INFO"]
    out = open(log_path, "w")
    process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.time() + 180
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the service exited with {process.returncode} at start-up (log: {log_path})")
        try:
            client = Client(port)
            health = client.request("GET", "/actuator/health")
            client.close()
            if health.get("status") == "UP":
                return process, " ".join(command)
        except (OSError, RuntimeError, http.client.HTTPException):
            pass
        time.sleep(0.5)
    process.kill()
    raise RuntimeError(f"the service did not report UP within 180 s (log: {log_path})")


def stop_service(process):
    process.terminate()
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def scoring_line(log_path):
    with open(log_path) as f:
        for line in f:
            if "CPU scoring:" in line:
                return line.split("CPU scoring:", 1)[1].strip()
    return "not logged"


def run_service(jar, java, jvm_options, x, q, reference, seconds, clients, work):
    n, d = x.shape
    port = free_port()
    data_dir = tempfile.mkdtemp(prefix="sample-bench-data-", dir=work)
    log_path = os.path.join(work, f"service-{n}x{d}-{port}.log")
    result = {"jvm_options": " ".join(jvm_options), "log": log_path}
    process = None
    try:
        process, command = start_service(jar, java, jvm_options, data_dir, port, log_path)
        result["command"] = command
        result["scoring"] = scoring_line(log_path)
        client = Client(port)
        client.request("PUT", "/collections/bench", json.dumps({"dimension": d, "metric": "dot"}).encode())
        rows_per_request = max(1, (16 << 20) // (d * 4))
        bodies = [(start, x[start:start + rows_per_request].astype("<f4").tobytes())
                  for start in range(0, n, rows_per_request)]
        begin = time.perf_counter()
        for start, body in bodies:
            client.request("POST", f"/collections/bench/vectors?idPrefix=&idStart={start}", body,
                           "application/octet-stream")
        result["ingest_vectors_per_s"] = n / (time.perf_counter() - begin)
        result["ingest_rows_per_request"] = rows_per_request
        del bodies
        size = client.request("GET", "/collections/bench")["size"]
        if size != n:
            raise RuntimeError(f"the collection holds {size} vectors, expected {n}")
        time.sleep(1)
        result["rss_after_load_bytes"] = proc_status(process.pid)
        singles = [search_body(q[i:i + 1]) for i in range(len(q))]
        batches = [search_body(q[i:i + BATCH]) for i in range(0, len(q), BATCH)]
        # Warm-up (JIT), then the recall check over every query, in batches.
        for body in singles[:30]:
            client.request("POST", "/collections/bench/search", body)
        answers = []
        for body in batches:
            answers.extend(client.request("POST", "/collections/bench/search", body)["results"])
        result["recall"] = recall(answers, reference)
        # One single query alone must give the same hits (bits) as inside its batch.
        alone = client.request("POST", "/collections/bench/search", singles[0])["results"][0]
        result["single_equals_batch"] = alone == answers[0]
        rate, calls = timed_rate(lambda c: client.request("POST", "/collections/bench/search",
                                                          singles[c % len(singles)]), 1, seconds, 20)
        result["single_qps"], result["single_ms"], result["single_calls"] = rate, 1000 / rate, calls
        result["concurrent_clients"] = clients
        result["concurrent_qps"] = concurrent(port, singles, clients, seconds)
        rate, calls = timed_rate(lambda c: client.request("POST", "/collections/bench/search",
                                                          batches[c % len(batches)]), BATCH, seconds, 3)
        result["batch_qps"], result["batch_calls"] = rate, calls
        result["rss_after_search_bytes"] = proc_status(process.pid)
        client.close()
    except Exception as ex:  # a failed variant is reported, the run goes on
        result["failed"] = str(ex)
        log(f"  FAILED: {ex}")
    finally:
        if process is not None:
            stop_service(process)
        shutil.rmtree(data_dir, ignore_errors=True)
    return result


def concurrent(port, singles, clients, seconds):
    counts = [0] * clients
    stop = time.perf_counter() + seconds
    errors = []

    def worker(index):
        client = Client(port)
        try:
            i = index
            while time.perf_counter() < stop:
                client.request("POST", "/collections/bench/search", singles[i % len(singles)])
                counts[index] += 1
                i += clients
        except Exception as ex:
            errors.append(ex)
        finally:
            client.close()

    begin = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"concurrent clients failed: {errors[0]}")
    return sum(counts) / (time.perf_counter() - begin)


def recall(answers, reference):
    """recall@10 against FAISS: strict (same ids) and tie-aware (an id outside FAISS's top 10 counts when
    its score is within 1e-5 of FAISS's 10th: float32 BLAS and the service round differently)."""
    if reference is None:
        return None
    ref_d, ref_i = reference
    strict = tie_aware = 0
    worst = 0.0
    for qi, hits in enumerate(answers):
        expected = set(int(i) for i in ref_i[qi])
        tenth = float(ref_d[qi][-1])
        ref_score = {int(i): float(s) for i, s in zip(ref_i[qi], ref_d[qi])}
        for hit in hits:
            slot = int(hit["id"])
            if slot in expected:
                strict += 1
                tie_aware += 1
                worst = max(worst, abs(hit["score"] - ref_score[slot]))
            elif abs(hit["score"] - tenth) <= 1e-5:
                tie_aware += 1
    total = len(answers) * K
    return {"strict": strict / total, "tie_aware": tie_aware / total, "max_score_difference": worst,
            "queries": len(answers)}


# ---- report -----------------------------------------------------------------------------------

def fmt(value, digits=0):
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}"


def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "n/a"


def markdown(report):
    lines = [f"Sample service vs FAISS, {report['started']} (commit {report['commit']}), "
             f"{report['machine']['cpu']}, {report['machine']['cores']} cores, load {report['load_start']} at the "
             f"start, {report['load_end']} at the end{' (QUICK)' if report['quick'] else ''}.", ""]
    lines.append("| data | service variant | scoring | ingest vec/s (ratio to add) | 1 query q/s, ms (ratio) "
                 "| concurrent q/s | 100/request q/s (ratio) | batch / single | RSS after load (goal) | recall@10 |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for data in report["datasets"]:
        f = data["faiss"]
        raw = data["raw_bytes"]
        goal = 1.5 * raw + 300e6
        faiss_ok = "skipped" not in f
        if faiss_ok:
            lines.append(f"| {data['name']} | FAISS {f['version']} IndexFlatIP, {f['threads']} threads | BLAS "
                         f"| {fmt(f['add_vectors_per_s'])} | {fmt(f['single_qps'])}, {f['single_ms']:.1f} ms | "
                         f"| {fmt(f['batch_blas_qps'])} with BLAS ({fmt(f['batch_qps'])} default: SIMD scan) "
                         f"| {f['batch_blas_qps'] / f['single_qps']:.1f}x "
                         f"| +{raw_mb(f['rss_added_bytes'])} | reference |")
        for s in data["service"]:
            variant = s["jvm_options"] or "(defaults)"
            if "failed" in s:
                lines.append(f"| {data['name']} | {variant} | | FAILED: {s['failed'][:200]} | | | | | | |")
                continue
            rss = s["rss_after_load_bytes"]
            r = s["recall"]
            rec = (f"{r['strict']:.4f} strict, {r['tie_aware']:.4f} tie-aware" if r else "no reference")
            lines.append(
                f"| {data['name']} | {variant} | {s['scoring']} "
                f"| {fmt(s['ingest_vectors_per_s'])} ({ratio(s['ingest_vectors_per_s'], f.get('add_vectors_per_s'))}) "
                f"| {fmt(s['single_qps'])}, {s['single_ms']:.1f} ms ({ratio(s['single_qps'], f.get('single_qps'))}) "
                f"| {fmt(s['concurrent_qps'])} ({s['concurrent_clients']} clients) "
                f"| {fmt(s['batch_qps'])} ({ratio(s['batch_qps'], f.get('batch_blas_qps'))} of BLAS, "
                f"{ratio(s['batch_qps'], f.get('batch_qps'))} of default) "
                f"| {s['batch_qps'] / s['single_qps']:.1f}x "
                f"| {raw_mb(rss['VmRSS'])} (HWM {raw_mb(rss['VmHWM'])}; goal <= {raw_mb(goal)}) | {rec} |")
    lines += ["", "Goals of the service against FAISS on CPU: 100/request >= 0.5x FAISS with BLAS batching, 1 query >= 0.8x FAISS, "
              "ingest >= 0.5x FAISS add, 100/request >= 5x the rate of single queries, RSS <= 1.5x raw + 300 MB. "
              "FAISS 1.15.1 uses BLAS for a 100-query search only with distance_compute_blas_threshold lowered "
              "(default 128000); both figures are given. The service's single-query figure is sequential "
              "requests over HTTP with JSON (keep-alive); FAISS's is an in-process call."]
    return "\n".join(lines)


def raw_mb(value):
    return f"{value / 1e6:,.0f} MB"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jar", required=True)
    parser.add_argument("--java", default="java")
    parser.add_argument("--out", required=True, help="directory for the JSON and Markdown results")
    parser.add_argument("--quick", action="store_true", help="small data and short windows (about 2 minutes)")
    parser.add_argument("--seconds", type=float, help="measurement window per figure")
    parser.add_argument("--threads", type=int, default=2, help="FAISS OpenMP threads")
    parser.add_argument("--clients", type=int, default=4, help="concurrent single-query clients")
    parser.add_argument("--commit", default="unknown")
    parser.add_argument("--simd-flag", default="--add-modules=jdk.incubator.vector")
    parser.add_argument("--only", help="run only the data sets whose name contains this")
    args = parser.parse_args()
    seconds = args.seconds or (2 if args.quick else 8)
    if args.quick:
        sets = [("20k x 384", 20_000, 384, [[]]), ("200k x 128", 200_000, 128, [[], ["-Xmx512m"]])]
    else:
        sets = [("100k x 384", 100_000, 384, [[]]), ("1M x 128", 1_000_000, 128, [[], ["-Xmx512m"]])]
    report = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "commit": args.commit,
        "quick": args.quick,
        "seconds_per_figure": seconds,
        "machine": machine(),
        "load_start": load_average(),
        "jar": args.jar,
        "datasets": [],
    }
    work = tempfile.mkdtemp(prefix="sample-bench-")
    for index, (name, n, d, variants) in enumerate(sets):
        if args.only and args.only not in name:
            continue
        log(f"{name}: generating data (seed {1000 + index})")
        x, q = dataset(n, d, 1000 + index)
        log(f"{name}: FAISS")
        f = run_faiss(x, q, args.threads, seconds)
        reference = f.pop("reference", None)
        log(f"{name}: FAISS {json.dumps(f)}")
        entry = {"name": name, "n": n, "dimension": d, "raw_bytes": n * d * 4, "faiss": f, "service": []}
        for variant in variants:
            options = [args.simd_flag, *variant] if args.simd_flag else list(variant)
            log(f"{name}: service with {' '.join(options) or 'defaults'} (load {load_average()})")
            s = run_service(args.jar, args.java, options, x, q, reference, seconds, args.clients, work)
            log(f"{name}: service {json.dumps(s)}")
            entry["service"].append(s)
        report["datasets"].append(entry)
        del x, q
    report["load_end"] = load_average()
    os.makedirs(args.out, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = os.path.join(args.out, f"sample-service-{stamp}-{args.commit}{'-quick' if args.quick else ''}")
    with open(base + ".json", "w") as f:
        json.dump(report, f, indent=2)
    text = markdown(report)
    with open(base + ".md", "w") as f:
        f.write(text + "\n")
    print()
    print(text)
    print()
    log(f"results: {base}.json and {base}.md (service logs under {work})")


def machine():
    model = "unknown"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    return {"cpu": model, "cores": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
            "java": java[0] if java else "unknown"}


if __name__ == "__main__":
    sys.exit(main())
