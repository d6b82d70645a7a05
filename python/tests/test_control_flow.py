"""If, Loop and Scan (run by ctest as python_bindings).

Models built with ONNX's own helper, each run on one CPU device and on the
reference kernels and checked against numpy: branches and bodies that read
values of the enclosing graph (a nested If inside a Loop body reads the
model's input two scopes up), a Loop with a trip count and one with zero
iterations, a while loop, and a Scan over a non-zero axis in reverse.
"""
import os
import shutil
import tempfile
import unittest

import numpy as np

TMP = tempfile.mkdtemp(prefix="hetsched-control-flow-")
os.environ["XDG_CACHE_HOME"] = TMP  # before anything opens the default profile database

import hetsched  # noqa: E402

try:
    import onnx
    from onnx import TensorProto, helper
except ImportError:  # scripts/setup-deps.sh installs python3-onnx
    onnx = None

F, I64, B = (TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL) if onnx else (None, None, None)


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def save(graph, name, opset=13):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    path = os.path.join(TMP, name + ".onnx")
    onnx.save(model, path)
    return path


def run_both(path, feeds):
    """The outputs on cpu:0 and on the reference kernels, checked equal."""
    got = hetsched.Session(path, devices="cpu:0").run(feeds)
    ref = hetsched.Session(path, reference=True).run(feeds)
    for name in ref:
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-6, err_msg=name)
    return got


@unittest.skipIf(onnx is None, "needs python3-onnx")
class ControlFlow(unittest.TestCase):
    def test_if_branches_read_the_enclosing_graph(self):
        # y = cond ? x + w : x * x, w an initializer of the model.
        then = helper.make_graph([helper.make_node("Add", ["x", "w"], ["t"])], "then", [],
                                 [helper.make_tensor_value_info("t", F, [3])])
        other = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["e"])], "else", [],
                                  [helper.make_tensor_value_info("e", F, [3])])
        graph = helper.make_graph(
            [helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other)], "if",
            [helper.make_tensor_value_info("cond", B, []), helper.make_tensor_value_info("x", F, [3])],
            [helper.make_tensor_value_info("y", F, [3])],
            [helper.make_tensor("w", F, [3], [10, 20, 30])])
        path = save(graph, "if")
        x = np.array([1, 2, 3], np.float32)
        for cond, want in ((True, x + [10, 20, 30]), (False, x * x)):
            got = run_both(path, {"cond": np.array(cond), "x": x})["y"]
            np.testing.assert_allclose(got, want)

    def loop_model(self, name, trips):
        # v_{i+1} = v_i + (i even ? x : -x), each v also a scan output; the
        # If inside the body reads x, the model's input, two scopes up.
        add = helper.make_graph([helper.make_node("Add", ["v", "x"], ["a"])], "add", [],
                                [helper.make_tensor_value_info("a", F, [2])])
        sub = helper.make_graph([helper.make_node("Sub", ["v", "x"], ["s"])], "sub", [],
                                [helper.make_tensor_value_info("s", F, [2])])
        body = helper.make_graph(
            [helper.make_node("Mod", ["i", "two"], ["r"]),
             helper.make_node("Equal", ["r", "zero"], ["even"]),
             helper.make_node("If", ["even"], ["v_next"], then_branch=add, else_branch=sub),
             helper.make_node("Identity", ["cond_in"], ["cond_out"]),
             helper.make_node("Identity", ["v_next"], ["scan"])],
            "body",
            [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond_in", B, []),
             helper.make_tensor_value_info("v", F, [2])],
            [helper.make_tensor_value_info("cond_out", B, []), helper.make_tensor_value_info("v_next", F, [2]),
             helper.make_tensor_value_info("scan", F, [2])],
            [helper.make_tensor("two", I64, [], [2]), helper.make_tensor("zero", I64, [], [0])])
        graph = helper.make_graph(
            [helper.make_node("Loop", ["M", "", "v0"], ["v_final", "scans"], body=body)], name,
            [helper.make_tensor_value_info("x", F, [2]), helper.make_tensor_value_info("v0", F, [2])],
            [helper.make_tensor_value_info("v_final", F, [2]), helper.make_tensor_value_info("scans", F, ["n", 2])],
            [helper.make_tensor("M", I64, [], [trips])])
        return save(graph, name)

    def test_loop_with_a_trip_count_and_nested_captures(self):
        x, v0 = np.array([1, 2], np.float32), np.array([5, 5], np.float32)
        got = run_both(self.loop_model("loop3", 3), {"x": x, "v0": v0})
        np.testing.assert_allclose(got["v_final"], v0 + x)  # +x, -x, +x
        np.testing.assert_allclose(got["scans"], np.stack([v0 + x, v0, v0 + x]))

    def test_loop_of_zero_iterations(self):
        x, v0 = np.array([1, 2], np.float32), np.array([5, 5], np.float32)
        got = hetsched.Session(self.loop_model("loop0", 0), reference=True).run({"x": x, "v0": v0})
        np.testing.assert_allclose(got["v_final"], v0)
        self.assertEqual(got["scans"].shape, (0, 2))

    def test_while_loop_stops_on_the_bodys_condition(self):
        # while (v < limit) v = v * 2, cond given; no trip count.
        body = helper.make_graph(
            [helper.make_node("Mul", ["v", "two"], ["v_next"]),
             helper.make_node("Less", ["v_next", "limit"], ["cond_out"])],
            "body",
            [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond_in", B, []),
             helper.make_tensor_value_info("v", F, [])],
            [helper.make_tensor_value_info("cond_out", B, []), helper.make_tensor_value_info("v_next", F, [])],
            [helper.make_tensor("two", F, [], [2])])
        graph = helper.make_graph(
            [helper.make_node("Loop", ["", "go", "v0"], ["v_final"], body=body)], "while",
            [helper.make_tensor_value_info("go", B, []), helper.make_tensor_value_info("v0", F, []),
             helper.make_tensor_value_info("limit", F, [])],
            [helper.make_tensor_value_info("v_final", F, [])])
        path = save(graph, "while")
        feeds = {"v0": np.array(3, np.float32), "limit": np.array(100, np.float32)}
        self.assertEqual(float(run_both(path, dict(feeds, go=np.array(True)))["v_final"]), 192.0)
        self.assertEqual(float(run_both(path, dict(feeds, go=np.array(False)))["v_final"]), 3.0)  # checked first

    def test_scan_over_axis_1_in_reverse(self):
        # Running sums of the columns of x [2, 3], last column first; the
        # sums stacked along axis 1 in the order made.
        body = helper.make_graph(
            [helper.make_node("Add", ["sum_in", "column"], ["sum_out"]),
             helper.make_node("Identity", ["sum_out"], ["partial"])],
            "body",
            [helper.make_tensor_value_info("sum_in", F, [2]), helper.make_tensor_value_info("column", F, [2])],
            [helper.make_tensor_value_info("sum_out", F, [2]), helper.make_tensor_value_info("partial", F, [2])])
        graph = helper.make_graph(
            [helper.make_node("Scan", ["init", "x"], ["total", "partials"], body=body, num_scan_inputs=1,
                              scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1])],
            "scan",
            [helper.make_tensor_value_info("init", F, [2]), helper.make_tensor_value_info("x", F, [2, 3])],
            [helper.make_tensor_value_info("total", F, [2]), helper.make_tensor_value_info("partials", F, [2, 3])])
        path = save(graph, "scan")
        x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
        got = run_both(path, {"init": np.zeros(2, np.float32), "x": x})
        np.testing.assert_allclose(got["total"], [6, 15])
        np.testing.assert_allclose(got["partials"], [[3, 5, 6], [6, 11, 15]])


if __name__ == "__main__":
    unittest.main()
