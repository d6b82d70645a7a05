#!/usr/bin/python3
"""float16 models against their float32 twins: a model stored in float16 runs as fast.

Method
------
1. torchvision models (random weights, seeded) exported by torch.onnx in
   float32; the float16 twin is the same file with its float32 weights, input
   and output stored as float16 (what a float16 export or converter writes).
2. One session per file on one device (default cpu:0: one core, the stable
   timings), in one process (the hetsched Python module); the same random
   input, as float16 for the twin.
3. Rounds: in each, both sessions run `-n` times, in an order swapped from
   round to round. Figures: the median over the rounds of each round's
   median; ratio = float16 / float32; the spread is the min-max of the
   rounds' medians. The twin's output is checked against the float32 one
   (cosine similarity, and the largest difference relative to the largest
   output).

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

from bench_common import cpu_model, geomean, write_csv

# Models whose random-weight outputs float16 can hold (mobilenet_v2's are ~1e-10, below its range).
MODELS = ["resnet18", "resnet50", "squeezenet1_0", "googlenet"]


def export(name, path, shape):
    import torch
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    kwargs = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, torch.rand(*shape), path, input_names=["x"], output_names=["y"], opset_version=13,
                      **kwargs)


def stored_in_float16(path, out_path):
    import onnx
    from onnx import numpy_helper
    model = onnx.load(path)
    for init in model.graph.initializer:
        if init.data_type == onnx.TensorProto.FLOAT:
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16), init.name))
    for node in model.graph.node:  # Clip's bounds, a Pad's value...
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type == onnx.TensorProto.FLOAT:
                attr.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(attr.t).astype(np.float16)))
    for value in list(model.graph.input) + list(model.graph.output):
        value.type.tensor_type.elem_type = onnx.TensorProto.FLOAT16
    del model.graph.value_info[:]
    onnx.save(model, out_path)


def timed(session, feeds, n):
    """The median of n runs, in ms."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        session.run(feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default="build/python", help="folder holding the hetsched Python package")
    ap.add_argument("--devices", default="cpu:0")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-n", type=int, default=10, help="runs per session and round")
    ap.add_argument("--quick", action="store_true", help="small images, one round: checks that the script works")
    ap.add_argument("--csv", default="bench/results/precision.csv")
    args = ap.parse_args()
    sys.path.insert(0, args.python)
    import hetsched

    rounds, n = (1, 2) if args.quick else (args.rounds, args.n)
    shape = (1, 3, 64, 64) if args.quick else (1, 3, 224, 224)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = tmp
        for name in MODELS:
            path32, path16 = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + "_f16.onnx")
            export(name, path32, shape)
            stored_in_float16(path32, path16)
            s32 = hetsched.Session(path32, devices=args.devices)
            s16 = hetsched.Session(path16, devices=args.devices)
            x = np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32)
            f32, f16 = {"x": x}, {"x": x.astype(np.float16)}
            y32 = s32.run(f32)["y"].ravel().astype(np.float64)
            y16 = s16.run(f16)["y"].ravel().astype(np.float64)
            cosine = float(y32 @ y16 / (np.linalg.norm(y32) * np.linalg.norm(y16)))
            max_rel = float(np.max(np.abs(y32 - y16)) / np.max(np.abs(y32)))
            ms32, ms16 = [], []
            for r in range(rounds):
                order = [(s32, f32, ms32), (s16, f16, ms16)]
                if r % 2:
                    order.reverse()
                for session, feeds, out in order:
                    out.append(timed(session, feeds, n))
            p32, p16 = statistics.median(ms32), statistics.median(ms16)
            row = {
                "model": name,
                "float32_ms": round(p32, 3),
                "float16_ms": round(p16, 3),
                "ratio": round(p16 / p32, 3),
                "spread_float32": f"{min(ms32):.3f}-{max(ms32):.3f}",
                "spread_float16": f"{min(ms16):.3f}-{max(ms16):.3f}",
                "fallbacks_float32": s32.summary["n_fallbacks"],
                "fallbacks_float16": s16.summary["n_fallbacks"],
                "cosine": round(cosine, 6),
                "max_rel_diff": f"{max_rel:.2e}",
            }
            rows.append(row)
            print(f"{name:14s} float32 {p32:8.3f} ms  float16 {p16:8.3f} ms  ratio {row['ratio']:.3f}  "
                  f"cosine {cosine:.6f}  max diff {max_rel:.1e} of the largest output  "
                  f"fallbacks {row['fallbacks_float32']}/{row['fallbacks_float16']}", flush=True)
    ratios = [r["ratio"] for r in rows]
    print(f"float16 / float32: geometric mean {geomean(ratios):.3f}, worst {max(ratios):.3f}")
    comment = (f"float16 twins, {args.devices}, {rounds} rounds x {n} runs, input {'x'.join(map(str, shape))}; "
               f"{cpu_model()}; {os.cpu_count()} cores; hetsched Python module, PyTorch "
               f"{__import__('torch').__version__} exports")
    write_csv(args.csv, comment, rows)


if __name__ == "__main__":
    main()
