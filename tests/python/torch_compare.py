#!/usr/bin/python3
"""Checks hetsched's outputs against PyTorch's on real torchvision exports.

For each model: build it with random weights (weights=None, seeded), give its
BatchNormalization layers random affine parameters and running statistics
calibrated on a random batch (so that activations stay O(1) through the depth,
as in a trained network, and BN folding has real work), export it to ONNX with
torch.onnx, run it in PyTorch and with `hetsched run`, and compare the outputs:
|hetsched - torch| <= atol + rtol * |torch| elementwise, with rtol 1e-3 and atol
1e-4 times the largest |output| (so that the check means the same for every
output scale). A reference output that is nearly constant is a failure: the
comparison would prove nothing.

    /usr/bin/python3 tests/python/torch_compare.py --hetsched build/hetsched [MODEL ...]
    /usr/bin/python3 tests/python/torch_compare.py --hetsched build/hetsched --devices cuda:0

Needs Debian's python3-torch and python3-torchvision (installed by
scripts/setup-deps.sh). Ends with the line "N passed, M failed".
"""
import argparse
import inspect
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torchvision

# name -> (constructor, input shape)
MODELS = {
    "resnet18": (lambda: torchvision.models.resnet18(weights=None), (1, 3, 224, 224)),
    "resnet50": (lambda: torchvision.models.resnet50(weights=None), (1, 3, 224, 224)),
    "squeezenet1_0": (lambda: torchvision.models.squeezenet1_0(weights=None), (1, 3, 224, 224)),
    "googlenet": (lambda: torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=True),
                  (1, 3, 224, 224)),
    "inception_v3": (lambda: torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=True),
                     (1, 3, 299, 299)),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), (1, 3, 224, 224)),
    "mobilenet_v3_small": (lambda: torchvision.models.mobilenet_v3_small(weights=None), (1, 3, 224, 224)),
    "densenet121": (lambda: torchvision.models.densenet121(weights=None), (1, 3, 224, 224)),
    "shufflenet_v2_x1_0": (lambda: torchvision.models.shufflenet_v2_x1_0(weights=None), (1, 3, 224, 224)),
    "efficientnet_b0": (lambda: torchvision.models.efficientnet_b0(weights=None), (1, 3, 224, 224)),
    "mnasnet0_5": (lambda: torchvision.models.mnasnet0_5(weights=None), (1, 3, 224, 224)),
    "alexnet": (lambda: torchvision.models.alexnet(weights=None), (1, 3, 224, 224)),
    "vgg11": (lambda: torchvision.models.vgg11(weights=None), (1, 3, 224, 224)),
    "regnet_y_400mf": (lambda: torchvision.models.regnet_y_400mf(weights=None), (1, 3, 224, 224)),
    "swin_t": (lambda: torchvision.models.swin_t(weights=None), (1, 3, 224, 224)),
    "maxvit_t": (lambda: torchvision.models.maxvit_t(weights=None), (1, 3, 224, 224)),
    "transformer_encoder": (None, (1, 16, 64)),
    "lstm": (lambda: Recurrent(torch.nn.LSTM), (2, 12, 24)),
    "gru": (lambda: Recurrent(torch.nn.GRU), (2, 12, 24)),
}


class Recurrent(torch.nn.Module):
    """Two stacked bidirectional layers, batch first; the sequence output."""

    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(input_size=24, hidden_size=32, num_layers=2, bidirectional=True, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0]

def transformer_encoder():
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.1,
                                             batch_first=True)
    return torch.nn.TransformerEncoder(layer, num_layers=2)


def calibrate_batch_norm(model, shape):
    """Random BN affine parameters; running statistics from one random batch."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    with torch.no_grad():
        for bn in bns:
            bn.reset_running_stats()
            bn.momentum = None  # cumulative average: after one batch, the batch's statistics
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.2, 0.2)
        model.train()
        model(torch.rand(4, *shape[1:]) * 2 - 1)


def export(name, path, opset):
    ctor, shape = MODELS[name]
    model = transformer_encoder() if name == "transformer_encoder" else ctor()
    calibrate_batch_norm(model, shape)
    model.eval()
    x = torch.rand(*shape) * 2 - 1
    # A TransformerEncoder exports only outside no_grad (its fast path is not exportable).
    # PyTorch 2.9 and later default to the torch.export-based exporter (opset 18 and up,
    # weights in a file beside the model); these checks are made with the TorchScript one,
    # the only one PyTorch 1.13 has.
    kwargs = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, x, path, opset_version=opset, input_names=["input"], output_names=["output"], **kwargs)
    with torch.no_grad():
        y = model(x)
    return x.numpy(), y.numpy()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", help="models to check (default: all of %s)" % ", ".join(MODELS))
    ap.add_argument("--hetsched", required=True, help="path to the hetsched binary")
    ap.add_argument("--opset", type=int, default=13)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4, help="absolute tolerance, relative to max |output|")
    ap.add_argument("--devices", default="cpu", help="where hetsched runs them, e.g. cuda:0 on a GPU machine")
    args = ap.parse_args()
    names = args.models or list(MODELS)
    for n in names:
        if n not in MODELS:
            sys.exit("unknown model %s; known: %s" % (n, ", ".join(MODELS)))

    torch.manual_seed(0)
    torch.set_num_threads(1)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            torch.manual_seed(0)
            path = os.path.join(tmp, name + ".onnx")
            start = time.time()
            x, want = export(name, path, args.opset)
            np.save(os.path.join(tmp, "input.npy"), x)
            out_dir = os.path.join(tmp, name + "_out")
            proc = subprocess.run([args.hetsched, "run", path, "--input", "input=" + os.path.join(tmp, "input.npy"),
                                   "--output-dir", out_dir, "--devices", args.devices, "-n", "0", "-w", "0"],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                failed += 1
                print("FAIL %s: hetsched exited %d: %s" % (name, proc.returncode, proc.stderr.strip()))
                continue
            got = np.load(os.path.join(out_dir, "output.npy"))
            if got.shape != want.shape:
                failed += 1
                print("FAIL %s: shape %s != PyTorch %s" % (name, got.shape, want.shape))
                continue
            scale = float(np.max(np.abs(want)))
            spread = float(np.std(want))
            if not np.isfinite(scale) or spread <= 1e-6 * max(scale, 1e-30) or scale < 1e-6:
                failed += 1
                print("FAIL %s: PyTorch's output is degenerate (max |value| %.3g, std %.3g)" % (name, scale, spread))
                continue
            abs_diff = float(np.max(np.abs(got - want)))
            ok = np.allclose(got, want, rtol=args.rtol, atol=args.atol * scale)
            status = "PASS" if ok else "FAIL"
            passed += ok
            failed += not ok
            print("%s %s: max |diff| %.3g (output max |value| %.3g), %.1f s" %
                  (status, name, abs_diff, float(np.max(np.abs(want))), time.time() - start))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
