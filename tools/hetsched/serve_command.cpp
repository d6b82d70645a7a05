// `hetsched serve` (see serve_command.h).
#include "serve_command.h"

#include <csignal>
#include <filesystem>
#include <memory>
#include <thread>

#include <pthread.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli_common.h"
#include "hetsched/error.h"
#include "hetsched/session.h"
#include "serve/batcher.h"
#include "serve/server.h"

namespace {

using namespace hetsched;

struct ServeCommand {
  std::vector<std::string> models;
  std::vector<std::string> names;
  cli::ModelOptions model;  // devices, scheduler, db, shapes, params: for every model
  std::string mode = "throughput";
  serve::ServerOptions server;
  int max_body_mib = 64;
  int max_batch = 0;
  double max_delay_ms = 2;

  static std::string default_name(const std::string& model) {
    if (model.rfind("zoo:", 0) == 0) return model.substr(4);
    return std::filesystem::path(model).stem().string();
  }

  int execute() {
    if (!names.empty() && names.size() != models.size())
      throw Error(ErrorCode::kUsage, fmt::format("--name: given {} times for {} models (one per model, in order)",
                                                 names.size(), models.size()));
    // SIGTERM and SIGINT go to the thread that waits for them: blocked here,
    // before any thread starts, so every thread inherits the mask.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    SessionOptions options = model.session_options();
    options.mode = mode == "throughput" ? RunMode::kThroughput : RunMode::kLatency;
    if (options.mode == RunMode::kThroughput && options.scheduler != "sequential")
      throw Error(ErrorCode::kUsage, "--scheduler: for --mode latency (throughput mode chooses its own flow)");
    std::vector<serve::ServedModel> served;
    for (size_t k = 0; k < models.size(); ++k) {
      std::string name = names.empty() ? default_name(models[k]) : names[k];
      if (max_batch > 0) {  // refused before the session's planning and measuring
        SessionOptions graph_only = options;
        graph_only.reference = true;
        serve::Batcher::check_batchable(Session::load(models[k], model.load_options(), graph_only).graph(), name);
      }
      auto session = std::make_shared<Session>(Session::load(models[k], model.load_options(), options));
      ExecutionSummary s = session->summary();
      for (const auto& w : s.warnings) fmt::print(stderr, "hetsched: warning: {}\n", w);
      fmt::print("model {}: {} on {}{}\n", name, models[k], s.device, s.flow.empty() ? "" : " (" + s.flow + ")");
      if (!s.choice.empty()) fmt::print("  {}\n", s.choice);
      if (max_batch > 0)
        fmt::print("  batching: up to {} rows, waiting up to {} ms; compiling the batch sizes ahead\n", max_batch,
                   max_delay_ms);
      served.push_back({name, std::move(session), max_batch, max_delay_ms});
    }
    server.max_body_bytes = static_cast<size_t>(max_body_mib) << 20;
    serve::Server http(std::move(served), server);
    http.bind();
    fmt::print("serving the Open Inference Protocol on http://{}:{}/v2 (metrics: /metrics)\n", server.host,
               http.port());
    if (http.grpc_port() >= 0) fmt::print("and over gRPC on {}:{}\n", server.host, http.grpc_port());
    std::fflush(stdout);
    std::thread waiter([&] {
      int signal = 0;
      sigwait(&stop_signals, &signal);
      fmt::print("{}: not ready for {} s while serving, then finishing the requests in flight and stopping\n",
                 signal == SIGTERM ? "SIGTERM" : "SIGINT", server.drain_seconds);
      std::fflush(stdout);
      http.stop();
    });
    http.run();
    // run() also returns when the server fails; the waiter must not outlive it.
    pthread_kill(waiter.native_handle(), SIGTERM);
    waiter.join();
    fmt::print("stopped\n");
    return 0;
  }
};

}  // namespace

void add_serve_command(CLI::App& app, int* exit_code) {
  auto state = std::make_shared<ServeCommand>();
  auto* cmd = app.add_subcommand("serve", "serve models over HTTP with the Open Inference Protocol (KServe v2), "
                                          "requests side by side on the devices (docs/serving.md)");
  cmd->add_option("models", state->models, "models: .onnx files or zoo:NAME")->required();
  cmd->add_option("--name", state->names, "the name of each model in URLs, in order (default: the file's stem)");
  cmd->add_option("--host", state->server.host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", state->server.port, "HTTP port (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--grpc-port", state->server.grpc_port, "gRPC port (0: any free port, -1: no gRPC)")
      ->check(CLI::Range(-1, 65535))
      ->capture_default_str();
  cmd->add_option("--devices", state->model.devices, "where to run: cpu, cpu:0,cpu:1, ... (see `hetsched devices`)")
      ->capture_default_str();
  cmd->add_option("--mode", state->mode,
                  "throughput: requests side by side on the devices, the flow chosen by measurement; latency: one "
                  "request at a time over them")
      ->check(CLI::IsMember({"latency", "throughput"}))
      ->capture_default_str();
  cmd->add_option("--scheduler", state->model.scheduler, "with --mode latency: the scheduler of the plan");
  cmd->add_option("--param", state->model.params, "zoo model parameter KEY=VALUE (repeatable)");
  cmd->add_option("--shape", state->model.shapes, "fix a free input dim: NAME=1x3x224x224 (repeatable)");
  cli::ModelOptions::add_db_option(cmd, state->model.db);
  cmd->add_option("--max-body-mib", state->max_body_mib, "largest request body accepted, in MiB")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--drain-seconds", state->server.drain_seconds,
                  "on SIGTERM: how long readiness says 503 while requests are still served, before the server stops "
                  "accepting")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--max-batch", state->max_batch,
                  "dynamic batching: stack up to this many rows of requests along the models' free first dim "
                  "(0: off)")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--max-delay-ms", state->max_delay_ms,
                  "with --max-batch: how long a request waits for others to join its batch")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10000.0));
  cmd->add_option("--threads", state->server.threads, "HTTP worker threads (default: 2 per worker, at least 8)")
      ->check(CLI::Range(1, 1024));
  cmd->callback([state, exit_code] { *exit_code = state->execute(); });
}
