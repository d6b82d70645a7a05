#!/usr/bin/python3
"""Free dims: one session running several input shapes against sessions made for each.

Method
------
1. Models exported by torch.onnx (random weights, seeded) with dynamic axes:
   torchvision's resnet18 with free batch, height and width, and a
   torch.nn.TransformerEncoder (d_model 256, 4 heads, 2 layers) with free
   batch and sequence length.
2. Per model, in one process (the hetsched Python module): one session on
   the model as exported (free dims), one session per shape made with that
   shape (`shapes=`, as `--shape` does), and one on the reference kernels
   (how a model with free dims ran before it was compiled per shape).
3. The free session's first run of each shape is timed (it compiles), then
   rounds: in each round, for every shape in turn (so the free session
   alternates between its compiled shapes), the free and the fixed session
   run it `-n` times each, in an order rotated from round to round; the
   reference kernels run it 3 times.
4. Figures: per shape the median over the rounds of each round's median;
   ratio = free / fixed. Nodes on reference kernels of both sessions come
   from their summaries.

Run on a quiet machine: nothing else running.
"""
import argparse
import inspect
import os
import statistics
import sys
import tempfile
import time

import numpy as np

from bench_common import cpu_model, geomean, timed, write_csv

MODELS = {
    # name -> (shapes, dynamic axes)
    "resnet18": ([(1, 3, 224, 224), (4, 3, 160, 160), (2, 3, 192, 256)],
                 {"x": {0: "batch", 2: "height", 3: "width"}, "y": {0: "batch"}}),
    "transformer_encoder": ([(1, 64, 256), (4, 128, 256), (8, 16, 256)],
                            {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}}),
}
QUICK_SHAPES = {"resnet18": [(1, 3, 64, 64), (2, 3, 48, 80)], "transformer_encoder": [(1, 8, 256), (2, 5, 256)]}


def export(name, path, shape, dynamic_axes):
    import torch
    import torchvision
    torch.manual_seed(0)
    if name == "resnet18":
        model = torchvision.models.resnet18(weights=None)
    else:
        layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.1,
                                                 batch_first=True)
        model = torch.nn.TransformerEncoder(layer, num_layers=2)
    model.eval()
    kwargs = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    # A TransformerEncoder exports only outside no_grad (its fast path is not exportable).
    torch.onnx.export(model, torch.rand(*shape), path, input_names=["x"], output_names=["y"], opset_version=13,
                      dynamic_axes=dynamic_axes, **kwargs)


def shape_text(shape):
    return "x".join(map(str, shape))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default="build/python", help="folder holding the hetsched Python package")
    ap.add_argument("--devices", default="cpu:0", help="where every session runs (one core: the stable timings)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-n", type=int, default=10, help="runs per session, shape and round")
    ap.add_argument("--quick", action="store_true", help="small shapes, one round: checks that the script works")
    ap.add_argument("--csv", default="bench/results/free_dims.csv")
    args = ap.parse_args()
    sys.path.insert(0, args.python)
    import hetsched

    rounds, n = (1, 2) if args.quick else (args.rounds, args.n)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = tmp
        for name, (shapes, axes) in MODELS.items():
            if args.quick:
                shapes = QUICK_SHAPES[name]
            path = os.path.join(tmp, name + ".onnx")
            export(name, path, shapes[0], axes)
            rng = np.random.default_rng(0)
            feeds = [{"x": rng.uniform(-1, 1, s).astype(np.float32)} for s in shapes]
            free = hetsched.Session(path, devices=args.devices)
            reference = hetsched.Session(path, reference=True)
            fixed, first_ms, free_fallbacks = [], [], []
            for s, f in zip(shapes, feeds):
                fixed.append(hetsched.Session(path, devices=args.devices, shapes={"x": s}))
                want = reference.run(f)["y"]
                start = time.perf_counter()
                got = free.run(f)["y"]
                first_ms.append((time.perf_counter() - start) * 1e3)
                scale = float(np.max(np.abs(want)))
                if not np.allclose(got, want, rtol=1e-3, atol=1e-4 * scale):
                    sys.exit(f"{name} {shape_text(s)}: the free session's output differs from the reference kernels'")
                free_fallbacks.append(free.summary["n_fallbacks"])
            free_ms = [[] for _ in shapes]
            fixed_ms = [[] for _ in shapes]
            reference_ms = [[] for _ in shapes]
            for r in range(rounds):
                for i, f in enumerate(feeds):
                    order = [("free", free, free_ms), ("fixed", fixed[i], fixed_ms)]
                    if r % 2:
                        order.reverse()
                    for _, session, out in order:
                        out[i].append(timed(session, f, n))
                    reference_ms[i].append(timed(reference, f, 1 if args.quick else 3))
            compile_ms = free.summary["shapes"]["compile_ms"]
            for i, s in enumerate(shapes):
                free_p50 = statistics.median(free_ms[i])
                fixed_p50 = statistics.median(fixed_ms[i])
                row = {
                    "model": name,
                    "shape": shape_text(s),
                    "free_ms": round(free_p50, 3),
                    "fixed_ms": round(fixed_p50, 3),
                    "ratio": round(free_p50 / fixed_p50, 3),
                    "spread_free": f"{min(free_ms[i]):.3f}-{max(free_ms[i]):.3f}",
                    "spread_fixed": f"{min(fixed_ms[i]):.3f}-{max(fixed_ms[i]):.3f}",
                    "reference_ms": round(statistics.median(reference_ms[i]), 3),
                    "first_run_ms": round(first_ms[i], 1),
                    "fallbacks_free": free_fallbacks[i],
                    "fallbacks_fixed": fixed[i].summary["n_fallbacks"],
                }
                rows.append(row)
                print(f"{name:20s} {row['shape']:14s} free {free_p50:8.3f} ms  fixed {fixed_p50:8.3f} ms  "
                      f"ratio {row['ratio']:.3f}  reference kernels {row['reference_ms']:9.3f} ms  "
                      f"first run (compiles) {row['first_run_ms']:.1f} ms  "
                      f"fallbacks {row['fallbacks_free']}/{row['fallbacks_fixed']}", flush=True)
            print(f"{name}: {free.summary['shapes']['compiles']} compiles in {compile_ms:.1f} ms, "
                  f"{free.summary['shapes']['hits']} hits")
    ratios = [r["ratio"] for r in rows]
    print(f"free / fixed: geometric mean {geomean(ratios):.3f}, worst {max(ratios):.3f}")
    bad = [r for r in rows if r["fallbacks_free"] > r["fallbacks_fixed"]]
    if bad:
        sys.exit(f"more nodes on reference kernels in the free session: {bad}")
    comment = (f"free dims, {args.devices}, {rounds} rounds x {n} runs; {cpu_model()}; "
               f"{os.cpu_count()} cores; hetsched Python module, PyTorch {__import__('torch').__version__} exports")
    write_csv(args.csv, comment, rows)


if __name__ == "__main__":
    main()
