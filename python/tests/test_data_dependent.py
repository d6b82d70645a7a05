"""Shapes that depend on the data (run by ctest as python_bindings).

A model whose middle (NonZero: the channels whose mean activation is above
a threshold) makes a shape only the data knows: the Conv before it runs as
planned on the CPU backend, NonZero on the reference kernels, and what
follows is compiled for the shapes each run gives it; outputs match the
reference kernels' for inputs that keep different numbers of channels.
"""
import os
import shutil
import tempfile
import unittest

import numpy as np

TMP = tempfile.mkdtemp(prefix="hetsched-data-dependent-")
os.environ["XDG_CACHE_HOME"] = TMP  # before anything opens the default profile database

import hetsched  # noqa: E402

try:
    import onnx
    from onnx import TensorProto, helper
except ImportError:  # scripts/setup-deps.sh installs python3-onnx
    onnx = None


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


@unittest.skipIf(onnx is None, "needs python3-onnx")
class DataDependentShapes(unittest.TestCase):
    def model(self):
        rng = np.random.default_rng(0)
        w = rng.uniform(-1, 1, (8, 3, 3, 3)).astype(np.float32)
        fc = rng.uniform(-1, 1, (5, 4)).astype(np.float32)
        nodes = [
            helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node("GlobalAveragePool", ["r"], ["g"]),
            helper.make_node("Flatten", ["g"], ["f"]),                 # [1, 8]
            helper.make_node("Greater", ["f", "threshold"], ["mask"]),
            helper.make_node("NonZero", ["mask"], ["where"]),          # [2, k]: k only the data knows
            helper.make_node("Gather", ["where", "one"], ["channels"], axis=0),  # [k]
            helper.make_node("Gather", ["r", "channels"], ["kept"], axis=1),     # [1, k, 8, 8]
            helper.make_node("ReduceMean", ["kept"], ["m"], axes=[2, 3], keepdims=0),  # [1, k]
            helper.make_node("Relu", ["m"], ["y"]),
            helper.make_node("MatMul", ["fixed", "fc"], ["z"]),         # [1, 5], beside it all
        ]
        graph = helper.make_graph(
            nodes, "data_dependent",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8]),
             helper.make_tensor_value_info("fixed", TensorProto.FLOAT, [1, 5])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "k"]),
             helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4])],
            [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel()),
             helper.make_tensor("fc", TensorProto.FLOAT, fc.shape, fc.ravel()),
             helper.make_tensor("threshold", TensorProto.FLOAT, [], [0.3]),
             helper.make_tensor("one", TensorProto.INT64, [], [1])])
        path = os.path.join(TMP, "data_dependent.onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
        return path

    def test_static_head_barrier_and_tail_compiled_per_shape(self):
        path = self.model()
        session = hetsched.Session(path, devices="cpu:0")
        reference = hetsched.Session(path, reference=True)
        rng = np.random.default_rng(1)
        kept = set()
        for scale in (0.2, 1.0, 3.0, 1.0):
            feeds = {"x": (rng.uniform(-1, 1, (1, 3, 8, 8)) * scale).astype(np.float32),
                     "fixed": rng.uniform(-1, 1, (1, 5)).astype(np.float32)}
            got, want = session.run(feeds), reference.run(feeds)
            for name in ("y", "z"):
                self.assertEqual(got[name].shape, want[name].shape)
                np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)
            kept.add(got["y"].shape[1])
        self.assertGreater(len(kept), 1, "the inputs should keep different numbers of channels")
        s = session.summary
        self.assertIn("shapes that depend on the data", s["note"])
        self.assertIn("NonZero", s["note"])
        # The Conv ran as planned, on oneDNN: not among the nodes on reference kernels.
        self.assertFalse([f for f in s["fallbacks"] if f.startswith("Conv")], s["fallbacks"])
        self.assertIsNotNone(session.plan)

    def test_pins_go_to_the_stage_that_has_their_nodes(self):
        # The Conv is in the head, the ReduceMean in the tail: each stage takes its own pin.
        path = self.model()
        session = hetsched.Session(path, devices="cpu:0", pins=["Conv=cpu:0", "ReduceMean=cpu:0"])
        feeds = {"x": np.ones((1, 3, 8, 8), np.float32), "fixed": np.ones((1, 5), np.float32)}
        want = hetsched.Session(path, reference=True).run(feeds)
        np.testing.assert_allclose(session.run(feeds)["y"], want["y"], rtol=1e-5, atol=1e-6)
        with self.assertRaises(hetsched.UsageError):
            hetsched.Session(path, devices="cpu:0", pins=["NoSuchOp=cpu:0"])


if __name__ == "__main__":
    unittest.main()
