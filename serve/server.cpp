// `hetsched serve`'s front ends: HTTP (cpp-httplib) and gRPC (see
// serve/server.h), both on one ModelRegistry.
#include "serve/server.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "hetsched/error.h"
#include "serve/grpc_service.h"
#include "serve/models.h"

namespace hetsched::serve {

namespace {

using nlohmann::json;

void answer_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void answer_error(httplib::Response& res, int status, const std::string& what) {
  answer_json(res, status, {{"error", what}});
}

// The version in a URL's optional "/versions/V" (regex group 2), or "".
std::string version_of(const httplib::Request& req) {
  return req.matches.size() > 2 && req.matches[2].matched ? req.matches[2].str() : "";
}

}  // namespace

struct Server::Impl {
  ServerOptions options;
  ModelRegistry registry;
  httplib::Server http;
  int port = -1;
  std::unique_ptr<grpc::Service> grpc_service;
  std::unique_ptr<grpc::Server> grpc_server;
  int grpc_port = -1;

  Impl(std::vector<ServedModel> models, ServerOptions o) : options(std::move(o)), registry(std::move(models)) {}

  // Answers with the model the URL names, or the error `serve` raised.
  template <typename Serve>
  void with_model(const httplib::Request& req, httplib::Response& res, Serve serve) {
    try {
      serve(registry.find(req.matches[1], version_of(req)));
    } catch (const RequestError& e) {
      answer_error(res, e.status(), e.what());
    }
  }

  void infer(const httplib::Request& req, const std::string& body, httplib::Response& res) {
    with_model(req, res, [&](ModelState& m) {
      // The binary extension: the JSON header's length, the tensors after it.
      size_t header_length = body.size();
      if (req.has_header("Inference-Header-Content-Length")) {
        std::string text = req.get_header_value("Inference-Header-Content-Length");
        size_t used = 0;
        unsigned long long n = 0;
        try {
          n = std::stoull(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size() || n > body.size())
          throw registry.bad_request(m, 400,
                                     fmt::format("Inference-Header-Content-Length '{}': expected a byte count of at "
                                                 "most the body's {} bytes",
                                                 text, body.size()));
        header_length = static_cast<size_t>(n);
      }
      json header;
      try {
        header = parse_header(std::string_view(body.data(), header_length));
      } catch (const RequestError& e) {
        throw registry.bad_request(m, e.status(), e.what());
      }
      InferResponse response = registry.infer(m, header, std::string_view(body).substr(header_length));
      if (response.tail.empty()) {
        res.set_content(response.header, "application/json");
      } else {
        res.set_header("Inference-Header-Content-Length", std::to_string(response.header.size()));
        res.set_content(response.header + response.tail, "application/octet-stream");
      }
    });
  }

  void routes() {
    const std::string model = R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)";
    http.Get("/v2/health/live", [](const httplib::Request&, httplib::Response& res) {
      answer_json(res, 200, {{"live", true}});
    });
    http.Get("/v2/health/ready", [this](const httplib::Request&, httplib::Response& res) {
      // Models are loaded and warm before the port opens.
      bool ready = registry.ready();
      answer_json(res, ready ? 200 : 503, {{"ready", ready}});
    });
    http.Get("/v2", [](const httplib::Request&, httplib::Response& res) {
      answer_json(res, 200,
                  {{"name", "hetsched"},
                   {"version", HETSCHED_SERVE_VERSION},
                   {"extensions", {"binary_tensor_data", "statistics", "model_configuration"}}});
    });
    // The statistics extension (Triton's): registered before the model's
    // routes, which would take "stats" for a model name.
    http.Get("/v2/models/stats", [this](const httplib::Request&, httplib::Response& res) {
      answer_json(res, 200, registry.statistics(nullptr));
    });
    http.Get(model + "/config", [this](const httplib::Request& req, httplib::Response& res) {
      with_model(req, res, [&](ModelState& m) {
        answer_json(res, 200,
                    model_config(m.model.name, m.model.session->graph(), m.model.max_batch, m.model.max_delay_ms));
      });
    });
    http.Get(model + "/stats", [this](const httplib::Request& req, httplib::Response& res) {
      with_model(req, res, [&](ModelState& m) { answer_json(res, 200, registry.statistics(&m)); });
    });
    http.Get(model, [this](const httplib::Request& req, httplib::Response& res) {
      with_model(req, res, [&](ModelState& m) {
        answer_json(res, 200, model_metadata(m.model.name, m.model.session->graph()));
      });
    });
    http.Get(model + "/ready", [this](const httplib::Request& req, httplib::Response& res) {
      with_model(req, res, [&](ModelState& m) {
        bool ready = registry.ready();
        answer_json(res, ready ? 200 : 503, {{"name", m.model.name}, {"ready", ready}});
      });
    });
    // The body read here rather than by the library, which refuses a body
    // over 8 KiB sent as application/x-www-form-urlencoded: what curl -d and
    // urllib send when the client names no Content-Type. The size limit
    // still holds (413 from the Content-Length, before reading).
    http.Post(model + "/infer",
              [this](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
                std::string body;
                // The library refused a Content-Length over the limit already.
                if (size_t length = req.get_header_value<uint64_t>("Content-Length"); length <= options.max_body_bytes)
                  body.reserve(length);
                bool read = reader([&](const char* data, size_t n) {
                  body.append(data, n);
                  return true;
                });
                if (read) infer(req, body, res);
              });
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(registry.metrics(), "text/plain; version=0.0.4");
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
};

Server::Server(std::vector<ServedModel> models, ServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(models), std::move(options))) {
  Impl& s = *impl_;
  int threads = s.options.threads > 0 ? s.options.threads : std::max(8, 2 * s.registry.n_workers());
  s.http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  s.http.set_payload_max_length(s.options.max_body_bytes);
  s.routes();
}

Server::~Server() {
  if (impl_->grpc_server) impl_->grpc_server->Shutdown();
}

void Server::bind() {
  Impl& s = *impl_;
  if (s.port >= 0) return;
  s.port = s.options.port == 0 ? s.http.bind_to_any_port(s.options.host)
                               : (s.http.bind_to_port(s.options.host, s.options.port) ? s.options.port : -1);
  if (s.port < 0)
    throw Error(ErrorCode::kIo, fmt::format("cannot listen on {}:{} (in use, or not an address of this machine)",
                                            s.options.host, s.options.port));
  if (s.options.grpc_port < 0) return;
  s.grpc_service = make_grpc_service(s.registry);
  grpc::ServerBuilder builder;
  int selected = 0;
  builder.AddListeningPort(fmt::format("{}:{}", s.options.host, s.options.grpc_port), grpc::InsecureServerCredentials(),
                           &selected);
  builder.RegisterService(s.grpc_service.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<size_t>(s.options.max_body_bytes, INT32_MAX)));
  builder.SetMaxSendMessageSize(INT32_MAX);
  s.grpc_server = builder.BuildAndStart();
  if (!s.grpc_server || selected == 0)
    throw Error(ErrorCode::kIo, fmt::format("cannot listen for gRPC on {}:{} (in use, or not an address of this "
                                            "machine)",
                                            s.options.host, s.options.grpc_port));
  s.grpc_port = selected;
}

int Server::port() const { return impl_->port; }
int Server::grpc_port() const { return impl_->grpc_port; }

void Server::run() {
  bind();
  impl_->http.listen_after_bind();
  if (impl_->grpc_server) impl_->grpc_server->Wait();
}

void Server::stop() {
  impl_->registry.set_draining();
  std::this_thread::sleep_for(std::chrono::duration<double>(impl_->options.drain_seconds));
  impl_->http.stop();
  // gRPC: no new calls; the ones in flight finish (within 30 s).
  if (impl_->grpc_server) impl_->grpc_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(30));
}

std::string Server::metrics() const { return impl_->registry.metrics(); }

}  // namespace hetsched::serve
