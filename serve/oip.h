// The Open Inference Protocol's tensors (KServe v2 REST, as Triton, OpenVINO
// Model Server and Seldon speak it): decoding an inference request's JSON
// (and the binary tensor data extension's bytes after it) into the
// session's inputs, and encoding its outputs. No HTTP here: serve/server.cpp
// calls these with a request's body.
//
// What a request may hold (checked in this order, each failure a
// RequestError with status 400 and a message naming the part):
//   - a JSON object with "inputs": a list of {name, shape, datatype, data}
//     or, with the binary extension, {..., parameters: {binary_data_size}}
//     whose bytes follow the JSON header in `inputs` order;
//   - every model input exactly once, no other name;
//   - datatype the model input's (FP32 for float32, INT64 ...), shape of
//     the input's rank with its fixed dims, element count = shape product
//     (computed without overflow);
//   - data nested or flat (only the count is checked, as Triton does);
//     integers may fill float inputs, floats may not fill integer ones,
//     BOOL takes true/false;
//   - "outputs" (optional): names of model outputs to return, each
//     optionally with parameters.binary_data; "parameters.binary_data_output"
//     asks for every output in binary.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hetsched/graph.h"
#include "hetsched/session.h"

namespace hetsched::serve {

// A request the server refuses: the HTTP status to answer and why.
class RequestError : public std::runtime_error {
 public:
  RequestError(int status, const std::string& what) : std::runtime_error(what), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

// "FP32", "INT64", "BOOL" ...: the protocol's name of a dtype.
const char* oip_datatype(DType dtype);

// JSON nesting deeper than this is refused before it is parsed.
constexpr int kMaxJsonDepth = 64;

// The deepest nesting of arrays and objects in `text` (strings skipped).
int json_depth(std::string_view text);

struct InferRequest {
  std::string id;  // echoed in the response ("" when absent)
  TensorMap inputs;
  // The outputs to return, in order (all of the model's when the request
  // names none), and per output whether it goes back as binary data.
  std::vector<std::string> outputs;
  std::vector<bool> binary;
};

// `header` is the JSON part of the body; `tail` the bytes after it (the
// binary extension's; empty without it).
InferRequest decode_infer_request(const nlohmann::json& header, std::string_view tail, const Graph& graph);

// The response: its JSON header, and the binary outputs' bytes to append
// after it (empty when every output is in JSON).
struct InferResponse {
  std::string header;
  std::string tail;
};
InferResponse encode_infer_response(const std::string& model_name, const InferRequest& request,
                                    const TensorMap& outputs);

// The model metadata: {name, versions, platform, inputs, outputs}; each
// tensor {name, datatype, shape} with -1 for a free dim.
nlohmann::json model_metadata(const std::string& model_name, const Graph& graph);
// Triton's model configuration extension (`GET .../config`), the fields its
// clients and perf_analyzer read: name, platform, backend, max_batch_size
// (the dynamic batch, or 0), input and output as {name, data_type
// "TYPE_FP32"..., dims} (the batch dim left out where max_batch_size > 0;
// -1 for a free dim), and dynamic_batching when batching.
nlohmann::json model_config(const std::string& model_name, const Graph& graph, int max_batch, double max_delay_ms);

}  // namespace hetsched::serve
