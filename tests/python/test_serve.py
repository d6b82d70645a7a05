#!/usr/bin/python3
"""`hetsched serve` against clients nobody here wrote: Python's urllib, and
gRPC stubs that python3-grpc-tools compiles from the protocol's .proto.

Starts the server on a free port with a small BERT encoder, then checks the
Open Inference Protocol's REST endpoints, JSON and binary tensors, every
kind of bad request (each followed by a good one), a bounded load test
(8 clients x 200 requests, every answer checked against the hetsched Python
module's reference kernels), the metrics, the gRPC service (raw and typed
tensors, errors), and that SIGTERM lets the requests in flight finish and
exits 0.

    test_serve.py --hetsched build/hetsched --python build/python
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

import numpy as np

ARGS = None
PARAMS = {"layers": 1, "seq": 8, "hidden": 32, "heads": 2, "vocab": 50}


def start_server(extra, model=None):
    """(process, base URL) of a server started with `extra` flags, serving
    `model` (arguments; default: the small BERT as "bert")."""
    if model is None:
        model = ["zoo:bert", "--name", "bert"] + [a for k, v in PARAMS.items() for a in ("--param", f"{k}={v}")]
    cmd = [ARGS.hetsched, "serve", *model, "--port", "0", "--grpc-port", "0", "--db", ARGS.db]
    if "--drain-seconds" not in extra:
        cmd += ["--drain-seconds", "0.2"]
    proc = subprocess.Popen(cmd + extra, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    deadline = time.time() + 300
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        m = re.search(r"on (http://[\d.]+:\d+)/v2", line)
        if m:
            grpc_line = proc.stdout.readline()
            lines.append(grpc_line)
            proc.grpc_target = re.search(r"gRPC on ([\d.]+:\d+)", grpc_line).group(1)
            # Keep reading its output so that the pipe never fills.
            proc.reader = threading.Thread(target=lambda: [lines.append(x) for x in proc.stdout], daemon=True)
            proc.reader.start()
            return proc, m.group(1), lines
    proc.kill()
    proc.wait()
    proc.stdout.close()
    raise RuntimeError("the server did not start:\n" + "".join(lines))


def finish(proc):
    """Waits for the server's exit and its output's end; its exit code."""
    code = proc.wait(timeout=60)
    proc.reader.join()
    proc.stdout.close()
    return code


def call(base, path, body=None, headers=None):
    """(status, headers, body bytes) of a GET, or a POST when body is given."""
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, headers=headers or {},
                                 method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def run_clients(client, n):
    """client(0) ... client(n - 1), each on a thread of its own, until all end."""
    threads = [threading.Thread(target=client, args=(c,)) for c in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def infer_body(ids):
    return {"id": "req-1", "inputs": [{"name": "input_ids", "shape": list(ids.shape), "datatype": "INT64",
                                       "data": ids.tolist()}]}


class ServeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, ARGS.python)
        import hetsched
        cls.reference = hetsched.Session("zoo:bert", params=PARAMS, reference=True)
        cores = sorted(os.sched_getaffinity(0))
        devices = f"cpu:{cores[0]},cpu:{cores[1]}" if len(cores) >= 2 else "cpu"
        cls.proc, cls.base, cls.lines = start_server(["--devices", devices, "--max-body-mib", "1"])

    @classmethod
    def tearDownClass(cls):
        cls.proc.send_signal(signal.SIGTERM)
        finish(cls.proc)

    def expected(self, ids):
        return self.reference.run({"input_ids": ids})["output"]

    def ids(self, seed):
        return np.random.default_rng(seed).integers(0, PARAMS["vocab"], size=(1, PARAMS["seq"]), dtype=np.int64)

    def check_answer(self, status, body, ids):
        self.assertEqual(status, 200, body)
        answer = json.loads(body)
        self.assertEqual(answer["model_name"], "bert")
        out = answer["outputs"][0]
        self.assertEqual(out["name"], "output")
        self.assertEqual(out["datatype"], "FP32")
        self.assertEqual(out["shape"], [1, PARAMS["seq"], PARAMS["hidden"]])
        got = np.array(out["data"], dtype=np.float32).reshape(out["shape"])
        np.testing.assert_allclose(got, self.expected(ids), rtol=1e-4, atol=1e-5)
        return answer

    def test_health_and_metadata(self):
        for path, want in [("/v2/health/live", {"live": True}), ("/v2/health/ready", {"ready": True}),
                           ("/v2/models/bert/ready", {"name": "bert", "ready": True}),
                           ("/v2/models/bert/versions/1/ready", {"name": "bert", "ready": True})]:
            status, _, body = call(self.base, path)
            self.assertEqual((status, json.loads(body)), (200, want), path)
        status, _, body = call(self.base, "/v2")
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["name"], "hetsched")
        status, _, body = call(self.base, "/v2/models/bert")
        meta = json.loads(body)
        self.assertEqual(meta["inputs"], [{"name": "input_ids", "datatype": "INT64", "shape": [1, PARAMS["seq"]]}])
        self.assertEqual(meta["outputs"][0]["datatype"], "FP32")
        for path in ["/v2/models/nosuch", "/v2/models/nosuch/ready", "/v2/models/bert/versions/2/ready"]:
            status, _, body = call(self.base, path)
            self.assertEqual(status, 404, path)
            self.assertIn("error", json.loads(body))
        status, _, body = call(self.base, "/v2/nothing/here")
        self.assertEqual(status, 404)
        self.assertIn("no such endpoint", json.loads(body)["error"])

    def test_statistics_count_requests_by_outcome(self):
        def stats(path="/v2/models/bert/stats"):
            status, _, body = call(self.base, path)
            self.assertEqual(status, 200, body)
            (model,) = json.loads(body)["model_stats"]
            self.assertEqual((model["name"], model["version"]), ("bert", "1"))
            return model

        before = stats()
        ids = self.ids(7)
        for _ in range(3):
            self.check_answer(*call(self.base, "/v2/models/bert/infer", infer_body(ids))[::2], ids)
        self.assertEqual(call(self.base, "/v2/models/bert/infer", b"{not json")[0], 400)
        after = stats("/v2/models/bert/versions/1/stats")
        done, was = after["inference_stats"], before["inference_stats"]
        self.assertEqual(done["success"]["count"] - was["success"]["count"], 3)
        self.assertEqual(done["fail"]["count"] - was["fail"]["count"], 1)
        self.assertGreater(done["success"]["ns"], was["success"]["ns"])
        self.assertEqual(after["inference_count"] - before["inference_count"], 3)
        self.assertEqual(done["compute_infer"]["count"] - was["compute_infer"]["count"], 3)
        # Each request's run is part of its whole time.
        self.assertLessEqual(done["compute_infer"]["ns"], done["success"]["ns"])
        self.assertGreaterEqual(after["last_inference"], int(time.time() * 1000) - 60_000)
        self.assertEqual(stats("/v2/models/stats")["name"], "bert")
        self.assertIn("statistics", json.loads(call(self.base, "/v2")[2])["extensions"])

    def test_model_configuration(self):
        status, _, body = call(self.base, "/v2/models/bert/config")
        self.assertEqual(status, 200, body)
        config = json.loads(body)
        self.assertEqual((config["name"], config["backend"], config["max_batch_size"]), ("bert", "hetsched", 0))
        self.assertEqual(config["input"],
                         [{"name": "input_ids", "data_type": "TYPE_INT64", "dims": [1, PARAMS["seq"]]}])
        self.assertEqual(config["output"][0]["data_type"], "TYPE_FP32")
        self.assertNotIn("dynamic_batching", config)
        self.assertIn("model_configuration", json.loads(call(self.base, "/v2")[2])["extensions"])
        self.assertEqual(call(self.base, "/v2/models/gpt/config")[0], 404)
        status, _, body = call(self.base, "/v2/models/gpt/stats")
        self.assertEqual(status, 404)
        self.assertIn("unknown model 'gpt'", json.loads(body)["error"])

    def test_infer_nested_flat_and_named_outputs(self):
        ids = self.ids(1)
        status, _, body = call(self.base, "/v2/models/bert/infer", infer_body(ids))
        self.assertEqual(self.check_answer(status, body, ids)["id"], "req-1")
        flat = infer_body(ids)
        flat["inputs"][0]["data"] = ids.flatten().tolist()
        flat["outputs"] = [{"name": "output"}]
        status, _, body = call(self.base, "/v2/models/bert/versions/1/infer", flat)
        self.check_answer(status, body, ids)
        # Over 8 KiB with no Content-Type (urllib and curl -d then say
        # application/x-www-form-urlencoded): still a JSON request.
        padded = json.dumps(infer_body(ids)).encode() + b" " * 20000
        status, _, body = call(self.base, "/v2/models/bert/infer", padded)
        self.check_answer(status, body, ids)

    def test_binary_tensor_data(self):
        ids = self.ids(2)
        header = json.dumps({"inputs": [{"name": "input_ids", "shape": [1, PARAMS["seq"]], "datatype": "INT64",
                                         "parameters": {"binary_data_size": ids.nbytes}}],
                             "outputs": [{"name": "output", "parameters": {"binary_data": True}}]}).encode()
        status, headers, body = call(self.base, "/v2/models/bert/infer", header + ids.tobytes(),
                                     {"Inference-Header-Content-Length": str(len(header)),
                                      "Content-Type": "application/octet-stream"})
        self.assertEqual(status, 200, body)
        n = int(headers["Inference-Header-Content-Length"])
        answer = json.loads(body[:n])
        out = answer["outputs"][0]
        self.assertEqual(out["parameters"]["binary_data_size"], len(body) - n)
        got = np.frombuffer(body[n:], dtype=np.float32).reshape(out["shape"])
        np.testing.assert_allclose(got, self.expected(ids), rtol=1e-4, atol=1e-5)

    def test_bad_requests_get_400_and_the_next_one_is_served(self):
        ids = self.ids(3)
        good = infer_body(ids)

        def variant(**changes):
            body = json.loads(json.dumps(good))
            body["inputs"][0].update(changes)
            return body

        cases = [
            (b"{not json", 400, "not valid JSON"),
            ({"inputs": [{"name": "tokens", "shape": [1, 8], "datatype": "INT64", "data": [0] * 8}]}, 400, "tokens"),
            (variant(shape=[1, 9]), 400, "shape"),
            (variant(datatype="FP32"), 400, "datatype FP32, expected INT64"),
            (variant(data=[1, 2, 3]), 400, "3 data values, expected 8"),
            (variant(data=[0.5] * 8), 400, "expected an integer"),
            (variant(shape=[1, -8]), 400, "non-negative"),
            ({"inputs": []}, 400, "missing"),
            (b"[" * 100 + b"]" * 100, 400, "deeper"),
            ({"inputs": [{"name": "input_ids", "shape": [1, 8], "datatype": "INT64",
                          "parameters": {"binary_data_size": 64}}]}, 400, "only 0 bytes follow"),
        ]
        for body, status_wanted, words in cases:
            status, _, answer = call(self.base, "/v2/models/bert/infer", body)
            self.assertEqual(status, status_wanted, (body, answer))
            self.assertIn(words, json.loads(answer)["error"], body)
            self.check_answer(*call(self.base, "/v2/models/bert/infer", good)[::2], ids)
        status, _, answer = call(self.base, "/v2/models/gpt/infer", good)
        self.assertEqual(status, 404)
        self.assertIn("unknown model 'gpt'", json.loads(answer)["error"])
        # Over --max-body-mib 1: refused by its Content-Length, before it is read.
        status, _, answer = call(self.base, "/v2/models/bert/infer", b" " * (2 << 20))
        self.assertEqual(status, 413)
        self.assertIn("over the limit", json.loads(answer)["error"])
        self.check_answer(*call(self.base, "/v2/models/bert/infer", good)[::2], ids)

    def test_load_8_clients_x_200_requests_every_answer_checked(self):
        inputs = [self.ids(100 + k) for k in range(16)]
        expected = [self.expected(x) for x in inputs]
        errors, done = [], [0]
        lock = threading.Lock()

        def client(c):
            for i in range(200):
                k = (c * 200 + i) % 16
                status, _, body = call(self.base, "/v2/models/bert/infer", infer_body(inputs[k]))
                try:
                    self.assertEqual(status, 200, body)
                    out = json.loads(body)["outputs"][0]
                    got = np.array(out["data"], dtype=np.float32).reshape(out["shape"])
                    np.testing.assert_allclose(got, expected[k], rtol=1e-4, atol=1e-5)
                except AssertionError as e:
                    with lock:
                        errors.append(e)
                with lock:
                    done[0] += 1

        run_clients(client, 8)
        self.assertEqual(errors, [])
        self.assertEqual(done[0], 1600)
        _, _, metrics = call(self.base, "/metrics")
        text = metrics.decode()
        success = int(re.search(r'hetsched_inference_requests_total\{model="bert",outcome="success"\} (\d+)',
                                text).group(1))
        self.assertGreaterEqual(success, 1600)
        self.assertIn('hetsched_request_duration_seconds_bucket{model="bert",le="+Inf"}', text)
        busy = re.findall(r'hetsched_device_requests_total\{model="bert",device="[^"]+"\} (\d+)', text)
        self.assertGreaterEqual(sum(int(b) for b in busy), 1600)


class BatchingTest(unittest.TestCase):
    """--max-batch: concurrent requests of a model with a free batch dim run
    stacked, each answer its own rows (checked with numpy)."""

    @classmethod
    def setUpClass(cls):
        from onnx import TensorProto, helper, numpy_helper
        rng = np.random.default_rng(7)
        cls.w = rng.standard_normal((16, 8)).astype(np.float32)
        cls.b = rng.standard_normal(8).astype(np.float32)
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])], "mlp",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])],
            [numpy_helper.from_array(cls.w, "w"), numpy_helper.from_array(cls.b, "b")])
        path = os.path.join(ARGS.tmp, "mlp.onnx")
        with open(path, "wb") as f:
            f.write(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
        cls.proc, cls.base, cls.lines = start_server(
            ["--devices", "cpu:0", "--max-batch", "8", "--max-delay-ms", "20"], model=[path])

    @classmethod
    def tearDownClass(cls):
        cls.proc.send_signal(signal.SIGTERM)
        finish(cls.proc)

    def infer(self, x):
        body = {"inputs": [{"name": "x", "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}]}
        status, _, answer = call(self.base, "/v2/models/mlp/infer", body)
        self.assertEqual(status, 200, answer)
        out = json.loads(answer)["outputs"][0]
        return np.array(out["data"], dtype=np.float32).reshape(out["shape"])

    def metric(self, name):
        _, _, text = call(self.base, "/metrics")
        return int(re.search(name + r'\{model="mlp"\} (\d+)', text.decode()).group(1))

    def test_the_configuration_says_the_batch(self):
        config = json.loads(call(self.base, "/v2/models/mlp/config")[2])
        self.assertEqual(config["max_batch_size"], 8)
        self.assertEqual(config["dynamic_batching"], {"max_queue_delay_microseconds": 20000})
        self.assertEqual(config["input"], [{"name": "x", "data_type": "TYPE_FP32", "dims": [16]}])
        self.assertEqual(config["output"], [{"name": "y", "data_type": "TYPE_FP32", "dims": [8]}])

    def test_concurrent_requests_run_in_batches_each_answer_its_rows(self):
        self.assertTrue(any("batching: up to 8 rows" in line for line in self.lines), self.lines)
        batches0, rows0 = self.metric("hetsched_batches_total"), self.metric("hetsched_batch_rows_total")
        errors, sent = [], [0]
        lock = threading.Lock()

        def client(c):
            rng = np.random.default_rng(c)
            for i in range(25):
                x = rng.standard_normal((1 + (i % 3 == 0), 16)).astype(np.float32)  # 1 or 2 rows
                try:
                    np.testing.assert_allclose(self.infer(x), np.maximum(x @ self.w + self.b, 0), rtol=1e-5,
                                               atol=1e-5)
                except AssertionError as e:
                    with lock:
                        errors.append(e)
                with lock:
                    sent[0] += len(x)

        run_clients(client, 8)
        self.assertEqual(errors, [])
        batches = self.metric("hetsched_batches_total") - batches0
        rows = self.metric("hetsched_batch_rows_total") - rows0
        self.assertEqual(rows, sent[0])
        self.assertLessEqual(batches * 2, rows, f"{rows} rows in {batches} batches: hardly batched")

    def test_a_request_of_more_rows_than_a_batch_runs_alone(self):
        x = np.random.default_rng(9).standard_normal((11, 16)).astype(np.float32)
        np.testing.assert_allclose(self.infer(x), np.maximum(x @ self.w + self.b, 0), rtol=1e-5, atol=1e-5)

    def test_a_model_without_a_free_batch_dim_is_refused(self):
        cmd = [ARGS.hetsched, "serve", "zoo:bert", "--max-batch", "4", "--port", "0", "--db", ARGS.db]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn("model 'bert' cannot be batched: input 'input_ids' has a fixed first dim of 1", result.stderr)


def grpc_stubs(out):
    """The protocol's messages and stubs, compiled by grpc_tools into out."""
    from grpc_tools import protoc
    proto_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "serve", "proto")
    if protoc.main(["protoc", f"-I{proto_dir}", f"--python_out={out}", f"--grpc_python_out={out}",
                    os.path.join(proto_dir, "inference.proto")]) != 0:
        raise RuntimeError("grpc_tools could not compile inference.proto")
    sys.path.insert(0, out)
    import inference_pb2
    import inference_pb2_grpc
    return inference_pb2, inference_pb2_grpc


class GrpcTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import grpc
        cls.grpc = grpc
        cls.pb, pb_grpc = grpc_stubs(ARGS.tmp)
        sys.path.insert(0, ARGS.python)
        import hetsched
        cls.reference = hetsched.Session("zoo:bert", params=PARAMS, reference=True)
        cls.proc, cls.base, cls.lines = start_server([])
        cls.channel = grpc.insecure_channel(cls.proc.grpc_target)
        cls.stub = pb_grpc.GRPCInferenceServiceStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.proc.send_signal(signal.SIGTERM)
        finish(cls.proc)

    def request(self, ids, raw=True):
        pb = self.pb
        req = pb.ModelInferRequest(model_name="bert", id="g1")
        tensor = req.inputs.add(name="input_ids", datatype="INT64", shape=list(ids.shape))
        if raw:
            req.raw_input_contents.append(ids.tobytes())
        else:
            tensor.contents.int64_contents.extend(ids.flatten().tolist())
        return req

    def check(self, res, ids):
        self.assertEqual(res.model_name, "bert")
        self.assertEqual(res.id, "g1")
        out = res.outputs[0]
        self.assertEqual((out.name, out.datatype, list(out.shape)), ("output", "FP32", [1, PARAMS["seq"], PARAMS["hidden"]]))
        got = np.frombuffer(res.raw_output_contents[0], dtype=np.float32).reshape(out.shape)
        np.testing.assert_allclose(got, self.reference.run({"input_ids": ids})["output"], rtol=1e-4, atol=1e-5)

    def test_health_and_metadata(self):
        pb = self.pb
        self.assertTrue(self.stub.ServerLive(pb.ServerLiveRequest()).live)
        self.assertTrue(self.stub.ServerReady(pb.ServerReadyRequest()).ready)
        self.assertTrue(self.stub.ModelReady(pb.ModelReadyRequest(name="bert")).ready)
        self.assertEqual(self.stub.ServerMetadata(pb.ServerMetadataRequest()).name, "hetsched")
        meta = self.stub.ModelMetadata(pb.ModelMetadataRequest(name="bert", version="1"))
        self.assertEqual((meta.inputs[0].name, meta.inputs[0].datatype, list(meta.inputs[0].shape)),
                         ("input_ids", "INT64", [1, PARAMS["seq"]]))
        with self.assertRaises(self.grpc.RpcError) as e:
            self.stub.ModelMetadata(pb.ModelMetadataRequest(name="gpt"))
        self.assertEqual(e.exception.code(), self.grpc.StatusCode.NOT_FOUND)
        self.assertIn("unknown model 'gpt'", e.exception.details())

    def test_infer_raw_and_typed(self):
        ids = np.arange(PARAMS["seq"], dtype=np.int64).reshape(1, -1) % PARAMS["vocab"]
        self.check(self.stub.ModelInfer(self.request(ids)), ids)
        self.check(self.stub.ModelInfer(self.request(ids, raw=False)), ids)

    def test_bad_requests_are_invalid_argument(self):
        ids = np.zeros((1, PARAMS["seq"]), dtype=np.int64)
        short = self.request(ids)
        short.raw_input_contents[0] = ids.tobytes()[:-8]
        mixed = self.request(ids)
        mixed.inputs[0].contents.int64_contents.extend([0] * PARAMS["seq"])
        wrong_type = self.request(ids, raw=False)
        wrong_type.inputs[0].datatype = "FP32"
        def bad_requests():  # as /metrics counts them
            text = call(self.base, "/metrics")[2].decode()
            return int(re.search(r'hetsched_inference_requests_total\{model="bert",outcome="bad_request"\} (\d+)',
                                 text).group(1))

        before = bad_requests()
        for req, words in [(short, "binary_data_size 56 bytes, expected 64"), (mixed, "contents given beside"),
                           (wrong_type, "datatype FP32, expected INT64")]:
            with self.assertRaises(self.grpc.RpcError) as e:
                self.stub.ModelInfer(req)
            self.assertEqual(e.exception.code(), self.grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn(words, e.exception.details())
            self.check(self.stub.ModelInfer(self.request(ids)), ids)
        self.assertEqual(bad_requests(), before + 3, "every refused request is counted")


class ShutdownTest(unittest.TestCase):
    def test_sigterm_drains_then_finishes_requests_in_flight_and_exits_0(self):
        proc, base, lines = start_server(["--drain-seconds", "2"])
        ids = np.zeros((1, PARAMS["seq"]), dtype=np.int64)
        results = []

        def client():
            for _ in range(30):
                try:
                    status, _, _ = call(base, "/v2/models/bert/infer", infer_body(ids))
                except (urllib.error.URLError, ConnectionError):
                    return  # the server stopped accepting: refused, never answered wrong
                results.append(status)

        threads = [threading.Thread(target=client) for _ in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        # Draining: not ready, still live and serving.
        status, _, body = call(base, "/v2/health/ready")
        self.assertEqual((status, json.loads(body)), (503, {"ready": False}))
        self.assertEqual(call(base, "/v2/health/live")[0], 200)
        self.assertEqual(call(base, "/v2/models/bert/ready")[0], 503)
        self.assertEqual(call(base, "/v2/models/bert/infer", infer_body(ids))[0], 200)
        for t in threads:
            t.join()
        self.assertEqual(finish(proc), 0, "".join(lines))
        self.assertTrue(results)
        self.assertEqual(set(results), {200})
        self.assertTrue(any("SIGTERM" in line for line in lines), "".join(lines))


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--hetsched", required=True)
    ap.add_argument("--python", required=True, help="folder holding the hetsched Python package")
    ARGS, rest = ap.parse_known_args()
    with tempfile.TemporaryDirectory(prefix="hetsched-serve-test-") as tmp:
        ARGS.db = os.path.join(tmp, "profile.db")
        ARGS.tmp = tmp
        unittest.main(argv=[sys.argv[0]] + rest)


if __name__ == "__main__":
    main()
