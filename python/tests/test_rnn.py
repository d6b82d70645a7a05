"""LSTM, GRU and RNN on oneDNN (src/backends/cpu/ops/rnn.cpp), run by ctest as python_bindings.

- ONNX's own node tests of the three ops, their weights made constants (as
  every exporter writes them; the node tests feed them as inputs, which keeps
  them on the reference kernels): the outputs ONNX expects, with no node on
  the reference kernels but the one oneDNN cannot run (peepholes).
- PyTorch's exports (two bidirectional layers, initial states given at run
  time) against PyTorch's outputs, every output compared.
- What neither covers (layout 1 with two directions and initial states,
  reverse, Relu, an omitted Y) against the reference kernels.
"""
import glob
import inspect
import os
import shutil
import tempfile
import unittest

import numpy as np

TMP = tempfile.mkdtemp(prefix="hetsched-rnn-")
os.environ["XDG_CACHE_HOME"] = TMP  # before anything opens the default profile database

import hetsched  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

try:
    import torch
except ImportError:  # scripts/setup-deps.sh installs it
    torch = None

NODE_TESTS = "/usr/share/libonnx-testdata/data/node"
RNN_TESTS = sorted(glob.glob(os.path.join(NODE_TESTS, "test_*lstm*")) + glob.glob(os.path.join(NODE_TESTS, "test_*gru*"))
                   + glob.glob(os.path.join(NODE_TESTS, "test_*rnn*")))


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def read_tensor(path):
    proto = TensorProto()
    with open(path, "rb") as f:
        proto.ParseFromString(f.read())
    return numpy_helper.to_array(proto)


def fallbacks(session):
    return session.summary["n_fallbacks"], session.summary["fallbacks"]


@unittest.skipIf(not RNN_TESTS, "needs libonnx-testdata")
class NodeTestsWithConstantWeights(unittest.TestCase):
    def test_outputs_are_onnx_expected_ones_on_onednn(self):
        for folder in RNN_TESTS:
            name = os.path.basename(folder)
            with self.subTest(name):
                model = onnx.load(os.path.join(folder, "model.onnx"))
                data = os.path.join(folder, "test_data_set_0")
                inputs = {i.name: read_tensor(os.path.join(data, f"input_{k}.pb"))
                          for k, i in enumerate(model.graph.input)}
                node = model.graph.node[0]
                # W, R, B (and P) become initializers; X stays an input.
                weights = [n for n in node.input[1:] if n and n in inputs and n != node.input[0]]
                for n in weights:
                    model.graph.initializer.append(numpy_helper.from_array(inputs.pop(n), n))
                kept = [i for i in model.graph.input if i.name in inputs]
                del model.graph.input[:]
                model.graph.input.extend(kept)
                path = os.path.join(TMP, name + ".onnx")
                onnx.save(model, path)
                session = hetsched.Session(path, devices="cpu:0")
                peepholes = node.op_type == "LSTM" and len(node.input) > 7 and node.input[7]
                n, why = fallbacks(session)
                self.assertEqual(n, 1 if peepholes else 0, why)
                got = session.run(inputs)
                for k, out in enumerate(model.graph.output):
                    expected = read_tensor(os.path.join(data, f"output_{k}.pb"))
                    np.testing.assert_allclose(got[out.name], expected, rtol=1e-4, atol=1e-6, err_msg=out.name)


@unittest.skipIf(torch is None, "needs python3-torch")
class AgainstPyTorch(unittest.TestCase):
    def export(self, module, args, names, path):
        kwargs = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
        torch.onnx.export(module, args, path, input_names=names[0], output_names=names[1], opset_version=14,
                          **kwargs)

    def check(self, kind, **options):
        torch.manual_seed(0)
        module = getattr(torch.nn, kind)(input_size=12, hidden_size=20, num_layers=2, bidirectional=True,
                                         **options).eval()
        x = torch.rand(7, 3, 12) * 2 - 1
        h0 = torch.rand(4, 3, 20) - 0.5
        args = (x, (h0, torch.rand(4, 3, 20) - 0.5)) if kind == "LSTM" else (x, h0)
        in_names = ["x", "h0", "c0"] if kind == "LSTM" else ["x", "h0"]
        out_names = ["y", "hn", "cn"] if kind == "LSTM" else ["y", "hn"]
        path = os.path.join(TMP, f"torch_{kind}_{options}.onnx".replace(" ", ""))
        self.export(module, args, (in_names, out_names), path)
        with torch.no_grad():
            y, state = module(*args)
        expected = [y] + (list(state) if kind == "LSTM" else [state])
        feeds = [x, *args[1]] if kind == "LSTM" else [x, h0]
        session = hetsched.Session(path, devices="cpu:0")
        # (The exporter slices h0 per layer: Slice runs on the reference kernels.)
        self.assertEqual([f for f in session.summary["fallbacks"] if kind.upper() in f], [])
        got = session.run({name: t.numpy() for name, t in zip(in_names, feeds)})
        for name, want in zip(out_names, expected):
            np.testing.assert_allclose(got[name], want.numpy(), rtol=1e-4, atol=1e-5, err_msg=f"{kind} {name}")

    def test_lstm(self):
        self.check("LSTM")

    def test_gru(self):  # PyTorch's GRU is ONNX's linear_before_reset=1: lbr_gru
        self.check("GRU")

    def test_rnn_tanh_and_relu(self):
        self.check("RNN")
        self.check("RNN", nonlinearity="relu")


class AgainstReferenceKernels(unittest.TestCase):
    def check(self, name, op, attrs, dirs, hidden, gates, layout=0, states=(), outputs=("Y", "Y_h"), n_fallbacks=0):
        rng = np.random.default_rng(len(name))
        seq, batch, size = 5, 3, 6
        inits = [numpy_helper.from_array((rng.random((dirs, gates * hidden, size), np.float32) - 0.5), "W"),
                 numpy_helper.from_array((rng.random((dirs, gates * hidden, hidden), np.float32) - 0.5), "R"),
                 numpy_helper.from_array((rng.random((dirs, 2 * gates * hidden), np.float32) - 0.5), "B")]
        x_dims = [batch, seq, size] if layout else [seq, batch, size]
        state_dims = [batch, dirs, hidden] if layout else [dirs, batch, hidden]
        graph_inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_dims)]
        node_inputs = ["X", "W", "R", "B", ""]
        for s in states:
            graph_inputs.append(helper.make_tensor_value_info(s, TensorProto.FLOAT, state_dims))
            node_inputs.append(s)
        node = helper.make_node(op, node_inputs, list(outputs), hidden_size=hidden, layout=layout, **attrs)
        graph_outputs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs if o]
        model = helper.make_model(helper.make_graph([node], name, graph_inputs, graph_outputs, inits),
                                  opset_imports=[helper.make_opsetid("", 14)])
        path = os.path.join(TMP, name + ".onnx")
        onnx.save(model, path)
        cpu = hetsched.Session(path, devices="cpu:0")
        reference = hetsched.Session(path, reference=True)
        n, why = fallbacks(cpu)
        self.assertEqual(n, n_fallbacks, f"{name}: {why}")
        feeds = reference.random_inputs(seed=3)
        got, want = cpu.run(feeds), reference.run(feeds)
        self.assertEqual(sorted(got), sorted(want))
        for out in want:
            np.testing.assert_allclose(got[out], want[out], rtol=1e-4, atol=1e-6, err_msg=f"{name} {out}")

    def test_layout_1_with_two_directions_and_initial_states(self):
        self.check("lstm_batchwise_bidir", "LSTM", {"direction": "bidirectional"}, 2, 4, 4, layout=1,
                   states=("h0", "c0"), outputs=("Y", "Y_h", "Y_c"))
        self.check("gru_batchwise_bidir", "GRU", {"direction": "bidirectional", "linear_before_reset": 1}, 2, 4, 3,
                   layout=1, states=("h0",))

    def test_reverse_and_layout_0_two_directions(self):
        self.check("gru_reverse", "GRU", {"direction": "reverse"}, 1, 5, 3, states=("h0",))
        self.check("lstm_bidir", "LSTM", {"direction": "bidirectional"}, 2, 5, 4, states=("h0", "c0"),
                   outputs=("Y", "Y_h", "Y_c"))
        self.check("rnn_bidir_relu", "RNN", {"direction": "bidirectional", "activations": ["Relu", "Relu"]}, 2, 5, 1)

    def test_omitted_outputs(self):
        self.check("lstm_only_y_h", "LSTM", {}, 1, 4, 4, outputs=("", "Y_h"))
        self.check("gru_only_y", "GRU", {}, 1, 4, 3, outputs=("Y",))

    def test_what_onednn_cannot_run_stays_on_the_reference_kernels(self):
        self.check("lstm_clip", "LSTM", {"clip": 0.5}, 1, 4, 4, n_fallbacks=1)
        self.check("gru_other_activations", "GRU", {"activations": ["HardSigmoid", "Tanh"]}, 1, 4, 3, n_fallbacks=1)
        self.check("rnn_mixed_activations", "RNN", {"direction": "bidirectional", "activations": ["Tanh", "Relu"]},
                   2, 4, 1, n_fallbacks=1)
