"""float16 and quantized (QDQ) models against PyTorch (run by ctest as python_bindings).

- A CNN exported by torch.onnx in float32 and stored in float16 (weights,
  input and output): hetsched computes it in float32 between two Casts, on
  the CPU backend, and matches PyTorch run in float32 on the float16-rounded
  weights and input, to float16's precision.
- A CNN with PyTorch's fake quantization (per-tensor activations, per-channel
  weights), which torch.onnx exports as QuantizeLinear / DequantizeLinear
  pairs (the QDQ format): hetsched matches PyTorch's fake-quantized outputs;
  a quantized Conv runs as oneDNN's int8 convolution, the other Conv on the
  float32 weights its DequantizeLinear folds to at load.
"""
import inspect
import os
import shutil
import tempfile
import unittest

import numpy as np

TMP = tempfile.mkdtemp(prefix="hetsched-precision-")
os.environ["XDG_CACHE_HOME"] = TMP  # before anything opens the default profile database

import hetsched  # noqa: E402

try:
    import onnx
    import torch
    from onnx import numpy_helper
except ImportError:  # scripts/setup-deps.sh installs them; a bare machine may not have them
    torch = None


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def export(model, example, path):
    # The TorchScript exporter (the only one PyTorch 1.13 has; later ones default to another).
    kwargs = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, example, path, input_names=["x"], output_names=["y"], opset_version=13, **kwargs)


class Cnn(torch.nn.Module if torch else object):
    def __init__(self, quantize=False):
        super().__init__()
        self.quantize = quantize
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2)
        self.fc = torch.nn.Linear(16, 5)

    def q(self, x, scale, lowest=-128):
        # int8 by default; after a ReLU uint8 from 0, as PyTorch's observers make it.
        if not self.quantize:
            return x
        return torch.fake_quantize_per_tensor_affine(x, scale, 0, lowest, lowest + 255)

    def qw(self, conv):
        if not self.quantize:
            return conv.weight
        w = conv.weight.detach()
        scale = (w.abs().amax(dim=(1, 2, 3)) / 127).float()
        return torch.fake_quantize_per_channel_affine(w, scale, torch.zeros(w.shape[0], dtype=torch.int32), 0,
                                                      -128, 127)

    def forward(self, x):
        x = self.q(x, 1 / 64)
        x = torch.relu(self.bn(torch.nn.functional.conv2d(x, self.qw(self.conv1), self.conv1.bias, padding=1)))
        x = self.q(x, 1 / 32)
        x = torch.relu(torch.nn.functional.conv2d(x, self.qw(self.conv2), self.conv2.bias, stride=2))
        x = self.q(x, 1 / 32, lowest=0)
        return self.fc(x.mean(dim=(2, 3)))


def stored_in_float16(path, out_path):
    """The float32 model `path` with its weights, input and output in float16."""
    model = onnx.load(path)
    for init in model.graph.initializer:
        if init.data_type == onnx.TensorProto.FLOAT:
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16), init.name))
    for value in list(model.graph.input) + list(model.graph.output):
        value.type.tensor_type.elem_type = onnx.TensorProto.FLOAT16
    del model.graph.value_info[:]
    onnx.save(model, out_path)


@unittest.skipIf(torch is None, "needs python3-torch and python3-onnx")
class HalfAndQuantizedAgainstPyTorch(unittest.TestCase):
    def test_a_float16_model_runs_in_float32_on_the_cpu_backend(self):
        torch.manual_seed(0)
        model = Cnn().eval()
        path32, path16 = os.path.join(TMP, "cnn32.onnx"), os.path.join(TMP, "cnn16.onnx")
        export(model, torch.rand(2, 3, 16, 16), path32)
        stored_in_float16(path32, path16)
        session = hetsched.Session(path16, devices="cpu:0")
        summary = session.summary
        self.assertEqual(summary["n_fallbacks"], 2, summary["fallbacks"])  # the input's and the output's Casts
        self.assertTrue(all("Cast" in f for f in summary["fallbacks"]), summary["fallbacks"])
        x = (torch.rand(2, 3, 16, 16) * 2 - 1).half()
        y = session.run({"x": x.numpy()})["y"]
        self.assertEqual(y.dtype, np.float16)
        # PyTorch in float32 on the weights and input as float16 holds them.
        with torch.no_grad():
            for p in list(model.parameters()) + list(model.buffers()):
                if p.dtype == torch.float32:
                    p.copy_(p.half().float())
            want = model(x.float()).half().numpy()
        np.testing.assert_allclose(y.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=1e-3)

    def test_a_qdq_model_matches_pytorch_fake_quantization(self):
        torch.manual_seed(0)
        model = Cnn(quantize=True).eval()
        path = os.path.join(TMP, "cnn_qdq.onnx")
        export(model, torch.rand(2, 3, 16, 16), path)
        ops = {n.op_type for n in onnx.load(path).graph.node}
        self.assertTrue({"QuantizeLinear", "DequantizeLinear"} <= ops, ops)
        session = hetsched.Session(path, devices="cpu:0")
        fallbacks = session.summary["fallbacks"]
        self.assertFalse([f for f in fallbacks if "Conv" in f.split(":")[0]], fallbacks)
        # The second Conv, its ReLU and its QuantizeLinear are one int8 QLinearConv on
        # the CPU backend; the first stays float32: its ReLU comes before an int8
        # QuantizeLinear of zero point 0, whose saturation does not clamp at 0.
        self.assertIn("QLinearConv", session.explain())
        reference = hetsched.Session(path, reference=True)
        for seed in range(3):
            torch.manual_seed(seed)
            x = torch.rand(2, 3, 16, 16) * 2 - 1
            with torch.no_grad():
                want = model(x).numpy()
            got = session.run({"x": x.numpy()})["y"]
            # PyTorch multiplies by 1/scale where the spec divides by it, and the
            # fused Conv's bias is rounded to int32 (at most half an accumulator
            # unit): an activation at a rounding tie may land one step (1/32) apart.
            np.testing.assert_allclose(got, want, rtol=0, atol=0.05, err_msg=f"seed {seed}")
            self.assertLess(float(np.median(np.abs(got - want))), 1e-3)
            # oneDNN's int8 convolution against the reference QLinearConv.
            np.testing.assert_allclose(got, reference.run({"x": x.numpy()})["y"], rtol=0, atol=1e-5)


def export_qat(name, path, shape):
    """torchvision's quantizable `name` after PyTorch's quantization-aware training
    recipe (fused Conv-BN-ReLU, uint8 activations, int8 per-channel weights; the
    observers calibrated on random images, then frozen), exported in the QDQ
    format; returns the PyTorch module."""
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
    export(model, torch.rand(*shape), path)
    return model


@unittest.skipIf(torch is None, "needs python3-torch and python3-onnx")
class QuantizationAwareTrainingExport(unittest.TestCase):
    def test_every_conv_of_a_qat_resnet18_runs_in_int8(self):
        path = os.path.join(TMP, "resnet18_qat.onnx")
        model = export_qat("resnet18", path, (1, 3, 64, 64))
        n_convs = sum(isinstance(m, torch.nn.Conv2d) for m in model.modules())
        session = hetsched.Session(path, devices="cpu:0")
        self.assertEqual(session.summary["n_fallbacks"], 0, session.summary["fallbacks"])
        explained = session.explain()
        launches = [line for line in explained.splitlines() if " launch " in line]
        self.assertEqual(sum(" QLinearConv " in line for line in launches), n_convs, explained)
        reference = hetsched.Session(path, reference=True)
        for seed in range(2):
            x = np.random.default_rng(seed).uniform(-1, 1, (1, 3, 64, 64)).astype(np.float32)
            got = session.run({"x": x})["y"].ravel().astype(np.float64)
            with torch.no_grad():
                want = model(torch.from_numpy(x)).numpy().ravel().astype(np.float64)
            exact = reference.run({"x": x})["y"].ravel().astype(np.float64)
            for other, what in ((want, "PyTorch"), (exact, "the reference kernels")):
                cosine = got @ other / (np.linalg.norm(got) * np.linalg.norm(other))
                self.assertGreater(cosine, 0.99, f"seed {seed}, against {what}")


@unittest.skipIf(torch is None or not os.environ.get("HETSCHED_CLI"), "needs python3-torch and the hetsched CLI")
class QuantizeCommand(unittest.TestCase):
    def test_hetsched_quantize_writes_a_qdq_model_that_runs_in_int8(self):
        import subprocess
        import torchvision
        torch.manual_seed(0)
        model = torchvision.models.resnet18(weights=None).eval()
        path, out = os.path.join(TMP, "resnet18.onnx"), os.path.join(TMP, "resnet18_int8.onnx")
        export(model, torch.rand(1, 3, 64, 64), path)
        args = [os.environ["HETSCHED_CLI"], "quantize", path, "-o", out, "--per-channel"]
        rng = np.random.default_rng(0)
        for k in range(4):
            image = os.path.join(TMP, f"calibration{k}.npy")
            np.save(image, rng.uniform(-1, 1, (1, 3, 64, 64)).astype(np.float32))
            args += ["--calibration", f"x={image}"]
        done = subprocess.run(args, capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("20 Convs and 1 MatMuls or Gemms quantized (per-channel weights", done.stdout)
        # A standard ONNX model: the checker and shape inference accept it.
        onnx.checker.check_model(onnx.load(out), full_check=True)
        ops = [n.op_type for n in onnx.load(out).graph.node]
        self.assertEqual(ops.count("Conv"), 20)
        self.assertGreaterEqual(ops.count("QuantizeLinear"), 20)
        session = hetsched.Session(out, devices="cpu:0")
        launches = [line for line in session.explain().splitlines() if " launch " in line]
        self.assertEqual(sum(" QLinearConv " in line for line in launches), 20)
        float32 = hetsched.Session(path, devices="cpu:0")
        x = rng.uniform(-1, 1, (1, 3, 64, 64)).astype(np.float32)
        got = session.run({"x": x})["y"].ravel().astype(np.float64)
        want = float32.run({"x": x})["y"].ravel().astype(np.float64)
        self.assertGreater(got @ want / (np.linalg.norm(got) * np.linalg.norm(want)), 0.95)


@unittest.skipIf(torch is None, "needs python3-torch and python3-onnx")
class Bfloat16Precision(unittest.TestCase):
    def test_precision_bfloat16_is_close_to_float32(self):
        torch.manual_seed(0)
        path = os.path.join(TMP, "cnn_bf16.onnx")
        export(Cnn().eval(), torch.rand(2, 3, 16, 16), path)
        x = np.random.default_rng(0).uniform(-1, 1, (2, 3, 16, 16)).astype(np.float32)
        want = hetsched.Session(path, devices="cpu:0").run({"x": x})["y"]
        session = hetsched.Session(path, devices="cpu:0", precision="bfloat16")
        got = session.run({"x": x})["y"]
        np.testing.assert_allclose(got, want, rtol=0, atol=0.03 * float(np.max(np.abs(want))))
        with self.assertRaisesRegex(hetsched.Error, "expected float32 or bfloat16"):
            hetsched.Session(path, precision="float16")


@unittest.skipIf(torch is None, "needs python3-torch and python3-onnx")
class QuantizeFromPython(unittest.TestCase):
    def test_quantize_takes_calibration_dicts_and_reports(self):
        torch.manual_seed(0)
        path, out = os.path.join(TMP, "cnn_py.onnx"), os.path.join(TMP, "cnn_py_int8.onnx")
        model = Cnn().eval()
        export(model, torch.rand(2, 3, 16, 16), path)
        rng = np.random.default_rng(0)
        calibration = [{"x": rng.uniform(-1, 1, (2, 3, 16, 16)).astype(np.float32)} for _ in range(3)]
        report = hetsched.quantize(path, out, calibration=calibration)
        self.assertEqual(report["quantized_convs"], 2)
        self.assertEqual(report["calibration_runs"], 3)
        self.assertFalse(report["random_calibration"])
        x = rng.uniform(-1, 1, (2, 3, 16, 16)).astype(np.float32)
        got = hetsched.Session(out, devices="cpu:0").run({"x": x})["y"]
        with torch.no_grad():
            want = model(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=0, atol=0.05 * float(np.max(np.abs(want))))
        with self.assertRaisesRegex(hetsched.UsageError, "random calibration runs: expected 1 or more, got 0"):
            hetsched.quantize(path, os.path.join(TMP, "none.onnx"), random=0)
        with self.assertRaisesRegex(hetsched.Error, "already quantized"):
            hetsched.quantize(out, os.path.join(TMP, "again.onnx"))

    @staticmethod
    def cnn_with_calibration(name, seed):
        """A small CNN exported to TMP/name.onnx, 8 calibration images in [-1, 1), an image x
        and PyTorch's output for it."""
        torch.manual_seed(0)
        path = os.path.join(TMP, name + ".onnx")
        model = Cnn().eval()
        export(model, torch.rand(2, 3, 16, 16), path)
        rng = np.random.default_rng(seed)
        calibration = [{"x": rng.uniform(-1, 1, (2, 3, 16, 16)).astype(np.float32)} for _ in range(8)]
        x = rng.uniform(-1, 1, (2, 3, 16, 16)).astype(np.float32)
        with torch.no_grad():
            want = model(torch.from_numpy(x)).numpy()
        return path, calibration, x, want

    @staticmethod
    def calibrated(path, calibration, x, want, method, name, **options):
        """(x's scale, the largest output error on x) of `path` quantized with `method`."""
        out = os.path.join(TMP, f"cnn_{name}.onnx")
        report = hetsched.quantize(path, out, calibration=calibration, method=method, **options)
        assert report["calibration_runs"] == len(calibration)
        scale = float(numpy_helper.to_array(next(t for t in onnx.load(out).graph.initializer if t.name == "x.scale")))
        return scale, float(np.max(np.abs(hetsched.Session(out, devices="cpu:0").run({"x": x})["y"] - want)))

    def test_percentile_calibration_is_not_stretched_by_a_rare_outlier(self):
        # Eight calibration images in [-1, 1) (12,288 input values), one with a
        # single pixel at 300: min-max calibration stretches the input's scale
        # over it; percentile 99.9 leaves out up to 6 values at either end,
        # keeps the range the others take, and so quantizes ordinary images
        # more finely.
        path, calibration, x, want = self.cnn_with_calibration("cnn_pct", 4)
        calibration[3]["x"][1, 2, 7, 7] = 300.0
        scale, error = {}, {}
        for method in ("minmax", "percentile"):
            scale[method], error[method] = self.calibrated(path, calibration, x, want, method, method, percentile=99.9)
        self.assertAlmostEqual(scale["minmax"], 301.0 / 255, delta=0.01)
        self.assertLess(scale["percentile"], 2.1 / 255)
        self.assertLess(error["percentile"], error["minmax"] / 4)
        with self.assertRaisesRegex(hetsched.UsageError,
                                    "calibration method 'kl': expected minmax, percentile or entropy"):
            hetsched.quantize(path, os.path.join(TMP, "none.onnx"), method="kl")
        with self.assertRaisesRegex(hetsched.UsageError, "percentile 40"):
            hetsched.quantize(path, os.path.join(TMP, "none.onnx"), method="percentile", percentile=40)

    def test_entropy_calibration_clips_a_long_tail_and_keeps_a_full_range(self):
        # The input's values, uniform in [-1, 1), fill their quantized range:
        # clipping would lose information, so entropy keeps the range. With
        # one pixel at 300 among them, the least loss is at the smallest
        # threshold it tries, 128 of its 2,048 bins of magnitudes (18.75),
        # the range [-1, 18.75]: 15x finer steps than min-max's [-1, 300]
        # for every ordinary image.
        path, calibration, x, want = self.cnn_with_calibration("cnn_entropy", 5)
        scale, _ = self.calibrated(path, calibration, x, want, "entropy", "entropy_uniform")
        self.assertAlmostEqual(scale, 2.0 / 255, delta=0.05 * 2.0 / 255)
        calibration[3]["x"][1, 2, 7, 7] = 300.0
        minmax_scale, minmax_error = self.calibrated(path, calibration, x, want, "minmax", "minmax_tail")
        scale, error = self.calibrated(path, calibration, x, want, "entropy", "entropy_tail")
        self.assertAlmostEqual(scale, (1.0 + 300.0 * 128 / 2048) / 255, delta=0.01 * scale)
        self.assertLess(scale, minmax_scale / 8)
        self.assertLess(error, minmax_error / 2)

    def test_dynamic_quantization_of_a_torch_mlp_runs_close_to_pytorch(self):
        torch.manual_seed(0)
        # Linear layers on a [batch, sequence, features] input export as MatMul + Add.
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 16)).eval()
        path, out = os.path.join(TMP, "mlp.onnx"), os.path.join(TMP, "mlp_dynamic.onnx")
        export(model, torch.rand(2, 5, 32), path)
        report = hetsched.quantize(path, out, dynamic=True, per_channel=True)
        self.assertEqual(report["quantized_matmuls"], 2)
        self.assertEqual(report["calibration_runs"], 0)
        x = np.random.default_rng(1).uniform(-1, 1, (2, 5, 32)).astype(np.float32)
        session = hetsched.Session(out, devices="cpu:0")
        got = session.run({"x": x})["y"]
        self.assertFalse(any("MatMulInteger" in f for f in session.summary["fallbacks"]))
        with torch.no_grad():
            want = model(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=0, atol=0.03 * float(np.max(np.abs(want))))
        np.testing.assert_array_equal(got, hetsched.Session(out, reference=True).run({"x": x})["y"])
        with self.assertRaisesRegex(hetsched.UsageError, "dynamic quantization"):
            hetsched.quantize(path, os.path.join(TMP, "none.onnx"), dynamic=True, calibration=[{"x": x}])

    def test_static_quantization_of_a_torch_mlp_runs_its_matmuls_in_int8(self):
        # The QDQ format ONNX Runtime's static quantizer writes for MatMuls;
        # at load each DequantizeLinear -> MatMul becomes one int8 matmul.
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 16)).eval()
        path = os.path.join(TMP, "mlp_static.onnx")
        export(model, torch.rand(2, 5, 32), path)
        rng = np.random.default_rng(6)
        calibration = [{"x": rng.uniform(-1, 1, (2, 5, 32)).astype(np.float32)} for _ in range(4)]
        x = rng.uniform(-1, 1, (2, 5, 32)).astype(np.float32)
        with torch.no_grad():
            want = model(torch.from_numpy(x)).numpy()
        for per_channel in (False, True):
            out = os.path.join(TMP, f"mlp_static_int8_{per_channel}.onnx")
            report = hetsched.quantize(path, out, calibration=calibration, per_channel=per_channel)
            self.assertEqual((report["quantized_convs"], report["quantized_matmuls"]), (0, 2))
            self.assertEqual(report["activations"], 2)
            ops = [n.op_type for n in onnx.load(out).graph.node]
            self.assertEqual(ops.count("DequantizeLinear"), 4)  # two activations, two weight matrices
            session = hetsched.Session(out, devices="cpu:0")
            got = session.run({"x": x})["y"]
            self.assertEqual(session.summary["fallbacks"], [])
            np.testing.assert_allclose(got, want, rtol=0, atol=0.03 * float(np.max(np.abs(want))))
            np.testing.assert_allclose(got, hetsched.Session(out, reference=True).run({"x": x})["y"], rtol=1e-5,
                                       atol=1e-6)


ORT_PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "peers")


def ort_peer_installed():
    return os.path.isdir(os.path.join(ORT_PEER, "node_modules", "onnxruntime-node")) and shutil.which("node")


def run_in_onnxruntime(path, feeds):
    """The outputs of ONNX Runtime 1.30 (CPU) running the file at `path`, by name."""
    import subprocess
    out = tempfile.mkdtemp(dir=TMP)
    args = ["node", os.path.join(ORT_PEER, "ort_run.js"), path, "--warmup", "0", "--iterations", "1",
            "--output-dir", out]
    for name, value in feeds.items():
        np.save(os.path.join(out, name + ".input.npy"), value)
        args += ["--input", f"{name}={os.path.join(out, name + '.input.npy')}"]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"ONNX Runtime could not run {path}: {done.stderr.strip()}")
    return {f[:-len(".npy")]: np.load(os.path.join(out, f)) for f in os.listdir(out) if not f.endswith(".input.npy")}


@unittest.skipIf(torch is None, "needs python3-torch and python3-onnx")
@unittest.skipUnless(ort_peer_installed(), "needs ONNX Runtime in bench/peers (make bench-peers) and node")
class QuantizedFilesRunInOnnxRuntime(unittest.TestCase):
    """What `hetsched quantize` writes loads and runs in ONNX Runtime, which
    computes what hetsched computes from it (up to a rounding tie per value)."""

    def check(self, path, feeds):
        got = hetsched.Session(path, devices="cpu:0").run(feeds)["y"]
        want = run_in_onnxruntime(path, feeds)["y"]
        self.assertEqual(got.shape, want.shape)
        a, b = got.ravel().astype(np.float64), want.ravel().astype(np.float64)
        self.assertGreater(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), 0.999)
        np.testing.assert_allclose(got, want, rtol=0, atol=0.05 * float(np.max(np.abs(want))))

    def test_static_and_dynamic_quantization(self):
        torch.manual_seed(0)
        cnn, cnn8 = os.path.join(TMP, "cnn_ort.onnx"), os.path.join(TMP, "cnn_ort_int8.onnx")
        export(Cnn().eval(), torch.rand(2, 3, 16, 16), cnn)
        self.assertEqual(hetsched.quantize(cnn, cnn8, per_channel=True)["quantized_convs"], 2)
        x = np.random.default_rng(2).uniform(-1, 1, (2, 3, 16, 16)).astype(np.float32)
        self.check(cnn8, {"x": x})
        mlp, mlp8 = os.path.join(TMP, "mlp_ort.onnx"), os.path.join(TMP, "mlp_ort_dynamic.onnx")
        export(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 16)).eval(),
               torch.rand(2, 5, 32), mlp)
        self.assertEqual(hetsched.quantize(mlp, mlp8, dynamic=True, per_channel=True)["quantized_matmuls"], 2)
        self.check(mlp8, {"x": np.random.default_rng(3).uniform(-1, 1, (2, 5, 32)).astype(np.float32)})
        for per_channel in (False, True):  # static: QDQ MatMuls
            static8 = os.path.join(TMP, f"mlp_ort_static_{per_channel}.onnx")
            self.assertEqual(hetsched.quantize(mlp, static8, per_channel=per_channel)["quantized_matmuls"], 2)
            self.check(static8, {"x": np.random.default_rng(4).uniform(-1, 1, (2, 5, 32)).astype(np.float32)})


if __name__ == "__main__":
    unittest.main()
