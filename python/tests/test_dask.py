"""hetsched.dask on a Dask LocalCluster (run by ctest as python_bindings).

Two worker processes of one thread each, 16 rows in chunks of 4: outputs
equal a local session's row by row, for a model with a free batch dim (a
chunk per run) and one with a fixed batch of 1 (a row per run; in
throughput mode, side by side on the flow's workers); each worker
keeps one session across jobs; pin_workers gives each its own core; a worker
killed mid-job and the result still complete and equal; an error in the
model comes back as hetsched's exception naming the worker and the chunk.
"""
import os
import shutil
import signal
import tempfile
import time
import unittest

import numpy as np

TMP = tempfile.mkdtemp(prefix="hetsched-dask-")
os.environ["XDG_CACHE_HOME"] = TMP  # before anything opens the default profile database (workers inherit it)

import hetsched  # noqa: E402

try:
    import dask.array as da
    from distributed import Client, LocalCluster

    import hetsched.dask as hdask
except ImportError:  # scripts/setup-deps.sh installs python3-distributed
    da = None

from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def save(path, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


def mlp(path, batch):
    """x[batch, 8] -> Relu(x W + b) -> y[batch, 5] (batch: "N" or a number)."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((8, 5)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "b")
    return save(path, [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["a"]),
                       helper.make_node("Relu", ["a"], ["y"])],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 8])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 5])], [w, b])


def conv_stack(path, channels=32, size=96, depth=8, batch="N"):
    """By default a few hundred ms a chunk of 4 rows on one core: time to kill a worker."""
    rng = np.random.default_rng(2)
    nodes, weights, value = [], [], "x"
    for i in range(depth):
        w = numpy_helper.from_array(
            (rng.standard_normal((channels, channels, 3, 3)) * 0.05).astype(np.float32), f"w{i}")
        weights.append(w)
        nodes.append(helper.make_node("Conv", [value, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        value = f"r{i}"
    nodes.append(helper.make_node("GlobalAveragePool", [value], ["y"]))
    return save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, channels, size, size])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, channels, 1, 1])], weights)


def gather_rows(path):
    """y[n, 0] = x[n, idx[n, 0]]: an index past the row is an error at run time."""
    return save(path, [helper.make_node("GatherElements", ["x", "idx"], ["y"], axis=1)],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
                 helper.make_tensor_value_info("idx", TensorProto.INT64, ["N", 1])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1])])


def local_rows(model, inputs):
    """The reference: a local session, one row at a time."""
    session = hetsched.Session(model, devices="cpu:0")
    n = len(next(iter(inputs.values())))
    rows = [session.run({k: v[i:i + 1] for k, v in inputs.items()}) for i in range(n)]
    return {name: np.concatenate([r[name] for r in rows]) for name in rows[0]}


def cluster():
    return LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")


def session_ids(model):
    return sorted(id(s) for (m, _), s in hdask._sessions.items() if m == model)


@unittest.skipIf(da is None, "needs python3-distributed")
class DaskInfer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = cluster()
        cls.client = Client(cls.cluster)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.cluster.close()

    def test_free_batch_runs_chunks_equal_to_local_rows_on_one_session_per_worker(self):
        model = mlp(os.path.join(TMP, "mlp_free.onnx"), "N")
        x = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)
        out = hdask.infer(model, {"x": da.from_array(x, chunks=4)})
        self.assertEqual(list(out), ["y"])
        self.assertEqual(out["y"].chunks, ((4, 4, 4, 4), (5,)))
        self.assertEqual(out["y"].dtype, np.float32)
        got = out["y"].compute()
        np.testing.assert_allclose(got, local_rows(model, {"x": x})["y"], rtol=1e-5, atol=1e-6)
        # A second job reuses each worker's session: the same objects.
        ids = self.client.run(session_ids, model)
        np.testing.assert_array_equal(hdask.infer(model, {"x": da.from_array(x, chunks=4)})["y"].compute(), got)
        self.assertEqual(self.client.run(session_ids, model), ids)
        self.assertTrue(all(len(v) <= 1 for v in ids.values()), ids)
        self.assertGreaterEqual(sum(len(v) for v in ids.values()), 1)

    def test_fixed_batch_runs_rows_one_at_a_time(self):
        model = mlp(os.path.join(TMP, "mlp_one.onnx"), 1)
        x = np.random.default_rng(3).standard_normal((16, 8)).astype(np.float32)
        out = hdask.infer(model, {"x": da.from_array(x, chunks=4)}, devices="cpu")
        np.testing.assert_allclose(out["y"].compute(), local_rows(model, {"x": x})["y"], rtol=1e-5, atol=1e-6)

    def test_inputs_are_checked_before_anything_runs(self):
        model = mlp(os.path.join(TMP, "mlp_check.onnx"), 2)
        x = np.zeros((16, 8), np.float32)
        with self.assertRaisesRegex(hetsched.InvalidInputError, "input 'x': expected float32, got float64") as caught:
            hdask.infer(model, {"x": da.from_array(x.astype(np.float64), chunks=4)})
        self.assertEqual(caught.exception.code, "invalid_input")
        with self.assertRaisesRegex(hetsched.InvalidInputError, "unknown input 'z'"):
            hdask.infer(model, {"x": da.from_array(x, chunks=4), "z": da.from_array(x, chunks=4)})
        with self.assertRaisesRegex(hetsched.InvalidInputError, "expected rows of 2x8, got 16x7"):
            hdask.infer(model, {"x": da.from_array(x[:, :7], chunks=4)})
        with self.assertRaisesRegex(hetsched.InvalidInputError, "chunk 1 has 3 rows; the model runs 2 rows"):
            hdask.infer(model, {"x": da.from_array(x, chunks=((4, 3, 9), (8,)))})

    def test_an_error_names_the_worker_and_the_chunk(self):
        model = gather_rows(os.path.join(TMP, "gather.onnx"))
        x = np.arange(64, dtype=np.float32).reshape(16, 4)
        idx = np.zeros((16, 1), np.int64)
        good = hdask.infer(model, {"x": da.from_array(x, chunks=4), "idx": da.from_array(idx, chunks=4)})
        np.testing.assert_array_equal(good["y"].compute(), x[:, :1])
        idx[9, 0] = 7
        bad = hdask.infer(model, {"x": da.from_array(x, chunks=4), "idx": da.from_array(idx, chunks=4)})
        workers = set(self.client.scheduler_info()["workers"])
        with self.assertRaises(hetsched.Error) as caught:
            bad["y"].compute()
        message = str(caught.exception)
        self.assertRegex(message, r"^worker \S+ \((tcp://[^)]+)\), chunk 2 \(rows 8-11\): ")
        self.assertIn(message.split("(")[1].split(")")[0], workers)
        self.assertIn("GatherElements", message)

    @unittest.skipIf(len(os.sched_getaffinity(0)) < 2, "needs two cores")
    def test_pin_workers_gives_each_its_own_cores(self):
        groups = hdask.pin_workers(self.client, cores_per_worker=1)
        self.assertEqual(len(groups), 2)
        cores = [c for g in groups.values() for c in g]
        self.assertEqual(len(cores), len(set(cores)))
        found = self.client.run(lambda: sorted(os.sched_getaffinity(0)))
        self.assertEqual(found, groups)
        # Sessions made from now on plan for the worker's core ("cpu").
        model = mlp(os.path.join(TMP, "mlp_pinned.onnx"), "N")
        x = np.ones((16, 8), np.float32)
        hdask.infer(model, {"x": da.from_array(x, chunks=4)})["y"].compute()
        devices = self.client.run(lambda: [s.summary["device"] for s in hdask._sessions.values()])
        for address, names in devices.items():
            for name in names:
                self.assertEqual(name, f"cpu:{groups[address][0]}")


@unittest.skipIf(da is None, "needs python3-distributed")
class DaskThroughputMode(unittest.TestCase):
    def test_rows_of_a_chunk_are_requests_of_the_sessions_flow(self):
        fixed = conv_stack(os.path.join(TMP, "convs_fixed.onnx"), channels=8, size=32, depth=2, batch=1)
        x = np.random.default_rng(5).standard_normal((16, 8, 32, 32)).astype(np.float32)
        with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as local_cluster, \
                Client(local_cluster) as client:
            out = hdask.infer(fixed, {"x": da.from_array(x, chunks=8)}, mode="throughput")
            np.testing.assert_allclose(out["y"].compute(), local_rows(fixed, {"x": x})["y"], rtol=1e-5, atol=1e-6)
            loads = next(iter(client.run(
                lambda: [s.loads for s in hdask._sessions.values()]).values()))[0]
        # Every row was a request of the flow (which worker took which is the
        # dispatcher's choice, by the workers' speeds).
        self.assertEqual(sum(load["requests"] for load in loads), 16)


@unittest.skipIf(da is None, "needs python3-distributed")
class DaskWorkerKilled(unittest.TestCase):
    def test_a_worker_killed_mid_job_and_the_result_is_still_equal(self):
        model = conv_stack(os.path.join(TMP, "convs.onnx"))
        x = np.random.default_rng(4).standard_normal((16, 32, 96, 96)).astype(np.float32)
        expected = local_rows(model, {"x": x})["y"]
        with cluster() as local_cluster, Client(local_cluster) as client:
            pids = client.run(os.getpid)
            future = client.compute(hdask.infer(model, {"x": da.from_array(x, chunks=4)})["y"])
            victim = None
            deadline = time.monotonic() + 60
            while victim is None and time.monotonic() < deadline:
                busy = [w for w, keys in client.processing().items() if keys]
                victim = busy[0] if busy else None
                time.sleep(0.005)
            self.assertIsNotNone(victim, "no worker started a chunk")
            self.assertFalse(future.done(), "the job ended before a worker could be killed")
            os.kill(pids[victim], signal.SIGKILL)
            got = future.result(timeout=120)
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
            self.assertNotIn(victim, client.scheduler_info()["workers"])
