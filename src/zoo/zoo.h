// hetsched's built-in model zoo: the networks the inter-operator scheduling
// papers evaluate, built in C++ as ONNX ModelProtos (opset 17, ir_version 8)
// with deterministic random weights, so that "zoo:NAME" behaves exactly like
// a model file (`hetsched export zoo:NAME -o x.onnx` writes it).
//
// Image models take "input" float32 [1,3,224,224] (inception_v3: 299x299) and
// give "output" float32 [1,1000] (logits). Every model takes an optional
// `seed` parameter (default 0); the same name, parameters and seed give the
// same bytes on every platform.
#pragma once

#include <onnx/onnx_pb.h>  // this header is internal (src/), never included from include/

#include "hetsched/zoo.h"

namespace hetsched::zoo {

// Throws hetsched::Error(ErrorCode::kUsage, "...") for an unknown model name
// (listing the known ones) or an unknown/malformed parameter (naming it and
// the accepted ones).
onnx::ModelProto build_zoo_model(const std::string& name, const ZooParams& params = {});

}  // namespace hetsched::zoo
