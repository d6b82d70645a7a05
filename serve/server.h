// `hetsched serve`: the Open Inference Protocol (KServe v2) over HTTP for
// one or more models, each a Session (throughput mode by default: requests
// from all clients run side by side on the flow's devices).
//
//   GET  /v2/health/live, /v2/health/ready   200 {"live": true} / {"ready": true}
//                                             (ready: 503 {"ready": false} while draining)
//   GET  /v2                                  server metadata
//   GET  /v2/models/NAME[/versions/1]         model metadata
//   GET  /v2/models/NAME[/versions/1]/ready   200 {"name", "ready": true}
//   POST /v2/models/NAME[/versions/1]/infer   inference (serve/oip.h): JSON
//        tensors, or the binary tensor data extension (header
//        Inference-Header-Content-Length: the JSON's length, the tensors'
//        bytes after it)
//   GET  /metrics                             Prometheus text format
// and gRPC inference.GRPCInferenceService on its own port
// (serve/grpc_service.h).
//
// Errors answer {"error": "..."} naming the model, tensor or field: 400 for
// a bad request, 404 for an unknown model, version or path, 413 for a body
// over the limit (refused before it is read), 500 when the run fails. A bad
// request never affects the next one.
//
// Threads: the HTTP server's pool runs requests; Session::run serves them
// side by side on the model's workers (each on the worker that would finish
// it first). stop() first drains: for `drain_seconds` readiness answers 503
// (gRPC: ready false) while requests are still served, so that load
// balancers stop sending any; then it stops accepting, lets the requests in
// flight finish, and makes run() return.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "hetsched/session.h"
#include "serve/models.h"

namespace hetsched::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;       // 0: any free port (port() says which)
  int grpc_port = 8001;  // 0: any free port (grpc_port()); -1: no gRPC
  size_t max_body_bytes = size_t{64} << 20;
  int threads = 0;  // HTTP worker threads; 0 = 2 per worker of all models' flows, at least 8
  double drain_seconds = 5;
};

class Server {
 public:
  Server(std::vector<ServedModel> models, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the ports (ErrorCode::kIo naming host and port when it cannot).
  void bind();
  int port() const;
  int grpc_port() const;  // -1 without gRPC
  // Serves until stop(); binds first when bind() was not called.
  void run();
  // Thread-safe and signal-thread-safe (not async-signal-safe: call it from
  // a thread that waited for the signal).
  void stop();

  // The /metrics text (Prometheus exposition format).
  std::string metrics() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hetsched::serve
