#!/usr/bin/python3
"""`hetsched serve` under concurrent clients against `run --mode throughput`.

Method
------
1. Per model, a fresh profile database is filled once
   (`hetsched profile MODEL --devices cpu:0,cpu:1,cpu:0-1`).
2. Rounds.  In each round, in an order rotated from round to round:
   - serve: `hetsched serve MODEL --devices cpu:0,cpu:1` (its flow chosen by
     measurement at start), then 8 client threads of Python's urllib send
     N requests in all over HTTP with the binary tensor data extension
     (16 distinct random inputs), each answer checked against the
     hetsched Python module's run of the same input on one core (rtol
     1e-4); requests per second over the whole load, request latency as
     the client sees it (p50, p99);
   - run: `hetsched run MODEL --mode throughput --devices cpu:0,cpu:1
     --concurrency 8 -n N`, the same load inside one process.
   N gives each about ten seconds.
3. Figures: medians over the rounds; ratio = serve / run.  The clients run
   on the same two cores as the server (they take some of its CPU time):
   the ratio includes the protocol, the copies and the clients.

Run on a quiet machine: nothing else running.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import numpy as np

from bench_common import cpu_model, geomean, model_args, run, write_csv

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = "zoo:resnet50,zoo:squeezenet1_0,zoo:bert?layers=2"


def serve_round(exe, margs, db, inputs, expected, n, clients, extra=(), warm=0):
    """(requests/s, p50 ms, p99 ms, client CPU in cores, the flow, errors) of n requests from `clients`
    threads; `extra`: more flags for serve; `warm`: requests sent first, one at a time, untimed (a free-dim
    model compiles at its first request)."""
    proc = subprocess.Popen([exe, "serve"] + margs + ["--name", "m", "--devices", "cpu:0,cpu:1", "--port", "0",
                                                       "--grpc-port", "-1", "--db", db, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base, lines, flow = None, [], ""
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("model m: "):
            flow = line[line.rfind("(") + 1:].rstrip(")\n")
        m = re.search(r"on (http://[\d.]+:\d+)/v2", line)
        if m:
            base = m.group(1)
            break
    if not base:
        sys.exit("serve did not start:\n" + "".join(lines))
    drain = threading.Thread(target=lambda: [lines.append(x) for x in proc.stdout], daemon=True)
    drain.start()
    name, array = next(iter(inputs[0].items()))
    datatype = {"float32": "FP32", "int64": "INT64"}[str(array.dtype)]
    bodies = []
    for x in inputs:
        a = x[name]
        header = json.dumps({"inputs": [{"name": name, "shape": list(a.shape), "datatype": datatype,
                                         "parameters": {"binary_data_size": a.nbytes}}],
                             "parameters": {"binary_data_output": True}}).encode()
        bodies.append((header, a.tobytes()))
    latencies, errors, next_i = [], [], [0]
    lock = threading.Lock()

    def client():
        while True:
            with lock:
                i = next_i[0]
                next_i[0] += 1
            if i >= n:
                return
            k = i % len(bodies)
            header, data = bodies[k]
            req = urllib.request.Request(base + "/v2/models/m/infer", data=header + data,
                                         headers={"Inference-Header-Content-Length": str(len(header))})
            start = time.perf_counter()
            try:
                with urllib.request.urlopen(req, timeout=120) as r:
                    h = int(r.headers["Inference-Header-Content-Length"])
                    body = r.read()
                ms = (time.perf_counter() - start) * 1000
                out = json.loads(body[:h])["outputs"][0]
                got = np.frombuffer(body[h:], dtype=np.float32).reshape(out["shape"])
                np.testing.assert_allclose(got, expected[k], rtol=1e-4, atol=1e-5)
                with lock:
                    latencies.append(ms)
            except Exception as e:  # noqa: BLE001
                with lock:
                    errors.append(repr(e))

    for k in range(warm):
        header, data = bodies[k % len(bodies)]
        urllib.request.urlopen(urllib.request.Request(
            base + "/v2/models/m/infer", data=header + data,
            headers={"Inference-Header-Content-Length": str(len(header))}), timeout=120).read()
    start, cpu_start = time.perf_counter(), time.process_time()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    client_cpu = (time.process_time() - cpu_start) / seconds  # cores the clients kept busy
    proc.terminate()
    proc.wait(timeout=60)
    drain.join()
    proc.stdout.close()
    lat = sorted(latencies)
    return (len(lat) / seconds, lat[len(lat) // 2] if lat else 0, lat[int(0.99 * (len(lat) - 1))] if lat else 0,
            client_cpu, flow, errors)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hetsched", default="build/hetsched")
    ap.add_argument("--python", default="build/python", help="folder holding the hetsched Python package")
    ap.add_argument("--models", default=MODELS)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--quick", action="store_true", help="a small BERT, 1 round, 1 s")
    ap.add_argument("--csv", default=os.path.join(HERE, "results", "serve.csv"))
    args = ap.parse_args()
    if args.quick:
        args.models, args.rounds, args.seconds = "zoo:bert?layers=1&seq=8&hidden=32&heads=2&vocab=50", 1, 1.0
    sys.path.insert(0, args.python)
    import hetsched

    work = tempfile.mkdtemp(prefix="hetsched-serve-bench-")
    exe = os.path.join(work, "hetsched")
    shutil.copy(args.hetsched, exe)
    rows = []
    for model in filter(None, args.models.split(",")):
        margs, params = model_args(model)
        name = model.replace("?", "_").replace("=", "").replace("&", "_")
        db = os.path.join(work, name.replace(":", "_") + ".db")
        run([exe, "profile"] + margs + ["--devices", "cpu:0,cpu:1,cpu:0-1", "--db", db])
        local = hetsched.Session(margs[0], devices="cpu:0", params=params or None, db=db)
        inputs = [local.random_inputs(seed=s) for s in range(16)]
        expected = [next(iter(local.run(x).values())) for x in inputs]
        out_json = os.path.join(work, "run.json")
        run([exe, "run"] + margs + ["--devices", "cpu:0-1", "--db", db, "-n", "5", "--json", out_json])
        with open(out_json) as f:
            n = max(4 * args.clients, int(args.seconds * 1000 / json.load(f)["p50_ms"]))
        served, ran, errors, flows = [], [], [], []
        for r in range(args.rounds):
            for k in range(2):
                if (k + r) % 2 == 0:
                    rate, p50, p99, cpu, flow, errs = serve_round(exe, margs, db, inputs, expected, n, args.clients)
                    served.append((rate, p50, p99, cpu))
                    flows.append("serve: " + flow)
                    errors += errs
                else:
                    run([exe, "run"] + margs + ["--mode", "throughput", "--devices", "cpu:0,cpu:1", "--concurrency",
                                                str(args.clients), "-n", str(n), "--db", db, "--json", out_json])
                    with open(out_json) as f:
                        j = json.load(f)
                    ran.append((j["throughput_per_s"], j["p50_ms"], j["p99_ms"]))
                    flows.append("run: " + j["flow"])
        med = lambda xs, i: statistics.median(x[i] for x in xs)  # noqa: E731
        ratio = med(served, 0) / med(ran, 0)
        rows.append({"model": name, "requests": n, "serve_per_s": round(med(served, 0), 2),
                     "serve_p50_ms": round(med(served, 1), 2), "serve_p99_ms": round(med(served, 2), 2),
                     "run_per_s": round(med(ran, 0), 2), "run_p50_ms": round(med(ran, 1), 2),
                     "run_p99_ms": round(med(ran, 2), 2), "ratio": round(ratio, 4),
                     "client_cpu_cores": round(med(served, 3), 3), "errors": len(errors),
                     "flows": "; ".join(flows)})
        print(f"{name:26} serve {med(served, 0):8.2f}/s (p50 {med(served, 1):.1f} ms, p99 {med(served, 2):.1f} ms)  "
              f"run {med(ran, 0):8.2f}/s (p99 {med(ran, 2):.1f} ms)  ratio {ratio:.3f}  clients' CPU "
              f"{med(served, 3):.2f} cores  errors {len(errors)}",
              flush=True)
        print("  flows chosen:", "; ".join(flows))
        for e in errors[:3]:
            print("  error:", e)
    mean = geomean([r["ratio"] for r in rows])
    worst = min(r["ratio"] for r in rows)
    print(f"\n{len(rows)} models ({cpu_model()}), {args.clients} clients: serve / run --mode throughput: "
          f"geometric mean {mean:.3f}, worst {worst:.3f}; errors {sum(r['errors'] for r in rows)}")
    write_csv(args.csv, f"{cpu_model()}, {os.cpu_count()} cores; {args.clients} clients, {args.rounds} interleaved "
              f"rounds of ~{args.seconds} s; geometric mean {mean:.3f}, worst {worst:.3f}", rows)
    shutil.rmtree(work)
    if any(r["errors"] for r in rows):
        sys.exit("some answers were wrong or failed")


if __name__ == "__main__":
    main()
