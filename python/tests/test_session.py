"""Tests of the Python module (run by ctest as python_bindings).

PYTHONPATH must hold the build's python folder; HETSCHED_CLI (the hetsched
binary) and HETSCHED_SOURCE_DIR (for platforms/) are set by ctest. Every
test uses a private profile database in a temporary folder.
"""
import gc
import importlib.util
import os
import shutil
import subprocess
import tempfile
import sys
import threading
import unittest

import numpy as np

TMP = tempfile.mkdtemp(prefix="hetsched-python-tests-")
# Before anything opens the default profile database.
os.environ["XDG_CACHE_HOME"] = TMP

import hetsched  # noqa: E402

SOURCE_DIR = os.environ.get(
    "HETSCHED_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
CLI = os.environ.get("HETSCHED_CLI", "")
PHONE = os.path.join(SOURCE_DIR, "platforms", "phone-soc.json")
DB = os.path.join(TMP, "profile.db")

# A one-layer BERT: the cheapest zoo model (int64 input_ids).
BERT = "zoo:bert"
BERT_PARAMS = {"layers": 1, "seq": 8, "hidden": 32, "heads": 2, "vocab": 50}
BERT_CLI_PARAMS = [arg for k, v in BERT_PARAMS.items() for arg in ("--param", f"{k}={v}")]
# The cheapest image model (float32 input, 1x3x224x224).
SQUEEZENET = "zoo:squeezenet1_0"


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def run_cli(*args):
    """Runs the hetsched binary; returns (exit code, stdout, stderr)."""
    env = dict(os.environ, XDG_CACHE_HOME=TMP)
    r = subprocess.run([CLI, *args], capture_output=True, text=True, env=env)
    return r.returncode, r.stdout, r.stderr


def cli_error(*args):
    """The message the CLI prints for a failing command."""
    code, _, err = run_cli(*args)
    prefix = "hetsched: error: "
    lines = [l for l in err.splitlines() if l.startswith(prefix)]
    return code, lines[0][len(prefix):] if lines else err


def bert(**kwargs):
    return hetsched.Session(BERT, params=BERT_PARAMS, db=DB, **kwargs)


class ModuleTest(unittest.TestCase):
    def test_lists(self):
        schedulers = hetsched.schedulers()
        for name in ("sequential", "heft", "auto", "round-robin"):
            self.assertIn(name, schedulers)
            self.assertTrue(schedulers[name])
        names = [m["name"] for m in hetsched.zoo_models()]
        self.assertIn(SQUEEZENET, names)
        self.assertIn(BERT, names)
        bert_entry = next(m for m in hetsched.zoo_models() if m["name"] == BERT)
        self.assertIn("layers=", bert_entry["params"])

        machine = hetsched.machine()
        # Set by the package before it loaded libgomp (the test's environment
        # sets neither), taken by libgomp, which OMP_DISPLAY_ENV shows, and
        # taken out of the environment again.
        self.assertEqual(machine["openmp_waits"], "OMP_WAIT_POLICY=ACTIVE GOMP_SPINCOUNT=30000")
        self.assertNotIn("OMP_WAIT_POLICY", os.environ)
        self.assertNotIn("GOMP_SPINCOUNT", os.environ)
        env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
        env["OMP_DISPLAY_ENV"] = "verbose"
        shown = subprocess.run([sys.executable, "-c", "import hetsched"], env=env, capture_output=True, text=True)
        self.assertEqual(shown.returncode, 0, shown.stderr)
        self.assertIn("OMP_WAIT_POLICY = 'ACTIVE'", shown.stderr)
        self.assertIn("GOMP_SPINCOUNT = '30000'", shown.stderr)
        devices = hetsched.devices()
        self.assertEqual([d["name"] for d in devices], [f"cpu:{c}" for c in machine["cores"]])
        self.assertTrue(all(d["kind"] == "cpu" and d["description"] for d in devices))
        emulated = hetsched.devices(platform=PHONE)
        self.assertEqual([d["name"] for d in emulated], ["emu:big", "emu:little", "emu:npu"])
        self.assertTrue(all(d["kind"] == "emulated" for d in emulated))
        self.assertIn("Conv", emulated[2]["ops"])

    def test_error_classes(self):
        self.assertTrue(issubclass(hetsched.Error, RuntimeError))
        self.assertTrue(issubclass(hetsched.UsageError, hetsched.Error))
        self.assertTrue(issubclass(hetsched.UsageError, ValueError))
        self.assertTrue(issubclass(hetsched.InvalidInputError, ValueError))


class SessionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bert = bert()
        cls.bert_reference = bert(reference=True)

    def test_inputs_outputs_and_summary(self):
        s = self.bert
        self.assertEqual(s.inputs, [("input_ids", "int64", (1, 8))])
        self.assertEqual(s.outputs, [("output", "float32", (1, 8, 32))])
        summary = s.summary
        self.assertEqual(summary["n_nodes"], 32)  # two GELUs fused into Gelu nodes at load
        self.assertEqual(summary["scheduler"], "sequential")
        self.assertEqual(summary["n_lanes"], 1)
        self.assertEqual(self.bert_reference.summary["device"], "reference")
        self.assertIn("zoo:bert", repr(s))

    def test_random_inputs_are_deterministic(self):
        a = self.bert.random_inputs(seed=3)["input_ids"]
        b = self.bert.random_inputs(seed=3)["input_ids"]
        c = self.bert.random_inputs(seed=4)["input_ids"]
        self.assertEqual(a.dtype, np.int64)
        self.assertEqual(a.shape, (1, 8))
        np.testing.assert_array_equal(a, b)
        self.assertFalse(np.array_equal(a, c))
        self.assertTrue(((a >= 0) & (a < 10)).all())

    def test_bert_matches_reference_kernels(self):
        feeds = self.bert.random_inputs(seed=1)
        out = self.bert.run(feeds)["output"]
        expected = self.bert_reference.run(feeds)["output"]
        self.assertEqual(out.dtype, np.float32)
        self.assertEqual(out.shape, (1, 8, 32))
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
        # Other ids, other outputs: the input is really read.
        other = self.bert.run({"input_ids": (feeds["input_ids"] + 1) % 50})["output"]
        self.assertGreater(np.abs(other - out).max(), 1e-3)

    def test_image_model_matches_reference_kernels(self):
        s = hetsched.Session(SQUEEZENET, db=DB)
        reference = hetsched.Session(SQUEEZENET, reference=True, db=DB)
        x = np.random.default_rng(0).uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32)
        out = s.run({"input": x})
        expected = reference.run({"input": x})
        self.assertEqual(list(out), [name for name, _, _ in s.outputs])
        for name in out:
            self.assertEqual(out[name].shape, (1, 1000))
            np.testing.assert_allclose(out[name], expected[name], rtol=1e-3, atol=1e-4)

    @unittest.skipIf(len(hetsched.devices()) < 2, "needs two cores")
    def test_two_devices_match_reference_kernels(self):
        s = bert(devices="cpu:0,cpu:1", scheduler="round-robin")
        self.assertEqual(s.summary["n_lanes"], 2)
        feeds = s.random_inputs(seed=2)
        np.testing.assert_allclose(s.run(feeds)["output"], self.bert_reference.run(feeds)["output"],
                                   rtol=1e-4, atol=1e-5)

    def test_input_layouts_give_the_same_outputs(self):
        s = hetsched.Session(SQUEEZENET, db=DB)
        x = np.random.default_rng(1).uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32)
        saved = x.copy()
        name = s.outputs[0][0]
        expected = s.run({"input": x})[name]  # read in place
        # Copied, not read in place: strided, Fortran order, big-endian, read-only.
        strided = np.zeros((1, 3, 224, 448), np.float32)
        strided[..., ::2] = x
        variants = {
            "strided": strided[..., ::2],
            "fortran": np.asfortranarray(x),
            "big-endian": x.astype(">f4"),
        }
        readonly = x.copy()
        readonly.flags.writeable = False
        variants["read-only"] = readonly
        for label, v in variants.items():
            np.testing.assert_array_equal(s.run({"input": v})[name], expected, err_msg=label)
        # The engine never writes the caller's arrays.
        np.testing.assert_array_equal(x, saved)
        np.testing.assert_array_equal(strided[..., ::2], x)
        np.testing.assert_array_equal(readonly, x)

    def test_outputs_are_not_copied_and_outlive_the_session(self):
        s = bert()
        feeds = s.random_inputs(seed=5)
        out = s.run(feeds)["output"]
        self.assertIsNotNone(out.base)
        self.assertFalse(out.flags.owndata)
        self.assertTrue(out.flags.writeable)
        saved = out.copy()
        again = s.run(feeds)["output"]
        self.assertFalse(np.shares_memory(out, again))  # each run its own buffers
        del s, again
        gc.collect()
        # Fill the heap where the session's memory was.
        junk = [np.full((1, 8, 32), 7.0, np.float32) for _ in range(100)]
        np.testing.assert_array_equal(out, saved)
        del junk
        inputs = self.bert.random_inputs()
        self.assertFalse(inputs["input_ids"].flags.owndata)

    def test_plan(self):
        s = bert(platform=PHONE, devices="emu:big,emu:little", scheduler="heft")
        plan = s.plan
        self.assertEqual(plan["format"], "hetsched-plan")
        self.assertEqual(plan["scheduler"], "heft")
        self.assertEqual(plan["devices"], ["emu:big", "emu:little"])
        self.assertTrue(plan["lanes"])
        self.assertIn("steps", plan["lanes"][0])
        self.assertEqual(len(plan["placement"]), 32)
        import json
        self.assertEqual(json.loads(s.plan_json), plan)
        self.assertIsNone(self.bert_reference.plan)
        self.assertIsNone(self.bert_reference.plan_json)

    def test_pins_place_nodes_and_explain_says_so(self):
        s = bert(platform=PHONE, devices="emu:big,emu:little", scheduler="heft", pins=["MatMul=emu:little"])
        pinned = [p for p in s.plan["placement"].values() if "pinned by MatMul=emu:little" in p["reason"]]
        self.assertTrue(pinned)
        self.assertTrue(all(p["device"] == "emu:little" for p in pinned))
        self.assertIn("pinned by MatMul=emu:little", s.explain())
        with self.assertRaises(hetsched.UsageError) as e:
            bert(platform=PHONE, devices="emu:big", pins=["MatMul=emu:npu"])
        self.assertIn("--pin MatMul=emu:npu: no device 'emu:npu'", str(e.exception))

    def test_cuda_graph_option(self):
        self.assertEqual(self.bert.summary["cuda_graph"], "", "no GPU in the plan: nothing to say")
        self.assertEqual(bert(cuda_graph="off").summary["cuda_graph"], "")
        with self.assertRaises(hetsched.UsageError) as e:
            bert(cuda_graph="on")
        self.assertIn("--cuda-graph on needs every lane of the plan on one GPU", str(e.exception))
        with self.assertRaises(hetsched.UsageError) as e:
            bert(cuda_graph="maybe")
        self.assertIn("cuda_graph: expected 'on', 'off' or None, got 'maybe'", str(e.exception))

    def test_explain_is_the_cli_report(self):
        s = bert(platform=PHONE, scheduler="random")
        text = s.explain()
        self.assertTrue(text.startswith("plan 'random' for zoo:bert (32 nodes, "), text[:200])
        for part in ("devices:", "lane 0:", "estimates by source: roofline", "nodes:", "memory:"):
            self.assertIn(part, text)
        if CLI:
            plan_file = os.path.join(TMP, "random.json")
            with open(plan_file, "w") as f:
                f.write(s.plan_json)
            code, out, err = run_cli("explain", plan_file, *BERT_CLI_PARAMS, "--platform", PHONE, "--db", DB)
            self.assertEqual(code, 0, err)
            self.assertEqual(out, text)
        with self.assertRaises(hetsched.UsageError) as e:
            self.bert_reference.explain()
        self.assertIn("reference kernels", str(e.exception))

    def test_compare_on_an_emulated_platform(self):
        s = bert(platform=PHONE)
        calls = []
        asked = ["sequential", "heft", "round-robin", "type-based"]
        c = s.compare(schedulers=asked, progress=lambda done, total, what: calls.append((done, total, what)))
        for key in ("lower_bound_ms", "best_sequential_ms", "best_sequential_device", "sequential", "schedulers"):
            self.assertIn(key, c)
        self.assertTrue(c["emulated"])
        self.assertFalse(c["measured"])
        self.assertEqual([row["name"] for row in c["schedulers"]], asked)
        self.assertGreater(c["lower_bound_ms"], 0)
        for row in c["schedulers"]:
            self.assertNotIn("error", row)
            self.assertIsInstance(row["predicted_ms"], float)
            # No plan beats the lower bound.
            self.assertGreaterEqual(row["predicted_ms"], c["lower_bound_ms"] * (1 - 1e-9))
            self.assertIsNone(row["measured_p50_ms"])
        devices = [b["device"] for b in c["sequential"]]
        self.assertEqual(devices, ["emu:big", "emu:little"])  # the NPU cannot run the model alone
        self.assertIn(c["best_sequential_device"], devices)
        self.assertEqual(c["best_sequential_ms"], min(b["predicted_ms"] for b in c["sequential"]))
        self.assertEqual([call[0] for call in calls], list(range(len(asked))))
        self.assertTrue(calls[0][2].startswith("planning: sequential"))

        measured = s.compare(schedulers="heft", measure=True, rounds=2, warmups=0)
        self.assertEqual([row["name"] for row in measured["schedulers"]], ["heft"])
        row = measured["schedulers"][0]
        self.assertGreater(row["measured_p50_ms"], 0)
        self.assertLessEqual(row["measured_min_ms"], row["measured_max_ms"])

        with self.assertRaises(hetsched.UsageError) as e:
            s.compare(schedulers=["fastest"])
        self.assertIn("unknown scheduler 'fastest'", str(e.exception))

    def test_profile(self):
        s = bert(devices="cpu:0")
        calls = []
        # max_wait=1: reuse what other test processes disturbed (the C++ tests cover that)
        first = s.profile(repeats=1, warmups=0, max_wait=1, progress=lambda *a: calls.append(a))
        self.assertEqual(first["db_path"], DB)
        self.assertEqual([d["name"] for d in first["devices"]], ["cpu:0"])
        self.assertGreater(first["units_measured"], 0)
        self.assertEqual(first["units_reused"], 0)
        self.assertEqual((first["links_measured"], first["links_in_context"]), (0, 0))  # one device: no hand-over
        self.assertEqual([c["name"] for c in first["calibration"]], ["cpu:0"])
        self.assertGreater(first["calibration"][0]["peak_gflops"], 0)
        self.assertTrue(calls)
        self.assertEqual(calls[-1][0], calls[-1][1])  # ends with done == total
        second = s.profile(repeats=1, warmups=0, max_wait=1)
        self.assertEqual(second["units_measured"], 0)
        self.assertEqual(second["units_reused"], first["units_measured"])
        self.assertTrue(second["calibration"][0]["from_database"])

        # What the callback raises stops the work and reaches the caller.
        class Stop(Exception):
            pass

        def stop(done, total, what):
            raise Stop(what)

        with self.assertRaises(Stop):
            s.profile(repeats=1, warmups=0, force=True, progress=stop)
        with self.assertRaises(hetsched.UsageError):
            s.profile(repeats=0)
        # The session still runs.
        self.assertIn("output", s.run(s.random_inputs()))

    def test_run_from_threads(self):
        s = bert()
        feeds = s.random_inputs(seed=6)
        expected = s.run(feeds)["output"]
        results, errors = [], []

        def work():
            try:
                for _ in range(5):
                    results.append(s.run(feeds)["output"])
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(len(results), 15)
        for r in results:
            np.testing.assert_array_equal(r, expected)


    @unittest.skipUnless(len(os.sched_getaffinity(0)) >= 2, "needs two cores")
    def test_throughput_mode_serves_threads_side_by_side(self):
        cores = sorted(os.sched_getaffinity(0))[:2]
        s = bert(devices=f"cpu:{cores[0]},cpu:{cores[1]}", mode="throughput")
        summary = s.summary
        self.assertIn("throughput: ", summary["choice"])
        self.assertTrue(summary["flow"])
        self.assertEqual(len(summary["workers"]), len(s.loads))
        self.assertEqual(sum(f["chosen"] for f in summary["flows"]), 1)
        self.assertTrue(all(f["measured_per_s"] > 0 for f in summary["flows"]))
        feeds = [s.random_inputs(seed=k) for k in range(3)]
        reference = bert(reference=True)
        expected = [reference.run(f)["output"] for f in feeds]
        errors = []

        def work(k):
            try:
                for _ in range(4):
                    np.testing.assert_allclose(s.run(feeds[k])["output"], expected[k], rtol=1e-4, atol=1e-5)
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(sum(load["requests"] for load in s.loads), 12)
        with self.assertRaises(hetsched.UsageError):
            bert(mode="fastest")


class ExportTest(unittest.TestCase):
    def test_exported_model_loads_by_path(self):
        path = os.path.join(TMP, "bert.onnx")
        data = hetsched.export_model(BERT, path, params=BERT_PARAMS)
        with open(path, "rb") as f:
            self.assertEqual(f.read(), data)
        if CLI:
            cli_path = os.path.join(TMP, "bert-cli.onnx")
            code, _, err = run_cli("export", BERT, *BERT_CLI_PARAMS, "-o", cli_path)
            self.assertEqual(code, 0, err)
            with open(cli_path, "rb") as f:
                self.assertEqual(f.read(), data)
            path = cli_path
        from_file = hetsched.Session(path, db=DB)
        from_zoo = bert()
        self.assertEqual(from_file.model, path)
        self.assertEqual(from_file.inputs, from_zoo.inputs)
        feeds = from_zoo.random_inputs(seed=7)
        np.testing.assert_allclose(from_file.run(feeds)["output"], from_zoo.run(feeds)["output"], rtol=1e-6,
                                   atol=1e-6)


class ErrorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = bert()

    def assert_error(self, context, cls, code, message):
        self.assertIsInstance(context.exception, cls)
        self.assertEqual(context.exception.code, code)
        self.assertEqual(str(context.exception), message)

    def test_missing_input(self):
        with self.assertRaises(hetsched.Error) as e:
            self.s.run({})
        self.assert_error(e, hetsched.InvalidInputError, "invalid_input",
                          "input 'input_ids': missing (expected int64 1x8)")

    def test_wrong_dtype(self):
        with self.assertRaises(hetsched.Error) as e:
            self.s.run({"input_ids": np.zeros((1, 8), np.float32)})
        self.assert_error(e, hetsched.InvalidInputError, "invalid_input",
                          "input 'input_ids': expected int64 1x8, got float32 1x8")
        with self.assertRaises(hetsched.Error) as e:
            self.s.run({"input_ids": np.zeros((1, 8), np.complex64)})
        self.assert_error(e, hetsched.InvalidInputError, "invalid_input",
                          "input 'input_ids': numpy dtype complex64 has no hetsched dtype")

    def test_wrong_shape_and_extra_input(self):
        with self.assertRaises(ValueError) as e:
            self.s.run({"input_ids": np.zeros((1, 9), np.int64)})
        self.assert_error(e, hetsched.InvalidInputError, "invalid_input",
                          "input 'input_ids': expected int64 1x8, got int64 1x9")
        with self.assertRaises(hetsched.Error) as e:
            self.s.run({"input_ids": np.zeros((1, 8), np.int64), "mask": np.zeros(1)})
        self.assert_error(e, hetsched.InvalidInputError, "invalid_input",
                          "input 'mask': the model has no such input")

    def test_bad_device_spec(self):
        with self.assertRaises(ValueError) as e:
            bert(devices="gpu:7")
        message = "--devices 'gpu:7': unknown device kind 'gpu' (expected cpu, cpu:CORES, emu:NAME or cuda:N)"
        self.assert_error(e, hetsched.UsageError, "usage", message)
        if CLI:
            self.assertEqual(cli_error("run", BERT, *BERT_CLI_PARAMS, "--devices", "gpu:7"), (2, message))

    def test_missing_file(self):
        missing = os.path.join(TMP, "absent.onnx")
        with self.assertRaises(hetsched.Error) as e:
            hetsched.Session(missing)
        self.assert_error(e, hetsched.Error, "io", f"{missing}: no such file")
        self.assertNotIsInstance(e.exception, ValueError)
        if CLI:
            self.assertEqual(cli_error("run", missing), (1, f"{missing}: no such file"))

    def test_bad_arguments(self):
        with self.assertRaises(hetsched.UsageError):
            bert(scheduler="fastest")
        with self.assertRaises(hetsched.UsageError):
            hetsched.Session(BERT, params={"layers": "many"}, db=DB)
        with self.assertRaises(hetsched.UsageError):
            hetsched.Session(SQUEEZENET, params={"layers": 1}, shapes="1x3")
        with self.assertRaises(hetsched.UsageError) as e:
            self.s.compare(schedulers=["heft"], measure=True, rounds=0)
        self.assertEqual(e.exception.code, "usage")
        with self.assertRaises(hetsched.UsageError):
            self.s.profile(progress="not callable")


# onnx.helper, not onnx: libonnx-testdata alone leaves an onnx namespace
# folder (its backend test data) that imports but has no helper.
@unittest.skipIf(importlib.util.find_spec("onnx.helper") is None, "needs the onnx Python package")
class AliasTest(unittest.TestCase):
    """Outputs that are the caller's input or the model's constants come back as copies."""

    def test_reference_outputs_never_alias_inputs_or_weights(self):
        import onnx
        from onnx import TensorProto, helper

        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
        shape = helper.make_tensor_value_info("shape", TensorProto.INT64, [2])
        graph = helper.make_graph([helper.make_node("Shape", ["x"], ["shape"])], "alias", [x], [x, shape])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        path = os.path.join(TMP, "alias.onnx")
        onnx.save(model, path)
        for reference in (True, False):
            s = hetsched.Session(path, reference=reference, db=DB)
            feed = np.arange(6, dtype=np.float32).reshape(2, 3)
            out = s.run({"x": feed})
            self.assertFalse(np.shares_memory(out["x"], feed))
            np.testing.assert_array_equal(out["x"], feed)
            np.testing.assert_array_equal(out["shape"], [2, 3])
            out["shape"][:] = 0  # must not change the model's constant
            np.testing.assert_array_equal(s.run({"x": feed})["shape"], [2, 3])



@unittest.skipIf(importlib.util.find_spec("onnx.helper") is None, "needs the onnx Python package")
class UnsignedTest(unittest.TestCase):
    """numpy's unsigned integers in and out, full 64-bit range."""

    def test_uint64_and_uint16_round_trip(self):
        import onnx
        from onnx import TensorProto, helper

        inputs = [helper.make_tensor_value_info(n, TensorProto.UINT64, [3]) for n in ("a", "b")]
        shift = helper.make_tensor_value_info("s", TensorProto.UINT16, [3])
        outputs = [helper.make_tensor_value_info("diff", TensorProto.UINT64, [3]),
                   helper.make_tensor_value_info("shifted", TensorProto.UINT16, [3])]
        nodes = [helper.make_node("Sub", ["a", "b"], ["diff"]),
                 helper.make_node("BitShift", ["s", "s"], ["shifted"], direction="LEFT")]
        graph = helper.make_graph(nodes, "unsigned", inputs + [shift], outputs)
        path = os.path.join(TMP, "unsigned.onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
        s = hetsched.Session(path, db=DB)
        a = np.array([2**64 - 1, 5, 0], dtype=np.uint64)
        b = np.array([1, 7, 1], dtype=np.uint64)
        out = s.run({"a": a, "b": b, "s": np.array([1, 3, 16], dtype=np.uint16)})
        self.assertEqual(out["diff"].dtype, np.uint64)
        np.testing.assert_array_equal(out["diff"], a - b)  # numpy wraps the same way
        np.testing.assert_array_equal(out["shifted"], np.array([2, 24, 0], dtype=np.uint16))

