#!/usr/bin/python3
"""Batch inference on a Dask LocalCluster: rows/s with 1 and 2 one-core workers.

Method
------
1. Clusters.  Two LocalClusters live side by side for the whole run: one
   with 1 worker process, one with 2, each worker 1 thread, pinned by
   hetsched.dask.pin_workers to a core of its own (the 1-worker cluster's
   worker and the 2-worker cluster's first worker share core 0; only one
   cluster works at a time).
2. Job.  hetsched.dask.infer on N rows of random images in chunks of
   --chunk rows, computed; a worker's session is made (and its plan) by a
   warm-up job first, untimed, as a long batch job pays it once.
3. Rounds.  Each round times one job on each cluster, the order alternating
   from round to round.  rows/s = N / the job's wall time, client included.
4. Figures.  Per cluster the median over the rounds and the spread (max -
   min); ratio = the median of the per-round ratios 2 workers / 1 worker.
   Written with the machine to the CSV.

Models: torchvision's architectures from the zoo (fixed batch 1: a chunk
runs row by row on the worker's session).  Run on a quiet machine with
python3-distributed installed.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

from bench_common import cpu_model, write_csv

HERE = os.path.dirname(os.path.abspath(__file__))


def random_rows(block, block_info=None):
    import numpy as np
    return np.random.default_rng(block_info[None]["chunk-location"][0]).random(block.shape, dtype=np.float32)


def job_seconds(hdask, da, np, model, rows, chunk):
    start = time.perf_counter()
    # The rows are made on the workers, as a batch job reads its own.
    x = da.empty((rows, 3, 224, 224), chunks=(chunk, 3, 224, 224), dtype=np.float32).map_blocks(random_rows, dtype=np.float32)
    out = hdask.infer(model, {"input": x}, devices="cpu")
    y = next(iter(out.values())).compute()
    seconds = time.perf_counter() - start
    assert y.shape[0] == rows
    return seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default="build/python", help="the folder holding the hetsched package")
    ap.add_argument("--models", default="zoo:mobilenet_v2,zoo:resnet18")
    ap.add_argument("--rows", type=int, default=128)
    ap.add_argument("--chunk", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="mobilenet_v2, 16 rows, 1 round, no CSV")
    ap.add_argument("--csv", default=os.path.join(HERE, "results", "dask.csv"))
    args = ap.parse_args()
    if args.quick:
        args.models, args.rows, args.rounds = "zoo:mobilenet_v2", 16, 1
    if len(os.sched_getaffinity(0)) < 2:
        print("dask_rows: needs two cores", file=sys.stderr)
        sys.exit(77)  # ctest's skip

    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="hetsched-dask-bench-")  # workers inherit it
    sys.path.insert(0, os.path.abspath(args.python))
    os.environ["PYTHONPATH"] = os.path.abspath(args.python)
    import dask.array as da
    import numpy as np
    from distributed import Client, LocalCluster

    import hetsched.dask as hdask

    clients = {}
    for workers in (1, 2):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
        clients[workers] = Client(cluster)
        print(f"{workers} worker(s): cores {hdask.pin_workers(clients[workers], cores_per_worker=1)}", flush=True)

    rows = []
    for model in args.models.split(","):
        for workers, client in clients.items():
            with client.as_current():
                job_seconds(hdask, da, np, model, args.rows, args.chunk)  # warm-up: sessions made
        rates = {1: [], 2: []}
        for r in range(args.rounds):
            for workers in ((1, 2) if r % 2 == 0 else (2, 1)):
                with clients[workers].as_current():
                    rates[workers].append(args.rows / job_seconds(hdask, da, np, model, args.rows, args.chunk))
            print(f"{model} round {r + 1}: 1 worker {rates[1][-1]:.1f} rows/s, 2 workers {rates[2][-1]:.1f}",
                  flush=True)
        ratio = statistics.median(b / a for a, b in zip(rates[1], rates[2]))
        rows.append({"model": model, "rows": args.rows, "chunk": args.chunk,
                     "one_worker_rows_per_s": round(statistics.median(rates[1]), 2),
                     "one_worker_spread": round(max(rates[1]) - min(rates[1]), 2),
                     "two_workers_rows_per_s": round(statistics.median(rates[2]), 2),
                     "two_workers_spread": round(max(rates[2]) - min(rates[2]), 2),
                     "ratio": round(ratio, 3)})
        print(f"{model}: 2 workers / 1 worker = {ratio:.3f}", flush=True)
    for client in clients.values():
        client.close()
        client.cluster.close()
    if not args.quick:
        write_csv(args.csv, f"{cpu_model()}, {os.cpu_count()} cores; Dask LocalCluster, one-core workers pinned; "
                  f"{args.rounds} interleaved rounds; ratio = median of per-round ratios", rows)
        print(f"wrote {args.csv}")


if __name__ == "__main__":
    main()
