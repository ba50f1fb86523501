#!/usr/bin/env python3
"""The sample service's search on one backend against a PyTorch peer in-process on the same GPU.

    python3 gpu_search_bench.py --java <java> --classpath <cp> --main dev.gpucompute.sample.SampleApplication \\
        --backend cuda|cpu --budget <seconds> --json <file> [--quick]

Starts the service (`--gpu.backend=<backend>`, `--gpu.metrics.kernel-timing=all`, a fresh temporary
data directory) and, for 1M x 128 and 100k x 384 float32 unit vectors (--quick: 200k x 128 and
20k x 384; fixed seeds; collection metric "dot", so both sides compute the same inner products):

  1. ingests the rows through the binary endpoint (application/octet-stream, ids by idPrefix/idStart);
  2. measures the service over HTTP with keep-alive connections and every body encoded before the
     clock starts: 1 query per request sequentially (binary and JSON), 16 concurrent clients x 1
     query (binary; one process per client, so Python's GIL is not the limit), and 100 queries
     per request as JSON (JSON in and out) and binary (float32 rows in, application/vnd.gpu-compute.hits
     out), k = 10;
  3. reads the kernel time per request from the service's meters (deltas of the Prometheus sums of
     gpu_kernel_duration_seconds per kernel and of http_server_requests_seconds for the search);
  4. checks recall@10 of the service against an exact float64 ranking (strict: the same ids;
     tie-aware: an id outside the exact top 10 counts when its exact score is within 1e-6 of the
     10th), and that a query alone gets the same hits, bit for bit, as inside its batch;
  5. measures PyTorch in-process on the same GPU: float32 `queries @ rows.T` and `torch.topk`, the
     copy of the queries to the device and of the results back included, TF32 off; one query per
     call and 100 per call; plus a device-to-device copy of the rows for the bandwidth. Skipped, with
     the reason, when torch or a CUDA device is absent.

Prints one table with the ratios and writes every figure to --json. Needs python3 and numpy (torch when
present); no pip. The whole run stays within min(--budget, 300) seconds: measurement windows shrink to
fit, and a phase that no longer fits is reported as skipped.
"""

import argparse
import http.client
import json
import multiprocessing
import os
import platform
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

K = 10
BATCH = 100
CLIENTS = 16
HITS = "application/vnd.gpu-compute.hits"
OCTETS = "application/octet-stream"
SEARCH_URI = "/collections/{name}/search"


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def load_average():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


class Clock:
    """The run's deadline; every phase asks it for its window."""

    def __init__(self, budget):
        self.start = time.monotonic()
        self.deadline = self.start + budget

    def left(self):
        return self.deadline - time.monotonic()

    def elapsed(self):
        return time.monotonic() - self.start


# ---- data ------------------------------------------------------------------------------------------

def dataset(n, d, seed, queries):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = np.random.default_rng(seed + 1).standard_normal((queries, d), dtype=np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return x, q


def exact_top(x, q, k, torch_module):
    """The exact top k (float64) of each query: ids and scores."""
    if torch_module is not None and torch_module.cuda.is_available():
        torch = torch_module
        xs = torch.from_numpy(x).cuda().double()
        ids, scores = [], []
        for start in range(0, len(q), 50):
            s = torch.from_numpy(q[start:start + 50]).cuda().double() @ xs.T
            v, i = torch.topk(s, k + 1, dim=1)
            ids.append(i.cpu().numpy())
            scores.append(v.cpu().numpy())
        del xs
        torch.cuda.empty_cache()
        return np.concatenate(ids), np.concatenate(scores)
    x64 = x.astype(np.float64)
    ids, scores = [], []
    step = max(1, int(2e8 // (8 * len(x))))
    for start in range(0, len(q), step):
        s = q[start:start + step].astype(np.float64) @ x64.T
        top = np.argpartition(-s, k + 1, axis=1)[:, :k + 1]
        part = np.take_along_axis(s, top, axis=1)
        order = np.argsort(-part, axis=1, kind="stable")
        ids.append(np.take_along_axis(top, order, axis=1))
        scores.append(np.take_along_axis(part, order, axis=1))
    return np.concatenate(ids), np.concatenate(scores)


def exact_scores(x, q, ids):
    """float64 scores of the given (query, row) pairs."""
    return np.einsum("qd,qkd->qk", q.astype(np.float64), x[ids].astype(np.float64))


# ---- the service -----------------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client:
    """One keep-alive connection. The server closes a connection idle for longer than its keep-alive
    timeout (Tomcat: 60 s), which a phase of this script can exceed (an exact ranking on the CPU, 16
    client processes running while this connection waits); the next request on it then fails with a
    broken pipe or a reset before the server read it, and is sent again once on a new connection."""

    RECONNECT = (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected,
                 http.client.CannotSendRequest)

    def __init__(self, port):
        self.port = port
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def _send(self, method, path, body, headers):
        self.connection.request(method, path, body=body, headers=headers)
        return self.connection.getresponse()

    def request(self, method, path, body=None, content_type="application/json", accept=None):
        headers = {}
        if body is not None:
            headers["Content-Type"] = content_type
        if accept:
            headers["Accept"] = accept
        try:
            response = self._send(method, path, body, headers)
        except self.RECONNECT:
            self.connection.close()
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
            response = self._send(method, path, body, headers)
        data = response.read()
        if response.status >= 300:
            raise RuntimeError(f"{method} {path}: HTTP {response.status}: {data[:500]!r}")
        return data, response.getheader("Content-Type", "")

    def json(self, method, path, body=None):
        data, _ = self.request(method, path, json.dumps(body).encode() if body is not None else None)
        return json.loads(data) if data else None

    def close(self):
        self.connection.close()


def decode_hits(data):
    """The binary answer: (scores [Q, k] float32, ids [Q][k] str)."""
    queries, k = struct.unpack_from("<II", data, 0)
    hits = queries * k
    scores = np.frombuffer(data, dtype="<f4", count=hits, offset=8).reshape(queries, k)
    offsets = np.frombuffer(data, dtype="<u4", count=hits + 1, offset=8 + 4 * hits)
    blob = 8 + 8 * hits + 4
    ids = [[data[blob + offsets[q * k + r]:blob + offsets[q * k + r + 1]].decode() for r in range(k)]
           for q in range(queries)]
    return scores, ids


def start_service(args, data_dir, port, log_path):
    command = [args.java]
    if args.backend == "cpu":
        command += ["--add-modules", "jdk.incubator.vector"]
    command += [*args.jvm_option, "-cp", args.classpath, args.main, f"--server.port={port}",
                f"--sample.data-dir={data_dir}", f"--gpu.backend={args.backend}", "--gpu.metrics.kernel-timing=all",
                "--sample.memory-budget=8GB", "--sample.limits.max-body-size=64MB", "--logging.level.root=WARN",
                "--logging.level.dev.gpucompute=INFO"]
    out = open(log_path, "w")
    process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.time() + 180
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the service exited with {process.returncode} at start-up (log: {log_path})")
        try:
            client = Client(port)
            health = client.json("GET", "/actuator/health")
            client.close()
            if health.get("status") == "UP":
                return process, command
        except (OSError, RuntimeError, ValueError, http.client.HTTPException):
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


def prometheus(port):
    client = Client(port)
    try:
        text, _ = client.request("GET", "/actuator/prometheus")
    finally:
        client.close()
    values = {}
    for line in text.decode().splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r"^(gpu_kernel_duration_seconds_(?:sum|count))\{.*kernel=\"([^\"]+)\".*\} (\S+)$", line)
        if m:
            values[(m.group(1), m.group(2))] = values.get((m.group(1), m.group(2)), 0.0) + float(m.group(3))
            continue
        m = re.match(r"^(http_server_requests_seconds_(?:sum|count))\{(.*)\} (\S+)$", line)
        if m and 'uri="' + SEARCH_URI + '"' in m.group(2):
            key = (m.group(1), "search")
            values[key] = values.get(key, 0.0) + float(m.group(3))
    return values


def breakdown(before, after, requests):
    """Per request: kernel ms and launches by kernel, and the server's time for the search."""
    result = {"requests": requests, "kernels": {}}
    for (name, kernel), value in after.items():
        delta = value - before.get((name, kernel), 0.0)
        if kernel == "search":
            if name.endswith("_sum"):
                result["server_ms"] = 1000 * delta / max(1, requests)
            continue
        entry = result["kernels"].setdefault(kernel, {})
        if name.endswith("_sum"):
            entry["ms"] = 1000 * delta / max(1, requests)
        else:
            entry["launches"] = delta / max(1, requests)
    result["kernels"] = {k: v for k, v in result["kernels"].items() if v.get("launches", 0) > 0}
    result["kernel_ms"] = sum(v.get("ms", 0.0) for v in result["kernels"].values())
    return result


def timed(fn, seconds, min_calls):
    """Calls fn(i) until `seconds` passed and min_calls were made: (calls, elapsed)."""
    calls = 0
    start = time.perf_counter()
    while True:
        fn(calls)
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and calls >= min_calls:
            return calls, elapsed


# Timed launches reach the meters when their end event is seen, which may be just after the answer.
METER_SETTLE_S = 0.3


def measure(port, fn, units, seconds, min_calls):
    before = prometheus(port)
    calls, elapsed = timed(fn, seconds, min_calls)
    time.sleep(METER_SETTLE_S)
    after = prometheus(port)
    return {"qps": units * calls / elapsed, "ms_per_request": 1000 * elapsed / calls, "calls": calls,
            "breakdown": breakdown(before, after, calls)}


def _client_worker(port, path, bodies, seconds, offset, stride, barrier, queue):
    client = Client(port)
    count, elapsed, error = 0, 0.0, None
    try:
        client.request("POST", path, bodies[offset % len(bodies)], OCTETS, HITS)  # connected and warm
        barrier.wait(120)
        start = time.perf_counter()
        i = offset
        while time.perf_counter() - start < seconds:
            client.request("POST", path, bodies[i % len(bodies)], OCTETS, HITS)
            count += 1
            i += stride
        elapsed = time.perf_counter() - start
    except Exception as ex:  # reported by the parent
        error = str(ex)
    finally:
        client.close()
    queue.put((count, elapsed, error))


def concurrent(port, path, bodies, clients, seconds):
    """clients processes (spawned: the parent may hold a CUDA context), each with its own connection,
    all released at once; the rate is their requests over the longest of their windows."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    barrier = context.Barrier(clients + 1)
    workers = [context.Process(target=_client_worker, args=(port, path, bodies, seconds, i, clients, barrier, queue))
               for i in range(clients)]
    for w in workers:
        w.start()
    try:
        before = prometheus(port)
        barrier.wait(180)
        results = [queue.get(timeout=seconds + 180) for _ in workers]
    finally:
        for w in workers:
            w.join(30)
            if w.is_alive():
                w.kill()
    errors = [e for _, _, e in results if e]
    if errors:
        raise RuntimeError(f"concurrent clients failed: {errors[0]}")
    total = sum(c for c, _, _ in results)
    time.sleep(METER_SETTLE_S)
    after = prometheus(port)
    return {"clients": clients, "qps": total / max(e for _, e, _ in results), "calls": total,
            "breakdown": breakdown(before, after, total)}


def run_service_set(port, name, x, q, window, clock, torch_module):
    n, d = x.shape
    client = Client(port)
    result = {}
    try:
        client.json("PUT", f"/collections/{name}", {"dimension": d, "metric": "dot"})
        rows_per_request = max(1, (16 << 20) // (d * 4))
        begin = time.perf_counter()
        for start in range(0, n, rows_per_request):
            client.request("POST", f"/collections/{name}/vectors?idPrefix=&idStart={start}",
                           x[start:start + rows_per_request].astype("<f4").tobytes(), OCTETS)
        result["ingest_vectors_per_s"] = n / (time.perf_counter() - begin)
        size = client.json("GET", f"/collections/{name}")["size"]
        if size != n:
            raise RuntimeError(f"the collection holds {size} vectors, expected {n}")
        path = f"/collections/{name}/search"
        singles_bin = [q[i:i + 1].astype("<f4").tobytes() for i in range(len(q))]
        singles_json = [json.dumps({"vectors": q[i:i + 1].tolist(), "k": K}).encode() for i in range(len(q))]
        batches_bin = [q[i:i + BATCH].astype("<f4").tobytes() for i in range(0, len(q) - BATCH + 1, BATCH)]
        batches_json = [json.dumps({"vectors": q[i:i + BATCH].tolist(), "k": K}).encode()
                        for i in range(0, len(q) - BATCH + 1, BATCH)]
        binary_path = f"{path}?k={K}"
        # Warm-up (JIT, kernel loading, the allocator's pool), then the answers for recall.
        for i in range(20):
            client.request("POST", binary_path, singles_bin[i], OCTETS, HITS)
            client.request("POST", path, singles_json[i])
        answers_ids, answers_scores = [], []
        for body in batches_bin:
            data, content_type = client.request("POST", binary_path, body, OCTETS, HITS)
            if not content_type.startswith(HITS):
                raise RuntimeError(f"the binary answer came as {content_type}")
            scores, ids = decode_hits(data)
            answers_ids.extend(ids)
            answers_scores.append(scores)
        result["recall"] = recall(x, q, answers_ids, np.concatenate(answers_scores), torch_module)
        alone_scores, alone_ids = decode_hits(client.request("POST", binary_path, singles_bin[0], OCTETS, HITS)[0])
        result["single_equals_batch"] = (alone_ids[0] == answers_ids[0]
                                         and alone_scores[0].tobytes() == answers_scores[0][0].tobytes())
        phases = [
            ("single_binary", lambda: measure(port, lambda c: client.request(
                "POST", binary_path, singles_bin[c % len(singles_bin)], OCTETS, HITS), 1, window, 20)),
            ("single_json", lambda: measure(port, lambda c: client.request(
                "POST", path, singles_json[c % len(singles_json)]), 1, window, 20)),
            ("concurrent_binary", lambda: concurrent(port, binary_path, singles_bin, CLIENTS, window)),
            ("batch_json", lambda: measure(port, lambda c: client.request(
                "POST", path, batches_json[c % len(batches_json)]), BATCH, window, 3)),
            ("batch_binary", lambda: measure(port, lambda c: client.request(
                "POST", binary_path, batches_bin[c % len(batches_bin)], OCTETS, HITS), BATCH, window, 3)),
        ]
        for phase, run in phases:
            if clock.left() < window + 15:
                result[phase] = {"skipped": f"the budget has {clock.left():.0f} s left"}
                continue
            result[phase] = run()
            log(f"  {name} {phase}: {result[phase]['qps']:,.0f} q/s, kernels "
                f"{result[phase]['breakdown'].get('kernel_ms', 0):.3f} ms per request")
        client.json("DELETE", f"/collections/{name}")
    finally:
        client.close()
    return result


def recall(x, q, ids, scores, torch_module):
    queries = len(ids)
    exact_ids, exact_sc = exact_top(x, q[:queries], K, torch_module)
    strict = tie_aware = 0
    got = np.array([[int(i) for i in row] for row in ids])
    got_exact = exact_scores(x, q[:queries], got)
    worst = 0.0
    for qi in range(queries):
        expected = set(exact_ids[qi, :K].tolist())
        tenth = exact_sc[qi, K - 1]
        for r in range(K):
            if got[qi, r] in expected:
                strict += 1
                tie_aware += 1
            elif got_exact[qi, r] >= tenth - 1e-6:
                tie_aware += 1
            worst = max(worst, abs(float(scores[qi, r]) - got_exact[qi, r]))
    total = queries * K
    return {"queries": queries, "strict": strict / total, "tie_aware": tie_aware / total,
            "max_score_difference": worst}


# ---- PyTorch ---------------------------------------------------------------------------------------

def import_torch():
    try:
        import torch
    except ImportError as ex:
        return None, f"torch not importable: {ex}"
    if not torch.cuda.is_available():
        return None, f"torch {torch.__version__} has no CUDA device"
    return torch, None


def run_torch(torch, x, q, window):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    device = torch.device("cuda")
    rows = torch.from_numpy(x).to(device)
    torch.cuda.synchronize()

    def search(block):
        queries = torch.from_numpy(block).to(device)
        scores, ids = torch.topk(queries @ rows.T, K, dim=1)
        return scores.cpu().numpy(), ids.cpu().numpy()  # the copies back synchronize

    for i in range(10):
        search(q[i:i + 1])
        search(q[:BATCH])
    single_calls, single_time = timed(lambda c: search(q[c % len(q):c % len(q) + 1]), window, 20)
    batch_starts = list(range(0, len(q) - BATCH + 1, BATCH))
    batch_calls, batch_time = timed(lambda c: search(q[batch_starts[c % len(batch_starts)]:][:BATCH]), window, 3)
    # The device-copy bandwidth the kernels are judged against: bytes read + written per second.
    copy = torch.empty_like(rows)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    copy.copy_(rows)
    start.record()
    for _ in range(10):
        copy.copy_(rows)
    end.record()
    torch.cuda.synchronize()
    copy_seconds = start.elapsed_time(end) / 1000 / 10
    result = {
        "version": f"torch {torch.__version__}",
        "device": torch.cuda.get_device_name(0),
        "single_qps": single_calls / single_time,
        "single_ms": 1000 * single_time / single_calls,
        "batch_qps": BATCH * batch_calls / batch_time,
        "batch_ms": 1000 * batch_time / batch_calls,
        "calls": [single_calls, batch_calls],
        "device_copy_tb_per_s": 2 * x.nbytes / copy_seconds / 1e12,
        "rows_read_ms_at_copy_rate": 1000 * x.nbytes / (2 * x.nbytes / copy_seconds),
        "tf32": bool(torch.backends.cuda.matmul.allow_tf32),
    }
    del rows, copy
    torch.cuda.empty_cache()
    return result


# ---- report ----------------------------------------------------------------------------------------

def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "n/a"


def qps(entry):
    return entry.get("qps") if isinstance(entry, dict) else None


def kernel_ms(entry):
    if not isinstance(entry, dict) or "breakdown" not in entry:
        return None
    return entry["breakdown"].get("kernel_ms")


def fmt(value, digits=0):
    return "n/a" if value is None else f"{value:,.{digits}f}"


def table(report):
    lines = [f"Sample search on {report['backend']} ({report['device']}) vs PyTorch, {report['started']}, "
             f"load {report['load_start']} -> {report['load_end']}{' (QUICK)' if report['quick'] else ''}", ""]
    if "failed" in report:
        lines += [f"FAILED: {report['failed'][:2000]}", ""]
    lines.append("| data | figure | PyTorch | service | ratio | kernels per request (service meters) |")
    lines.append("|---|---|---|---|---|---|")
    for s in report["sets"]:
        t = s.get("torch", {})
        v = s.get("service", {})
        name = s["set"]
        if "failed" in v:
            lines.append(f"| {name} | service FAILED: {v['failed'][:200]} | | | | |")
            continue
        tq = t.get("single_qps")
        tb = t.get("batch_qps")
        for label, key, peer in [("1 query/request, binary", "single_binary", tq),
                                 ("1 query/request, JSON", "single_json", tq),
                                 (f"{CLIENTS} clients x 1 query, binary", "concurrent_binary", tq),
                                 ("100 queries/request, JSON", "batch_json", tb),
                                 ("100 queries/request, binary", "batch_binary", tb)]:
            entry = v.get(key, {})
            if "skipped" in entry:
                lines.append(f"| {name} | {label} | | skipped: {entry['skipped']} | | |")
                continue
            kernels = entry.get("breakdown", {}).get("kernels", {})
            detail = ", ".join(f"{k} {e.get('ms', 0):.3f} ms x{e.get('launches', 0):.1f}" for k, e in kernels.items())
            server = entry.get("breakdown", {}).get("server_ms")
            lines.append(f"| {name} | {label} | {fmt(peer)} q/s | {fmt(qps(entry))} q/s | {ratio(qps(entry), peer)} "
                         f"| {detail or 'none'}; server {fmt(server, 2)} ms |")
        if "skipped" in t:
            lines.append(f"| {name} | PyTorch | skipped: {t['skipped']} | | | |")
        else:
            lines.append(f"| {name} | PyTorch whole search | 1 query {t['single_ms']:.3f} ms, 100 queries "
                         f"{t['batch_ms']:.3f} ms | | | device copy {t['device_copy_tb_per_s']:.2f} TB/s: reading the "
                         f"rows takes {t['rows_read_ms_at_copy_rate']:.3f} ms |")
        r = v.get("recall") or {}
        lines.append(f"| {name} | recall@10 ({r.get('queries', 0)} queries), alone = in batch | | "
                     f"{r.get('strict', 0):.4f} strict, {r.get('tie_aware', 0):.4f} tie-aware; "
                     f"{v.get('single_equals_batch')} | | ingest {fmt(v.get('ingest_vectors_per_s'))} vectors/s |")
    goals = report.get("goals")
    if goals:
        lines += ["", "Goals (issue 28, same run): " + "; ".join(f"{g['goal']}: {g['value']} -> "
                                                                  f"{'met' if g['met'] else 'NOT met'}" for g in goals)]
    return "\n".join(lines)


def goals(report):
    result = []
    for s in report["sets"]:
        t, v = s.get("torch", {}), s.get("service", {})
        if "single_qps" not in t or "failed" in v:
            continue
        single_kernel = kernel_ms(v.get("single_binary"))
        batch_kernel = kernel_ms(v.get("batch_binary"))
        if s["set"].startswith("1000000x128"):
            if single_kernel is not None:
                result.append({"goal": "1M x 128 single-query kernels <= 0.25 ms", "value": f"{single_kernel:.3f} ms",
                               "met": single_kernel <= 0.25})
            if qps(v.get("batch_binary")):
                r = qps(v["batch_binary"]) / t["batch_qps"]
                result.append({"goal": "1M x 128 100/request binary >= 0.8x PyTorch batch", "value": f"{r:.2f}x",
                               "met": r >= 0.8})
            if qps(v.get("single_binary")):
                r = qps(v["single_binary"]) / t["single_qps"]
                result.append({"goal": "1M x 128 1/request binary >= 0.3x PyTorch single", "value": f"{r:.2f}x",
                               "met": r >= 0.3})
        if batch_kernel is not None:
            result.append({"goal": f"{s['set']} kernels of a 100-query batch <= PyTorch's whole batch",
                           "value": f"{batch_kernel:.3f} vs {t['batch_ms']:.3f} ms", "met": batch_kernel <= t["batch_ms"]})
        rec = v.get("recall") or {}
        if rec:
            result.append({"goal": f"{s['set']} recall@10 = 1.0", "value": f"{rec['strict']:.4f}",
                           "met": rec["strict"] == 1.0})
    return result


def device_name(backend):
    if backend == "cpu":
        try:
            for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
                if line.startswith("Model name:"):
                    return f"{os.cpu_count()} cores, {line.split(':', 1)[1].strip()}"
        except OSError:
            pass
        return f"{os.cpu_count()} cores"
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
        return out.splitlines()[0] if out else "unknown GPU"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown GPU"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--java", required=True)
    parser.add_argument("--classpath", required=True)
    parser.add_argument("--main", default="dev.gpucompute.sample.SampleApplication")
    parser.add_argument("--backend", choices=["cuda", "cpu"], required=True)
    parser.add_argument("--budget", type=float, required=True, help="seconds the whole run may take (at most 300 used)")
    parser.add_argument("--json", required=True, help="file for every figure")
    parser.add_argument("--quick", action="store_true", help="200k x 128 and 20k x 384, short windows")
    parser.add_argument("--jvm-option", action="append", default=[], help="extra JVM option (repeatable)")
    args = parser.parse_args()
    clock = Clock(min(args.budget, 300) - 5)
    if args.quick:
        sets = [(200_000, 128, 1000, 300), (20_000, 384, 1001, 300)]
        window = 1.0
    else:
        sets = [(1_000_000, 128, 1000, 1000), (100_000, 384, 1001, 1000)]
        window = 3.0
    # Windows shrink to fit the budget: 2 sets x (5 service + 2 PyTorch figures) plus about 60 s of set-up.
    window = max(0.5, min(window, (clock.left() - 60 - 40 * len(sets)) / (len(sets) * 7)))
    torch, torch_missing = import_torch()
    report = {"started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "backend": args.backend,
              "device": device_name(args.backend), "quick": args.quick, "window_s": window,
              "load_start": load_average(), "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                                                         "numpy": np.__version__},
              "sets": []}
    work = tempfile.mkdtemp(prefix="gpu-search-bench-")
    data_dir = os.path.join(work, "data")
    port = free_port()
    log_path = os.path.join(work, "service.log")
    log(f"{args.backend}: starting the service (port {port}, log {log_path}), window {window:.1f} s per figure")
    process = None
    try:
        try:
            process, command = start_service(args, data_dir, port, log_path)
        except RuntimeError as ex:
            with open(log_path) as f:
                tail = f.read()[-3000:]
            report["failed"] = f"{ex}; log tail: {tail}"
            raise
        report["command"] = " ".join(command[:1] + ["..."] + command[command.index(args.main):])
        for index, (n, d, seed, queries) in enumerate(sets):
            name = f"{n}x{d}"
            entry = {"set": name}
            report["sets"].append(entry)
            if clock.left() < 40:
                entry["service"] = {"failed": f"skipped: the budget has {clock.left():.0f} s left"}
                continue
            log(f"{name}: generating data (seed {seed})")
            x, q = dataset(n, d, seed, queries)
            if torch is None:
                entry["torch"] = {"skipped": torch_missing}
            elif clock.left() < 2 * window + 30:
                entry["torch"] = {"skipped": f"the budget has {clock.left():.0f} s left"}
            else:
                log(f"{name}: PyTorch")
                entry["torch"] = run_torch(torch, x, q, window)
                log(f"{name}: PyTorch {json.dumps(entry['torch'])}")
            log(f"{name}: service (load {load_average()})")
            try:
                entry["service"] = run_service_set(port, f"bench{index}", x, q, window, clock, torch)
            except Exception as ex:  # reported, the run goes on
                entry["service"] = {"failed": str(ex)}
                log(f"{name}: FAILED: {ex}")
            del x, q
        with open(log_path) as f:
            report["scoring"] = [line.strip() for line in f if "CPU scoring:" in line or "backend" in line.lower()][:5]
    except RuntimeError as ex:
        log(f"FAILED: {ex}")
        report.setdefault("failed", str(ex))
    finally:
        if process is not None:
            stop_service(process)
        shutil.rmtree(data_dir, ignore_errors=True)
    report["load_end"] = load_average()
    report["seconds"] = clock.elapsed()
    report["goals"] = goals(report)
    text = table(report)
    report["table"] = text
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(report, f, indent=1, default=float)
    print()
    print(text)
    print()
    log(f"{report['seconds']:.0f} s; results in {args.json} (service log: {log_path})")
    # A failed set fails the run too (the GPU check's step shows FAILED), though the other set's
    # figures are kept: a set that failed is not a result. One the budget left no time for is not failed.
    failed_sets = [entry["set"] for entry in report.get("sets", [])
                   if not entry.get("service", {}).get("failed", "skipped").startswith("skipped")]
    if failed_sets:
        log(f"FAILED sets: {', '.join(failed_sets)}")
    return 1 if "failed" in report or failed_sets else 0


if __name__ == "__main__":
    sys.exit(main())
