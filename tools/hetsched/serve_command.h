// `hetsched serve MODEL... [--port P] [--grpc-port G] [--host H]
// [--devices SPEC] [--mode throughput|latency] [--name NAME]...
// [--max-body-mib N]`: loads each model as a Session and serves the Open
// Inference Protocol over HTTP and gRPC (serve/server.h) until SIGTERM or SIGINT, which stop accepting, finish the
// requests in flight and exit 0.
#pragma once

namespace CLI {
class App;
}

void add_serve_command(CLI::App& app, int* exit_code);
