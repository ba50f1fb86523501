#!/usr/bin/env python3
"""Checks a running sample app against a brute-force ranking (numpy, float64): creates a
collection of random vectors for each metric, searches it over HTTP and compares every answer's ids
(ties allowed) and scores with the reference. Used by scripts/gpu-check.sh on the GPU machine.

    python3 sample_check.py --url http://localhost:18080 --backend cuda
"""
import argparse
import json
import sys
import time
import urllib.request

import numpy as np


def call(url, method="GET", body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            text = response.read().decode()
            return response.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--size", type=int, default=20000)
    parser.add_argument("--dimension", type=int, default=128)
    args = parser.parse_args()
    deadline = time.time() + 120
    while True:
        try:
            status, health = call(args.url + "/actuator/health")
            if status == 200:
                break
        except OSError:
            pass
        if time.time() > deadline:
            sys.exit("FAILED: the sample app did not become healthy within 120 s")
        time.sleep(1)
    status, gpu = call(args.url + "/actuator/gpu")
    backend = json.dumps(gpu)
    if args.backend.upper() not in backend:
        sys.exit(f"FAILED: /actuator/gpu does not report {args.backend}: {backend[:300]}")
    rng = np.random.default_rng(16)
    checked = 0
    for metric in ("cosine", "dot"):
        name = "check-" + metric
        call(args.url + "/collections/" + name, "DELETE")
        status, _ = call(args.url + "/collections/" + name, "PUT", {"dimension": args.dimension, "metric": metric})
        assert status == 201, status
        vectors = rng.standard_normal((args.size, args.dimension)).astype(np.float32)
        ids = [f"v{i}" for i in range(args.size)]
        for start in range(0, args.size, 5000):
            status, body = call(args.url + f"/collections/{name}/vectors", "POST",
                                {"ids": ids[start:start + 5000], "vectors": vectors[start:start + 5000].tolist()})
            assert status == 200, (status, body)
        queries = rng.standard_normal((32, args.dimension)).astype(np.float32)
        reference = vectors.astype(np.float64)
        if metric == "cosine":
            reference = reference / np.linalg.norm(reference, axis=1, keepdims=True)
        for k in (1, 10, 100):
            status, body = call(args.url + f"/collections/{name}/search", "POST", {"vectors": queries.tolist(), "k": k})
            assert status == 200, (status, body)
            for q, hits in enumerate(body["results"]):
                query = queries[q].astype(np.float64)
                if metric == "cosine":
                    query = query / np.linalg.norm(query)
                scores = reference @ query
                order = np.argsort(-scores, kind="stable")
                kth = scores[order[k - 1]]
                got_scores = np.array([hit["score"] for hit in hits])
                got_ids = [int(hit["id"][1:]) for hit in hits]
                if len(hits) != k:
                    sys.exit(f"FAILED: {metric} k={k} query {q}: {len(hits)} hits")
                if not np.allclose(got_scores, scores[got_ids], atol=2e-4, rtol=2e-4):
                    sys.exit(f"FAILED: {metric} k={k} query {q}: scores differ from the reference")
                if np.any(scores[got_ids] < kth - 2e-4):
                    sys.exit(f"FAILED: {metric} k={k} query {q}: a hit outside the true top {k}")
                if np.any(np.diff(got_scores) > 2e-4):
                    sys.exit(f"FAILED: {metric} k={k} query {q}: hits not in descending order")
                checked += 1
        call(args.url + "/collections/" + name, "DELETE")
    print(f"OK: {checked} searches ({args.size} x {args.dimension}, cosine and dot, k = 1, 10, 100) match brute force "
          f"on backend {args.backend}")


if __name__ == "__main__":
    main()
