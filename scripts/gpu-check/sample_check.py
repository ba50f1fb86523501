#!/usr/bin/env python3
"""Checks a running sample app against a brute-force ranking (numpy, float64): creates a
collection of random vectors for each metric, searches it over HTTP and compares every answer with
the reference. Used by the GPU check (scripts/gpu-check/run.sh, step "sample") on the GPU machine.

    python3 sample_check.py --url http://127.0.0.1:18080 --backend cuda [--pid PID]

Per metric (cosine, dot) and k, 32 queries (fewer per request where queries x k would pass the
service's sample.limits.max-results):
- k = 1, 10, 100: the device's chunked top-k selection;
- k = 1000, 1024, 1025, 2000, 4096 and the collection's size: around and above the largest k the
  chunked selection handles (1024), where a whole-row bitonic sort runs instead.
Each answer must hold exactly k distinct ids, in descending score order, each score equal to the
reference's for that id, none outside the true top k and every id that is clearly inside it present
(scores within a tolerance of the k-th count as ties). Prints one OK line per part; FAILED and exit
status 1 at the first difference.
"""
import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request

import numpy as np

# float32 scoring on the service against float64 here: scores of 128 normal values differ by ~1e-5.
TOLERANCE = 2e-4
SMALL_K = (1, 10, 100)
LARGE_K = (1000, 1024, 1025, 2000, 4096)
MAX_RESULTS = 100_000  # sample.limits.max-results, the service's default
QUERIES = 32


def call(url, method="GET", body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            text = response.read().decode()
            return response.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def fail(message):
    print(f"FAILED: {message}", flush=True)
    sys.exit(1)


def wait_healthy(url, pid, timeout):
    deadline = time.time() + timeout
    while True:
        if pid is not None:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                fail(f"the sample app (pid {pid}) exited before it became healthy")
        try:
            status, _ = call(url + "/actuator/health")
            if status == 200:
                return
        except OSError:
            pass
        if time.time() > deadline:
            fail(f"the sample app did not become healthy within {timeout} s")
        time.sleep(0.5)


def check_answer(where, hits, scores, k):
    """hits: the service's answer for one query; scores: the reference score of every stored vector."""
    if len(hits) != k:
        fail(f"{where}: {len(hits)} hits, expected {k}")
    got_ids = np.array([int(hit["id"][1:]) for hit in hits])
    got_scores = np.array([hit["score"] for hit in hits], dtype=np.float64)
    if len(np.unique(got_ids)) != k:
        fail(f"{where}: {k - len(np.unique(got_ids))} ids repeated")
    if not np.allclose(got_scores, scores[got_ids], atol=TOLERANCE, rtol=TOLERANCE):
        worst = int(np.argmax(np.abs(got_scores - scores[got_ids])))
        fail(f"{where}: hit {worst} (id v{got_ids[worst]}) has score {got_scores[worst]}, the reference "
             f"{scores[got_ids[worst]]}")
    if np.any(np.diff(got_scores) > TOLERANCE):
        fail(f"{where}: hits not in descending order of score")
    kth = np.partition(-scores, k - 1)[k - 1] * -1
    if np.any(scores[got_ids] < kth - TOLERANCE):
        fail(f"{where}: a hit outside the true top {k} (k-th reference score {kth})")
    clearly_in = np.flatnonzero(scores > kth + TOLERANCE)
    missing = np.setdiff1d(clearly_in, got_ids)
    if len(missing):
        fail(f"{where}: {len(missing)} of the true top {k} missing, e.g. v{missing[0]} with score {scores[missing[0]]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--size", type=int, default=20000)
    parser.add_argument("--dimension", type=int, default=128)
    parser.add_argument("--pid", type=int, help="the app's process: fail at once if it exits before it is healthy")
    parser.add_argument("--startup-timeout", type=int, default=120)
    args = parser.parse_args()
    started = time.time()
    wait_healthy(args.url, args.pid, args.startup_timeout)
    print(f"OK: healthy after {time.time() - started:.1f} s", flush=True)
    status, gpu = call(args.url + "/actuator/gpu")
    if status != 200 or args.backend.upper() not in json.dumps(gpu):
        fail(f"/actuator/gpu does not report {args.backend}: {status} {json.dumps(gpu)[:300]}")
    rng = np.random.default_rng(16)
    large_k = [k for k in LARGE_K if k < args.size] + [args.size]
    searched = {"small": 0, "large": 0}
    for metric in ("cosine", "dot"):
        name = "check-" + metric
        call(args.url + "/collections/" + name, "DELETE")
        status, body = call(args.url + "/collections/" + name, "PUT", {"dimension": args.dimension, "metric": metric})
        if status != 201:
            fail(f"creating {name}: {status} {body}")
        vectors = rng.standard_normal((args.size, args.dimension)).astype(np.float32)
        ids = [f"v{i}" for i in range(args.size)]
        for start in range(0, args.size, 5000):
            status, body = call(args.url + f"/collections/{name}/vectors", "POST",
                                {"ids": ids[start:start + 5000], "vectors": vectors[start:start + 5000].tolist()})
            if status != 200:
                fail(f"adding vectors to {name}: {status} {body}")
        queries = rng.standard_normal((QUERIES, args.dimension)).astype(np.float32)
        reference = vectors.astype(np.float64)
        if metric == "cosine":
            reference = reference / np.linalg.norm(reference, axis=1, keepdims=True)
        for k in SMALL_K + tuple(large_k):
            per_request = max(1, min(QUERIES, MAX_RESULTS // k))
            for first in range(0, QUERIES, per_request):
                batch = queries[first:first + per_request]
                status, body = call(args.url + f"/collections/{name}/search", "POST", {"vectors": batch.tolist(), "k": k})
                if status != 200:
                    fail(f"{metric} k={k}: {status} {str(body)[:300]}")
                if len(body["results"]) != len(batch):
                    fail(f"{metric} k={k}: {len(body['results'])} result lists for {len(batch)} queries")
                for q, hits in enumerate(body["results"]):
                    query = batch[q].astype(np.float64)
                    if metric == "cosine":
                        query = query / np.linalg.norm(query)
                    check_answer(f"{metric} k={k} query {first + q}", hits, reference @ query, k)
                    searched["small" if k in SMALL_K else "large"] += 1
        call(args.url + "/collections/" + name, "DELETE")
    print(f"OK: {searched['small']} searches ({args.size} x {args.dimension}, cosine and dot, k = "
          f"{', '.join(map(str, SMALL_K))}) match brute force on backend {args.backend}")
    print(f"OK: {searched['large']} searches with k = {', '.join(map(str, large_k))} (above 1024: the whole-row "
          f"path) match brute force on backend {args.backend}")
    print(f"OK: all parts in {time.time() - started:.1f} s")


if __name__ == "__main__":
    main()
