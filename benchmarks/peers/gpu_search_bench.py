#!/usr/bin/env python3
"""The sample service's search on one backend against a PyTorch peer in-process on the same GPU.

    python3 gpu_search_bench.py --java <java> --classpath <cp> --main dev.gpucompute.sample.SampleApplication \\
        --backend cuda|cpu --budget <seconds> --json <file> [--quick] [--window S] [--client-processes N]
        [--writers N] [--writer-rows R] [--writer-rate W]

Starts the service (`--gpu.backend=<backend>`, `--gpu.metrics.kernel-timing=all`, a fresh temporary
data directory) and, for 1M x 128 and 100k x 384 float32 unit vectors (--quick: 200k x 128 and
20k x 384; fixed seeds; collection metric "dot", so both sides compute the same inner products):

  1. ingests the rows through the binary endpoint (application/octet-stream, ids by idPrefix/idStart);
  2. checks recall@10 of the service against an exact float64 ranking (strict: the same ids;
     tie-aware: an id outside the exact top 10 counts when its exact score is within 1e-6 of the
     10th), that queries alone get the same hits, bit for bit, as inside their 100-query batch, and
     that 16-query batches answer as the 100-query batches do;
  3. measures the service over HTTP in closed loops: 1, 4, 16 and 64 clients of one
     query per request, binary (float32 rows in, application/vnd.gpu-compute.hits out) and JSON;
     16 and 100 queries per request (one client, binary and JSON); k = 10. The first set runs the
     important windows first (binary 1/16/64 clients, the 100-per-request binary rate, the client's
     ceiling), so that a short budget cuts the least important ones;
     Last on the first set, the 16-client binary row twice, back to back: without writers, then while
     --writers (2) writers add vectors to the same collection (--writer-rows 16 per request, at most
     --writer-rate 50 requests/s each; new ids, so the collection grows): the searches' p50/p99 and
     q/s against the same row without writers, and the writes' rate and latency (writes record the
     storage's first use on their streams and can free it on streams searches hold);
  4. measures the client's own ceiling: the same clients against GET /actuator/health/liveness, a
     trivial endpoint of the service, so that a limit of the client shows as such;
  5. for every window, from the service's meters (Prometheus, scraped at the window's edges while
     the load runs): launches per request of each kernel (gpu.kernel.launches), kernel time per
     request (gpu.kernel.duration), the mean server time (http.server.requests) and the mean batch
     of the `search` batcher (gpu.batch.size); from the client, q/s and the p50/p99 of the round
     trip; from /proc/<pid>/stat (utime + stime over exactly the window), the service process's
     CPU seconds per 1,000 queries; plus one idle window (no requests for 5 s): the service's CPU
     share of one core;
  6. measures PyTorch in-process on the same GPU: float32 `queries @ rows.T` and `torch.topk`, the
     copy of the queries to the device and of the results back included, TF32 off; 1, 16 and 100
     queries per call; plus a device-to-device copy of the rows for the bandwidth. Skipped, with the
     reason, when torch or a CUDA device is absent.

The clients are worker processes (spawned once, before the first window; Python's GIL would limit
threads of one process), each with a few threads, one keep-alive connection per client, every body
encoded before the clock starts. All clients run from a ramp before the window to its end (a
quarter of the window, at least two expected round trips of the clients); a request counts when it
completes inside the window, so the window sees a steady closed loop.

Prints one table with the ratios (to the fixed yardstick of the concurrency goals, 27,421 q/s, for
1M x 128; to the same run's 100-per-request binary rate; to PyTorch) and the goals (against PyTorch,
and of concurrent clients over HTTP) with met / NOT met, and writes every figure to --json. Needs
python3 and numpy (torch when present); no pip.
The whole run stays within min(--budget, 300) seconds: measurement windows shrink to fit, and a
window that no longer fits is reported as skipped (a failed set fails the run; a skipped one does not).
"""

import argparse
import array
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
import threading
import time

import numpy as np

K = 10
BATCH = 100
SMALL_BATCH = 16
CLIENT_COUNTS = (1, 4, 16, 64)
HITS = "application/vnd.gpu-compute.hits"
OCTETS = "application/octet-stream"
JSON = "application/json"
SEARCH_URI = "/collections/{name}/search"
# The trivial endpoint of the client's ceiling, and the uri tag its requests carry in the meters.
CEILING_PATH = "/actuator/health/liveness"
CEILING_URI = "/actuator/health/**"
# The concurrency goals' fixed yardstick: the 100-per-request binary rate of 1M x 128 on the H200 run of main
# 24a8283 (../shared/gpu-runs/2026-11-27-h200/call1/dev-search/search.json).
YARDSTICK_QPS = 27_421
YARDSTICK_SET = "1000000x128"
IDLE_S = 5.0
# Distinct bodies per client window: enough that no cache sees the same query twice in a row.
CLIENT_BODIES = 256
CLK_TCK = os.sysconf("SC_CLK_TCK")


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
    timeout (Tomcat: 60 s), which a phase of this script can exceed (an exact ranking on the CPU, the
    windows of the client processes running while this connection waits); the next request on it then fails with a
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
                "--logging.level.dev.gpucompute=INFO", *args.service_arg]
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


# ---- the service's meters and CPU time --------------------------------------------------------------

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
# Prometheus name -> the key prefix of a meter snapshot, and the label that names the series.
_METERS = {
    "gpu_kernel_launches_total": ("launches", "kernel"),
    "gpu_kernel_duration_seconds_sum": ("kernel_s", "kernel"),
    "http_server_requests_seconds_sum": ("http_s", "uri"),
    "http_server_requests_seconds_count": ("http_n", "uri"),
    "gpu_batch_size_items_sum": ("batch_items", "batcher"),
    "gpu_batch_size_items_count": ("batches", "batcher"),
}


def meters(port):
    """The meters this benchmark reads, as {"<kind>|<series>": value}, summed over the other labels
    (launches: outcome="success" only; failed launches are "launch_errors")."""
    client = Client(port)
    try:
        text, _ = client.request("GET", "/actuator/prometheus")
    finally:
        client.close()
    values = {}
    for line in text.decode().splitlines():
        if line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m or m.group(1) not in _METERS:
            continue
        kind, label = _METERS[m.group(1)]
        labels = dict(_LABEL.findall(m.group(2)))
        if kind == "launches" and labels.get("outcome") != "success":
            kind = "launch_errors"
        key = f"{kind}|{labels.get(label, '')}"
        values[key] = values.get(key, 0.0) + float(m.group(3))
    return values


def meter_delta(before, after):
    return {key: value - before.get(key, 0.0) for key, value in after.items() if value != before.get(key, 0.0)}


def cpu_seconds(pid):
    """utime + stime of a process (all its threads), from /proc/<pid>/stat, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": fields 3.. of proc(5)
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class Service:
    """A running service the clients measure: its port and the pid whose CPU time is read."""

    def __init__(self, port, pid):
        self.port = port
        self.pid = pid


def idle_window(services, seconds=IDLE_S):
    """No requests for `seconds`: each service's CPU time over them (the same seconds for all), as a
    share of one core; one figure per service, in order."""
    time.sleep(0.5)  # the last answers and their meters settle
    before = [cpu_seconds(service.pid) for service in services]
    time.sleep(seconds)
    figures = []
    for service, start in zip(services, before):
        used = cpu_seconds(service.pid) - start
        figures.append({"seconds": seconds, "cpu_s": used, "core_share": used / seconds})
    return figures


# ---- closed-loop clients -------------------------------------------------------------------------------

def _client_thread(port, spec, bodies, client_id, shared, result):
    """One client: its own keep-alive connection; one request after the other from the start time
    to the end time; the latencies of the requests that completed inside the measured window."""
    client = Client(port)
    latencies = array.array("d")
    sent = 0
    try:
        index = client_id
        body = bodies[index % len(bodies)] if bodies else None
        client.request(spec["method"], spec["path"], body, spec["content_type"], spec["accept"])  # connected
        shared["ready"].wait(120)
        if not shared["go"].wait(300):
            raise RuntimeError("no start time came")
        ramp, begin, end = shared["times"]
        delay = ramp - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        while True:
            t0 = time.monotonic()
            if t0 >= end:
                break
            body = bodies[index % len(bodies)] if bodies else None
            client.request(spec["method"], spec["path"], body, spec["content_type"], spec["accept"])
            t1 = time.monotonic()
            sent += 1
            if begin <= t1 <= end:
                latencies.append(t1 - t0)
            index += spec["clients"]
        result["latencies"] = latencies
        result["sent"] = sent
    except threading.BrokenBarrierError:
        result["error"] = "another client of this process failed before the start"
    except Exception as ex:  # reported by the parent
        result["error"] = f"{type(ex).__name__}: {ex}"
        try:
            shared["ready"].abort()
        except Exception:
            pass
    finally:
        client.close()


def _pool_worker(connection):
    """A client process: keeps the bodies it is sent, runs the clients of each window on threads."""
    bodies = {}
    while True:
        message = connection.recv()
        if message[0] == "stop":
            return
        if message[0] == "bodies":
            bodies[message[1]] = message[2]
            continue
        _, port, spec, client_ids = message
        shared = {"ready": threading.Barrier(len(client_ids) + 1), "go": threading.Event(), "times": None}
        results = [{} for _ in client_ids]
        threads = [threading.Thread(target=_client_thread, daemon=True,
                                    args=(port, spec, bodies.get(spec["bodies"]), c, shared, results[i]))
                   for i, c in enumerate(client_ids)]
        for t in threads:
            t.start()
        try:
            shared["ready"].wait(150)
            connection.send(("ready", None))
        except threading.BrokenBarrierError:
            connection.send(("ready", "a client failed to connect"))
        go = connection.recv()  # ("go", (ramp, begin, end)) or ("cancel",)
        if go[0] == "go":
            shared["times"] = go[1]
        else:
            shared["times"] = (0.0, 0.0, 0.0)  # the clients stop at once
        cpu0, t0 = os.times(), time.monotonic()
        shared["go"].set()
        for t in threads:
            t.join()
        cpu1, t1 = os.times(), time.monotonic()
        errors = [r["error"] for r in results if "error" in r]
        latencies = array.array("d")
        for r in results:
            latencies.extend(r.get("latencies", ()))
        connection.send(("done", {"latencies": latencies.tobytes(), "sent": sum(r.get("sent", 0) for r in results),
                                  "errors": errors,
                                  "cores": ((cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)) / max(1e-9, t1 - t0)}))


def default_client_processes():
    """Processes for the clients: half the cores (the service needs the rest), at least 2, at most 16."""
    return max(2, min(16, (os.cpu_count() or 2) // 2))


class ClientPool:
    """Client processes, spawned once (the parent may hold a CUDA context) and reused by every window,
    so that a window with 64 clients costs no process start-up. Client c of a window runs in process
    c mod P as a thread with its own connection; threads of one process share its GIL, which is why
    there are several processes. Not thread-safe: one window at a time."""

    def __init__(self, processes):
        context = multiprocessing.get_context("spawn")
        self.connections = []
        self.processes = []
        self.loaded = []
        self.bodies = {}
        for _ in range(processes):
            parent, child = context.Pipe()
            process = context.Process(target=_pool_worker, args=(child,), daemon=True)
            process.start()
            child.close()
            self.connections.append(parent)
            self.processes.append(process)
            self.loaded.append(set())

    def __len__(self):
        return len(self.processes)

    def add_bodies(self, name, bodies):
        """Bodies for later windows (sent to a process when it first needs them)."""
        self.bodies[name] = list(bodies)
        for loaded in self.loaded:
            loaded.discard(name)

    def _receive(self, connection, timeout, what):
        if not connection.poll(timeout):
            raise RuntimeError(f"a client process did not answer {what} within {timeout:.0f} s")
        return connection.recv()

    def run(self, service, method, path, bodies, content_type, accept, clients, seconds, ramp, uri,
            queries_per_request):
        """One measured window: `clients` closed-loop clients from `ramp` seconds before the window to
        its end. Returns the raw figures of the window (see summarize)."""
        used = min(clients, len(self.processes))
        spec = {"method": method, "path": path, "bodies": bodies, "content_type": content_type,
                "accept": accept, "clients": clients}
        for w in range(used):
            if bodies is not None and bodies not in self.loaded[w]:
                self.connections[w].send(("bodies", bodies, self.bodies[bodies]))
                self.loaded[w].add(bodies)
            self.connections[w].send(("run", service.port, spec, list(range(w, clients, used))))
        problems = [self._receive(self.connections[w], 180, "ready")[1] for w in range(used)]
        failed = next((p for p in problems if p), None)
        if failed:
            for w in range(used):
                self.connections[w].send(("cancel",))
            outcomes = [self._receive(self.connections[w], 120, "done")[1] for w in range(used)]
            errors = [e for o in outcomes for e in o["errors"]]
            raise RuntimeError(f"clients failed to start: {errors[0] if errors else failed}")
        ramp_at = time.monotonic() + 0.05
        begin = ramp_at + ramp
        end = begin + seconds
        for w in range(used):
            self.connections[w].send(("go", (ramp_at, begin, end)))
        # The meters are scraped just before the window and just after it, while the load runs, and
        # the CPU time is read at its edges: both cover the same steady closed loop.
        time.sleep(max(0.0, begin - 0.15 - time.monotonic()))
        before = meters(service.port)
        time.sleep(max(0.0, begin - time.monotonic()))
        cpu0, t0 = cpu_seconds(service.pid), time.monotonic()
        time.sleep(max(0.0, end - time.monotonic()))
        cpu1, t1 = cpu_seconds(service.pid), time.monotonic()
        after = meters(service.port)
        outcomes = [self._receive(self.connections[w], 300, "done")[1] for w in range(used)]
        errors = [e for o in outcomes for e in o["errors"]]
        if errors:
            raise RuntimeError(f"{len(errors)} of {clients} clients failed: {errors[0]}")
        latencies = array.array("d")
        for o in outcomes:
            latencies.frombytes(o["latencies"])
        return {"clients": clients, "processes": used, "queries_per_request": queries_per_request, "uri": uri,
                "seconds": end - begin, "completed": len(latencies), "sent": sum(o["sent"] for o in outcomes),
                "latencies": latencies, "cpu_s": cpu1 - cpu0, "cpu_window_s": t1 - t0,
                "client_cores": sum(o["cores"] for o in outcomes),
                "meters": meter_delta(before, after)}

    def close(self):
        for connection in self.connections:
            try:
                connection.send(("stop",))
            except (OSError, ValueError):
                pass
        for process in self.processes:
            process.join(10)
            if process.is_alive():
                process.kill()


class Writers:
    """`count` writer threads in this process, each adding `rows` vectors per request to a collection
    (binary upload, ids `<prefix><writer>-<n>` never used before), at most `rate` requests/s each (0: no
    pause), from start() to stop(): the writes that a search window runs beside. Threads, not client
    processes: they spend their time waiting for the service (the GIL is free meanwhile), and the
    search clients keep their own processes."""

    def __init__(self, port, collection, bodies, count, rows, rate, prefix):
        self.port, self.collection, self.bodies = port, collection, bodies
        self.count, self.rows, self.rate, self.prefix = count, rows, rate, prefix
        self.next_id = [0] * count
        self.threads = []
        self.stopping = threading.Event()
        self.results = []

    def _run(self, writer, result):
        client = Client(self.port)
        latencies = array.array("d")
        try:
            i = writer
            while not self.stopping.is_set():
                t0 = time.monotonic()
                path = (f"/collections/{self.collection}/vectors?idPrefix={self.prefix}{writer}-"
                        f"&idStart={self.next_id[writer]}")
                client.request("POST", path, self.bodies[i % len(self.bodies)], OCTETS)
                t1 = time.monotonic()
                latencies.append(t1 - t0)
                self.next_id[writer] += self.rows
                i += self.count
                if self.rate > 0:
                    self.stopping.wait(max(0.0, 1.0 / self.rate - (t1 - t0)))
        except Exception as ex:  # reported by stop()
            result["error"] = f"{type(ex).__name__}: {ex}"
        finally:
            client.close()
            result["latencies"] = latencies

    def start(self):
        self.stopping.clear()
        self.results = [{} for _ in range(self.count)]
        self.threads = [threading.Thread(target=self._run, args=(w, self.results[w]), daemon=True)
                        for w in range(self.count)]
        self.started = time.monotonic()
        for t in self.threads:
            t.start()

    def stop(self):
        """Stops the writers (each ends its request in flight) and returns their figures."""
        self.stopping.set()
        for t in self.threads:
            t.join(120)
        seconds = time.monotonic() - self.started
        errors = [r["error"] for r in self.results if "error" in r]
        flat = sorted(v for r in self.results for v in r.get("latencies", ()))
        writes = len(flat)
        return {"writers": self.count, "rows_per_write": self.rows, "rate_limit_per_writer": self.rate,
                "seconds": seconds, "writes": writes, "rows_added": writes * self.rows,
                "writes_per_s": writes / seconds if seconds else 0.0,
                "write_p50_ms": 1000 * percentile(flat, 0.50) if flat else None,
                "write_p99_ms": 1000 * percentile(flat, 0.99) if flat else None, "errors": errors}


def writer_bodies(d, rows, seed, count=64):
    """`count` request bodies of `rows` float32 unit vectors each (binary, little-endian)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((count * rows, d), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return [x[i * rows:(i + 1) * rows].astype("<f4").tobytes() for i in range(count)]


def percentile(sorted_values, p):
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * p))]


def summarize(parts):
    """The figures of one or more windows of the same kind (pooled: q/s over their total time,
    percentiles over all their latencies, meters and CPU time summed)."""
    first = parts[0]
    qpr = first["queries_per_request"]
    seconds = sum(p["seconds"] for p in parts)
    completed = sum(p["completed"] for p in parts)
    flat = sorted(v for p in parts for v in p["latencies"])
    totals = {}
    for p in parts:
        for key, value in p["meters"].items():
            totals[key] = totals.get(key, 0.0) + value
    cpu = sum(p["cpu_s"] for p in parts)
    cpu_window = sum(p["cpu_window_s"] for p in parts)
    uri = first["uri"]
    server_requests = totals.get(f"http_n|{uri}", 0.0)
    per = max(1.0, server_requests)
    kernels = {}
    for key, value in totals.items():
        kind, _, name = key.partition("|")
        if kind == "launches" and value > 0:
            kernels.setdefault(name, {})["launches"] = value / per
        elif kind == "kernel_s" and value > 0:
            kernels.setdefault(name, {})["ms"] = 1000 * value / per
    batches = {name.partition("|")[2]: {"batches": totals[name],
                                         "mean": totals.get("batch_items|" + name.partition("|")[2], 0.0) / totals[name]}
               for name in totals if name.startswith("batches|") and totals[name] > 0}
    units = completed * (qpr or 1)
    rate = units / seconds if seconds else 0.0
    cores = cpu / cpu_window if cpu_window else None
    figure = {
        "clients": first["clients"], "processes": first["processes"], "queries_per_request": qpr,
        "seconds": seconds, "requests": completed, "rps": completed / seconds if seconds else 0.0,
        "qps": units / seconds if seconds and qpr else None,
        "p50_ms": 1000 * percentile(flat, 0.50) if flat else None,
        "p99_ms": 1000 * percentile(flat, 0.99) if flat else None,
        "mean_ms": 1000 * sum(flat) / len(flat) if flat else None,
        "server_requests": server_requests,
        "server_ms": 1000 * totals.get(f"http_s|{uri}", 0.0) / server_requests if server_requests else None,
        "kernels": kernels,
        "kernel_ms": sum(k.get("ms", 0.0) for k in kernels.values()),
        "launch_errors": sum(v for k, v in totals.items() if k.startswith("launch_errors|")),
        "batchers": batches,
        "service_cpu_s": cpu,
        "service_cores": cores,
        # The client processes' CPU time (from the start of the ramp to the last answer) per second.
        "client_cores": sum(p["client_cores"] * p["seconds"] for p in parts) / seconds if seconds else None,
        # CPU time over the window's edges (read within a few ms of them) per 1,000 queries done in it
        # (per 1,000 requests for the ceiling, whose requests carry no query).
        "cpu_s_per_1000": 1000 * cores / rate if rate and cores is not None else None,
        "window_rates": [p["completed"] * (qpr or 1) / p["seconds"] for p in parts],
    }
    return figure


def launches(figure, kernel):
    return (figure.get("kernels", {}).get(kernel) or {}).get("launches", 0.0)
# ---- one data set on the service ---------------------------------------------------------------------

def phase_specs(name, primary):
    """The measured windows of a set, most important first: (key, method, path, bodies, content type,
    accept, clients, queries per request, uri tag). The client's ceiling is measured with the first set."""
    path = f"/collections/{name}/search"
    binary = f"{path}?k={K}"

    def single(fmt, clients):
        if fmt == "binary":
            return (f"binary_{clients}", "POST", binary, f"{name}/1/binary", OCTETS, HITS, clients, 1, SEARCH_URI)
        return (f"json_{clients}", "POST", path, f"{name}/1/json", JSON, None, clients, 1, SEARCH_URI)

    def batch(fmt, size):
        if fmt == "binary":
            return (f"batch{size}_binary", "POST", binary, f"{name}/{size}/binary", OCTETS, HITS, 1, size, SEARCH_URI)
        return (f"batch{size}_json", "POST", path, f"{name}/{size}/json", JSON, None, 1, size, SEARCH_URI)

    def ceiling(clients):
        return (f"ceiling_{clients}", "GET", CEILING_PATH, None, None, None, clients, None, CEILING_URI)

    order = [single("binary", 1), single("binary", 16), single("binary", 64), batch("binary", BATCH)]
    if primary:
        order += [ceiling(1), ceiling(16), ceiling(64)]
    order += [single("json", 1), single("json", 16), single("json", 64), batch("binary", SMALL_BATCH),
              single("binary", 4), single("json", 4)]
    if primary:
        order.append(ceiling(4))
    order += [batch("json", BATCH), batch("json", SMALL_BATCH)]
    return order


def ramp_for(window):
    """Seconds the clients run before a window starts, so that it sees a steady closed loop."""
    return min(1.0, max(0.25, window / 4))


def run_window(pool, service, spec, window, ramp=None):
    key, method, path, bodies, content_type, accept, clients, qpr, uri = spec
    figure = summarize([pool.run(service, method, path, bodies, content_type, accept, clients, window,
                                 ramp if ramp is not None else ramp_for(window), uri, qpr)])
    figure["ramp_s"] = ramp if ramp is not None else ramp_for(window)
    return figure


def closed_loop_ramp(window, clients, rate):
    """The ramp of a window of `clients` single-query clients, where `rate` (requests/s) is the last
    rate seen for the same kind: at least two of their expected round trips (clients / rate), because
    a service that shares its cores among requests answers the first ones of a burst of many clients
    only after about one round trip, which the window must not see."""
    ramp = ramp_for(window)
    if rate and clients > 1:
        ramp = max(ramp, min(3.0, 2 * clients / rate))
    return ramp


def describe(figure):
    rate = f"{figure['qps']:,.0f} q/s" if figure.get("qps") is not None else f"{figure['rps']:,.0f} req/s"
    kernels = ", ".join(f"{k} x{v.get('launches', 0):.2f}" for k, v in figure["kernels"].items())
    return (f"{rate}, p50 {fmt(figure['p50_ms'], 2)} ms, p99 {fmt(figure['p99_ms'], 2)} ms, "
            f"{kernels or 'no kernels'}, server {fmt(figure['server_ms'], 2)} ms, "
            f"service {fmt(figure['service_cores'], 2)} cores, client {fmt(figure['client_cores'], 2)} cores")


WRITER_CLIENTS = 16


def writers_pair(pool, service, name, d, window, ramp, writers):
    """The 16-client binary row twice, back to back on the same collection: without writers, then while
    `writers["count"]` writers add vectors to it. Returns the two windows and the writers' figures."""
    spec = next(s for s in phase_specs(name, False) if s[0] == f"binary_{WRITER_CLIENTS}")
    quiet_key, busy_key = f"writers0_{WRITER_CLIENTS}", f"writers{writers['count']}_{WRITER_CLIENTS}"
    figures = {quiet_key: run_window(pool, service, (quiet_key,) + spec[1:], window, ramp)}
    group = Writers(service.port, name, writer_bodies(d, writers["rows"], 4242), writers["count"], writers["rows"],
                    writers["rate"], "w")
    group.start()
    try:
        figures[busy_key] = run_window(pool, service, (busy_key,) + spec[1:], window, ramp)
    finally:
        stats = group.stop()
    if stats["errors"]:
        raise RuntimeError(f"{len(stats['errors'])} of {writers['count']} writers failed: {stats['errors'][0]}")
    return figures, stats


def run_service_set(service, pool, name, x, q, window, clock, torch_module, primary, writers=None):
    n, d = x.shape
    client = Client(service.port)
    result = {"windows": {}}
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
        binary_path = f"{path}?k={K}"

        def blocks(size_):
            return [q[i:i + size_] for i in range(0, len(q) - size_ + 1, size_)]

        bodies = {}
        for size_ in (1, SMALL_BATCH, BATCH):
            bodies[f"{name}/{size_}/binary"] = [b.astype("<f4").tobytes() for b in blocks(size_)]
            bodies[f"{name}/{size_}/json"] = [json.dumps({"vectors": b.tolist(), "k": K}).encode() for b in blocks(size_)]
        for key, value in bodies.items():
            pool.add_bodies(key, value[:CLIENT_BODIES])
        singles_bin = bodies[f"{name}/1/binary"]
        # Warm-up (JIT, kernel loading, the allocator's pool), then the answers for recall.
        for i in range(20):
            client.request("POST", binary_path, singles_bin[i], OCTETS, HITS)
            client.request("POST", path, bodies[f"{name}/1/json"][i])
        for size_ in (SMALL_BATCH, BATCH):
            for i in range(3):
                client.request("POST", binary_path, bodies[f"{name}/{size_}/binary"][i], OCTETS, HITS)
                client.request("POST", path, bodies[f"{name}/{size_}/json"][i])
        answers_ids, answers_scores = [], []
        for body in bodies[f"{name}/{BATCH}/binary"]:
            data, content_type = client.request("POST", binary_path, body, OCTETS, HITS)
            if not content_type.startswith(HITS):
                raise RuntimeError(f"the binary answer came as {content_type}")
            scores, ids = decode_hits(data)
            answers_ids.extend(ids)
            answers_scores.append(scores)
        answers_scores = np.concatenate(answers_scores)
        result["recall"] = recall(x, q, answers_ids, answers_scores, torch_module)
        # Exactness: a query alone, and in a batch of 16, answers as in its batch of 100, bit for bit.
        alone = same_alone = 0
        for i in range(20):
            scores, ids = decode_hits(client.request("POST", binary_path, singles_bin[i], OCTETS, HITS)[0])
            alone += 1
            same_alone += ids[0] == answers_ids[i] and scores[0].tobytes() == answers_scores[i].tobytes()
        small = same_small = 0
        for b, body in enumerate(bodies[f"{name}/{SMALL_BATCH}/binary"][:6]):
            scores, ids = decode_hits(client.request("POST", binary_path, body, OCTETS, HITS)[0])
            for r in range(SMALL_BATCH):
                i = b * SMALL_BATCH + r
                small += 1
                same_small += ids[r] == answers_ids[i] and scores[r].tobytes() == answers_scores[i].tobytes()
        result["single_equals_batch"] = same_alone == alone
        result["exactness"] = {"alone_same": same_alone, "alone": alone, "batch16_same": same_small,
                               "batch16": small}
        # A short closed loop at a few clients, unrecorded, so that the first window does not warm up.
        warm = min(0.5, window)
        for spec in phase_specs(name, False):
            if spec[0] in ("binary_1", "json_1"):
                run_window(pool, service, spec[:6] + (4,) + spec[7:], warm)
        rates = {}  # the last requests/s of single-query windows, by format: the next one's ramp
        for spec in phase_specs(name, primary):
            key = spec[0]
            kind = key.partition("_")[0]
            ramp = closed_loop_ramp(window, spec[6], rates.get(kind))
            if clock.left() < window + ramp + 15:
                result["windows"][key] = {"skipped": f"the budget has {clock.left():.0f} s left"}
                continue
            result["windows"][key] = run_window(pool, service, spec, window, ramp)
            if kind in ("binary", "json"):
                rates[kind] = result["windows"][key]["rps"]
            log(f"  {name} {key}: {describe(result['windows'][key])}")
        if primary and writers and writers["count"] > 0:
            # Last: the writers grow the collection, which no window after them should see.
            ramp = closed_loop_ramp(window, WRITER_CLIENTS, rates.get("binary"))
            if clock.left() < 2 * (window + ramp) + IDLE_S + 20:
                result["writes"] = {"skipped": f"the budget has {clock.left():.0f} s left"}
            else:
                figures, result["writes"] = writers_pair(pool, service, name, d, window, ramp, writers)
                result["windows"].update(figures)
                for key, figure in figures.items():
                    log(f"  {name} {key}: {describe(figure)}")
                w = result["writes"]
                log(f"  {name} writers: {w['writes_per_s']:,.0f} writes/s of {w['rows_per_write']} rows "
                    f"({w['rows_added']:,} rows added), write p50 {fmt(w['write_p50_ms'], 2)} ms, "
                    f"p99 {fmt(w['write_p99_ms'], 2)} ms")
        if primary:
            if clock.left() < IDLE_S + 15:
                result["idle"] = {"skipped": f"the budget has {clock.left():.0f} s left"}
            else:
                result["idle"] = idle_window([service])[0]
                log(f"  idle {IDLE_S:.0f} s: the service used {100 * result['idle']['core_share']:.2f}% of one core")
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
        search(q[:SMALL_BATCH])
        search(q[:BATCH])
    single_calls, single_time = timed(lambda c: search(q[c % len(q):c % len(q) + 1]), window, 20)
    small_starts = list(range(0, len(q) - SMALL_BATCH + 1, SMALL_BATCH))
    small_calls, small_time = timed(lambda c: search(q[small_starts[c % len(small_starts)]:][:SMALL_BATCH]),
                                    window, 3)
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
        "batch16_qps": SMALL_BATCH * small_calls / small_time,
        "batch16_ms": 1000 * small_time / small_calls,
        "batch_qps": BATCH * batch_calls / batch_time,
        "batch_ms": 1000 * batch_time / batch_calls,
        "calls": [single_calls, small_calls, batch_calls],
        "device_copy_tb_per_s": 2 * x.nbytes / copy_seconds / 1e12,
        "rows_read_ms_at_copy_rate": 1000 * x.nbytes / (2 * x.nbytes / copy_seconds),
        "tf32": bool(torch.backends.cuda.matmul.allow_tf32),
    }
    del rows, copy
    torch.cuda.empty_cache()
    return result


# ---- report ----------------------------------------------------------------------------------------

def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else ""


def fmt(value, digits=0):
    return "n/a" if value is None else f"{value:,.{digits}f}"


def window_label(key):
    kind, _, arg = key.partition("_")
    if kind.startswith("writers"):
        count = kind[len("writers"):]
        return (f"{arg} clients x 1 query, binary, " + ("no writers (paired with the next row)" if count == "0"
                else f"while {count} writers add vectors"))
    if kind in ("binary", "json"):
        clients = int(arg)
        return f"{clients} client{'s' if clients > 1 else ''} x 1 query, {'binary' if kind == 'binary' else 'JSON'}"
    if kind == "ceiling":
        return f"client ceiling: {arg} client{'s' if arg != '1' else ''}, GET {CEILING_PATH}"
    size = kind[len("batch"):]
    return f"{size} queries/request, {'binary' if arg == 'binary' else 'JSON'}"


def display_order(primary, windows=None):
    keys = [f"binary_{c}" for c in CLIENT_COUNTS] + [f"json_{c}" for c in CLIENT_COUNTS]
    keys += [f"batch{SMALL_BATCH}_binary", f"batch{SMALL_BATCH}_json", f"batch{BATCH}_binary", f"batch{BATCH}_json"]
    if primary:
        keys += [f"ceiling_{c}" for c in CLIENT_COUNTS]
        keys += [k for k in sorted(windows or {}) if k.startswith("writers")]
    return keys


def torch_rate(torch_result, key):
    if key.startswith(("binary_", "json_", "writers")):
        return torch_result.get("single_qps")
    if key.startswith(f"batch{SMALL_BATCH}_"):
        return torch_result.get("batch16_qps")
    if key.startswith(f"batch{BATCH}_"):
        return torch_result.get("batch_qps")
    return None


TABLE_HEADER = ("| data | figure | q/s | vs 27,421 | vs 100/req binary | vs PyTorch | p50 / p99 ms | launches per request "
                "| kernels ms/req | server ms | mean batch | CPU s / 1k q | cores service / client |")


def table(report):
    lines = [f"Sample search on {report['backend']} ({report['device']}) vs PyTorch, {report['started']}, "
             f"load {report['load_start']} -> {report.get('load_end', '?')}; clients in "
             f"{report.get('client_processes', '?')} processes; {report['window_s']:.1f} s per window"
             f"{' (QUICK)' if report['quick'] else ''}", ""]
    if "failed" in report:
        lines += [f"FAILED: {report['failed'][:2000]}", ""]
    lines.append(TABLE_HEADER)
    lines.append("|---" * 13 + "|")
    for index, s in enumerate(report["sets"]):
        t = s.get("torch", {})
        v = s.get("service", {})
        name = s["set"]
        if "failed" in v:
            what = v["failed"] if v["failed"].startswith("skipped") else f"service FAILED: {v['failed'][:300]}"
            lines.append(f"| {name} | {what} |" + " |" * 11)
            continue
        windows = v.get("windows", {})
        reference = (windows.get(f"batch{BATCH}_binary") or {}).get("qps")
        for key in display_order(index == 0, windows):
            entry = windows.get(key)
            if entry is None:
                continue
            label = window_label(key)
            if "skipped" in entry:
                lines.append(f"| {name} | {label} | skipped: {entry['skipped']} |" + " |" * 10)
                continue
            rate = entry.get("qps")
            shown = f"{rate:,.0f}" if rate is not None else f"{entry['rps']:,.0f} req/s"
            kernels = ", ".join(f"{k} {e.get('launches', 0):.2f}" for k, e in entry["kernels"].items())
            batch = (entry["batchers"].get("search") or {}).get("mean")
            lines.append(
                f"| {name} | {label} | {shown} | {ratio(rate, YARDSTICK_QPS) if name == YARDSTICK_SET else ''} "
                f"| {ratio(rate, reference)} | {ratio(rate, torch_rate(t, key))} "
                f"| {fmt(entry['p50_ms'], 2)} / {fmt(entry['p99_ms'], 2)} | {kernels or 'none'} "
                f"| {entry['kernel_ms']:.3f} | {fmt(entry['server_ms'], 2)} | {fmt(batch, 1) if batch else ''} "
                f"| {fmt(entry['cpu_s_per_1000'], 3)} | {fmt(entry['service_cores'], 2)} / {fmt(entry['client_cores'], 2)} |")
        writes = v.get("writes")
        if writes:
            text = (f"skipped: {writes['skipped']}" if "skipped" in writes else
                    f"{writes['writers']} writers, {writes['writes_per_s']:,.0f} writes/s of {writes['rows_per_write']} "
                    f"rows ({writes['rows_added']:,} rows added), write p50 / p99 {fmt(writes['write_p50_ms'], 2)} / "
                    f"{fmt(writes['write_p99_ms'], 2)} ms")
            lines.append(f"| {name} | the writes beside the {WRITER_CLIENTS}-client row | {text} |" + " |" * 10)
        idle = v.get("idle")
        if idle:
            text = (f"skipped: {idle['skipped']}" if "skipped" in idle
                    else f"service CPU {100 * idle['core_share']:.2f}% of one core")
            lines.append(f"| {name} | idle {IDLE_S:.0f} s, no requests | {text} |" + " |" * 10)
        if "skipped" in t:
            lines.append(f"| {name} | PyTorch | skipped: {t['skipped']} |" + " |" * 10)
        elif t:
            for label, rate, ms in [("PyTorch, 1 query/call", t["single_qps"], t["single_ms"]),
                                    (f"PyTorch, {SMALL_BATCH} queries/call", t["batch16_qps"], t["batch16_ms"]),
                                    (f"PyTorch, {BATCH} queries/call", t["batch_qps"], t["batch_ms"])]:
                lines.append(f"| {name} | {label} | {rate:,.0f} | | | | whole search {ms:.3f} ms | | | | | | |")
            lines.append(f"| {name} | device copy (PyTorch) | {t['device_copy_tb_per_s']:.2f} TB/s: reading the rows "
                         f"takes {t['rows_read_ms_at_copy_rate']:.3f} ms |" + " |" * 10)
        r = v.get("recall") or {}
        e = v.get("exactness") or {}
        lines.append(f"| {name} | recall@10 ({r.get('queries', 0)} queries); alone = in batch | "
                     f"{r.get('strict', 0):.4f} strict, {r.get('tie_aware', 0):.4f} tie-aware; alone {e.get('alone_same')}"
                     f"/{e.get('alone')}, {SMALL_BATCH}-batch {e.get('batch16_same')}/{e.get('batch16')} bit for bit | "
                     f"ingest {fmt(v.get('ingest_vectors_per_s'))} vectors/s |" + " |" * 9)
    _, judged = primary_set(report)
    note34 = (f"yardstick {YARDSTICK_QPS:,} q/s" if judged == YARDSTICK_SET else
              f"judged on {judged}, not the yardstick's {YARDSTICK_SET}: a rehearsal, the figures are no verdict")
    for title, key in ((f"Goals of concurrent clients over HTTP (same run; {note34})", "goals34"), ("Goals against PyTorch (same run)", "goals")):
        if report.get(key):
            lines += ["", f"{title}:"]
            lines += [f"- {g['goal']}: {g['value']} -> {g['verdict']}" for g in report[key]]
    if report.get("facts34"):
        lines += ["", "Reported beside the goals of concurrent clients:"] + [f"- {f}" for f in report["facts34"]]
    return "\n".join(lines)


def goal(name, value, met):
    return {"goal": name, "value": value, "met": met,
            "verdict": "not measured" if met is None else ("met" if met else "NOT met")}


def goals(report):
    """The goals against PyTorch, for each set that has PyTorch's figures."""
    result = []
    for s in report["sets"]:
        t, v = s.get("torch", {}), s.get("service", {})
        if "single_qps" not in t or "failed" in v:
            continue
        windows = v.get("windows", {})
        single = windows.get("binary_1") or {}
        batch = windows.get(f"batch{BATCH}_binary") or {}
        if s["set"] == YARDSTICK_SET:
            if "kernel_ms" in single:
                result.append(goal("1M x 128 single-query kernels <= 0.25 ms", f"{single['kernel_ms']:.3f} ms",
                                   single["kernel_ms"] <= 0.25))
            if batch.get("qps"):
                r = batch["qps"] / t["batch_qps"]
                result.append(goal("1M x 128 100/request binary >= 0.8x PyTorch batch", f"{r:.2f}x", r >= 0.8))
            if single.get("qps"):
                r = single["qps"] / t["single_qps"]
                result.append(goal("1M x 128 1/request binary >= 0.3x PyTorch single", f"{r:.2f}x", r >= 0.3))
        if "kernel_ms" in batch:
            result.append(goal(f"{s['set']} kernels of a 100-query batch <= PyTorch's whole batch",
                               f"{batch['kernel_ms']:.3f} vs {t['batch_ms']:.3f} ms", batch["kernel_ms"] <= t["batch_ms"]))
        rec = v.get("recall") or {}
        if rec:
            result.append(goal(f"{s['set']} recall@10 = 1.0", f"{rec['strict']:.4f}", rec["strict"] == 1.0))
    return result


def primary_set(report):
    """The set the goals of concurrent clients are judged on: 1M x 128, or (--quick) the first set."""
    for s in report["sets"]:
        if s["set"] == YARDSTICK_SET:
            return s, s["set"]
    if report["sets"]:
        return report["sets"][0], report["sets"][0]["set"]
    return None, None


def goals34(report):
    s, label = primary_set(report)
    if s is None or "failed" in s.get("service", {}):
        return [], []
    v = s["service"]
    w = v.get("windows", {})

    def fig(key):
        entry = w.get(key) or {}
        return entry if "skipped" not in entry else {}

    result = []
    for clients, share in ((16, 0.45), (64, 0.8)):
        rate = fig(f"binary_{clients}").get("qps")
        result.append(goal(f"{label}, binary, {clients} clients x 1 query >= {share}x the yardstick "
                           f"({share * YARDSTICK_QPS:,.0f} q/s)",
                           f"{rate:,.0f} q/s = {rate / YARDSTICK_QPS:.2f}x" if rate else "n/a",
                           rate / YARDSTICK_QPS >= share if rate else None))
    for fmt_ in ("binary", "json"):
        entry = fig(f"{fmt_}_16")
        value = launches(entry, "knn_fused") if entry else None
        result.append(goal(f"{label}, 16 clients, {'binary' if fmt_ == 'binary' else 'JSON'}: knn_fused launches "
                           "per request <= 0.25", f"{value:.3f}" if value is not None else "n/a",
                           value <= 0.25 if value is not None else None))
    small, large = fig(f"batch{SMALL_BATCH}_binary"), fig(f"batch{BATCH}_binary")
    if small.get("kernel_ms") and large.get("kernel_ms"):
        per_small, per_large = small["kernel_ms"] / SMALL_BATCH, large["kernel_ms"] / BATCH
        result.append(goal(f"{label}, a {SMALL_BATCH}-query request's kernel time per query <= 1.5x a "
                           f"{BATCH}-query request's (binary)",
                           f"{per_small:.4f} vs {per_large:.4f} ms = {per_small / per_large:.2f}x",
                           per_small <= 1.5 * per_large))
    else:
        result.append(goal(f"{label}, {SMALL_BATCH}-query request's kernel time per query <= 1.5x a {BATCH}-query's",
                           "n/a (no kernel time)", None))
    # One merge is 1.0 launch per request, a second 2.0; the meters are read while a request may be in
    # flight at each edge of the window, so a figure a little off 1.0 is still one merge.
    topk = launches(small, "knn_topk") if small else None
    result.append(goal(f"{label}, a {SMALL_BATCH}-query request pays no second top-k merge (knn_topk launches "
                       "per request < 1.5: one merge, not two)", f"{topk:.3f}" if topk is not None else "n/a",
                       topk < 1.5 if topk is not None else None))
    server = fig("binary_1").get("server_ms")
    result.append(goal(f"{label}, 1 client, binary: mean server time <= 0.78 ms",
                       f"{server:.3f} ms" if server is not None else "n/a",
                       server <= 0.78 if server is not None else None))
    for s2 in report["sets"]:
        v2 = s2.get("service", {})
        rec, ex = v2.get("recall"), v2.get("exactness")
        if rec and ex:
            same = ex["alone_same"] == ex["alone"] and ex["batch16_same"] == ex["batch16"]
            result.append(goal(f"{s2['set']}: recall@10 = 1.0 strict against float64; alone and in a {SMALL_BATCH}-batch "
                               "= in its 100-batch, bit for bit",
                               f"{rec['strict']:.4f}; alone {ex['alone_same']}/{ex['alone']}, "
                               f"{SMALL_BATCH}-batch {ex['batch16_same']}/{ex['batch16']}",
                               rec["strict"] == 1.0 and same))
    idle = v.get("idle") or {}
    result.append(goal("idle service (no requests for 5 s) < 2% of one core",
                       f"{100 * idle['core_share']:.2f}%" if "core_share" in idle else "n/a",
                       idle["core_share"] < 0.02 if "core_share" in idle else None))

    facts = []
    ceiling = [(c, fig(f"ceiling_{c}").get("rps")) for c in CLIENT_COUNTS]
    facts.append(f"the client's ceiling (the same clients, GET {CEILING_PATH}), req/s by clients: "
                 + ", ".join(f"{c}: {fmt(r)}" for c, r in ceiling))
    for fmt_ in ("binary", "json"):
        facts.append(f"{label}, {fmt_}, round trip p50 / p99 ms by clients: " + ", ".join(
            f"{c}: {fmt(fig(f'{fmt_}_{c}').get('p50_ms'), 2)} / {fmt(fig(f'{fmt_}_{c}').get('p99_ms'), 2)}"
            for c in (1, 16, 64)))
        facts.append(f"{label}, {fmt_}, service CPU s per 1,000 queries by clients: " + ", ".join(
            f"{c}: {fmt(fig(f'{fmt_}_{c}').get('cpu_s_per_1000'), 3)}" for c in (1, 16, 64)))
    writes = v.get("writes") or {}
    if "writes_per_s" in writes:
        quiet, busy = fig(f"writers0_{WRITER_CLIENTS}"), fig(f"writers{writes['writers']}_{WRITER_CLIENTS}")

        def change(key):
            a, b = quiet.get(key), busy.get(key)
            return f"{b / a:.2f}x" if a and b else "n/a"

        facts.append(f"{label}, binary, {WRITER_CLIENTS} clients, searches without / with {writes['writers']} writers "
                     f"adding vectors ({writes['writes_per_s']:,.0f} writes/s of {writes['rows_per_write']} rows): "
                     f"p50 {fmt(quiet.get('p50_ms'), 2)} / {fmt(busy.get('p50_ms'), 2)} ms ({change('p50_ms')}), "
                     f"p99 {fmt(quiet.get('p99_ms'), 2)} / {fmt(busy.get('p99_ms'), 2)} ms ({change('p99_ms')}), "
                     f"{fmt(quiet.get('qps'))} / {fmt(busy.get('qps'))} q/s")
    batch_rate = fig(f"batch{BATCH}_binary").get("qps")
    facts.append(f"{label}, 100 queries/request, binary, this run: {fmt(batch_rate)} q/s "
                 f"(the yardstick: {YARDSTICK_QPS:,} q/s on the H200 run of 24a8283)")
    return result, facts


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


def plan_window(clock, sets, quick, torch_present, most=None, writers=0):
    """Seconds per window so that every window of every set fits the budget: per set about 15 s of
    set-up (data, ingest, recall), per window its ramp and about 0.8 s of scrapes and start-up; at
    most `most` (default 3 s, --quick 1 s)."""
    windows = sum(len(phase_specs("x", i == 0)) + 2 + (3 if torch_present else 0) for i in range(len(sets)))
    windows += 2 if writers else 0  # the paired rows without and with writers, on the first set
    left = clock.left() - 15 * len(sets) - IDLE_S - 10
    window = left / windows - 0.8
    window /= 1.25  # the ramp: a quarter of the window
    return max(0.5, min(most or (1.0 if quick else 3.0), window))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--java", required=True)
    parser.add_argument("--classpath", required=True)
    parser.add_argument("--main", default="dev.gpucompute.sample.SampleApplication")
    parser.add_argument("--backend", choices=["cuda", "cpu"], required=True)
    parser.add_argument("--budget", type=float, required=True, help="seconds the whole run may take (at most 300 used)")
    parser.add_argument("--json", required=True, help="file for every figure")
    parser.add_argument("--quick", action="store_true", help="200k x 128 and 20k x 384, short windows")
    parser.add_argument("--window", type=float, help="at most this many seconds per window (default 3, --quick 1; "
                        "shorter when the budget needs it)")
    parser.add_argument("--client-processes", type=int, default=default_client_processes(),
                        help="processes the closed-loop clients run in (default: half the cores, 2 to 16)")
    parser.add_argument("--writers", type=int, default=2,
                        help="writers adding vectors beside the paired 16-client row of the first set (0: no such row)")
    parser.add_argument("--writer-rows", type=int, default=16, help="vectors per write request")
    parser.add_argument("--writer-rate", type=float, default=50,
                        help="most write requests per second of each writer (0: a closed loop)")
    parser.add_argument("--jvm-option", action="append", default=[], help="extra JVM option (repeatable)")
    parser.add_argument("--service-arg", action="append", default=[],
                        help="extra argument of the service, after the defaults, e.g. "
                             "--service-arg=--gpu.batching.search.max-concurrent-batches=2 (repeatable)")
    args = parser.parse_args()
    clock = Clock(min(args.budget, 300) - 5)
    if args.quick:
        sets = [(200_000, 128, 1000, 300), (20_000, 384, 1001, 300)]
    else:
        sets = [(1_000_000, 128, 1000, 1000), (100_000, 384, 1001, 1000)]
    torch, torch_missing = import_torch()
    window = plan_window(clock, sets, args.quick, torch is not None, args.window, args.writers)
    writers = {"count": args.writers, "rows": args.writer_rows, "rate": args.writer_rate}
    report = {"started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "backend": args.backend,
              "device": device_name(args.backend), "quick": args.quick, "window_s": window,
              "ramp_s": ramp_for(window), "client_processes": args.client_processes,
              "yardstick_qps": YARDSTICK_QPS, "load_start": load_average(), "writers": writers,
              "machine": {"cores": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__},
              "sets": []}
    work = tempfile.mkdtemp(prefix="gpu-search-bench-")
    data_dir = os.path.join(work, "data")
    port = free_port()
    log_path = os.path.join(work, "service.log")
    log(f"{args.backend}: starting the service (port {port}, log {log_path}) and {args.client_processes} client "
        f"processes; window {window:.1f} s (+ {ramp_for(window):.2f} s ramp)")
    process = None
    pool = ClientPool(args.client_processes)
    try:
        try:
            process, command = start_service(args, data_dir, port, log_path)
        except RuntimeError as ex:
            with open(log_path) as f:
                tail = f.read()[-3000:]
            report["failed"] = f"{ex}; log tail: {tail}"
            raise
        service = Service(port, process.pid)
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
            log(f"{name}: service (load {load_average()})")
            try:
                entry["service"] = run_service_set(service, pool, f"bench{index}", x, q, window, clock, torch,
                                                   index == 0, writers)
            except Exception as ex:  # reported, the run goes on
                entry["service"] = {"failed": str(ex)}
                log(f"{name}: FAILED: {ex}")
            if torch is None:
                entry["torch"] = {"skipped": torch_missing}
            elif clock.left() < 3 * window + 20:
                entry["torch"] = {"skipped": f"the budget has {clock.left():.0f} s left"}
            else:
                log(f"{name}: PyTorch")
                entry["torch"] = run_torch(torch, x, q, window)
                log(f"{name}: PyTorch {json.dumps(entry['torch'])}")
            del x, q
        with open(log_path) as f:
            report["scoring"] = [line.strip() for line in f if "CPU scoring:" in line or "backend" in line.lower()][:5]
    except RuntimeError as ex:
        log(f"FAILED: {ex}")
        report.setdefault("failed", str(ex))
    finally:
        pool.close()
        if process is not None:
            stop_service(process)
        shutil.rmtree(data_dir, ignore_errors=True)
    report["load_end"] = load_average()
    report["seconds"] = clock.elapsed()
    report["goals"] = goals(report)
    report["goals34"], report["facts34"] = goals34(report)
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
