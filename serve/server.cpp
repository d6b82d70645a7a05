// `hetsched serve`'s HTTP front end (see serve/server.h).
#include "serve/server.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "hetsched/error.h"
#include "serve/oip.h"

namespace hetsched::serve {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// A Prometheus histogram of seconds: cumulative counts per upper bound.
class Histogram {
 public:
  void observe(double s) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t b = 0; b < kBounds.size(); ++b)
      if (s <= kBounds[b]) ++counts_[b];
    ++count_;
    sum_ += s;
  }
  void write(std::string& out, const std::string& name, const std::string& labels) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t b = 0; b < kBounds.size(); ++b)
      out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, kBounds[b], counts_[b]);
    out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, count_);
    out += fmt::format("{}_sum{{{}}} {}\n{}_count{{{}}} {}\n", name, labels, sum_, name, labels, count_);
  }

 private:
  static constexpr std::array<double, 14> kBounds{0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                                  0.1,    0.2,   0.5,   1,     2,    5,    10};
  mutable std::mutex mutex_;
  std::array<uint64_t, 14> counts_{};
  uint64_t count_ = 0;
  double sum_ = 0;
};

struct ModelState {
  ServedModel model;
  std::atomic<uint64_t> success{0}, bad_request{0}, failure{0};
  std::atomic<int> pending{0};
  Histogram request, queue, compute;
};

void answer_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void answer_error(httplib::Response& res, int status, const std::string& what) {
  answer_json(res, status, {{"error", what}});
}

}  // namespace

struct Server::Impl {
  ServerOptions options;
  std::map<std::string, std::unique_ptr<ModelState>> models;
  httplib::Server http;
  int port = -1;

  // The model a URL names (the regex's groups 1 and 2: name, version), or
  // a 404 answered.
  ModelState* find(const httplib::Request& req, httplib::Response& res) {
    std::string name = req.matches[1];
    auto it = models.find(name);
    if (it == models.end()) {
      std::vector<std::string> names;
      for (const auto& [n, m] : models) names.push_back(n);
      answer_error(res, 404, fmt::format("unknown model '{}' (served: {})", name, fmt::join(names, ", ")));
      return nullptr;
    }
    if (req.matches.size() > 2 && req.matches[2].matched && req.matches[2] != "1") {
      answer_error(res, 404, fmt::format("model '{}' has no version '{}' (served: 1)", name, req.matches[2].str()));
      return nullptr;
    }
    return it->second.get();
  }

  void infer(const httplib::Request& req, httplib::Response& res) {
    ModelState* m = find(req, res);
    if (!m) return;
    auto start = Clock::now();
    ++m->pending;
    struct Done {
      std::atomic<int>& pending;
      ~Done() { --pending; }
    } done{m->pending};
    InferRequest request;
    const Graph& graph = m->model.session->graph();
    try {
      // The binary extension: the JSON header's length, the tensors after it.
      size_t header_length = req.body.size();
      if (req.has_header("Inference-Header-Content-Length")) {
        std::string text = req.get_header_value("Inference-Header-Content-Length");
        size_t used = 0;
        unsigned long long n = 0;
        try {
          n = std::stoull(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size() || n > req.body.size())
          throw RequestError(400, fmt::format("Inference-Header-Content-Length '{}': expected a byte count of at "
                                              "most the body's {} bytes",
                                              text, req.body.size()));
        header_length = static_cast<size_t>(n);
      }
      std::string_view header_text(req.body.data(), header_length);
      if (json_depth(header_text) > kMaxJsonDepth)
        throw RequestError(400, fmt::format("the JSON nests deeper than {} levels", kMaxJsonDepth));
      json header = json::parse(header_text, nullptr, false);
      if (header.is_discarded()) throw RequestError(400, "the request body is not valid JSON");
      request = decode_infer_request(header, std::string_view(req.body).substr(header_length), graph);
    } catch (const RequestError& e) {
      ++m->bad_request;
      answer_error(res, e.status(), fmt::format("model '{}': {}", m->model.name, e.what()));
      return;
    }
    try {
      RunTiming timing;
      TensorMap outputs = m->model.session->run(request.inputs, nullptr, &timing);
      InferResponse response = encode_infer_response(m->model.name, request, outputs);
      m->queue.observe(timing.queue_s);
      m->compute.observe(timing.compute_s);
      if (response.tail.empty()) {
        res.set_content(response.header, "application/json");
      } else {
        res.set_header("Inference-Header-Content-Length", std::to_string(response.header.size()));
        res.set_content(response.header + response.tail, "application/octet-stream");
      }
      ++m->success;
    } catch (const Error& e) {
      bool client = e.code() == ErrorCode::kInvalidInput;
      ++(client ? m->bad_request : m->failure);
      answer_error(res, client ? 400 : 500, fmt::format("model '{}': {}", m->model.name, e.what()));
    }
    m->request.observe(std::chrono::duration<double>(Clock::now() - start).count());
  }

  void routes() {
    const std::string model = R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)";
    http.Get("/v2/health/live", [](const httplib::Request&, httplib::Response& res) {
      answer_json(res, 200, {{"live", true}});
    });
    http.Get("/v2/health/ready", [](const httplib::Request&, httplib::Response& res) {
      answer_json(res, 200, {{"ready", true}});
    });
    http.Get("/v2", [](const httplib::Request&, httplib::Response& res) {
      answer_json(res, 200, {{"name", "hetsched"}, {"version", "0.1.0"}, {"extensions", {"binary_tensor_data"}}});
    });
    http.Get(model, [this](const httplib::Request& req, httplib::Response& res) {
      if (ModelState* m = find(req, res)) answer_json(res, 200, model_metadata(m->model.name, m->model.session->graph()));
    });
    http.Get(model + "/ready", [this](const httplib::Request& req, httplib::Response& res) {
      if (ModelState* m = find(req, res)) answer_json(res, 200, {{"name", m->model.name}, {"ready", true}});
    });
    http.Post(model + "/infer", [this](const httplib::Request& req, httplib::Response& res) { infer(req, res); });
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics(), "text/plain; version=0.0.4");
    });
    // Every 4xx/5xx without a body (an unknown path, a body over the limit)
    // gets the protocol's {"error": ...}.
    http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      std::string what =
          res.status == 413 ? fmt::format("the request body is over the limit of {} bytes", options.max_body_bytes)
          : res.status == 404 ? fmt::format("no such endpoint: {} {}", req.method, req.path)
                              : fmt::format("HTTP {}", res.status);
      answer_error(res, res.status, what);
    });
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
      std::string what = "internal error";
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      answer_error(res, 500, what);
    });
  }

  std::string metrics() const {
    std::string out;
    out += "# HELP hetsched_inference_requests_total Inference requests by outcome.\n"
           "# TYPE hetsched_inference_requests_total counter\n";
    for (const auto& [name, m] : models)
      for (auto [outcome, n] : {std::pair{"success", m->success.load()}, std::pair{"bad_request", m->bad_request.load()},
                                std::pair{"failure", m->failure.load()}})
        out += fmt::format("hetsched_inference_requests_total{{model=\"{}\",outcome=\"{}\"}} {}\n", name, outcome, n);
    out += "# HELP hetsched_pending_requests Inference requests being served.\n"
           "# TYPE hetsched_pending_requests gauge\n";
    for (const auto& [name, m] : models)
      out += fmt::format("hetsched_pending_requests{{model=\"{}\"}} {}\n", name, m->pending.load());
    for (auto [metric, help, pick] :
         {std::tuple{"hetsched_request_duration_seconds", "Whole inference requests: decode, queue, run, encode.",
                     &ModelState::request},
          std::tuple{"hetsched_queue_duration_seconds", "Time a request waited for a free worker.", &ModelState::queue},
          std::tuple{"hetsched_compute_duration_seconds", "Time a request ran on its worker.", &ModelState::compute}}) {
      out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", metric, help, metric);
      for (const auto& [name, m] : models) ((*m).*pick).write(out, metric, fmt::format("model=\"{}\"", name));
    }
    out += "# HELP hetsched_device_busy_seconds_total Time each worker's device ran requests.\n"
           "# TYPE hetsched_device_busy_seconds_total counter\n";
    std::string served = "# HELP hetsched_device_requests_total Requests each worker's device ran.\n"
                         "# TYPE hetsched_device_requests_total counter\n";
    for (const auto& [name, m] : models)
      for (const WorkerLoad& load : m->model.session->loads()) {
        out += fmt::format("hetsched_device_busy_seconds_total{{model=\"{}\",device=\"{}\"}} {}\n", name, load.device,
                           load.busy_s);
        served += fmt::format("hetsched_device_requests_total{{model=\"{}\",device=\"{}\"}} {}\n", name, load.device,
                              load.n_requests);
      }
    return out + served;
  }
};

Server::Server(std::vector<ServedModel> models, ServerOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.options = options;
  int workers = 0;
  for (ServedModel& m : models) {
    if (s.models.count(m.name))
      throw Error(ErrorCode::kUsage, fmt::format("two models named '{}': name one with --name", m.name));
    workers += static_cast<int>(std::max<size_t>(1, m.session->summary().workers.size()));
    auto state = std::make_unique<ModelState>();
    state->model = std::move(m);
    s.models.emplace(state->model.name, std::move(state));
  }
  int threads = options.threads > 0 ? options.threads : std::max(8, 2 * workers);
  s.http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  s.http.set_payload_max_length(options.max_body_bytes);
  s.routes();
}

Server::~Server() = default;

void Server::bind() {
  Impl& s = *impl_;
  if (s.port >= 0) return;
  s.port = s.options.port == 0 ? s.http.bind_to_any_port(s.options.host)
                               : (s.http.bind_to_port(s.options.host, s.options.port) ? s.options.port : -1);
  if (s.port < 0)
    throw Error(ErrorCode::kIo, fmt::format("cannot listen on {}:{} (in use, or not an address of this machine)",
                                            s.options.host, s.options.port));
}

int Server::port() const { return impl_->port; }

void Server::run() {
  bind();
  impl_->http.listen_after_bind();
}

void Server::stop() { impl_->http.stop(); }

std::string Server::metrics() const { return impl_->metrics(); }

}  // namespace hetsched::serve
