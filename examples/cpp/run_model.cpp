// run_model: hetsched's C++ API in one program. It loads a model, runs it over
// the given devices with a scheduler, and prints its outputs' shapes and the
// latency.
//
//   run_model [MODEL] [--devices SPEC] [--platform FILE] [--scheduler NAME] [-n RUNS]
//
// MODEL is an .onnx file or zoo:NAME (default zoo:squeezenet1_0). SPEC, FILE
// and NAME are those of `hetsched run`: e.g. `--devices cpu:0,cpu:1
// --scheduler heft`, or `--platform phone-soc --devices cpu,emu:npu
// --scheduler round-robin` for a modeled NPU, emulated. A FILE without a '/'
// names one of the installed platform files (hetsched_PLATFORMS_DIR of the
// CMake package, see CMakeLists.txt). Exit code 0 on success, 1 on an error,
// 2 on a usage error (like the CLI).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <hetsched/error.h>
#include <hetsched/session.h>

namespace {

int usage(const char* message) {
  std::fprintf(stderr,
               "run_model: %s\n"
               "usage: run_model [MODEL] [--devices SPEC] [--platform FILE] [--scheduler NAME] [-n RUNS]\n",
               message);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model = "zoo:squeezenet1_0";
  hetsched::SessionOptions options;  // every core as one CPU device, the sequential plan
  int runs = 5;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool has_value = i + 1 < argc;
    if (arg == "--devices" && has_value) {
      options.devices = argv[++i];
    } else if (arg == "--platform" && has_value) {
      options.platform = argv[++i];
      if (options.platform.find('/') == std::string::npos)
        options.platform = std::string(HETSCHED_PLATFORMS_DIR) + "/" + options.platform + ".json";
    } else if (arg == "--scheduler" && has_value) {
      options.scheduler = argv[++i];
    } else if (arg == "-n" && has_value) {
      runs = std::atoi(argv[++i]);
      if (runs < 1) return usage("-n: expected a positive number of runs");
    } else if (arg.rfind("-", 0) == 0) {
      return usage(("unknown option or missing value: " + arg).c_str());
    } else {
      model = arg;
    }
  }

  using Clock = std::chrono::steady_clock;
  try {
    // Loading checks the model and every node against the kernels, optimises
    // the graph and makes the plan: errors surface here, not in run().
    hetsched::Session session = hetsched::Session::load(model, {}, options);
    hetsched::ExecutionSummary summary = session.summary();
    std::printf("model: %s, %zu nodes\n", model.c_str(), session.graph().nodes.size());
    std::printf("plan: %s on %s, %d lanes, %d nodes on reference kernels\n", summary.scheduler.c_str(),
                summary.device.c_str(), summary.n_lanes, summary.n_fallbacks);

    hetsched::TensorMap inputs = session.random_inputs(/*seed=*/0);
    hetsched::TensorMap outputs = session.run(inputs);  // the first run also warms up
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
      auto start = Clock::now();
      outputs = session.run(inputs);
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
    for (const auto& [name, tensor] : outputs)
      std::printf("output %s: %s\n", name.c_str(), tensor.description().c_str());
    std::sort(ms.begin(), ms.end());
    std::printf("latency: median %.2f ms, min %.2f ms over %d runs%s\n", ms[ms.size() / 2], ms.front(), runs,
                summary.emulated ? " (emulated devices: modeled durations)" : "");
    return 0;
  } catch (const hetsched::Error& e) {
    std::fprintf(stderr, "run_model: error: %s\n", e.what());
    return e.code() == hetsched::ErrorCode::kUsage ? 2 : 1;
  }
}
