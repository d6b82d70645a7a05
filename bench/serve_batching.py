#!/usr/bin/python3
"""`hetsched serve --max-batch 8` against the same server without batching.

Method
------
1. Models.  PyTorch exports with a free batch dim (dynamic_axes on axis 0,
   random weights from a fixed seed): torchvision's mobilenet_v2
   (1x3x224x224 a request) and a 2-layer torch.nn.TransformerEncoder
   (d_model 256, 4 heads, batch_first, a request 1x32x256).
2. Rounds.  In each round, in an order alternating from round to round, the
   same load on `hetsched serve MODEL --devices cpu:0,cpu:1` without and
   with `--max-batch 8 --max-delay-ms 2` (bench/serve.py's serve_round): 8
   client threads of Python's urllib, N requests in all with the binary
   tensor extension, 16 distinct inputs, every answer checked against a
   local session's run of the same input alone (rtol 1e-4).  N gives the
   unbatched server about ten seconds.  Neither compile is timed: the
   batched server compiles its batch sizes at start, and each server gets
   one untimed request first (the unbatched one compiles its shape then).
3. Figures: medians over the rounds of requests/s, p50 and p99 latency;
   ratio = batched / unbatched.  The clients share the two cores with the
   server.
Run on a quiet machine.
"""
import argparse
import inspect
import os
import shutil
import statistics
import sys
import tempfile

from bench_common import cpu_model, write_csv
from serve import serve_round

HERE = os.path.dirname(os.path.abspath(__file__))


def export(kind, path):
    import torch
    torch.manual_seed(0)
    if kind == "mobilenet_v2":
        import torchvision
        module, x = torchvision.models.mobilenet_v2(weights=None).eval(), torch.rand(1, 3, 224, 224)
    else:
        layer = torch.nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, batch_first=True)
        module, x = torch.nn.TransformerEncoder(layer, 2).eval(), torch.rand(1, 32, 256)
    kwargs = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(module, x, path, input_names=["input"], output_names=["output"], opset_version=14,
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, **kwargs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hetsched", default="build/hetsched")
    ap.add_argument("--python", default="build/python", help="folder holding the hetsched Python package")
    ap.add_argument("--models", default="mobilenet_v2,transformer_encoder")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--csv", default=os.path.join(HERE, "results", "serve_batching.csv"))
    args = ap.parse_args()
    sys.path.insert(0, args.python)
    import hetsched

    work = tempfile.mkdtemp(prefix="hetsched-batching-bench-")
    exe = os.path.join(work, "hetsched")
    shutil.copy(args.hetsched, exe)
    rows = []
    for kind in args.models.split(","):
        path = os.path.join(work, kind + ".onnx")
        export(kind, path)
        db = os.path.join(work, kind + ".db")
        local = hetsched.Session(path, devices="cpu:0", db=db)
        inputs = []
        for seed in range(16):
            x = local.random_inputs(seed=seed)  # free dims set to 1: one row a request
            inputs.append(x)
        expected = [local.run(x)["output"] for x in inputs]
        n = 0
        results = {"off": [], "on": []}
        for r in range(args.rounds):
            for batched in ((False, True) if r % 2 == 0 else (True, False)):
                extra = ["--max-batch", "8", "--max-delay-ms", "2"] if batched else []
                if not n:  # sized by a first short load of the unbatched server
                    rate = serve_round(exe, [path], db, inputs, expected, 64, 8, warm=1)[0]
                    n = max(64, int(rate * args.seconds))
                rate, p50, p99, _, flow, errors = serve_round(exe, [path], db, inputs, expected, n, 8, extra,
                                                              warm=1)
                if errors:
                    sys.exit(f"{kind}: {len(errors)} wrong or failed answers, e.g. {errors[0]}")
                results["on" if batched else "off"].append((rate, p50, p99))
                print(f"{kind} round {r + 1} {'batched' if batched else 'unbatched'}: {rate:.1f}/s "
                      f"p50 {p50:.1f} ms p99 {p99:.1f} ms ({flow})", flush=True)
        med = lambda key, i: statistics.median(x[i] for x in results[key])  # noqa: E731
        rows.append({"model": kind, "requests": n, "unbatched_per_s": round(med("off", 0), 2),
                     "unbatched_p50_ms": round(med("off", 1), 2), "unbatched_p99_ms": round(med("off", 2), 2),
                     "batched_per_s": round(med("on", 0), 2), "batched_p50_ms": round(med("on", 1), 2),
                     "batched_p99_ms": round(med("on", 2), 2), "ratio": round(med("on", 0) / med("off", 0), 3)})
        print(rows[-1], flush=True)
    write_csv(args.csv, f"{cpu_model()}, {os.cpu_count()} cores; serve --devices cpu:0,cpu:1, 8 clients, "
              f"{args.rounds} interleaved rounds of ~{args.seconds} s; --max-batch 8 --max-delay-ms 2", rows)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
