// CUDA devices in device specs, platforms and `hetsched devices`: the
// grammar against a described machine (runs everywhere), and this
// machine's answer (no GPU here, or no CUDA backend in this build: a usage
// error saying which; with a GPU, the platform device).

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "backends/cpu/device_spec.h"
#include "hetsched/device.h"
#include "hetsched/error.h"
#include "hetsched/platform.h"
#include "platform/gpu_probe.h"

namespace hetsched {
namespace {

using ::testing::HasSubstr;

SpecMachine machine_with_gpus(int n) {
  SpecMachine m;
  m.usable_cores = {0, 1, 2, 3};
  m.n_gpus = n;
  if (n == 0) m.no_gpu = "no CUDA GPU: cudaGetDeviceCount returned 0";
  return m;
}

// The kUsage message parsing `spec` against `machine` throws ("" if none).
std::string usage_error(const std::string& spec, const SpecMachine& machine) {
  try {
    parse_device_spec(spec, machine);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "'" << spec << "' was accepted";
  return "";
}

TEST(CudaDeviceSpec, GpuNumberAndStreamCount) {
  SpecMachine m = machine_with_gpus(2);
  auto one = parse_device_spec("cuda:0", m);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].kind, DeviceKind::kCuda);
  EXPECT_EQ(one[0].gpu, 0);
  EXPECT_EQ(one[0].streams, kDefaultCudaStreams);
  EXPECT_EQ(one[0].name(), "cuda:0");

  auto streams = parse_device_spec(" cuda : 1 * 2 ", m);
  EXPECT_EQ(streams[0].gpu, 1);
  EXPECT_EQ(streams[0].streams, 2);
  EXPECT_EQ(streams[0].name(), "cuda:1") << "the stream count is not part of the name";

  EXPECT_EQ(parse_device_spec("cuda", m)[0].gpu, 0);
  EXPECT_EQ(parse_device_spec(fmt::format("cuda:0*{}", kMaxCudaStreams), m)[0].streams, kMaxCudaStreams);

  auto mixed = parse_device_spec("cpu:0-1,cuda:1*8,cuda:0*1", m);
  ASSERT_EQ(mixed.size(), 3u);
  EXPECT_EQ(mixed[0].kind, DeviceKind::kCpu);
  EXPECT_EQ(mixed[0].name(), "cpu:0-1");
  EXPECT_EQ(mixed[1].name(), "cuda:1");
  EXPECT_EQ(mixed[1].streams, 8);
  EXPECT_EQ(mixed[2].streams, 1);
}

TEST(CudaDeviceSpec, MalformedSpecsAreUsageErrors) {
  SpecMachine m = machine_with_gpus(2);
  for (const char* spec : {"cuda:", "cuda:x", "cuda:-1", "cuda:0x1", "cuda:1.5", "cuda:*2", "cuda:99999999999"})
    EXPECT_EQ(usage_error(spec, m),
              fmt::format("--devices '{}': '{}' is not a GPU number (expected cuda:N or cuda:N*S, e.g. cuda:0 or "
                          "cuda:0*4)",
                          spec, spec));
  for (const char* spec : {"cuda:0*", "cuda:0*0", "cuda:0*65", "cuda:0*x", "cuda:0*-1", "cuda:0*2*2"})
    EXPECT_EQ(usage_error(spec, m),
              fmt::format("--devices '{}': '{}': the stream count must be a number from 1 to {} (cuda:N*S)", spec,
                          spec, kMaxCudaStreams));
  EXPECT_EQ(usage_error("cuda:0,cuda:0*2", m),
            "--devices 'cuda:0,cuda:0*2': cuda:0 is listed twice (give one stream count: cuda:0*S)");
  EXPECT_EQ(parse_device_spec("cuda:1,cuda", m).size(), 2u) << "cuda alone is cuda:0";
  EXPECT_THAT(usage_error("cuda*4", m), HasSubstr("unknown device kind 'cuda*4'"));
}

TEST(CudaDeviceSpec, MissingGpusAreUsageErrorsSayingWhy) {
  EXPECT_EQ(usage_error("cuda:0", machine_with_gpus(0)),
            "--devices 'cuda:0': cannot use cuda:0: no CUDA GPU: cudaGetDeviceCount returned 0");
  EXPECT_EQ(usage_error("cpu:0,cuda:1", machine_with_gpus(1)),
            "--devices 'cpu:0,cuda:1': cuda:1 does not exist on this machine (it has 1 CUDA GPU: cuda:0)");
  EXPECT_EQ(usage_error("cuda:2*2", machine_with_gpus(2)),
            "--devices 'cuda:2*2': cuda:2 does not exist on this machine (it has 2 CUDA GPUs: cuda:0 to cuda:1)");
  // The whole spec's syntax first: a typo is named even next to a missing GPU.
  EXPECT_THAT(usage_error("cuda:0,gpu", machine_with_gpus(0)), HasSubstr("unknown device kind 'gpu'"));
  EXPECT_THAT(usage_error("cuda:0,cuda:0*0", machine_with_gpus(0)), HasSubstr("the stream count must be"));
}

TEST(CudaDeviceSpec, ThisMachine) {
  const GpuProbe& probe = probe_gpus();
  if (!probe.gpus.empty()) {
    auto specs = parse_device_spec("cuda:0*2");
    EXPECT_EQ(specs[0].streams, 2);
    return;
  }
  EXPECT_FALSE(probe.why_none.empty());
#ifdef HETSCHED_WITH_CUDA
  EXPECT_THAT(probe.why_none, HasSubstr("no CUDA GPU: cudaGetDeviceCount returned"));
#else
  EXPECT_THAT(probe.why_none, HasSubstr("this build has no CUDA backend"));
#endif
  try {
    parse_device_spec("cuda:0");
    ADD_FAILURE() << "cuda:0 accepted without a GPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
    EXPECT_EQ(std::string(e.what()), "--devices 'cuda:0': cannot use cuda:0: " + probe.why_none);
  }
  EXPECT_THROW(make_platform("cpu:0,cuda:0", ""), Error);
  // CPU specs never ask the CUDA runtime, and keep working.
  EXPECT_EQ(parse_device_spec("cpu").size(), 1u);
}

TEST(CudaPlatform, GpuDeviceHasItsOwnMemorySpaceAndLinks) {
  if (probe_gpus().gpus.empty()) GTEST_SKIP() << probe_gpus().why_none;
  Platform p = make_platform("cuda:0*3", "");
  ASSERT_EQ(p.devices.size(), 1u);
  const PlatformDevice& d = p.devices[0];
  EXPECT_EQ(d.name, "cuda:0");
  EXPECT_EQ(d.kind, DeviceKind::kCuda);
  EXPECT_EQ(d.memory_space, "cuda:0");
  EXPECT_EQ(d.n_streams, 3);
  EXPECT_GT(d.peak_gflops, 0);
  EXPECT_GT(d.bandwidth_gbps, 0);
  EXPECT_THAT(d.signature, HasSubstr(probe_gpus().gpus[0].name));
  ASSERT_NE(p.link(kHostMemory, "cuda:0"), nullptr);
  ASSERT_NE(p.link("cuda:0", kHostMemory), nullptr);
  EXPECT_NE(p.signature(), make_platform("cuda:0*2", "").signature()) << "stream counts change plans";
}

// ---------------------------------------------------------------- CLI

// `hetsched ARGS`, ARGS saying where stderr goes.
std::pair<int, std::string> run_cli(const std::string& args) {
  testing::CliResult r = testing::run_shell(std::string(HETSCHED_CLI) + " " + args);
  return {r.exit_code, r.output};
}

TEST(CudaDeviceCli, DevicesSaysWhetherThereIsAGpu) {
  auto [code, out] = run_cli("devices --json 2>/dev/null");
  ASSERT_EQ(code, 0) << out;
  nlohmann::json j = nlohmann::json::parse(out);
  const GpuProbe& probe = probe_gpus();
  EXPECT_EQ(j["gpus"].size(), probe.gpus.size());
  EXPECT_EQ(j["gpu_note"].get<std::string>(), probe.why_none);
  EXPECT_EQ(j["gpu_libraries"].get<std::string>(), probe.libraries);
#ifdef HETSCHED_WITH_CUDA
  EXPECT_THAT(probe.libraries, HasSubstr("cuDNN 9."));
#endif
  // With a GPU, the CPU + GPU example leaves the first core to the GPU's
  // host threads (docs/cuda.md), and make_platform takes it as it is.
  std::vector<int> cores = describe_machine().usable_cores;
  if (probe.gpus.empty() || cores.size() < 2) return;
  std::string cpu_and_gpu;
  for (const auto& example : j["example_specs"])
    if (example["spec"].get<std::string>().find(",cuda:0") != std::string::npos) cpu_and_gpu = example["spec"];
  EXPECT_EQ(cpu_and_gpu.rfind(fmt::format("cpu:{}", cores[1]), 0), 0u) << cpu_and_gpu;
  EXPECT_NO_THROW(make_platform(cpu_and_gpu, ""));
}

TEST(CudaDeviceCli, RunOnAMissingGpuIsAUsageError) {
  if (!probe_gpus().gpus.empty()) GTEST_SKIP() << "a GPU is present";
  auto [code, out] = run_cli("run zoo:squeezenet1_0 --devices cuda:0 -n 1 2>&1");
  EXPECT_EQ(code, 2) << out;
  EXPECT_THAT(out, HasSubstr("cannot use cuda:0: " + probe_gpus().why_none));
}

}  // namespace
}  // namespace hetsched
