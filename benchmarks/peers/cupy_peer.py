#!/usr/bin/env python3
"""CuPy peer of the JMH suite: the same empty-kernel launch loop, SAXPY and
host<->device copies, through CuPy on the same GPU, so that our launch overhead and copy bandwidth
can be compared with CuPy's from one run.

Needs a CUDA device and CuPy (pip install cupy-cuda12x). benchmarks/run.sh runs it when both are
there. Writes JSON (--json PATH) and prints a short table.

    python3 benchmarks/peers/cupy_peer.py --json results/cupy.json [--n 67108864] [--quick]

Method, matched to the JMH benchmarks:
- launch: batches of 1000 launches of an empty RawKernel (1 block of 1 thread) on a non-blocking
  stream, one stream synchronize per batch; ns per launch (LaunchBenchmark.ours / cuda_rawLaunch).
- saxpy: y = a*x + y over n float32 with 256-thread blocks, one launch + synchronize per pass;
  GB/s counting 12 bytes per element (SaxpyBenchmark).
- device copy: device-to-device copy of 4n bytes, GB/s counting read + write (cuda_deviceCopy).
- graphs: pipelines of 1, 10 and 100 empty-kernel launches, 100 pipelines then one stream synchronize:
  as separate launches, and captured once (stream.begin_capture() / end_capture(), a cupy.cuda.Graph)
  and replayed with one Graph.launch per pipeline; ns per pipeline (GraphBenchmark.ours_launches,
  ours_graph, cuda_rawLaunches, cuda_rawGraph).
- copies: host->device and device->host of 1 MiB, 16 MiB and 256 MiB from pinned memory
  (cupyx.empty_pinned) and from pageable numpy arrays, synchronized each time (CopyBenchmark).
  --quick measures every size too, with fewer repetitions: about 3 s more than 1 MiB alone on an
  H200 (a 256 MiB pageable copy takes about 40 ms).
Each figure is the median of the timed repetitions after warm-up.
"""
import argparse
import json
import statistics
import sys
import time

try:
    import cupy as cp
    import cupyx
    import numpy as np
except ImportError as ex:  # pragma: no cover - depends on the machine
    sys.exit(f"SKIPPED: CuPy is not installed ({ex}); install cupy-cuda12x on a machine with a CUDA device")

BATCH = 1000

PIPELINES = 100

EMPTY = r'''extern "C" __global__ void empty() {}'''

SAXPY = r'''
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}'''


def timed(fn, repeats, warmup):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples), min(samples), max(samples)


def graph_rows(empty, stream, repeats):
    """Pipelines of k empty kernels: launched one by one, and as one captured graph per pipeline."""
    if not hasattr(stream, "begin_capture"):
        return {"skipped": "this CuPy has no Stream.begin_capture"}
    rows = {}
    for kernels in (1, 10, 100):
        def launches(kernels=kernels):
            for _ in range(PIPELINES):
                for _ in range(kernels):
                    empty((1,), (1,), ())
            stream.synchronize()

        stream.begin_capture()
        for _ in range(kernels):
            empty((1,), (1,), ())
        graph = stream.end_capture()

        def replays(graph=graph):
            for _ in range(PIPELINES):
                graph.launch(stream)
            stream.synchronize()

        launched, _, _ = timed(launches, repeats, 3)
        replayed, _, _ = timed(replays, repeats, 3)
        rows[str(kernels)] = {"launches": launched / PIPELINES, "graph": replayed / PIPELINES,
                              "graph_over_launches": replayed / launched}
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--n", type=int, default=64 * 1024 * 1024, help="SAXPY elements (default 64M)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()

    repeats = 5 if args.quick else 30
    device = cp.cuda.Device(0)
    props = cp.cuda.runtime.getDeviceProperties(0)
    results = {
        "device": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
        "cupy": cp.__version__,
        "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
        "cuda_driver": cp.cuda.runtime.driverGetVersion(),
        "batch": BATCH,
    }
    stream = cp.cuda.Stream(non_blocking=True)

    with device, stream:
        empty = cp.RawKernel(EMPTY, "empty")

        def launches():
            for _ in range(BATCH):
                empty((1,), (1,), ())
            stream.synchronize()

        med, best, worst = timed(launches, repeats, 5)
        results["launch_ns_per_launch"] = {"median": med / BATCH, "min": best / BATCH, "max": worst / BATCH}

        results["graph_ns_per_pipeline"] = graph_rows(empty, stream, repeats)

        n = args.n
        saxpy = cp.RawKernel(SAXPY, "saxpy")
        x = cp.full(n, 0.75, dtype=cp.float32)
        y = cp.full(n, 3.0, dtype=cp.float32)
        blocks = (n + 255) // 256

        def saxpy_pass():
            saxpy((blocks,), (256,), (np.int32(n), np.float32(2.0), x, y))
            stream.synchronize()

        saxpy_pass()
        if abs(float(y[0]) - 4.5) > 1e-5 or abs(float(y[-1]) - 4.5) > 1e-5:
            sys.exit(f"SAXPY computed {float(y[0])}, {float(y[-1])}, expected 4.5")
        med, best, worst = timed(saxpy_pass, repeats, 3)
        results["saxpy"] = {"n": n, "gbps_median": 12 * n / med, "gbps_best": 12 * n / best}

        dst = cp.empty_like(x)

        def device_copy():
            cp.cuda.runtime.memcpyAsync(dst.data.ptr, x.data.ptr, 4 * n, cp.cuda.runtime.memcpyDeviceToDevice,
                                        stream.ptr)
            stream.synchronize()

        med, best, worst = timed(device_copy, repeats, 3)
        results["device_copy"] = {"bytes": 4 * n, "gbps_median": 8 * n / med, "gbps_best": 8 * n / best}
        del x, y, dst

        copies = {}
        for size in (1 << 20, 16 << 20, 256 << 20):
            d = cp.empty(size, dtype=cp.uint8)
            pinned = cupyx.empty_pinned((size,), dtype=np.uint8)
            pageable = np.ones(size, dtype=np.uint8)
            pinned[:] = 1
            figures = {}
            for label, host in (("pinned", pinned), ("pageable", pageable)):
                def upload(host=host):
                    d.set(host, stream=stream)
                    stream.synchronize()

                def download(host=host):
                    d.get(stream=stream, out=host)
                    stream.synchronize()

                up, _, _ = timed(upload, repeats, 3)
                down, _, _ = timed(download, repeats, 3)
                figures[label] = {"upload_gbps": size / up, "download_gbps": size / down}
            copies[str(size)] = figures
            del d
        results["copies"] = copies

    print(f"device: {results['device']} (CuPy {results['cupy']})")
    print(f"launch: {results['launch_ns_per_launch']['median']:.0f} ns/launch (median, batches of {BATCH})")
    graphs = results["graph_ns_per_pipeline"]
    if "skipped" in graphs:
        print(f"graphs: skipped ({graphs['skipped']})")
    for kernels, row in sorted(((k, v) for k, v in graphs.items() if k != "skipped"), key=lambda kv: int(kv[0])):
        print(f"graph of {kernels} kernels: {row['graph']:.0f} ns/pipeline, launches {row['launches']:.0f} ns/pipeline "
              f"({row['graph_over_launches']:.2f}x)")
    print(f"saxpy n={results['saxpy']['n']}: {results['saxpy']['gbps_median']:.1f} GB/s; "
          f"device copy: {results['device_copy']['gbps_median']:.1f} GB/s")
    for size, figures in results["copies"].items():
        for label, f in figures.items():
            print(f"copy {int(size) >> 20} MiB {label}: up {f['upload_gbps']:.2f} GB/s, down {f['download_gbps']:.2f} GB/s")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
