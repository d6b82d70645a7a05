// The models a server serves, and what both protocols (HTTP in
// serve/server.cpp, gRPC in serve/grpc_service.cpp) do with them: find one
// by name and version, run an inference request on it, count it in the
// metrics.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/batcher.h"
#include "serve/oip.h"

namespace hetsched::serve {

struct ServedModel {
  std::string name;  // in the URL: /v2/models/NAME; in gRPC: model_name
  std::shared_ptr<Session> session;
  // Dynamic batching (serve/batcher.h): up to max_batch rows (0: off),
  // waiting up to max_delay_ms for them.
  int max_batch = 0;
  double max_delay_ms = 0;
};

// A Prometheus histogram of seconds: cumulative counts per upper bound.
class Histogram {
 public:
  void observe(double seconds);
  void write(std::string& out, const std::string& name, const std::string& labels) const;
  // Observations so far and their sum in nanoseconds (the statistics extension's {count, ns}).
  nlohmann::json totals() const;

 private:
  static constexpr std::array<double, 14> kBounds{0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                                  0.1,    0.2,   0.5,   1,     2,    5,    10};
  mutable std::mutex mutex_;
  std::array<uint64_t, kBounds.size()> counts_{};
  uint64_t count_ = 0;
  double sum_ = 0;
};

struct ModelState {
  ServedModel model;
  std::atomic<uint64_t> success{0}, bad_request{0}, failure{0};
  // Whole requests' time by outcome, and when the last success ended (ms
  // since the epoch): the statistics extension's.
  std::atomic<uint64_t> success_ns{0}, fail_ns{0};
  std::atomic<int64_t> last_inference_ms{0};
  std::atomic<int> pending{0};
  Histogram request, queue, compute;
  std::unique_ptr<Batcher> batcher;  // with max_batch
};

class ModelRegistry {
 public:
  // Two models of one name are ErrorCode::kUsage, and so is max_batch on a
  // model that cannot be batched. A batched model's batch sizes are
  // compiled here (Batcher::warm_up).
  explicit ModelRegistry(std::vector<ServedModel> models);

  // The model `name` at `version` ("" or "1", the only version served);
  // RequestError 404 naming what is served otherwise.
  ModelState& find(const std::string& name, const std::string& version);

  // One inference request: decoded (serve/oip.h), run, encoded, and counted
  // in the model's metrics. RequestError for a bad request (400) or a run
  // that failed (500; a wrong input the session refused is 400).
  InferResponse infer(ModelState& model, const nlohmann::json& header, std::string_view tail);

  // A request a protocol front end refuses before infer() can decode it (a
  // malformed header or binary extension): counted as a bad request of the
  // model, returned to throw with the model named.
  RequestError bad_request(ModelState& model, int status, const std::string& what);

  // Ready until draining: a stopping server answers "not ready" while it
  // still serves, so that load balancers stop sending it requests.
  bool ready() const { return !draining_; }
  void set_draining() { draining_ = true; }

  // Every model's metrics, Prometheus text format.
  std::string metrics() const;
  // The statistics extension's {"model_stats": [...]} of one model, or of
  // every model (nullptr).
  nlohmann::json statistics(const ModelState* model) const;
  // The workers of every model's flow, together.
  int n_workers() const;

 private:
  std::map<std::string, std::unique_ptr<ModelState>> models_;
  std::atomic<bool> draining_{false};
};

// Parses a request's JSON header: RequestError 400 when it is not JSON or
// nests deeper than kMaxJsonDepth.
nlohmann::json parse_header(std::string_view text);

}  // namespace hetsched::serve
