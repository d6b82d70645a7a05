"""Free dims against PyTorch (run by ctest as python_bindings).

Models exported by torch.onnx with dynamic axes (a transformer encoder and an
LSTM with free batch and sequence length, a CNN with free batch and image
size whose flatten is x.view(x.size(0), -1)) run at several shapes in one Session: each
output matches PyTorch's, each shape runs on the kernels of a session made
for that shape, and summary['shapes'] counts compiles and hits.
"""
import inspect
import os
import shutil
import tempfile
import unittest

import numpy as np

TMP = tempfile.mkdtemp(prefix="hetsched-free-dims-")
os.environ["XDG_CACHE_HOME"] = TMP  # before anything opens the default profile database

import hetsched  # noqa: E402

try:
    import torch
except ImportError:  # scripts/setup-deps.sh installs it; a bare machine may not have it
    torch = None


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def export(model, example, path, dynamic_axes):
    # The TorchScript exporter (the only one PyTorch 1.13 has; later ones default to another).
    kwargs = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, example, path, input_names=["x"], output_names=["y"], opset_version=13,
                      dynamic_axes=dynamic_axes, **kwargs)


class SmallCnn(torch.nn.Module if torch else object):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)  # GlobalAveragePool: exportable at any size
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        y = self.pool(torch.relu(self.conv(x)))
        return self.fc(y.view(y.size(0), -1))


@unittest.skipIf(torch is None, "needs python3-torch")
class FreeDimsAgainstPyTorch(unittest.TestCase):
    def check(self, model, path, shapes, dynamic_axes):
        torch.manual_seed(0)
        model.eval()
        export(model, torch.rand(*shapes[0]), path, dynamic_axes)
        session = hetsched.Session(path, devices="cpu:0")
        self.assertTrue(session.summary["shapes"]["free_dims"])
        for i, shape in enumerate(shapes + shapes[:1]):
            x = torch.rand(*shape) * 2 - 1
            with torch.no_grad():
                want = model(x).numpy()
            got = session.run({"x": x.numpy()})["y"]
            self.assertEqual(got.shape, want.shape)
            scale = float(np.max(np.abs(want)))
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * scale, err_msg=str(shape))
            fixed = hetsched.Session(path, devices="cpu:0", shapes={"x": shape})
            for key in ("n_steps", "n_fallbacks", "n_fused_nodes"):
                self.assertEqual(session.summary[key], fixed.summary[key], (key, shape))
        s = session.summary["shapes"]
        self.assertEqual(s["compiles"], len(shapes))
        self.assertEqual(s["hits"], 1)
        self.assertEqual(s["kept"][0], "x=" + "x".join(map(str, shapes[0])))

    def test_transformer_encoder_with_free_batch_and_sequence(self):
        layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.1,
                                                 batch_first=True)
        model = torch.nn.TransformerEncoder(layer, num_layers=2)
        self.check(model, os.path.join(TMP, "encoder.onnx"), [(2, 7, 32), (1, 12, 32)],
                   {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}})

    def test_lstm_with_free_batch_and_sequence(self):
        class Lstm(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = torch.nn.LSTM(input_size=8, hidden_size=16, num_layers=2, bidirectional=True,
                                         batch_first=True)

            def forward(self, x):
                return self.rnn(x)[0]

        self.check(Lstm(), os.path.join(TMP, "lstm.onnx"), [(2, 5, 8), (3, 11, 8)],
                   {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}})

    def test_cnn_with_free_batch_and_image_size(self):
        self.check(SmallCnn(), os.path.join(TMP, "cnn.onnx"), [(2, 3, 16, 12), (3, 3, 9, 9)],
                   {"x": {0: "batch", 2: "height", 3: "width"}, "y": {0: "batch"}})


@unittest.skipIf(torch is None, "needs python3-torch")
class FreeDimsProfileAndCompare(unittest.TestCase):
    def test_they_take_the_shapes_last_run(self):
        path = os.path.join(TMP, "cnn_profile.onnx")
        torch.manual_seed(0)
        export(SmallCnn().eval(), torch.rand(2, 3, 16, 12), path, {"x": {0: "batch", 2: "height", 3: "width"}})
        db = os.path.join(TMP, "profile.db")
        session = hetsched.Session(path, devices="cpu:0", db=db)
        with self.assertRaisesRegex(hetsched.Error, "free dims and has not run yet"):
            session.profile(repeats=2, warmups=1)
        session.run({"x": np.random.rand(3, 3, 10, 10).astype(np.float32)})
        # max_wait=1: whatever the load, nothing is left to measure again.
        profiled = session.profile(repeats=2, warmups=1, max_wait=1)
        self.assertGreater(profiled["units_measured"], 0)
        fixed = hetsched.Session(path, devices="cpu:0", db=db, shapes={"x": (3, 3, 10, 10)})
        again = fixed.profile(repeats=2, warmups=1, max_wait=1)
        self.assertEqual(again["units_measured"], 0, "the same shapes' entries, found in the database")
        compared = session.compare(schedulers=["heft"])
        self.assertEqual(compared["best_sequential_device"], "cpu:0")
        self.assertGreater(compared["best_sequential_ms"], 0)


if __name__ == "__main__":
    unittest.main()
