// The Open Inference Protocol's gRPC service (serve/proto/inference.proto:
// inference.GRPCInferenceService), on the same models, inference path and
// metrics as the HTTP endpoints (serve/models.h). ModelInfer takes typed
// contents or raw_input_contents (not both) and always answers in
// raw_output_contents, as Triton does. Errors: INVALID_ARGUMENT for a bad
// request, NOT_FOUND for an unknown model or version, INTERNAL when the run
// failed; the message names the model and what was wrong.
#pragma once

#include <memory>

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/service_type.h>

#include "serve/models.h"

namespace hetsched::serve {

std::unique_ptr<grpc::Service> make_grpc_service(ModelRegistry& registry);

}  // namespace hetsched::serve
