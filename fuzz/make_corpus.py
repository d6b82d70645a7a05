#!/usr/bin/python3
"""Writes the fuzzers' seed corpus (fuzz/corpus/<target>/) and the plan
fuzzer's fixed model (fuzz/data/plan_model.onnx).

    /usr/bin/python3 fuzz/make_corpus.py --hetsched build/hetsched

Needs the Python `onnx` and `numpy` packages; the seed plans are made by
`hetsched plan` for fuzz/data/ (skipped without --hetsched). Every file is
small and deterministic: running it again rewrites the same bytes (the
plans excepted when a scheduler changes). Seeds are valid inputs plus a few
near-valid ones (truncated, wrong type, unknown op) that take the loaders
down their error paths.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
DATA = os.path.join(ROOT, "fuzz", "data")

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def ints(name, values):
    return const(name, np.array(values, dtype=np.int64))


def floats(name, shape, seed=0):
    rng = np.random.default_rng(seed)
    return const(name, rng.uniform(-1, 1, size=shape).astype(np.float32))


def external(name, elem, dims, location, length):
    """A tensor whose data is `length` bytes at the start of file `location`."""
    t = TensorProto()
    t.name, t.data_type = name, elem
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", str(length))):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return t


def raw(name, elem, dims, data):
    """A tensor with raw_data as given, whatever its size."""
    t = TensorProto()
    t.name, t.data_type, t.raw_data = name, elem, data
    t.dims.extend(dims)
    return t


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, inits=(), opset=17, check=True):
    graph = helper.make_graph(nodes, "seed", inputs, outputs, initializer=list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="hetsched-fuzz")
    m.ir_version = 8 if opset >= 15 else 7
    if check:
        onnx.checker.check_model(m)
    return m


def n(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, **attrs)


def onnx_seeds():
    """name -> ModelProto or bytes."""
    s = {}
    s["relu_add"] = model([n("Relu", ["x"], ["r"]), n("Add", ["r", "b"], ["y"])],
                          [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], [floats("b", [3])])
    s["conv_bn_relu_pool"] = model(
        [n("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
         n("BatchNormalization", ["c", "g", "beta", "m", "v"], ["bn"]),
         n("Relu", ["bn"], ["r"]), n("MaxPool", ["r"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
        [vi("x", F, [1, 3, 6, 6])], [vi("y", F, [1, 4, 3, 3])],
        [floats("w", [4, 3, 3, 3]), floats("g", [4], 1), floats("beta", [4], 2), floats("m", [4], 3),
         const("v", np.full(4, 0.5, np.float32))])
    s["pad_conv_avgpool"] = model(
        [n("Pad", ["x", "pads"], ["p"]), n("Conv", ["p", "w", "wb"], ["c"], group=2),
         n("Pad", ["c", "pads"], ["p2"]), n("AveragePool", ["p2"], ["y"], kernel_shape=[3, 3])],
        [vi("x", F, [1, 2, 5, 5])], [vi("y", F, [1, 2, 5, 5])],
        [ints("pads", [0, 0, 1, 1, 0, 0, 1, 1]), floats("w", [2, 1, 3, 3]), floats("wb", [2], 4)])
    s["conv_transpose_global_pools"] = model(
        [n("ConvTranspose", ["x", "w"], ["c"], strides=[2, 2], output_padding=[1, 1]),
         n("GlobalAveragePool", ["c"], ["a"]), n("GlobalMaxPool", ["c"], ["m"]), n("Add", ["a", "m"], ["y"])],
        [vi("x", F, [1, 2, 3, 3])], [vi("y", F, [1, 3, 1, 1])], [floats("w", [2, 3, 2, 2])])
    s["matmul_gemm_softmax"] = model(
        [n("MatMul", ["x", "w"], ["mm"]), n("Gemm", ["mm", "w2", "c"], ["g"], transB=1, alpha=0.5),
         n("Softmax", ["g"], ["sm"], axis=-1), n("LogSoftmax", ["g"], ["ls"]), n("Hardmax", ["g"], ["hm"]),
         n("Sum", ["sm", "ls", "hm"], ["y"])],
        [vi("x", F, [2, 4])], [vi("y", F, [2, 3])],
        [floats("w", [4, 5]), floats("w2", [3, 5], 1), floats("c", [3], 2)])
    s["batched_matmul"] = model([n("MatMul", ["x", "w"], ["y"])], [vi("x", F, [2, 1, 3, 4])],
                                [vi("y", F, [2, 2, 3, 5])], [floats("w", [2, 4, 5])])
    s["shape_folding"] = model(
        [n("Shape", ["x"], ["s"]), n("Gather", ["s", "i0"], ["d0"], axis=0), n("Unsqueeze", ["d0", "ax0"], ["d0u"]),
         n("Concat", ["d0u", "m1"], ["ns"], axis=0), n("Reshape", ["x", "ns"], ["r"]),
         n("Transpose", ["r"], ["t"], perm=[1, 0]), n("Flatten", ["t"], ["y"], axis=1)],
        [vi("x", F, [2, 3, 4])], [vi("y", F, [12, 2])],
        [ints("i0", 0), ints("ax0", [0]), ints("m1", [-1])])
    s["slice_split_concat"] = model(
        [n("Slice", ["x", "st", "en", "ax", "sp"], ["sl"]), n("Split", ["sl", "parts"], ["a", "b"], axis=1),
         n("Concat", ["b", "a", "b"], ["y"], axis=1)],
        [vi("x", F, [3, 8])], [vi("y", F, [2, 6])],
        [ints("st", [0, 1]), ints("en", [2, 9]), ints("ax", [0, 1]), ints("sp", [1, 2]), ints("parts", [2, 2])])
    s["gathers"] = model(
        [n("Gather", ["x", "gi"], ["g"], axis=1), n("GatherElements", ["x", "ge"], ["e"], axis=0),
         n("GatherND", ["x", "gn"], ["nd"]), n("ReduceSum", ["g"], ["gs"], keepdims=0),
         n("ReduceSum", ["e"], ["es"], keepdims=0), n("ReduceSum", ["nd"], ["ns"], keepdims=0),
         n("Sum", ["gs", "es", "ns"], ["y"])],
        [vi("x", F, [3, 4])], [vi("y", F, [])],
        [ints("gi", [[0, -1], [2, 1]]), ints("ge", [[2, 0, 1, 0]]), ints("gn", [[0, 1], [2, 3]])])
    s["scatters"] = model(
        [n("ScatterElements", ["x", "si", "su"], ["a"], axis=1, reduction="add"),
         n("ScatterND", ["a", "ni", "nu"], ["y"])],
        [vi("x", F, [3, 3])], [vi("y", F, [3, 3])],
        [ints("si", [[1, 0], [2, 2]]), floats("su", [2, 2]), ints("ni", [[1], [0]]), floats("nu", [2, 3], 1)])
    s["reductions"] = model(
        [n("ReduceSum", ["x", "axes"], ["a"], keepdims=1), n("ReduceMean", ["x"], ["b"], axes=[2]),
         n("ReduceMax", ["x"], ["c"], axes=[2]), n("ReduceMin", ["x"], ["d"], axes=[2]),
         n("ReduceProd", ["x"], ["e"], axes=[2]), n("ReduceL1", ["x"], ["f"], axes=[2]),
         n("ReduceL2", ["x"], ["g"], axes=[2]), n("ReduceLogSumExp", ["x"], ["h"], axes=[2]),
         n("ReduceSumSquare", ["x"], ["i"], axes=[2]), n("Abs", ["x"], ["ax"]),
         n("ReduceLogSum", ["ax"], ["j"], axes=[2]),
         n("Sum", ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"], ["s"]),
         n("ArgMax", ["x"], ["am"], axis=1), n("ArgMin", ["x"], ["an"], axis=1, select_last_index=1),
         n("CumSum", ["x", "cax"], ["cs"], exclusive=1, reverse=1)],
        [vi("x", F, [2, 3, 4])], [vi("s", F, [2, 3, 1]), vi("am", I64, [2, 1, 4]), vi("an", I64, [2, 1, 4]),
                                  vi("cs", F, [2, 3, 4])],
        [ints("axes", [2]), ints("cax", 1)])
    unary = ["Exp", "Tanh", "Sigmoid", "Erf", "Abs", "Neg", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Atan",
             "Softplus", "Softsign", "Relu", "Asinh", "Sinh", "Cosh", "Tan"]
    nodes, prev = [], "x"
    for k, op in enumerate(unary):
        nodes.append(n(op, [prev], [f"u{k}"]))
        prev = f"u{k}"
    nodes += [n("Abs", [prev], ["pa"]), n("Sqrt", ["pa"], ["sq"]), n("Log", ["sq"], ["lg"]),
              n("Reciprocal", ["sq"], ["rc"]), n("Add", ["lg", "rc"], ["y"])]
    s["unary_chain"] = model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])
    s["activations"] = model(
        [n("Clip", ["x", "lo", "hi"], ["a"]), n("HardSigmoid", ["a"], ["b"], alpha=0.3),
         n("HardSwish", ["b"], ["c"]), n("LeakyRelu", ["c"], ["d"], alpha=0.1), n("Elu", ["d"], ["e"]),
         n("Selu", ["e"], ["f"]), n("Celu", ["f"], ["g"]), n("PRelu", ["g", "slope"], ["h"]),
         n("ThresholdedRelu", ["h"], ["i"], alpha=0.1), n("Asin", ["lo"], ["as"]), n("Acos", ["lo"], ["ac"]),
         n("Atanh", ["lo"], ["at"]), n("Add", ["as", "ac"], ["aa"]), n("Add", ["aa", "at"], ["ab"]),
         n("Mul", ["i", "ab"], ["y"])],
        [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
        [const("lo", np.float32(-0.5)), const("hi", np.float32(0.5)), floats("slope", [3])])
    s["compare_logic_where"] = model(
        [n("Greater", ["x", "z"], ["g"]), n("Less", ["x", "z"], ["l"]), n("Equal", ["x", "z"], ["e"]),
         n("GreaterOrEqual", ["x", "z"], ["ge"]), n("LessOrEqual", ["x", "z"], ["le"]),
         n("And", ["g", "ge"], ["a"]), n("Or", ["l", "e"], ["o"]), n("Xor", ["a", "o"], ["xo"]),
         n("Not", ["xo"], ["nt"]), n("Or", ["nt", "le"], ["c"]), n("Where", ["c", "x", "z"], ["w"]),
         n("IsNaN", ["w"], ["nan"]), n("IsInf", ["w"], ["inf"]), n("Or", ["nan", "inf"], ["bad"]),
         n("Where", ["bad", "z", "w"], ["y"])],
        [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], [const("z", np.float32(0))])
    s["generators"] = model(
        [n("ConstantOfShape", ["shp"], ["cs"], value=helper.make_tensor("v", F, [1], [1.5])),
         n("Expand", ["x", "shp"], ["ex"]), n("Tile", ["x", "reps"], ["ti"]),
         n("Range", ["r0", "r1", "r2"], ["rg"]), n("Cast", ["rg"], ["rgf"], to=F),
         n("OneHot", ["idx", "depth", "ohv"], ["oh"], axis=-1), n("EyeLike", ["cs"], ["ey"], k=1),
         n("Trilu", ["ey", "tk"], ["tr"], upper=0), n("Add", ["cs", "ex"], ["a"]), n("Add", ["a", "ti"], ["b"]),
         n("Add", ["b", "tr"], ["c"]), n("Mul", ["c", "rgf"], ["y"]), n("NonZero", ["oh"], ["nz"])],
        [vi("x", F, [1, 3])], [vi("y", F, [3, 3]), vi("oh", F, [3, 4]), vi("nz", I64, [2, 3])],
        [ints("shp", [3, 3]), ints("reps", [3, 1]), const("r0", np.float32(0)), const("r1", np.float32(3)),
         const("r2", np.float32(1)), ints("idx", [0, 2, 3]), ints("depth", 4),
         const("ohv", np.array([0, 1], np.float32)), ints("tk", 0)])
    s["casts_int_ops"] = model(
        [n("Cast", ["x"], ["i32"], to=TensorProto.INT32), n("Cast", ["i32"], ["i16"], to=TensorProto.INT16),
         n("Cast", ["i16"], ["i8"], to=TensorProto.INT8), n("Cast", ["i8"], ["u8"], to=TensorProto.UINT8),
         n("Cast", ["u8"], ["d"], to=TensorProto.DOUBLE), n("Cast", ["d"], ["b"], to=TensorProto.BOOL),
         n("CastLike", ["b", "x"], ["bf"]), n("Cast", ["x"], ["i64"], to=I64),
         n("Mod", ["i64", "three"], ["md"]), n("Max", ["md", "i64"], ["mx"]), n("Min", ["mx", "three"], ["mn"]),
         n("Cast", ["mn"], ["mnf"], to=F), n("Pow", ["mnf", "two"], ["pw"]), n("Mean", ["pw", "bf"], ["mean"]),
         n("Sub", ["mean", "x"], ["sb"]), n("Div", ["sb", "two"], ["y"])],
        [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
        [ints("three", 3), const("two", np.float32(2))])
    s["resize_depth_space"] = model(
        [n("Resize", ["x", "", "scales"], ["r"], mode="linear", coordinate_transformation_mode="half_pixel"),
         n("Resize", ["x", "", "", "sizes"], ["rn"], mode="nearest"),
         n("Add", ["r", "rn"], ["a"]),
         n("SpaceToDepth", ["a"], ["sd"], blocksize=2), n("DepthToSpace", ["sd"], ["y"], blocksize=2, mode="CRD")],
        [vi("x", F, [1, 2, 2, 2])], [vi("y", F, [1, 2, 4, 4])],
        [const("scales", np.array([1, 1, 2, 2], np.float32)), ints("sizes", [1, 2, 4, 4])])
    s["normalizations"] = model(
        [n("LayerNormalization", ["x", "g", "b"], ["ln"], axis=-1),
         n("InstanceNormalization", ["ln", "g2", "b2"], ["inn"]),
         n("LRN", ["inn"], ["y"], size=3)],
        [vi("x", F, [1, 2, 3, 4])], [vi("y", F, [1, 2, 3, 4])],
        [floats("g", [4]), floats("b", [4], 1), floats("g2", [2], 2), floats("b2", [2], 3)])
    s["squeeze_dropout_identity"] = model(
        [n("Unsqueeze", ["x", "ax"], ["u"]), n("Identity", ["u"], ["i"]), n("Dropout", ["i"], ["d"]),
         n("Squeeze", ["d", "ax"], ["y"])],
        [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], [ints("ax", [0, 3])])
    s["constant_nodes"] = model(
        [n("Constant", [], ["c1"], value=helper.make_tensor("t", F, [3], [1, 2, 3])),
         n("Constant", [], ["c2"], value_float=2.0), n("Constant", [], ["c3"], value_ints=[1, 3]),
         n("Mul", ["c1", "c2"], ["m"]), n("Reshape", ["m", "c3"], ["r"]), n("Add", ["x", "r"], ["y"])],
        [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])
    s["symbolic_batch"] = model([n("Relu", ["x"], ["y"])], [vi("x", F, ["N", 3])], [vi("y", F, ["N", 3])])
    s["opset7_upsample_scatter"] = model(
        [n("Upsample", ["x", "sc"], ["u"], mode="nearest"),
         n("Scatter", ["u", "si", "su"], ["y"], axis=0)],
        [vi("x", F, [2, 2])], [vi("y", F, [4, 4])],
        [const("sc", np.array([2, 2], np.float32)), ints("si", [[1, 0, 2, 3]]), floats("su", [1, 4])], opset=9)
    s["opset11_attr_forms"] = model(
        [n("Squeeze", ["x"], ["s"], axes=[0]), n("Split", ["s"], ["a", "b"], axis=1, split=[1, 2]),
         n("ReduceSum", ["b"], ["r"], axes=[1], keepdims=1), n("Add", ["a", "r"], ["y"])],
        [vi("x", F, [1, 2, 3])], [vi("y", F, [2, 1])], opset=11)
    s["double_int_inputs"] = model(
        [n("Add", ["x", "x"], ["y"]), n("Mul", ["k", "k"], ["z"])],
        [vi("x", TensorProto.DOUBLE, [2]), vi("k", TensorProto.INT32, [3])],
        [vi("y", TensorProto.DOUBLE, [2]), vi("z", TensorProto.INT32, [3])])
    # An initializer held as external data in the model file itself: its
    # first 16 bytes, read back as 4 floats (the fuzzers write the model as
    # model.onnx in a folder of its own).
    w = external("w", F, [4], "model.onnx", 16)
    s["external_data_self"] = model([n("Mul", ["x", "w"], ["y"])], [vi("x", F, [4])], [vi("y", F, [4])], [w],
                                    check=False)
    # Near-valid: refused at load.
    s["unknown_op"] = model([n("Frobnicate", ["x"], ["y"])], [vi("x", F, [2])], [vi("y", F, [2])], check=False)
    s["cycle"] = model([n("Relu", ["b"], ["a"]), n("Relu", ["a"], ["b"]), n("Add", ["a", "x"], ["y"])],
                       [vi("x", F, [2])], [vi("y", F, [2])], check=False)
    s["missing_initializer"] = model([n("Add", ["x", "nowhere"], ["y"])], [vi("x", F, [2])], [vi("y", F, [2])],
                                     check=False)
    s["float16_input"] = model([n("Relu", ["x"], ["y"])], [vi("x", TensorProto.FLOAT16, [2])],
                               [vi("y", TensorProto.FLOAT16, [2])])
    s["bad_raw_data"] = model([n("Add", ["x", "b"], ["y"])], [vi("x", F, [3])], [vi("y", F, [3])],
                              [raw("b", F, [3], b"\0" * 8)], check=False)
    relu_bytes = s["relu_add"].SerializeToString()
    s["truncated"] = relu_bytes[: len(relu_bytes) // 2]
    return s


def plan_model():
    """The fixed graph plans are fuzzed against: two branches, so that plans
    spread it over both devices."""
    return model(
        [n("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]), n("Relu", ["c1"], ["r1"], name="relu1"),
         n("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"), n("Relu", ["c2"], ["r2"], name="relu2"),
         n("Conv", ["r1", "w3"], ["c3"], name="conv3"), n("Add", ["r2", "c3"], ["a"], name="add"),
         n("GlobalAveragePool", ["a"], ["p"], name="pool"), n("Flatten", ["p"], ["f"], name="flatten"),
         n("Gemm", ["f", "fc", "fb"], ["y"], transB=1, name="fc")],
        [vi("x", F, [1, 3, 8, 8])], [vi("y", F, [1, 5])],
        [floats("w1", [4, 3, 3, 3]), floats("w2", [4, 4, 3, 3], 1), floats("w3", [4, 4, 1, 1], 2),
         floats("fc", [5, 4], 3), floats("fb", [5], 4)])


def npy_seeds():
    s = {}
    arrays = {
        "f4_2x3": np.arange(6, dtype=np.float32).reshape(2, 3),
        "f8_vec": np.linspace(-1, 1, 5),
        "i1": np.array([-3, 0, 7], np.int8), "i2": np.array([[1, -2]], np.int16),
        "i4": np.arange(4, dtype=np.int32), "i8_scalar": np.array(42, np.int64),
        "u1": np.array([0, 255], np.uint8), "b1": np.array([True, False, True]),
        "empty_0x3": np.zeros((0, 3), np.float32),
    }
    for name, a in arrays.items():
        s[name] = array_bytes(a, (1, 0))
    s["f4_v2"] = array_bytes(arrays["f4_2x3"], (2, 0))
    s["f4_v3"] = array_bytes(arrays["f4_2x3"], (3, 0))
    # Headers as other writers may lay them out.
    s["header_no_trailing_comma"] = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", b"\0" * 8)
    s["header_double_quotes"] = npy_bytes('{"shape": (), "descr": "<i8"}', b"\1" + b"\0" * 7)
    # Near-valid: refused.
    s["fortran_order"] = array_bytes(np.asfortranarray(arrays["f4_2x3"]), (1, 0))
    s["big_endian"] = array_bytes(arrays["f4_2x3"].astype(">f4"), (1, 0))
    s["float16"] = array_bytes(np.ones(2, np.float16), (1, 0))
    s["truncated_data"] = array_bytes(arrays["f4_2x3"], (1, 0))[:-5]
    return s


def npy_bytes(header, data):
    """A version 1.0 .npy file with the header as given."""
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + data


def array_bytes(array, version):
    import io
    out = io.BytesIO()
    np.lib.format.write_array(out, array, version=version)
    return out.getvalue()


def pb_seeds():
    s = {}
    for name, a in {"float_2x3": np.arange(6, dtype=np.float32).reshape(2, 3), "double": np.array([0.5, -2.0]),
                    "int64_scalar": np.array(7, np.int64), "int32": np.array([1, 2, 3], np.int32),
                    "int8": np.array([-1, 1], np.int8), "uint8": np.array([9], np.uint8),
                    "int16": np.array([300], np.int16), "bool": np.array([True, False])}.items():
        s[name] = numpy_helper.from_array(a, name).SerializeToString()
    s["typed_float_data"] = helper.make_tensor("t", F, [2, 2], [1, 2, 3, 4]).SerializeToString()
    s["typed_int32_data"] = helper.make_tensor("t", TensorProto.INT8, [3], [1, -2, 3]).SerializeToString()
    s["typed_int64_data"] = helper.make_tensor("t", I64, [2], [5, -6]).SerializeToString()
    s["external_self"] = external("ext", TensorProto.UINT8, [4], "input.pb", 4).SerializeToString()
    s["string_tensor"] = helper.make_tensor("s", TensorProto.STRING, [1], [b"x"]).SerializeToString()
    s["raw_size_mismatch"] = raw("t", F, [3], b"\0" * 8).SerializeToString()
    return s


def task_graph_seeds():
    with open(os.path.join(ROOT, "examples", "dags", "heft_paper.json")) as f:
        paper = f.read()
    s = {"heft_paper": paper}
    s["numeric_ids_null_cost"] = json.dumps({
        "devices": ["cpu", "gpu"],
        "tasks": [{"id": 1, "cost": [3, None]}, {"id": 2, "cost": [2, 1.5]}, {"id": 3, "cost": [0, 4]}],
        "edges": [{"from": 1, "to": 2, "comm": 2}, {"from": 1, "to": 3}, {"from": 2, "to": 3, "comm": 0.5}]})
    s["no_edges"] = json.dumps({"devices": ["a"], "tasks": [{"id": "t", "cost": [1]}]})
    s["cycle"] = json.dumps({"devices": ["a", "b"], "tasks": [{"id": "x", "cost": [1, 2]}, {"id": "y", "cost": [2, 1]}],
                             "edges": [{"from": "x", "to": "y"}, {"from": "y", "to": "x"}]})
    return {k: v.encode() for k, v in s.items()}


def platform_seeds():
    s = {}
    for name in sorted(os.listdir(os.path.join(ROOT, "platforms"))):
        if name.endswith(".json"):
            with open(os.path.join(ROOT, "platforms", name), "rb") as f:
                s[name[:-5]] = f.read()
    with open(os.path.join(DATA, "plan_platform.json"), "rb") as f:
        s["plan_platform"] = f.read()
    s["minimal"] = json.dumps({"name": "m", "devices": [{"name": "x", "kind": "npu", "peak_gflops": 1,
                                                          "bandwidth_gbps": 1}]}).encode()
    s["duplicate_key"] = b'{"name": "d", "name": "e", "devices": []}'
    return s


def plan_seeds(hetsched):
    """Plans made by `hetsched plan` for fuzz/data/ with several schedulers."""
    s = {}
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, XDG_CACHE_HOME=tmp)
        for scheduler in ("sequential", "round-robin", "heft", "peft", "opara", "ios"):
            out = os.path.join(tmp, scheduler + ".json")
            # Paths relative to the source tree: the plan names its model.
            cmd = [os.path.abspath(hetsched), "plan", "fuzz/data/plan_model.onnx", "--platform",
                   "fuzz/data/plan_platform.json", "--devices", "emu:npu,emu:gpu", "--scheduler", scheduler, "-o", out]
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
            if r.returncode != 0:
                print(f"make_corpus: {scheduler}: {r.stderr.strip()}", file=sys.stderr)
                continue
            with open(out, "rb") as f:
                s[scheduler] = f.read()
    # Near-valid: refused.
    if "heft" in s:
        s["truncated"] = s["heft"][: len(s["heft"]) // 2]
        s["unknown_node"] = s["heft"].replace(b'"relu2"', b'"relu9"')
    return s


def write_dir(target, files, ext):
    folder = os.path.join(CORPUS, target)
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    for name, content in files.items():
        if isinstance(content, onnx.ModelProto):
            content = content.SerializeToString()
        with open(os.path.join(folder, name + ext), "wb") as f:
            f.write(content)
    print(f"{target}: {len(files)} files, {sum(len(c) if isinstance(c, bytes) else c.ByteSize() for c in files.values())} bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hetsched", help="the CLI, to make the seed plans")
    args = ap.parse_args()
    os.makedirs(DATA, exist_ok=True)
    with open(os.path.join(DATA, "plan_model.onnx"), "wb") as f:
        f.write(plan_model().SerializeToString())
    write_dir("onnx_model", onnx_seeds(), ".onnx")
    write_dir("npy", npy_seeds(), ".npy")
    write_dir("tensor_pb", pb_seeds(), ".pb")
    write_dir("task_graph", task_graph_seeds(), ".json")
    write_dir("platform_file", platform_seeds(), ".json")
    if args.hetsched:
        write_dir("plan_json", plan_seeds(args.hetsched), ".json")
    else:
        print("plan_json: skipped (no --hetsched)")


if __name__ == "__main__":
    main()
