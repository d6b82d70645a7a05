// Soak (docs/reliability.md): multi-device plans run many times in one
// process. Every run's outputs must equal the first run's bit for bit, and
// resident memory must stay flat: after a warm-up, neither the highest nor
// the last resident size may exceed the size after the warm-up by more than
// max(1 MiB, 1%). Minutes of work, so not a ctest test: `make soak` runs it.
//
//   hetsched_soak [MODEL]     MODEL: an .onnx file or zoo:NAME (zoo:squeezenet1_0)
//   SOAK_RUNS=N               runs per scenario (10000)
//
// Scenarios, each its own Session planned by heft:
//   two-cpu    MODEL on the first two usable cores as two CPU devices
//              (cpu:A,cpu:B)
//   emulated   a small BERT (zoo:bert, 2 layers, 16 tokens, hidden 128) on
//              cpu:A and the desktop-gpu platform's emulated GPU (its MatMuls
//              pinned there), which has its own memory: values cross by Copy
//              steps. Small, because an
//              emulated device computes with the reference kernels: a
//              convolutional network there takes a third of a second a run.
// Exit status: 0 when every scenario holds, 1 when one does not, 2 on bad
// usage.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "hetsched/device.h"
#include "hetsched/error.h"
#include "hetsched/session.h"
#include "unit/tensor_equality.h"

namespace {

using hetsched::Error;
using hetsched::ErrorCode;
using hetsched::TensorMap;
using hetsched::testing::bitwise_equal;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// Resident set size from /proc/self/statm (second field, in pages).
size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

double mib(size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

struct Scenario {
  std::string name;
  std::string model;
  hetsched::LoadOptions load;
  hetsched::SessionOptions options;
  int min_copies = 0;  // Copy steps the plan must have (values crossing memory spaces)
};

// Runs one scenario; returns whether it held.
bool soak(const Scenario& scenario, int runs) {
  auto setup_start = Clock::now();
  hetsched::Session session = hetsched::Session::load(scenario.model, scenario.load, scenario.options);
  hetsched::ExecutionSummary summary = session.summary();
  TensorMap inputs = session.random_inputs(42);
  TensorMap first = session.run(inputs);
  double setup_s = std::chrono::duration<double>(Clock::now() - setup_start).count();
  fmt::print("{}: {} on {} ({} lanes, {} events, {} copies, scheduler {}), set up in {:.1f} s\n", scenario.name,
             scenario.model, summary.device, summary.n_lanes, summary.n_events, summary.n_copies, summary.scheduler,
             setup_s);
  if (summary.n_lanes < 2 || summary.n_events == 0 || summary.n_copies < scenario.min_copies) {
    fmt::print("{}: FAILED: the plan is not the multi-device plan this scenario is for\n", scenario.name);
    return false;
  }

  // Warm-up: allocator pools, lazily created threads and caches settle.
  int warmup = std::max(10, runs / 20);
  size_t start_rss = resident_bytes(), warm_rss = 0, peak_rss = 0;
  int mismatches = 0, first_mismatch = -1;
  auto start = Clock::now();
  for (int i = 1; i <= runs; ++i) {
    TensorMap outputs = session.run(inputs);
    if (!bitwise_equal(outputs, first)) {
      if (first_mismatch < 0) first_mismatch = i;
      ++mismatches;
    }
    size_t rss = resident_bytes();
    if (i == warmup) warm_rss = rss;
    if (i >= warmup) peak_rss = std::max(peak_rss, rss);
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  size_t end_rss = resident_bytes();
  if (warm_rss == 0) warm_rss = peak_rss = end_rss;
  size_t bound = std::max<size_t>(size_t{1} << 20, warm_rss / 100);
  bool flat = end_rss <= warm_rss + bound && peak_rss <= warm_rss + bound;
  fmt::print("{}: {} runs in {:.1f} s ({:.3f} ms a run); outputs {}\n", scenario.name, runs, seconds,
             runs ? 1e3 * seconds / runs : 0.0,
             mismatches ? fmt::format("DIFFERED in {} runs (first: run {})", mismatches, first_mismatch)
                        : "identical to the first run's every time");
  fmt::print("{}: resident {:.2f} MiB at the start, {:.2f} MiB after {} warm-up runs, {:.2f} MiB at the end, "
             "peak {:.2f} MiB: growth {:+.3f} MiB (peak {:+.3f} MiB) against a bound of {:.3f} MiB: {}\n",
             scenario.name, mib(start_rss), mib(warm_rss), warmup, mib(end_rss), mib(peak_rss),
             (static_cast<double>(end_rss) - static_cast<double>(warm_rss)) / (1024.0 * 1024.0),
             (static_cast<double>(peak_rss) - static_cast<double>(warm_rss)) / (1024.0 * 1024.0), mib(bound),
             flat ? "flat" : "GREW");
  std::fflush(stdout);  // a line per scenario as it ends, also into a pipe
  return mismatches == 0 && flat;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 || (argc == 2 && (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0))) {
    fmt::print(stderr, "usage: hetsched_soak [MODEL]   (SOAK_RUNS=N runs per scenario, 10000 by default)\n");
    return 2;
  }
  std::string model = argc == 2 ? argv[1] : "zoo:squeezenet1_0";
  int runs = 10000;
  if (const char* env = std::getenv("SOAK_RUNS")) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (*env == '\0' || *end != '\0' || n < 1 || n > 100000000) {
      fmt::print(stderr, "hetsched_soak: SOAK_RUNS='{}': expected a positive number of runs\n", env);
      return 2;
    }
    runs = static_cast<int>(n);
  }
  std::vector<int> cores = hetsched::describe_machine().usable_cores;
  if (cores.size() < 2) {
    fmt::print(stderr, "hetsched_soak: needs 2 usable cores, this process may use {}\n", cores.size());
    return 1;
  }
  // Its own profile database: calibration results of a soak stay out of the
  // user's.
  fs::path db = fs::temp_directory_path() / fmt::format("hetsched-soak-{}.db", ::getpid());
  std::string a = fmt::format("cpu:{}", cores[0]), b = fmt::format("cpu:{}", cores[1]);
  std::vector<Scenario> scenarios(2);
  scenarios[0].name = "two-cpu";
  scenarios[0].model = model;
  scenarios[0].options.devices = a + "," + b;
  scenarios[1].name = "emulated";
  scenarios[1].model = "zoo:bert";
  scenarios[1].load.zoo_params = {{"layers", "2"}, {"seq", "16"}, {"hidden", "128"}, {"heads", "2"}};
  scenarios[1].options.devices = a + ",emu:gpu";
  scenarios[1].options.platform = std::string(HETSCHED_SOURCE_DIR) + "/platforms/desktop-gpu.json";
  // heft alone keeps a model this small on the CPU: the matrix products are
  // pinned to the GPU so that the plan has two lanes and copies.
  scenarios[1].options.pins = {"MatMul=emu:gpu"};
  scenarios[1].min_copies = 1;
  for (Scenario& s : scenarios) {
    s.options.scheduler = "heft";
    s.options.profile_db = db.string();
  }
  int status = 0;
  try {
    for (const Scenario& s : scenarios)
      if (!soak(s, runs)) status = 1;
  } catch (const Error& e) {
    fmt::print(stderr, "hetsched_soak: error: {}\n", e.what());
    status = e.code() == ErrorCode::kUsage ? 2 : 1;
  }
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db.string() + suffix);
  fmt::print("{}\n", status == 0 ? "soak: passed" : "soak: FAILED");
  return status;
}
