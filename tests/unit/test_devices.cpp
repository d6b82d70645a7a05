// Devices: --devices parsing, describe_machine(), CpuDevice workers (pinning,
// OpenMP thread count, exceptions, ordering, concurrency) and `hetsched devices`.
#include <sched.h>
#include <sys/sysinfo.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "backends/cpu/cpu_device.h"
#include "backends/cpu/device_spec.h"
#include "hetsched/device.h"
#include "hetsched/error.h"
#include "hetsched/platform.h"

namespace hetsched {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

// The calling thread's affinity mask, sorted.
std::vector<int> thread_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  std::vector<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cores.push_back(c);
  return cores;
}

// Restores the calling thread's affinity mask when it goes out of scope.
class AffinityGuard {
 public:
  AffinityGuard() {
    CPU_ZERO(&saved_);
    sched_getaffinity(0, sizeof(saved_), &saved_);
  }
  ~AffinityGuard() { sched_setaffinity(0, sizeof(saved_), &saved_); }

 private:
  cpu_set_t saved_;
};

// The message of the kUsage error parse_device_spec(spec) throws ("" if none).
std::string usage_error(const std::string& spec) {
  try {
    parse_device_spec(spec);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage) << e.what();
    std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << "errors are one line: " << what;
    return what;
  }
  ADD_FAILURE() << "'" << spec << "' was accepted";
  return "";
}

std::vector<int> usable() { return thread_affinity(); }

// ---------------------------------------------------------------- parsing

TEST(DeviceSpecTest, CpuIsOneDeviceOnEveryUsableCore) {
  auto devices = parse_device_spec("cpu");
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].kind, DeviceKind::kCpu);
  EXPECT_EQ(devices[0].cores, usable());
}

TEST(DeviceSpecTest, SingleCoreAndRange) {
  auto cores = usable();
  int c0 = cores[0];
  auto one = parse_device_spec(fmt::format("cpu:{}", c0));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].cores, std::vector<int>{c0});
  EXPECT_EQ(one[0].name(), fmt::format("cpu:{}", c0));
  if (cores.size() < 2 || cores[1] != c0 + 1) GTEST_SKIP() << "needs two consecutive usable cores";
  auto range = parse_device_spec(fmt::format("cpu:{}-{}", c0, c0 + 1));
  ASSERT_EQ(range.size(), 1u);
  EXPECT_EQ(range[0].cores, (std::vector<int>{c0, c0 + 1}));
  EXPECT_EQ(range[0].name(), fmt::format("cpu:{}-{}", c0, c0 + 1));
}

TEST(DeviceSpecTest, TwoDevices) {
  auto cores = usable();
  if (cores.size() < 2) GTEST_SKIP() << "needs two usable cores";
  auto devices = parse_device_spec(fmt::format("cpu:{},cpu:{}", cores[0], cores[1]));
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].cores, std::vector<int>{cores[0]});
  EXPECT_EQ(devices[1].cores, std::vector<int>{cores[1]});
}

TEST(DeviceSpecTest, WhitespaceAroundTokensIsIgnored) {
  auto cores = usable();
  auto devices = parse_device_spec(fmt::format("  cpu : {} ", cores[0]));
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].cores, std::vector<int>{cores[0]});
  EXPECT_EQ(parse_device_spec(" cpu\t").at(0).cores, cores);
  if (cores.size() < 2 || cores[1] != cores[0] + 1) GTEST_SKIP() << "needs two consecutive usable cores";
  auto two = parse_device_spec(fmt::format(" cpu:{} , cpu: {} ", cores[0], cores[1]));
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1].cores, std::vector<int>{cores[1]});
  EXPECT_EQ(parse_device_spec(fmt::format("cpu: {} - {} ", cores[0], cores[1])).at(0).cores,
            (std::vector<int>{cores[0], cores[1]}));
}

TEST(DeviceSpecTest, NameJoinsRangesWithPlus) {
  DeviceSpec spec;
  spec.cores = {0, 1, 4};
  EXPECT_EQ(spec.name(), "cpu:0-1+4");
  spec.cores = {3};
  EXPECT_EQ(spec.name(), "cpu:3");
  spec.cores = {0, 1, 2, 5, 6, 9};
  EXPECT_EQ(spec.name(), "cpu:0-2+5-6+9");
}

TEST(DeviceSpecTest, NamesRoundTrip) {
  auto cores = usable();
  std::vector<std::string> specs = {"cpu", fmt::format("cpu:{}", cores[0])};
  if (cores.size() >= 2) {
    specs.push_back(fmt::format("cpu:{},cpu:{}", cores[0], cores[1]));
    specs.push_back(fmt::format("cpu:{}+{}", cores[0], cores[1]));
    specs.push_back(fmt::format("cpu:{}-{}+{}", cores[0], cores[0], cores[1]));  // overlapping ranges merge
  }
  for (const auto& spec : specs) {
    auto devices = parse_device_spec(spec);
    std::string names;
    for (const auto& d : devices) {
      if (!names.empty()) names += ',';
      names += d.name();
    }
    auto again = parse_device_spec(names);
    ASSERT_EQ(again.size(), devices.size()) << spec << " -> " << names;
    for (size_t i = 0; i < devices.size(); ++i) {
      EXPECT_EQ(again[i].cores, devices[i].cores) << spec << " -> " << names;
      EXPECT_EQ(again[i].name(), devices[i].name());
    }
  }
}

TEST(DeviceSpecTest, EmptySpecIsAnError) {
  EXPECT_THAT(usage_error(""), HasSubstr("empty device spec"));
  EXPECT_THAT(usage_error("   "), HasSubstr("empty device spec"));
  EXPECT_THAT(usage_error("cpu,,cpu"), HasSubstr("device 2 is empty"));
  EXPECT_THAT(usage_error("cpu,"), HasSubstr("device 2 is empty"));
}

TEST(DeviceSpecTest, UnknownKindIsAnError) {
  EXPECT_EQ(usage_error("gpu"),
            "--devices 'gpu': unknown device kind 'gpu' (expected cpu, cpu:CORES, emu:NAME or cuda:N)");
  EXPECT_THAT(usage_error("cpu,gpu:1"), HasSubstr("unknown device kind 'gpu'"));
  EXPECT_THAT(usage_error(":0"), HasSubstr("unknown device kind ''"));
  // Syntax is checked before cores: the typo is named, not a missing core.
  EXPECT_THAT(usage_error("cpu:99999,gpu"), HasSubstr("unknown device kind 'gpu'"));
}

TEST(DeviceSpecTest, MalformedRangesAreErrors) {
  for (const char* spec : {"cpu:a", "cpu:1-", "cpu:-1", "cpu:0-1-2", "cpu:0x1", "cpu:1.5", "cpu:0++1", "cpu:+0"}) {
    std::string msg = usage_error(spec);
    EXPECT_THAT(msg, HasSubstr(fmt::format("--devices '{}'", spec)));
    EXPECT_THAT(msg, HasSubstr("is not a core number or range (expected N or A-B"));
  }
  EXPECT_THAT(usage_error("cpu:"), HasSubstr("'cpu:' lists no cores"));
  EXPECT_THAT(usage_error("cpu:1-0"), HasSubstr("range '1-0' is empty (expected A-B with A <= B)"));
}

TEST(DeviceSpecTest, MissingCoresAreErrors) {
  int n_conf = get_nprocs_conf();
  std::string list = parse_device_spec("cpu").at(0).name().substr(4);  // "0-1+4"
  for (char& c : list)
    if (c == '+') c = ',';
  std::string spec = fmt::format("cpu:{}", n_conf);
  EXPECT_EQ(usage_error(spec),
            fmt::format("--devices '{}': core {} does not exist on this machine (cores {})", spec, n_conf, list));
  // A range names the end the user typed, not the first missing core.
  std::string range = fmt::format("cpu:{}-{}", usable()[0], n_conf + 5);
  EXPECT_EQ(usage_error(range),
            fmt::format("--devices '{}': core {} does not exist on this machine (cores {})", range, n_conf + 5, list));
  EXPECT_THAT(usage_error("cpu:99999999999999999999"), HasSubstr("does not exist on this machine"));
}

TEST(DeviceSpecTest, CoresOutsideTheAffinityMaskAreErrors) {
  auto cores = usable();
  if (cores.size() < 2) GTEST_SKIP() << "needs two usable cores";
  AffinityGuard restore;
  cpu_set_t only_first;
  CPU_ZERO(&only_first);
  CPU_SET(cores[0], &only_first);
  ASSERT_EQ(sched_setaffinity(0, sizeof(only_first), &only_first), 0);
  EXPECT_THAT(usage_error(fmt::format("cpu:{}", cores[1])),
              HasSubstr(fmt::format("core {} is not available to this process (usable cores {})", cores[1], cores[0])));
  EXPECT_EQ(parse_device_spec("cpu").at(0).cores, std::vector<int>{cores[0]});
}

TEST(DeviceSpecTest, SharedCoresAreErrors) {
  auto cores = usable();
  int c0 = cores[0];
  EXPECT_EQ(usage_error(fmt::format("cpu:{},cpu:{}", c0, c0)),
            fmt::format("--devices 'cpu:{},cpu:{}': core {} is in two devices (cpu:{} is listed twice)", c0, c0, c0,
                        c0));
  EXPECT_THAT(usage_error(fmt::format("cpu,cpu:{}", c0)), HasSubstr(fmt::format("core {} is in two devices", c0)));
  if (cores.size() >= 2 && cores[1] == c0 + 1) {
    // A partial overlap: cpu:c0-c0+1 is not the union of the others.
    std::string spec = fmt::format("cpu:{},cpu:{}-{}", c0, c0, c0 + 1);
    EXPECT_EQ(usage_error(spec),
              fmt::format("--devices '{}': core {} is in two devices, cpu:{} and cpu:{}-{}: devices may share cores "
                          "only when one is the union of other devices of the list (e.g. cpu:0,cpu:1,cpu:0-1)",
                          spec, c0, c0, c0, c0 + 1));
  }
  if (cores.size() >= 3 && cores[2] == c0 + 2) {
    // Two wide devices sharing one core, neither the union of the other.
    std::string spec = fmt::format("cpu:{},cpu:{},cpu:{},cpu:{}-{},cpu:{}-{}", c0, c0 + 1, c0 + 2, c0, c0 + 1,
                                   c0 + 1, c0 + 2);
    EXPECT_THAT(usage_error(spec), HasSubstr(fmt::format("core {} is in two devices, cpu:{}-{} and cpu:{}-{}",
                                                         c0 + 1, c0, c0 + 1, c0 + 1, c0 + 2)));
  }
}

TEST(DeviceSpecTest, UnionDeviceMayOverlapTheDevicesItIsTheUnionOf) {
  auto cores = usable();
  if (cores.size() < 2 || cores[1] != cores[0] + 1) GTEST_SKIP() << "needs two consecutive usable cores";
  int c0 = cores[0];
  auto devices = parse_device_spec(fmt::format("cpu:{},cpu:{},cpu:{}-{}", c0, c0 + 1, c0, c0 + 1));
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_EQ(devices[2].cores, (std::vector<int>{c0, c0 + 1}));
  // In any order.
  EXPECT_EQ(parse_device_spec(fmt::format("cpu:{}-{},cpu:{},cpu:{}", c0, c0 + 1, c0 + 1, c0)).size(), 3u);
}

// ---------------------------------------------------------------- describe_machine

TEST(MachineInfoTest, CountsAreSane) {
  MachineInfo m = describe_machine();
  EXPECT_FALSE(m.cpu_model.empty());
  EXPECT_GE(m.n_logical_cores, 1);
  EXPECT_GE(m.n_physical_cores, 1);
  EXPECT_LE(m.n_physical_cores, m.n_logical_cores);
  EXPECT_GE(m.n_numa_nodes, 1);
  EXPECT_EQ(m.gpus.empty(), !m.gpu_note.empty()) << "GPUs, or a note saying why there are none";
  int previous_level = 0;
  for (const auto& c : m.caches) {
    EXPECT_GT(c.level, previous_level) << "one entry per level, in order";
    previous_level = c.level;
    EXPECT_GT(c.size_bytes, 0);
    EXPECT_GE(c.n_sharing_cores, 1);
  }
}

TEST(MachineInfoTest, UsableCoresMatchTheAffinityMask) {
  MachineInfo m = describe_machine();
  EXPECT_EQ(m.usable_cores, thread_affinity());
  EXPECT_EQ(m.n_logical_cores, static_cast<int>(m.usable_cores.size()));
}

// ---------------------------------------------------------------- CpuDevice

DeviceSpec cpu_spec(std::vector<int> cores) {
  DeviceSpec spec;
  spec.cores = std::move(cores);
  return spec;
}

TEST(CpuDeviceTest, RunsPinnedWithOneOpenMPThreadPerCore) {
  std::vector<std::vector<int>> groups = {{usable()[0]}, usable()};
  for (const auto& cores : groups) {
    CpuDevice device(cpu_spec(cores));
    EXPECT_EQ(device.n_threads(), static_cast<int>(cores.size()));
    std::vector<int> seen_affinity;
    int seen_threads = 0;
    std::thread::id seen_id;
    device.run([&] {
      seen_affinity = thread_affinity();
      seen_threads = omp_get_max_threads();
      seen_id = std::this_thread::get_id();
    });
    EXPECT_EQ(seen_affinity, cores);
    EXPECT_EQ(seen_threads, static_cast<int>(cores.size()));
    EXPECT_NE(seen_id, std::this_thread::get_id());
    // Every task runs on the same worker.
    std::thread::id second_id;
    device.run([&] { second_id = std::this_thread::get_id(); });
    EXPECT_EQ(second_id, seen_id);
  }
}

// Denormals are zero on the worker and every thread of its OpenMP team (a
// product below 1.2e-38 is flushed; a denormal read is 0), and stay as they
// were on the caller's thread.
TEST(CpuDeviceTest, TheWorkerAndItsTeamFlushDenormalsToZero) {
  volatile float tiny = 1e-20f, denormal = 1e-40f;
  auto flushed = [&] { return tiny * tiny == 0.0f && denormal * 1.0f == 0.0f; };
  CpuDevice device(cpu_spec(usable()));
  std::atomic<int> n_threads = 0, n_flushed = 0;
  device.run([&] {
#pragma omp parallel
    {
      ++n_threads;
      n_flushed += flushed();
    }
  });
  EXPECT_EQ(n_threads.load(), static_cast<int>(usable().size()));
  EXPECT_EQ(n_flushed.load(), n_threads.load());
  EXPECT_FALSE(flushed());
}

TEST(CpuDeviceTest, ExceptionsReachTheCallerAndTheWorkerSurvives) {
  CpuDevice device(cpu_spec({usable()[0]}));
  EXPECT_THROW(device.run([] { throw std::runtime_error("boom"); }), std::runtime_error);
  auto failed = device.submit([] { throw Error(ErrorCode::kRuntime, "kernel failed"); });
  try {
    failed.get();
    ADD_FAILURE() << "the future did not rethrow";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_STREQ(e.what(), "kernel failed");
  }
  int value = 0;
  device.run([&] { value = 42; });
  EXPECT_EQ(value, 42);
}

TEST(CpuDeviceTest, SubmitRunsInOrder) {
  CpuDevice device(cpu_spec({usable()[0]}));
  std::vector<int> order;  // only the worker touches it until the futures are ready
  std::vector<std::future<void>> done;
  for (int i = 0; i < 200; ++i) done.push_back(device.submit([&order, i] { order.push_back(i); }));
  for (auto& f : done) f.get();
  ASSERT_EQ(order.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(order[i], i);
}

TEST(CpuDeviceTest, RunFromItsOwnTaskRunsInline) {
  CpuDevice device(cpu_spec({usable()[0]}));
  int depth = 0;
  device.run([&] { device.run([&] { depth = 2; }); });
  EXPECT_EQ(depth, 2);
}

TEST(CpuDeviceTest, DestructorRunsWhatIsQueued) {
  std::atomic<int> ran{0};
  {
    CpuDevice device(cpu_spec({usable()[0]}));
    for (int i = 0; i < 50; ++i)
      device.submit([&] {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        ++ran;
      });
  }
  EXPECT_EQ(ran.load(), 50);
}

TEST(CpuDeviceTest, ExecutorsShareOneWorkerPerCoreSet) {
  auto cores = usable();
  std::shared_ptr<CpuDevice> a = CpuDevice::shared(cpu_spec({cores[0]}));
  EXPECT_EQ(CpuDevice::shared(cpu_spec({cores[0]})), a);
  std::thread::id worker;
  a->run([&] { worker = std::this_thread::get_id(); });
  std::thread::id again;
  CpuDevice::shared(cpu_spec({cores[0]}))->run([&] { again = std::this_thread::get_id(); });
  EXPECT_EQ(again, worker);
  if (cores.size() >= 2) {
    EXPECT_NE(CpuDevice::shared(cpu_spec({cores[1]})), a);
    EXPECT_EQ(CpuDevice::shared(cpu_spec({cores[1], cores[0]})), CpuDevice::shared(cpu_spec({cores[0], cores[1]})));
  }
  std::weak_ptr<CpuDevice> released = a;
  a.reset();
  EXPECT_TRUE(released.expired()) << "the worker lives only while someone holds it";
}

TEST(CpuDeviceTest, EmptyDeviceIsRefused) {
  try {
    CpuDevice device(cpu_spec({}));
    ADD_FAILURE() << "a device without cores was built";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
  }
}

// Arithmetic that cannot be optimised away; returns after `iterations` steps.
void spin(long long iterations) {
  thread_local volatile double sink = 0;  // per thread: devices spin at once
  double x = 1.0;
  for (long long i = 0; i < iterations; ++i) x = x * 1.0000001 + 1e-9;
  sink = sink + x;
}

// Steps of spin() that take about `ms` on one core of this machine.
long long calibrate_spin(double ms) {
  long long n = 1 << 20;
  while (true) {
    auto start = Clock::now();
    spin(n);
    double took = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (took > 20) return static_cast<long long>(static_cast<double>(n) * ms / took);
    n *= 2;
  }
}

// Thread CPU time: how long the calling thread actually ran.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// The "done when": two single-core devices run long kernels at the
// same time instead of one after the other. Overlapping wall-clock intervals
// alone would also be seen if the kernel time-sliced both threads on one
// core; each task therefore also checks that it ran pinned to its own,
// different core, which together with the overlap means true parallelism.
TEST(CpuDeviceTest, TwoDevicesRunConcurrently) {
  auto cores = usable();
  if (cores.size() < 2) GTEST_SKIP() << "needs two usable cores, this process has " << cores.size();
  long long steps = calibrate_spin(150);
  CpuDevice a(cpu_spec({cores[0]}));
  CpuDevice b(cpu_spec({cores[1]}));
  struct Record {
    Clock::time_point start, end;
    double cpu_ms = 0;
    std::vector<int> affinity;
    double wall_ms() const { return std::chrono::duration<double, std::milli>(end - start).count(); }
  };
  auto task = [steps](Record& r) {
    return [steps, &r] {
      r.affinity = thread_affinity();
      double cpu_start = thread_cpu_ms();
      r.start = Clock::now();
      spin(steps);
      r.end = Clock::now();
      r.cpu_ms = thread_cpu_ms() - cpu_start;
    };
  };
  // Other processes on a shared machine can steal a core for a while; a
  // serialised pair never overlaps, so a few attempts cannot hide a bug.
  double best_fraction = 0;
  for (int attempt = 0; attempt < 3 && best_fraction < 0.5; ++attempt) {
    Record ra, rb;
    auto fa = a.submit(task(ra));
    auto fb = b.submit(task(rb));
    fa.get();
    fb.get();
    EXPECT_EQ(ra.affinity, std::vector<int>{cores[0]});
    EXPECT_EQ(rb.affinity, std::vector<int>{cores[1]});
    double overlap =
        std::chrono::duration<double, std::milli>(std::min(ra.end, rb.end) - std::max(ra.start, rb.start)).count();
    double shorter = std::min(ra.wall_ms(), rb.wall_ms());
    double fraction = shorter > 0 ? overlap / shorter : 0;
    best_fraction = std::max(best_fraction, fraction);
    std::printf(
        "attempt %d: tasks %.1f ms (%.1f ms on CPU) and %.1f ms (%.1f ms on CPU), overlap %.1f ms (%.0f%% of the "
        "shorter)\n",
        attempt + 1, ra.wall_ms(), ra.cpu_ms, rb.wall_ms(), rb.cpu_ms, overlap, fraction * 100);
  }
  EXPECT_GE(best_fraction, 0.5) << "devices on cores " << cores[0] << " and " << cores[1] << " did not run together";
}

// ---------------------------------------------------------------- CLI

// `hetsched ARGS`, ARGS saying where stderr goes.
std::pair<int, std::string> run_cli(const std::string& args) {
  testing::CliResult r = testing::run_shell(std::string(HETSCHED_CLI) + " " + args);
  return {r.exit_code, r.output};
}

TEST(DeviceCliTest, DevicesJson) {
  auto [code, out] = run_cli("devices --json 2>/dev/null");
  ASSERT_EQ(code, 0) << out;
  nlohmann::json j = nlohmann::json::parse(out);  // throws (fails the test) on bad JSON
  for (const char* key :
       {"cpu_model", "logical_cores", "physical_cores", "numa_nodes", "cores", "caches", "gpus"})
    EXPECT_TRUE(j.contains(key)) << "missing key " << key << " in " << out;
  MachineInfo m = describe_machine();
  EXPECT_EQ(j["logical_cores"].get<int>(), m.n_logical_cores);
  EXPECT_EQ(j["cores"].get<std::vector<int>>(), m.usable_cores);
  EXPECT_TRUE(j["gpus"].is_array());
  ASSERT_TRUE(j["caches"].is_array());
  for (const auto& c : j["caches"]) {
    EXPECT_TRUE(c.contains("level"));
    EXPECT_TRUE(c.contains("size_bytes"));
    EXPECT_TRUE(c.contains("sharing"));
  }
}

TEST(DeviceCliTest, DevicesHuman) {
  auto [code, out] = run_cli("devices 2>&1");
  ASSERT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("CPU: "));
  MachineInfo m = describe_machine();
  EXPECT_THAT(out, HasSubstr(m.gpus.empty() ? "GPUs: none (" + m.gpu_note + ")" : "GPUs:\n  cuda:0"));
  EXPECT_THAT(out, HasSubstr(fmt::format("cpu:{}", usable()[0])));
}

TEST(DeviceCliTest, TheCliStartsLibgompWithActiveWaitsUnlessTheUserChose) {
  // libgomp's default (100 spins once threads outnumber cores) made cpu:0-1
  // measure slower than one core in `compare`: the CLI starts itself again
  // with active waits, and keeps a choice the environment made.
  auto devices = [](const std::string& env) {
    return testing::run_shell(fmt::format("env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT {} {} devices 2>&1", env,
                                          HETSCHED_CLI));
  };
  // OMP_DISPLAY_ENV: libgomp prints what it took, when it is loaded.
  testing::CliResult chosen_by_hetsched = devices("OMP_DISPLAY_ENV=verbose");
  EXPECT_EQ(chosen_by_hetsched.exit_code, 0) << chosen_by_hetsched.output;
  std::string taken = chosen_by_hetsched.output.substr(chosen_by_hetsched.output.rfind("OPENMP DISPLAY ENVIRONMENT BEGIN"));
  EXPECT_THAT(taken, HasSubstr("OMP_WAIT_POLICY = 'ACTIVE'"));
  EXPECT_THAT(taken, HasSubstr("GOMP_SPINCOUNT = '30000'"));
  EXPECT_THAT(chosen_by_hetsched.output, HasSubstr("OpenMP waits: OMP_WAIT_POLICY=ACTIVE GOMP_SPINCOUNT=30000\n"));
  EXPECT_THAT(devices("OMP_WAIT_POLICY=passive").output,
              HasSubstr("OpenMP waits: OMP_WAIT_POLICY=passive GOMP_SPINCOUNT unset\n"));
  EXPECT_THAT(devices("GOMP_SPINCOUNT=5").output, HasSubstr("OpenMP waits: OMP_WAIT_POLICY unset GOMP_SPINCOUNT=5\n"));
}

TEST(DeviceSpecTest, TheCpuBesideAGpuLeavesTheFirstCore) {
  EXPECT_EQ(cpu_spec_beside_gpu({0, 1, 2, 3}), "cpu:1-3");
  EXPECT_EQ(cpu_spec_beside_gpu({0, 2, 5}), "cpu:2+5");  // gaps stay gaps
  EXPECT_EQ(cpu_spec_beside_gpu({4, 5}), "cpu:5");
  EXPECT_EQ(cpu_spec_beside_gpu({0}), "");
}

// What `hetsched run MODEL` schedules over when given no devices.
TEST(DeviceSpecTest, TheMachinesDevicesAreTwoHalvesOfTheCoresOrEachGpuBesideTheRest) {
  auto spec = [](std::vector<int> cores, int n_gpus) { return machine_devices_spec(SpecMachine{cores, n_gpus, ""}); };
  EXPECT_EQ(spec({0, 1}, 0), "cpu:0,cpu:1");
  EXPECT_EQ(spec({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, 0), "cpu:0-7,cpu:8-15");
  EXPECT_EQ(spec({0, 1, 2}, 0), "cpu:0-1,cpu:2");
  EXPECT_EQ(spec({0, 2, 4, 6}, 0), "cpu:0+2,cpu:4+6");
  EXPECT_EQ(spec({3}, 0), "cpu");
  EXPECT_EQ(spec({0, 1, 2, 3}, 1), "cpu:1-3,cuda:0");
  EXPECT_EQ(spec({0, 1, 2, 3}, 2), "cpu:1-3,cuda:0,cuda:1");
  EXPECT_EQ(spec({0}, 1), "cuda:0");
  // This machine's parses as a spec, and `devices` names it.
  EXPECT_NO_THROW(parse_device_spec(machine_devices_spec()));
  auto [code, out] = run_cli("devices 2>&1");
  ASSERT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("`hetsched run MODEL` without --devices: " + machine_devices_spec()));
}

TEST(OpenmpWaits, AMultiCoreDeviceMeasuredWithDefaultWaitsIsWarnedAbout) {
  // libgomp read the environment this test binary was started with.
  bool chosen = std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT");
  Platform p;
  PlatformDevice wide;
  wide.name = "cpu:0-1";
  wide.kind = DeviceKind::kCpu;
  wide.cores = {0, 1};
  PlatformDevice narrow = wide;
  narrow.name = "cpu:0";
  narrow.cores = {0};
  p.devices = {narrow};
  EXPECT_EQ(openmp_waits_warning(p), "") << "one core: no threads to wake";
  p.devices.push_back(wide);
  if (chosen) {
    EXPECT_EQ(openmp_waits_warning(p), "") << "the environment chose";
  } else {
    EXPECT_THAT(openmp_waits_warning(p), HasSubstr("cpu:0-1 runs on 2 cores, and libgomp waits as by default"));
    EXPECT_EQ(openmp_wait_settings(), "OMP_WAIT_POLICY unset GOMP_SPINCOUNT unset");
    // Set now, after libgomp was loaded: it changes nothing, and says so.
    setenv("GOMP_SPINCOUNT", "1000", 1);
    EXPECT_EQ(openmp_wait_settings(), "OMP_WAIT_POLICY unset GOMP_SPINCOUNT unset");
    EXPECT_NE(openmp_waits_warning(p), "");
    unsetenv("GOMP_SPINCOUNT");
  }
}

}  // namespace
}  // namespace hetsched
