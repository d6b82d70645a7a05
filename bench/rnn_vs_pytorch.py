#!/usr/bin/python3
"""Recurrent networks on one core: hetsched against PyTorch.

Method
------
1. Networks.  torch.nn.LSTM and torch.nn.GRU, 2 layers, input 128, hidden
   256, one and two directions, built from a fixed seed and exported by
   torch.onnx (opset 14: the exporter writes ONNX LSTM and GRU nodes with
   constant weights, a GRU with linear_before_reset=1).
2. Input.  One seeded random sequence per case, [seq 50, batch B, 128],
   B = 1 and 8; both engines get the same array, and their outputs are
   compared once (max |difference|).
3. Engines, in one process pinned to core 0 (os.sched_setaffinity before
   torch is imported): hetsched's Session on cpu:0 (oneDNN's recurrent
   primitives, src/backends/cpu/ops/rnn.cpp); the same model on hetsched's
   reference kernels (what ran before the oneDNN lowering: a plain C++ loop
   in double); PyTorch eager, torch.set_num_threads(1), under
   torch.inference_mode().
4. Rounds.  Each round times every case on every engine, the engines' order
   rotating from round to round; a timing is the median of N calls after W
   warm-ups.  Figures: the median over rounds, the spread (max - min), and
   the ratio PyTorch / hetsched (above 1: hetsched faster).
Run on a quiet machine.
"""
import argparse
import inspect
import os
import statistics
import sys
import tempfile
import time

os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # before torch and the engine start threads

from bench_common import cpu_model, write_csv  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def timed_ms(call, n, warmups):
    for _ in range(warmups):
        call()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default="build/python", help="the folder holding the hetsched package")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", type=int, default=10)
    ap.add_argument("-w", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one LSTM case, 1 round, short timings, no CSV")
    ap.add_argument("--csv", default=os.path.join(HERE, "results", "rnn_vs_pytorch.csv"))
    args = ap.parse_args()
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="hetsched-rnn-bench-")  # a profile database of its own
    sys.path.insert(0, os.path.abspath(args.python))
    import numpy as np
    import torch

    import hetsched
    torch.set_num_threads(1)

    cases = [(kind, dirs, batch) for kind in ("LSTM", "GRU") for dirs in (1, 2) for batch in (1, 8)]
    if args.quick:
        cases, args.rounds, args.n, args.w = [("LSTM", 2, 1)], 1, 2, 1
    work = tempfile.mkdtemp(prefix="hetsched-rnn-bench-")
    engines = {}
    for kind, dirs, batch in cases:
        torch.manual_seed(0)
        module = getattr(torch.nn, kind)(128, 256, num_layers=2, bidirectional=dirs == 2).eval()
        x = torch.rand(50, batch, 128) * 2 - 1
        path = os.path.join(work, f"{kind}_{dirs}_{batch}.onnx")
        kwargs = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
        torch.onnx.export(module, (x,), path, input_names=["x"], output_names=["y"], opset_version=14, **kwargs)
        fast = hetsched.Session(path, devices="cpu:0")
        reference = hetsched.Session(path, reference=True)
        feeds = {"x": x.numpy()}
        with torch.inference_mode():
            diff = float(np.abs(fast.run(feeds)["y"] - module(x)[0].numpy()).max())
        recurrent_fallbacks = [f for f in fast.summary["fallbacks"] if kind in f]
        if recurrent_fallbacks:
            sys.exit(f"{kind}: ran on the reference kernels: {recurrent_fallbacks}")

        def torch_call(module=module, x=x):
            with torch.inference_mode():
                module(x)
        engines[(kind, dirs, batch)] = {"hetsched": lambda s=fast, f=feeds: s.run(f),
                                        "reference": lambda s=reference, f=feeds: s.run(f),
                                        "torch": torch_call, "diff": diff}
    times = {case: {e: [] for e in ("hetsched", "reference", "torch")} for case in cases}
    order = ["hetsched", "reference", "torch"]
    for r in range(args.rounds):
        for case in cases:
            for engine in order[r % 3:] + order[:r % 3]:
                times[case][engine].append(timed_ms(engines[case][engine], args.n, args.w))
        print(f"round {r + 1} done", flush=True)
    rows = []
    for (kind, dirs, batch), t in times.items():
        med = {e: statistics.median(v) for e, v in t.items()}
        rows.append({"model": f"{kind} 2x256 {'bidirectional' if dirs == 2 else 'forward'}", "batch": batch,
                     "seq": 50, "hetsched_ms": round(med["hetsched"], 3),
                     "hetsched_spread_ms": round(max(t["hetsched"]) - min(t["hetsched"]), 3),
                     "reference_ms": round(med["reference"], 2), "torch_ms": round(med["torch"], 2),
                     "torch_spread_ms": round(max(t["torch"]) - min(t["torch"]), 2),
                     "torch_over_hetsched": round(med["torch"] / med["hetsched"], 2),
                     "max_abs_diff": f"{engines[(kind, dirs, batch)]['diff']:.1e}"})
        print(rows[-1], flush=True)
    if not args.quick:
        write_csv(args.csv, f"{cpu_model()}; one core; PyTorch {torch.__version__} eager, 1 thread; "
                  f"{args.rounds} interleaved rounds, medians of {args.n} calls", rows)
        print(f"wrote {args.csv}")


if __name__ == "__main__":
    main()
