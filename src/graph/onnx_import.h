// ONNX import (internal): the only code that turns protobuf into the IR.
#pragma once

#include <filesystem>
#include <string>

#include <onnx/onnx_pb.h>

#include "hetsched/graph.h"
#include "hetsched/session.h"

namespace hetsched {

// Reads and parses an .onnx file. Missing or unreadable file: kIo; empty,
// truncated or not a protobuf: kInvalidModel. Messages name the file.
onnx::ModelProto read_model_proto(const std::filesystem::path& path);

// Checks and imports a parsed model, in passes:
//   1. opsets and domains are ones the engine runs (default domain, 7..18);
//   2. every op has a kernel (else kUnsupported naming node, op and opset);
//   3. every node input is defined, the graph has no cycle, external data
//      is read (its paths must stay inside `model_dir`), every tensor's
//      data has the size its dtype and dims need;
//   4. ONNX's checker;
//   5. free input dims fixed from options.input_shapes, ONNX shape inference
//      (guarded where it would read past what it has without checking);
//   6. the IR is built (initializers read, external data relative to
//      `model_dir`) and every node is checked by its kernel.
// Graph optimisations are not applied here (see optimize.h).
Graph import_model(onnx::ModelProto model, const std::filesystem::path& model_dir, const LoadOptions& options);

}  // namespace hetsched
