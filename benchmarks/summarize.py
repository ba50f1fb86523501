#!/usr/bin/env python3
"""Turns a JMH JSON result file of this suite into Markdown: every score, then the ratios of
ours against its baseline that BENCHMARKS.md reports. Standard library only.

    python3 benchmarks/summarize.py results.json [more.json ...] > summary.md
"""
import json
import sys


def load(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            for entry in json.load(f):
                name = entry["benchmark"].rsplit(".", 2)
                primary = entry["primaryMetric"]
                secondary = entry.get("secondaryMetrics", {})
                rows.append({
                    "class": name[-2],
                    "method": name[-1],
                    "params": entry.get("params", {}),
                    "threads": entry.get("threads", 1),
                    "score": primary["score"],
                    "error": primary["scoreError"],
                    "unit": primary["scoreUnit"],
                    "bytes": secondary.get("bytes", {}).get("score"),
                    "bytes_error": secondary.get("bytes", {}).get("scoreError"),
                })
    return rows


def fmt(value):
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return value
    if value is None or value != value:  # NaN
        return "n/a"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def params_text(params):
    return ", ".join(f"{k}={v}" for k, v in sorted(params.items())) or "-"


def find(rows, cls, method, **params):
    for row in rows:
        if row["class"] == cls and row["method"] == method and all(
                row["params"].get(k) == str(v) for k, v in params.items()):
            return row
    return None


def all_scores(rows):
    out = ["| benchmark | params | score | ± error (99.9%) | unit | GB/s |", "|---|---|---|---|---|---|"]
    for r in rows:
        gbs = fmt(r["bytes"] / 1e9) if r["bytes"] is not None else ""
        out.append(f"| {r['class']}.{r['method']} | {params_text(r['params'])} | {fmt(r['score'])} | "
                   f"{fmt(r['error'])} | {r['unit']} | {gbs} |")
    return out


def ratios(rows):
    out = ["| what | ours | baseline | ratio | meaning |", "|---|---|---|---|---|"]

    def add(what, ours, base, ours_value, base_value, unit, ratio, meaning):
        if ours is None or base is None:
            return
        out.append(f"| {what} | {fmt(ours_value)} {unit} | {fmt(base_value)} {unit} | {ratio:.2f}x | {meaning} |")

    backends = sorted({r["params"].get("backend") for r in rows if r["params"].get("backend")})
    for backend in backends:
        for threads in ("1thread", "2threads", "8threads"):
            ours = find(rows, "LeaseBenchmark", "ours_lease_" + threads, backend=backend)
            base = find(rows, "LeaseBenchmark", "baseline_createDestroy_" + threads, backend=backend)
            if ours and base:
                add(f"lease acquire+release, {threads} ({backend})", ours, base, ours["score"], base["score"], "ns",
                    base["score"] / ours["score"], "create+destroy time / lease time (>1: the pool is cheaper)")
        for listener in ("none", "counting"):
            for timing in ("OFF", "SAMPLED", "ALL"):
                ours = find(rows, "LaunchBenchmark", "ours", backend=backend, timing=timing, listener=listener)
                if ours is None:
                    continue
                baselines = ([("raw JCuda loop", find(rows, "LaunchBenchmark", "cuda_rawLaunch"))]
                             if backend == "CUDA" else
                             [("direct Java call", find(rows, "LaunchBenchmark", "baseline_javaDirect")),
                              ("single-thread executor", find(rows, "LaunchBenchmark", "baseline_javaExecutor"))])
                for label, base in baselines:
                    if base:
                        add(f"launch, timing {timing}, listener {listener} vs {label} ({backend})", ours, base,
                            ours["score"], base["score"], "ns/launch", ours["score"] / base["score"],
                            "our time per launch / baseline's" + (" (target: <= 1.1)" if backend == "CUDA" else ""))
            off = find(rows, "LaunchBenchmark", "ours", backend=backend, timing="OFF", listener=listener)
            for timing in ("SAMPLED", "ALL"):
                other = find(rows, "LaunchBenchmark", "ours", backend=backend, timing=timing, listener=listener)
                if off and other:
                    add(f"launch, timing {timing} vs OFF, listener {listener} ({backend})", other, off, other["score"],
                        off["score"], "ns/launch", other["score"] / off["score"],
                        "cost of kernel timing (target for SAMPLED: <= 1.03)")
        for timing in ("OFF", "SAMPLED"):
            none = find(rows, "LaunchBenchmark", "ours", backend=backend, timing=timing, listener="none")
            counting = find(rows, "LaunchBenchmark", "ours", backend=backend, timing=timing, listener="counting")
            if none and counting:
                add(f"launch, counting listener vs none, timing {timing} ({backend})", counting, none,
                    counting["score"], none["score"], "ns/launch", counting["score"] / none["score"],
                    "cost of a metrics listener (target: <= 1.03)")
        for row in [r for r in rows if r["class"] == "SaxpyBenchmark" and r["method"] == "ours"
                    and r["params"].get("backend") == backend]:
            n = row["params"]["n"]
            base = (find(rows, "SaxpyBenchmark", "cuda_deviceCopy", n=n) if backend == "CUDA"
                    else find(rows, "SaxpyBenchmark", "baseline_javaLoop", n=n))
            if base and row["bytes"] and base["bytes"]:
                add(f"SAXPY n={n}, block {row['params'].get('blockSize')} ({backend})", row, base, row["bytes"] / 1e9,
                    base["bytes"] / 1e9, "GB/s", row["bytes"] / base["bytes"],
                    "our bandwidth / baseline's (target: >= 0.9 CPU loop, >= 0.8 CUDA copy)")
        one = find(rows, "StreamsBenchmark", "ours_oneStream", backend=backend)
        for method in ("ours_twoStreams", "ours_parallelGroup"):
            two = find(rows, "StreamsBenchmark", method, backend=backend)
            if one and two:
                add(f"two spin kernels, {method[5:]} vs one stream ({backend})", two, one, two["score"], one["score"],
                    "us", one["score"] / two["score"],
                    "speed-up (target: >= 1.8 GPU; CPU: close to the 2 cores used)")
        fresh = find(rows, "EventBenchmark", "baseline_freshEvent", backend=backend)
        for method in ("ours_registryEvent", "ours_reusedEvent"):
            ours = find(rows, "EventBenchmark", method, backend=backend)
            if ours and fresh:
                add(f"event record+query, {method[5:]} vs fresh backend event ({backend})", ours, fresh,
                    ours["score"], fresh["score"], "ns", fresh["score"] / ours["score"],
                    "fresh event time / ours (>1: ours is cheaper)")
        kinds = {"": "direct buffer", "Array": "float[]", "Host": "host buffer"}
        copies = [f"ours_{direction}{suffix}" for direction in ("upload", "download") for suffix in kinds]
        for row in [r for r in rows if r["class"] == "CopyBenchmark" and r["method"] in copies
                    and r["params"].get("backend") == backend]:
            size = row["params"]["bytes"]
            direction = "upload" if row["method"].startswith("ours_upload") else "download"
            kind = kinds[row["method"][len("ours_") + len(direction):]]
            if backend == "CUDA":
                # The copy goals: host buffers >= 0.9x raw pinned at 256 MiB (0.7x at 1 MiB); arrays
                # and direct buffers >= 20 GB/s at 256 MiB, 1.5x CuPy's pageable figure.
                cands = [("raw pinned", find(rows, "CopyBenchmark", "cuda_pinned" + direction.capitalize(), bytes=size)),
                         ("raw pageable", find(rows, "CopyBenchmark", "cuda_pageable" + direction.capitalize(), bytes=size))]
            else:
                cands = [("host ByteBuffer copy", find(rows, "CopyBenchmark", "baseline_hostCopy", bytes=size))]
            for label, base in cands:
                if base and row["bytes"] and base["bytes"]:
                    add(f"{direction} {int(size) // 1048576} MiB, {kind}, vs {label} ({backend})", row, base,
                        row["bytes"] / 1e9, base["bytes"] / 1e9, "GB/s", row["bytes"] / base["bytes"],
                        "our bandwidth / baseline's")
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = load(sys.argv[1:])
    print("## Ratios\n")
    print("\n".join(ratios(rows)))
    print("\n## All scores\n")
    print("\n".join(all_scores(rows)))


if __name__ == "__main__":
    main()
