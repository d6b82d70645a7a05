// The served models, their inference path and metrics (see serve/models.h).
#include "serve/models.h"

#include <algorithm>
#include <chrono>
#include <tuple>

#include <fmt/format.h>

#include "hetsched/error.h"

namespace hetsched::serve {

void Histogram::observe(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t b = 0; b < kBounds.size(); ++b)
    if (seconds <= kBounds[b]) ++counts_[b];
  ++count_;
  sum_ += seconds;
}

nlohmann::json Histogram::totals() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {{"count", count_}, {"ns", static_cast<uint64_t>(sum_ * 1e9)}};
}

void Histogram::write(std::string& out, const std::string& name, const std::string& labels) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t b = 0; b < kBounds.size(); ++b)
    out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, kBounds[b], counts_[b]);
  out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, count_);
  out += fmt::format("{}_sum{{{}}} {}\n{}_count{{{}}} {}\n", name, labels, sum_, name, labels, count_);
}

ModelRegistry::ModelRegistry(std::vector<ServedModel> models) {
  for (ServedModel& m : models) {
    if (models_.count(m.name))
      throw Error(ErrorCode::kUsage, fmt::format("two models named '{}': name one with --name", m.name));
    auto state = std::make_unique<ModelState>();
    if (m.max_batch > 0) {
      state->batcher = std::make_unique<Batcher>(m.session, m.name, m.max_batch, m.max_delay_ms);
      state->batcher->warm_up();
    }
    state->model = std::move(m);
    models_.emplace(state->model.name, std::move(state));
  }
}

ModelState& ModelRegistry::find(const std::string& name, const std::string& version) {
  auto it = models_.find(name);
  if (it == models_.end()) {
    std::vector<std::string> names;
    for (const auto& [n, m] : models_) names.push_back(n);
    throw RequestError(404, fmt::format("unknown model '{}' (served: {})", name, fmt::join(names, ", ")));
  }
  if (!version.empty() && version != "1")
    throw RequestError(404, fmt::format("model '{}' has no version '{}' (served: 1)", name, version));
  return *it->second;
}

RequestError ModelRegistry::bad_request(ModelState& m, int status, const std::string& what) {
  ++m.bad_request;
  return RequestError(status, fmt::format("model '{}': {}", m.model.name, what));
}

InferResponse ModelRegistry::infer(ModelState& m, const nlohmann::json& header, std::string_view tail) {
  auto start = std::chrono::steady_clock::now();
  ++m.pending;
  struct Done {
    ModelState& m;
    std::chrono::steady_clock::time_point start;
    bool ok = false;
    ~Done() {
      --m.pending;
      auto elapsed = std::chrono::steady_clock::now() - start;
      m.request.observe(std::chrono::duration<double>(elapsed).count());
      (ok ? m.success_ns : m.fail_ns) += std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count();
      if (ok)
        m.last_inference_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
    }
  } done{m, start};
  InferRequest request;
  try {
    request = decode_infer_request(header, tail, m.model.session->graph());
  } catch (const RequestError& e) {
    throw bad_request(m, e.status(), e.what());
  }
  try {
    RunTiming timing;
    TensorMap outputs = m.batcher ? m.batcher->run(request.inputs, &timing)
                                  : m.model.session->run(request.inputs, nullptr, &timing);
    InferResponse response = encode_infer_response(m.model.name, request, outputs);
    m.queue.observe(timing.queue_s);
    m.compute.observe(timing.compute_s);
    ++m.success;
    done.ok = true;
    return response;
  } catch (const Error& e) {
    bool client = e.code() == ErrorCode::kInvalidInput;
    ++(client ? m.bad_request : m.failure);
    throw RequestError(client ? 400 : 500, fmt::format("model '{}': {}", m.model.name, e.what()));
  }
}

nlohmann::json ModelRegistry::statistics(const ModelState* model) const {
  nlohmann::json stats = nlohmann::json::array();
  for (const auto& [name, m] : models_) {
    if (model && m.get() != model) continue;
    const uint64_t failed = m->bad_request.load() + m->failure.load();
    const uint64_t executions = m->batcher ? m->batcher->n_batches() : m->success.load();
    nlohmann::json none = {{"count", 0}, {"ns", 0}};
    stats.push_back({{"name", name},
                     {"version", "1"},
                     {"last_inference", m->last_inference_ms.load()},
                     {"inference_count", m->success.load()},
                     {"execution_count", executions},
                     {"inference_stats",
                      {{"success", {{"count", m->success.load()}, {"ns", m->success_ns.load()}}},
                       {"fail", {{"count", failed}, {"ns", m->fail_ns.load()}}},
                       {"queue", m->queue.totals()},
                       {"compute_input", none},
                       {"compute_infer", m->compute.totals()},
                       {"compute_output", none}}},
                     {"batch_stats", nlohmann::json::array()}});
  }
  return {{"model_stats", stats}};
}

std::string ModelRegistry::metrics() const {
  std::string out;
  out += "# HELP hetsched_inference_requests_total Inference requests by outcome.\n"
         "# TYPE hetsched_inference_requests_total counter\n";
  for (const auto& [name, m] : models_)
    for (auto [outcome, n] : {std::pair{"success", m->success.load()}, std::pair{"bad_request", m->bad_request.load()},
                              std::pair{"failure", m->failure.load()}})
      out += fmt::format("hetsched_inference_requests_total{{model=\"{}\",outcome=\"{}\"}} {}\n", name, outcome, n);
  out += "# HELP hetsched_pending_requests Inference requests being served.\n"
         "# TYPE hetsched_pending_requests gauge\n";
  for (const auto& [name, m] : models_)
    out += fmt::format("hetsched_pending_requests{{model=\"{}\"}} {}\n", name, m->pending.load());
  for (auto [metric, help, pick] :
       {std::tuple{"hetsched_request_duration_seconds", "Whole inference requests: decode, queue, run, encode.",
                   &ModelState::request},
        std::tuple{"hetsched_queue_duration_seconds", "Time a request waited for its worker.", &ModelState::queue},
        std::tuple{"hetsched_compute_duration_seconds", "Time a request ran on its worker.", &ModelState::compute}}) {
    out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", metric, help, metric);
    for (const auto& [name, m] : models_) ((*m).*pick).write(out, metric, fmt::format("model=\"{}\"", name));
  }
  out += "# HELP hetsched_device_busy_seconds_total Time each worker's device ran requests.\n"
         "# TYPE hetsched_device_busy_seconds_total counter\n";
  std::string served = "# HELP hetsched_device_requests_total Requests each worker's device ran.\n"
                       "# TYPE hetsched_device_requests_total counter\n";
  for (const auto& [name, m] : models_)
    for (const WorkerLoad& load : m->model.session->loads()) {
      out += fmt::format("hetsched_device_busy_seconds_total{{model=\"{}\",device=\"{}\"}} {}\n", name, load.device,
                         load.busy_s);
      served += fmt::format("hetsched_device_requests_total{{model=\"{}\",device=\"{}\"}} {}\n", name, load.device,
                            load.n_requests);
    }
  out += served;
  std::string rows = "# HELP hetsched_batch_rows_total Rows of the requests run in batches (--max-batch).\n"
                     "# TYPE hetsched_batch_rows_total counter\n";
  out += "# HELP hetsched_batches_total Batches run (--max-batch): rows / batches is the mean batch.\n"
         "# TYPE hetsched_batches_total counter\n";
  for (const auto& [name, m] : models_) {
    if (!m->batcher) continue;
    out += fmt::format("hetsched_batches_total{{model=\"{}\"}} {}\n", name, m->batcher->n_batches());
    rows += fmt::format("hetsched_batch_rows_total{{model=\"{}\"}} {}\n", name, m->batcher->n_rows());
  }
  return out + rows;
}

int ModelRegistry::n_workers() const {
  int n = 0;
  for (const auto& [name, m] : models_)
    n += static_cast<int>(std::max<size_t>(1, m->model.session->summary().workers.size()));
  return n;
}

nlohmann::json parse_header(std::string_view text) {
  if (json_depth(text) > kMaxJsonDepth)
    throw RequestError(400, fmt::format("the JSON nests deeper than {} levels", kMaxJsonDepth));
  nlohmann::json header = nlohmann::json::parse(text, nullptr, false);
  if (header.is_discarded()) throw RequestError(400, "the request body is not valid JSON");
  return header;
}

}  // namespace hetsched::serve
