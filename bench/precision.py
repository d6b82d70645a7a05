#!/usr/bin/python3
"""float16, bfloat16 and int8 models against their float32 twins.

Method
------
1. torchvision models (random weights, seeded) exported by torch.onnx in
   float32, and two twins:
   - float16: the same file with its float32 weights, input and output stored
     as float16 (what a float16 export or converter writes);
   - int8-qat: torchvision's quantizable version of the model after
     PyTorch's quantization-aware training recipe (fused Conv-BN-ReLU, uint8
     activations, int8 per-channel symmetric weights, observers calibrated on
     random images then frozen), exported in the QDQ format;
   - int8: the float32 file quantized by `hetsched quantize --per-channel`,
     calibrated on 8 random images (saved as .npy, given with --calibration);
   - int8-dynamic: the zoo's BERT encoder quantized by `hetsched quantize
     --dynamic` (ONNX Runtime's dynamic format: its MatMuls in int8, the
     activations' ranges taken at run time);
   - int8-static: the same encoder quantized by `hetsched quantize
     --per-channel` (the QDQ format: its MatMuls' inputs calibrated on 8
     random token sequences, their matrices per column);
   - bfloat16: the float32 file itself, in a session with
     precision="bfloat16" (convolutions and matrix products computed in
     bfloat16); also the zoo's BERT encoder (base sizes, sequence 128, its
     random token ids).
2. One session per file on one device (default cpu:0: one core, the stable
   timings), in one process (the hetsched Python module); the same random
   input (as float16 for the float16 twin).
3. Rounds: in each, the float32 session and the twin run `-n` times each, in
   an order swapped from round to round. Figures: the median over the rounds
   of each round's median; ratio = twin / float32; the spread is the min-max
   of the rounds' medians. Outputs: the float16 twin against the float32
   model (the bfloat16 run too), the int8-qat twin against PyTorch running the same quantized model
   (fake quantization), both int8 twins against hetsched's reference kernels
   running them, the int8 one against the float32 model (cosine similarity;
   the largest difference relative to the largest output).

Run on a quiet machine: nothing else running.
"""
import argparse
import inspect
import os
import statistics
import sys
import tempfile

import numpy as np

from bench_common import compared, cpu_model, geomean, run, timed, write_csv

# Models whose random-weight outputs float16 can hold (mobilenet_v2's are ~1e-10, below its range).
HALF_MODELS = ["resnet18", "resnet50", "squeezenet1_0", "googlenet"]
INT8_MODELS = ["resnet50", "mobilenet_v2"]


def export(name, path, shape):
    import torch
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    kwargs = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, torch.rand(*shape), path, input_names=["x"], output_names=["y"], opset_version=13,
                      **kwargs)


def export_qat(name, path, shape):
    """The QDQ export of torchvision's quantizable `name` after quantization-aware training; the module."""
    import torch
    from torch.ao import quantization as q
    from torchvision.models import quantization as quantizable
    torch.manual_seed(0)
    model = getattr(quantizable, name)(weights=None, quantize=False)
    model.train()
    model.fuse_model(is_qat=True)
    model.qconfig = q.QConfig(
        activation=q.FakeQuantize.with_args(observer=q.MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                                            dtype=torch.quint8),
        weight=q.FakeQuantize.with_args(observer=q.MovingAveragePerChannelMinMaxObserver, quant_min=-128,
                                        quant_max=127, dtype=torch.qint8, qscheme=torch.per_channel_symmetric))
    q.prepare_qat(model, inplace=True)
    with torch.no_grad():
        for _ in range(3):
            model(torch.rand(*shape))
    model.apply(q.disable_observer)
    model.eval()
    kwargs = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, torch.rand(*shape), path, input_names=["x"], output_names=["y"], opset_version=13,
                      **kwargs)
    return model


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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default="build/python", help="folder holding the hetsched Python package")
    ap.add_argument("--hetsched", default="build/hetsched", help="the hetsched CLI (for `hetsched quantize`)")
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
        x = np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32)

        def measure(name, variant, path32, twin_path, twin_x, checks, precision="float32", feeds=None, output="y"):
            s32 = hetsched.Session(path32, devices=args.devices)
            twin = hetsched.Session(twin_path, devices=args.devices, precision=precision)
            feeds32 = feeds or {"x": x}
            feeds_twin = feeds or {"x": twin_x}
            y = twin.run(feeds_twin)[output]
            ms32, ms_twin = [], []
            for r in range(rounds):
                order = [(s32, feeds32, ms32), (twin, feeds_twin, ms_twin)]
                if r % 2:
                    order.reverse()
                for session, feeds, out in order:
                    out.append(timed(session, feeds, n))
            p32, p_twin = statistics.median(ms32), statistics.median(ms_twin)
            row = {"model": name, "variant": variant, "float32_ms": round(p32, 3), "twin_ms": round(p_twin, 3),
                   "ratio": round(p_twin / p32, 3), "spread_float32": f"{min(ms32):.3f}-{max(ms32):.3f}",
                   "spread_twin": f"{min(ms_twin):.3f}-{max(ms_twin):.3f}",
                   "fallbacks_twin": twin.summary["n_fallbacks"]}
            text = []
            for what, want in checks:
                cosine, max_rel = compared(y, want(twin))
                row[f"cosine_vs_{what}"] = round(cosine, 6)
                row[f"max_rel_diff_vs_{what}"] = f"{max_rel:.2e}"
                text.append(f"vs {what}: cosine {cosine:.6f}, max diff {max_rel:.1e}")
            rows.append(row)
            print(f"{name:14s} {variant:8s} float32 {p32:8.3f} ms  {variant} {p_twin:8.3f} ms  ratio {row['ratio']:.3f}  "
                  f"{'; '.join(text)}  fallbacks {row['fallbacks_twin']}", flush=True)

        for name in HALF_MODELS:
            path32, path16 = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + "_f16.onnx")
            export(name, path32, shape)
            stored_in_float16(path32, path16)
            y32 = hetsched.Session(path32, devices=args.devices).run({"x": x})["y"]
            measure(name, "float16", path32, path16, x.astype(np.float16), [("float32", lambda _: y32)])
            measure(name, "bfloat16", path32, path32, x, [("float32", lambda _: y32)], precision="bfloat16")
        # A transformer: the zoo's BERT encoder (base sizes, sequence 128; 2 layers with --quick).
        bert = "zoo:bert" if not args.quick else os.path.join(tmp, "bert2.onnx")
        if args.quick:
            hetsched.export_model("zoo:bert", bert, params={"layers": 2, "seq": 16})
        bert_feeds = hetsched.Session(bert, devices=args.devices).random_inputs()
        bert_y32 = hetsched.Session(bert, devices=args.devices).run(bert_feeds)["output"]
        measure("bert", "bfloat16", bert, bert, None, [("float32", lambda _: bert_y32)], precision="bfloat16",
                feeds=bert_feeds, output="output")
        bert8 = os.path.join(tmp, "bert_int8.onnx")
        run([args.hetsched, "quantize", bert, "-o", bert8, "--dynamic"])
        measure("bert", "int8-dynamic", bert, bert8, None, [("float32", lambda _: bert_y32)], feeds=bert_feeds,
                output="output")
        bert8s = os.path.join(tmp, "bert_int8_static.onnx")
        run([args.hetsched, "quantize", bert, "-o", bert8s, "--per-channel"])
        measure("bert", "int8-static", bert, bert8s, None, [("float32", lambda _: bert_y32)], feeds=bert_feeds,
                output="output")
        import torch
        for name in INT8_MODELS:
            path32, path8 = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + "_qdq.onnx")
            if not os.path.exists(path32):
                export(name, path32, shape)
            model = export_qat(name, path8, shape)
            with torch.no_grad():
                want = model(torch.from_numpy(x)).numpy()
            reference = hetsched.Session(path8, reference=True).run({"x": x})["y"]
            measure(name, "int8-qat", path32, path8, x,
                    [("pytorch", lambda _: want), ("reference", lambda _: reference)])
            quantized = os.path.join(tmp, name + "_int8.onnx")
            cmd = [args.hetsched, "quantize", path32, "-o", quantized, "--per-channel"]
            rng = np.random.default_rng(1)
            for k in range(8):
                image = os.path.join(tmp, f"calibration{k}.npy")
                np.save(image, rng.uniform(-1, 1, shape).astype(np.float32))
                cmd += ["--calibration", f"x={image}"]
            run(cmd)
            y32 = hetsched.Session(path32, devices=args.devices).run({"x": x})["y"]
            reference = hetsched.Session(quantized, reference=True).run({"x": x})["y"]
            measure(name, "int8", path32, quantized, x,
                    [("float32", lambda _: y32), ("reference", lambda _: reference)])
    for variant in ("float16", "bfloat16", "int8-qat", "int8", "int8-dynamic", "int8-static"):
        ratios = [r["ratio"] for r in rows if r["variant"] == variant]
        print(f"{variant} / float32: geometric mean {geomean(ratios):.3f}, worst {max(ratios):.3f}")
    comment = (f"float16, bfloat16 and int8 twins, {args.devices}, {rounds} rounds x {n} runs, input {'x'.join(map(str, shape))}; "
               f"{cpu_model()}; {os.cpu_count()} cores; hetsched Python module, PyTorch "
               f"{__import__('torch').__version__} exports")
    keys = list(dict.fromkeys(k for r in rows for k in r))  # the float16 and int8 rows check different things
    write_csv(args.csv, comment, [{k: r.get(k, "") for k in keys} for r in rows])


if __name__ == "__main__":
    main()
