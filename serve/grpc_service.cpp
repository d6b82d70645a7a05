// The Open Inference Protocol's gRPC service (see serve/grpc_service.h).
// A ModelInfer request becomes the REST request it stands for (inputs with
// binary_data_size and their bytes after the JSON, or typed contents as
// JSON data), so that one decoder checks both protocols alike.
#include "serve/grpc_service.h"

#include <fmt/format.h>

#include "serve/proto/inference.grpc.pb.h"

namespace hetsched::serve {

namespace {

using nlohmann::json;

grpc::Status status_of(const RequestError& e) {
  grpc::StatusCode code = e.status() == 404   ? grpc::StatusCode::NOT_FOUND
                          : e.status() >= 500 ? grpc::StatusCode::INTERNAL
                                              : grpc::StatusCode::INVALID_ARGUMENT;
  return grpc::Status(code, e.what());
}

template <typename Repeated>
json to_array(const Repeated& values) {
  json out = json::array();
  for (const auto& v : values) out.push_back(v);
  return out;
}

// Typed contents as the REST request's "data": the field of the datatype's
// family (an empty list when the request filled another).
json contents_as_data(const inference::InferTensorContents& c, const std::string& datatype) {
  if (datatype == "FP32") return to_array(c.fp32_contents());
  if (datatype == "FP64") return to_array(c.fp64_contents());
  if (datatype == "INT64") return to_array(c.int64_contents());
  if (datatype == "INT8" || datatype == "INT16" || datatype == "INT32") return to_array(c.int_contents());
  if (datatype == "UINT64") return to_array(c.uint64_contents());
  if (datatype == "UINT8" || datatype == "UINT16" || datatype == "UINT32") return to_array(c.uint_contents());
  if (datatype == "BOOL") return to_array(c.bool_contents());
  return json::array();
}

void set_tensor(const json& meta, inference::ModelMetadataResponse::TensorMetadata* out) {
  out->set_name(meta["name"].get<std::string>());
  out->set_datatype(meta["datatype"].get<std::string>());
  for (const json& d : meta["shape"]) out->add_shape(d.get<int64_t>());
}

class Service final : public inference::GRPCInferenceService::Service {
 public:
  explicit Service(ModelRegistry& registry) : registry_(registry) {}

  grpc::Status ServerLive(grpc::ServerContext*, const inference::ServerLiveRequest*,
                          inference::ServerLiveResponse* res) override {
    res->set_live(true);
    return grpc::Status::OK;
  }

  grpc::Status ServerReady(grpc::ServerContext*, const inference::ServerReadyRequest*,
                           inference::ServerReadyResponse* res) override {
    res->set_ready(registry_.ready());  // models are loaded and warm before the ports open
    return grpc::Status::OK;
  }

  grpc::Status ModelReady(grpc::ServerContext*, const inference::ModelReadyRequest* req,
                          inference::ModelReadyResponse* res) override {
    try {
      registry_.find(req->name(), req->version());
      res->set_ready(registry_.ready());
      return grpc::Status::OK;
    } catch (const RequestError& e) {
      return status_of(e);
    }
  }

  grpc::Status ServerMetadata(grpc::ServerContext*, const inference::ServerMetadataRequest*,
                              inference::ServerMetadataResponse* res) override {
    res->set_name("hetsched");
    res->set_version(HETSCHED_SERVE_VERSION);
    res->add_extensions("binary_tensor_data");
    return grpc::Status::OK;
  }

  grpc::Status ModelMetadata(grpc::ServerContext*, const inference::ModelMetadataRequest* req,
                             inference::ModelMetadataResponse* res) override {
    try {
      ModelState& m = registry_.find(req->name(), req->version());
      json meta = model_metadata(m.model.name, m.model.session->graph());
      res->set_name(m.model.name);
      res->add_versions("1");
      res->set_platform(meta["platform"].get<std::string>());
      for (const json& t : meta["inputs"]) set_tensor(t, res->add_inputs());
      for (const json& t : meta["outputs"]) set_tensor(t, res->add_outputs());
      return grpc::Status::OK;
    } catch (const RequestError& e) {
      return status_of(e);
    }
  }

  grpc::Status ModelInfer(grpc::ServerContext*, const inference::ModelInferRequest* req,
                          inference::ModelInferResponse* res) override {
    try {
      ModelState& m = registry_.find(req->model_name(), req->model_version());
      bool raw = req->raw_input_contents_size() > 0;
      if (raw && req->raw_input_contents_size() != req->inputs_size())
        throw registry_.bad_request(m, 400, fmt::format("raw_input_contents has {} entries for {} inputs",
                                                        req->raw_input_contents_size(), req->inputs_size()));
      json header = {{"inputs", json::array()}, {"parameters", {{"binary_data_output", true}}}};
      if (!req->id().empty()) header["id"] = req->id();
      std::string tail;
      for (int i = 0; i < req->inputs_size(); ++i) {
        const auto& in = req->inputs(i);
        json tensor = {{"name", in.name()}, {"datatype", in.datatype()}, {"shape", to_array(in.shape())}};
        if (raw) {
          if (in.has_contents())
            throw registry_.bad_request(
                m, 400, fmt::format("input '{}': contents given beside raw_input_contents", in.name()));
          tensor["parameters"] = {{"binary_data_size", req->raw_input_contents(i).size()}};
          tail += req->raw_input_contents(i);
        } else {
          tensor["data"] = contents_as_data(in.contents(), in.datatype());
        }
        header["inputs"].push_back(std::move(tensor));
      }
      if (req->outputs_size() > 0) {
        header["outputs"] = json::array();
        for (const auto& out : req->outputs()) header["outputs"].push_back({{"name", out.name()}});
      }
      InferResponse response = registry_.infer(m, header, tail);
      json answer = json::parse(response.header);
      res->set_model_name(m.model.name);
      res->set_model_version("1");
      res->set_id(req->id());
      size_t offset = 0;
      for (const json& out : answer["outputs"]) {
        auto* tensor = res->add_outputs();
        tensor->set_name(out["name"].get<std::string>());
        tensor->set_datatype(out["datatype"].get<std::string>());
        for (const json& d : out["shape"]) tensor->add_shape(d.get<int64_t>());
        size_t bytes = out["parameters"]["binary_data_size"].get<size_t>();
        res->add_raw_output_contents(response.tail.substr(offset, bytes));
        offset += bytes;
      }
      return grpc::Status::OK;
    } catch (const RequestError& e) {
      return status_of(e);
    }
  }

 private:
  ModelRegistry& registry_;
};

}  // namespace

std::unique_ptr<grpc::Service> make_grpc_service(ModelRegistry& registry) {
  return std::make_unique<Service>(registry);
}

}  // namespace hetsched::serve
