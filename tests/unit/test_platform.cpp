// Platforms: the shipped platform files, platform-file validation, device
// specs with emulated devices, make_platform's three cases, signatures,
// link and resource lookup, PlatformDevice::supports.
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <regex>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <oneapi/dnnl/dnnl.h>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_device.h"
#include "hetsched/device.h"
#include "hetsched/error.h"
#include "hetsched/platform.h"

namespace hetsched {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

fs::path platforms_dir() { return (fs::path(HETSCHED_TEST_DATA) / ".." / ".." / "platforms").lexically_normal(); }

std::string shipped(const std::string& name) { return (platforms_dir() / (name + ".json")).string(); }

// A scratch folder of this test process, removed at exit.
class ScratchDir {
 public:
  ScratchDir() : path_(fs::temp_directory_path() / fmt::format("hetsched_test_platform_{}", getpid())) {
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    fs::path file = path_ / name;
    std::ofstream(file) << text;
    return file.string();
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

const ScratchDir& scratch() {
  static ScratchDir dir;
  return dir;
}

// The error `fn` throws, checked to be one line of the expected code.
template <typename Fn>
Error expect_error(Fn fn, ErrorCode code) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "errors are one line: " << e.what();
    return e;
  }
  ADD_FAILURE() << "no error was thrown";
  return Error(ErrorCode::kRuntime, "");
}

// A minimal valid file: one emulated device in host memory.
nlohmann::json minimal_file() {
  return nlohmann::json::parse(R"({
    "name": "tiny",
    "devices": [{"name": "acc", "kind": "npu", "peak_gflops": 100, "bandwidth_gbps": 10}]
  })");
}

// A valid file with every field: a device with its own memory space.
nlohmann::json full_file() {
  return nlohmann::json::parse(R"({
    "name": "full",
    "description": "a test platform",
    "devices": [
      {"name": "cpu", "kind": "cpu", "memory_space": "host", "streams": 1, "peak_gflops": 50,
       "bandwidth_gbps": 20, "launch_overhead_us": 2, "shared_resource": "dram", "description": "cores"},
      {"name": "acc", "kind": "dsa", "memory_space": "acc-mem", "streams": 2, "peak_gflops": 1000,
       "bandwidth_gbps": 100, "launch_overhead_us": 10, "ops": ["Conv", "MatMul"], "precisions": ["int8"],
       "int8_peak_gops": 4000, "onchip_bytes": 1048576, "description": "an accelerator"}
    ],
    "links": [{"from": "host", "to": "acc-mem", "latency_us": 5, "bandwidth_gbps": 16, "bidirectional": true}],
    "resources": [{"name": "dram", "bandwidth_gbps": 30}]
  })");
}

Node node_of(const std::string& op_type) {
  Node node;
  node.op_type = op_type;
  return node;
}

// ---------------------------------------------------------------- shipped files

TEST(PlatformFileTest, EveryShippedFileLoads) {
  int n_files = 0;
  for (const auto& entry : fs::directory_iterator(platforms_dir())) {
    if (entry.path().extension() != ".json") continue;
    ++n_files;
    SCOPED_TRACE(entry.path().string());
    Platform p = load_platform_file(entry.path().string());
    EXPECT_EQ(p.name, entry.path().stem().string()) << "a shipped file is named after its file";
    EXPECT_TRUE(p.has_emulated());
    for (const auto& d : p.devices) {
      EXPECT_THAT(d.name, StartsWith("emu:"));
      EXPECT_TRUE(d.is_emulated());
      EXPECT_GT(d.peak_gflops, 0);
      EXPECT_GT(d.bandwidth_gbps, 0);
      EXPECT_FALSE(d.description.empty()) << d.name;
      EXPECT_THAT(d.signature, StartsWith(fmt::format("emu|{}|{}|", p.name, d.name.substr(4))));
    }
  }
  EXPECT_GE(n_files, 3);
}

TEST(PlatformFileTest, DesktopGpuHasAGpuBehindPcie) {
  Platform p = load_platform_file(shipped("desktop-gpu"));
  ASSERT_EQ(p.devices.size(), 2u);
  const PlatformDevice& gpu = p.devices.at(p.find_device("emu:gpu"));
  EXPECT_EQ(gpu.model_kind, "gpu");
  EXPECT_EQ(gpu.n_streams, 4);
  EXPECT_NE(gpu.memory_space, kHostMemory);
  EXPECT_GT(gpu.peak_gflops, 10 * p.devices.at(p.find_device("emu:cpu")).peak_gflops);
  const Link* to_gpu = p.link(kHostMemory, gpu.memory_space);
  const Link* from_gpu = p.link(gpu.memory_space, kHostMemory);
  ASSERT_NE(to_gpu, nullptr);
  ASSERT_NE(from_gpu, nullptr);
  EXPECT_DOUBLE_EQ(to_gpu->bandwidth_gbps, 25);
  EXPECT_DOUBLE_EQ(to_gpu->latency_us, 10);
  EXPECT_EQ(to_gpu->source, "file");
  EXPECT_DOUBLE_EQ(from_gpu->bandwidth_gbps, 25);
}

TEST(PlatformFileTest, PhoneSocSharesOneMemory) {
  Platform p = load_platform_file(shipped("phone-soc"));
  ASSERT_EQ(p.devices.size(), 3u);
  for (const auto& d : p.devices) {
    EXPECT_EQ(d.memory_space, kHostMemory) << d.name;
    EXPECT_EQ(d.shared_resource, "lpddr5") << d.name;
  }
  ASSERT_NE(p.resource("lpddr5"), nullptr);
  EXPECT_DOUBLE_EQ(p.resource("lpddr5")->bandwidth_gbps, 40);
  EXPECT_TRUE(p.links.empty());
  const PlatformDevice& npu = p.devices.at(p.find_device("emu:npu"));
  EXPECT_TRUE(npu.supports(node_of("Conv")));
  EXPECT_TRUE(npu.supports(node_of("MatMul")));
  EXPECT_TRUE(npu.supports(node_of("Relu")));
  EXPECT_FALSE(npu.supports(node_of("Softmax")));
  EXPECT_FALSE(npu.supports(node_of("MaxPool")));
  EXPECT_TRUE(npu.supports(node_of("QLinearConv")));
  EXPECT_EQ(npu.precisions, (std::vector<std::string>{"float16", "int8"}));
  EXPECT_GT(npu.int8_peak_gops, npu.peak_gflops);
  EXPECT_TRUE(p.devices.at(p.find_device("emu:little")).supports(node_of("Softmax")));
}

TEST(PlatformFileTest, CpuDsaHasOnChipMemory) {
  Platform p = load_platform_file(shipped("cpu-dsa"));
  const PlatformDevice& dsa = p.devices.at(p.find_device("emu:dsa"));
  EXPECT_EQ(dsa.model_kind, "dsa");
  EXPECT_EQ(dsa.onchip_bytes, 32 << 20);
  EXPECT_NE(dsa.memory_space, kHostMemory);
  EXPECT_NE(p.link(kHostMemory, dsa.memory_space), nullptr);
  EXPECT_NE(p.link(dsa.memory_space, kHostMemory), nullptr);
  EXPECT_FALSE(dsa.supports(node_of("Gather")));
}

TEST(PlatformFileTest, EveryFieldIsRead) {
  Platform p = load_platform_file(scratch().write("full.json", full_file().dump()));
  EXPECT_EQ(p.name, "full");
  ASSERT_EQ(p.devices.size(), 2u);
  const PlatformDevice& cpu = p.devices[0];
  EXPECT_EQ(cpu.name, "emu:cpu");
  EXPECT_EQ(cpu.kind, DeviceKind::kEmulated);
  EXPECT_EQ(cpu.model_kind, "cpu");
  EXPECT_EQ(cpu.shared_resource, "dram");
  EXPECT_DOUBLE_EQ(cpu.launch_overhead_us, 2);
  EXPECT_EQ(cpu.description, "cores");
  const PlatformDevice& acc = p.devices[1];
  EXPECT_EQ(acc.memory_space, "acc-mem");
  EXPECT_EQ(acc.n_streams, 2);
  EXPECT_DOUBLE_EQ(acc.peak_gflops, 1000);
  EXPECT_DOUBLE_EQ(acc.bandwidth_gbps, 100);
  EXPECT_EQ(acc.ops, (std::vector<std::string>{"Conv", "MatMul"}));
  EXPECT_EQ(acc.precisions, (std::vector<std::string>{"int8"}));
  EXPECT_DOUBLE_EQ(acc.int8_peak_gops, 4000);
  EXPECT_EQ(acc.onchip_bytes, 1048576);
  EXPECT_EQ(acc.shared_resource, "");
  ASSERT_EQ(p.links.size(), 2u) << "bidirectional gives both directions";
  EXPECT_DOUBLE_EQ(p.link("acc-mem", kHostMemory)->latency_us, 5);
  ASSERT_EQ(p.resources.size(), 1u);
  EXPECT_DOUBLE_EQ(p.resources[0].bandwidth_gbps, 30);
}

TEST(PlatformFileTest, DefaultsOfOptionalFields) {
  Platform p = load_platform_file(scratch().write("minimal.json", minimal_file().dump()));
  ASSERT_EQ(p.devices.size(), 1u);
  const PlatformDevice& d = p.devices[0];
  EXPECT_EQ(d.memory_space, kHostMemory);
  EXPECT_EQ(d.n_streams, 1);
  EXPECT_DOUBLE_EQ(d.launch_overhead_us, 0);
  EXPECT_TRUE(d.ops.empty());
  EXPECT_TRUE(d.supports(node_of("Gather")));
  EXPECT_TRUE(d.precisions.empty());
  EXPECT_DOUBLE_EQ(d.int8_peak_gops, 0);
  EXPECT_EQ(d.onchip_bytes, 0);
  EXPECT_TRUE(p.links.empty());
  EXPECT_TRUE(p.resources.empty());
}

// ---------------------------------------------------------------- malformed files

struct Malformation {
  std::string what;                                // shown when the case fails
  std::function<void(nlohmann::json&)> edit;       // applied to full_file()
  std::string field;                               // the field the message must name
  std::string expected;                            // what the message must say was expected
};

TEST(PlatformFileTest, MalformedFilesAreRefusedNamingTheField) {
  using J = nlohmann::json;
  std::vector<Malformation> cases = {
      {"top-level typo", [](J& j) { j["devics"] = J::array(); }, "devics", "unknown key (expected one of"},
      {"device typo", [](J& j) { j["devices"][1]["bandwith_gbps"] = 5; }, "devices[1].bandwith_gbps", "unknown key"},
      {"link typo", [](J& j) { j["links"][0]["latency"] = 5; }, "links[0].latency", "unknown key"},
      {"resource typo", [](J& j) { j["resources"][0]["gbps"] = 5; }, "resources[0].gbps", "unknown key"},
      {"no name", [](J& j) { j.erase("name"); }, "name", "missing (required)"},
      {"empty name", [](J& j) { j["name"] = ""; }, "name", "expected a non-empty string"},
      {"no devices", [](J& j) { j.erase("devices"); }, "devices", "missing (required)"},
      {"devices not an array", [](J& j) { j["devices"] = J::object(); }, "devices", "expected an array"},
      {"zero devices", [](J& j) { j["devices"] = J::array(); }, "devices", "expected at least one device"},
      {"device not an object", [](J& j) { j["devices"][0] = 3; }, "devices[0]", "expected an object"},
      {"device without name", [](J& j) { j["devices"][1].erase("name"); }, "devices[1].name", "missing"},
      {"device name with a space", [](J& j) { j["devices"][1]["name"] = "my acc"; }, "devices[1].name",
       "is not a name"},
      {"device name with a dot", [](J& j) { j["devices"][1]["name"] = "acc.1"; }, "devices[1].name",
       "'acc.1' is not a name (expected letters, digits, '_', '-')"},
      {"duplicate device", [](J& j) { j["devices"][1]["name"] = "cpu"; }, "devices[1].name", "'cpu' is listed twice"},
      {"unknown kind", [](J& j) { j["devices"][1]["kind"] = "fpga"; }, "devices[1].kind",
       "unknown kind 'fpga' (expected one of cpu, gpu, npu, dsa)"},
      {"missing peak", [](J& j) { j["devices"][1].erase("peak_gflops"); }, "devices[1].peak_gflops", "missing"},
      {"zero peak", [](J& j) { j["devices"][1]["peak_gflops"] = 0; }, "devices[1].peak_gflops",
       "expected a positive number"},
      {"negative bandwidth", [](J& j) { j["devices"][0]["bandwidth_gbps"] = -1; }, "devices[0].bandwidth_gbps",
       "expected a positive number"},
      {"peak as a string", [](J& j) { j["devices"][1]["peak_gflops"] = "1000"; }, "devices[1].peak_gflops",
       "expected a positive number"},
      {"negative launch overhead", [](J& j) { j["devices"][1]["launch_overhead_us"] = -3; },
       "devices[1].launch_overhead_us", "expected a number >= 0"},
      {"zero streams", [](J& j) { j["devices"][1]["streams"] = 0; }, "devices[1].streams",
       "expected a positive integer"},
      {"fractional streams", [](J& j) { j["devices"][1]["streams"] = 1.5; }, "devices[1].streams",
       "expected a positive integer"},
      {"negative on-chip bytes", [](J& j) { j["devices"][1]["onchip_bytes"] = -1; }, "devices[1].onchip_bytes",
       "expected an integer >= 0"},
      {"unknown op", [](J& j) { j["devices"][1]["ops"] = {"Conv", "Convolution"}; }, "devices[1].ops[1]",
       "unknown op type 'Convolution'"},
      {"op twice", [](J& j) { j["devices"][1]["ops"] = {"Conv", "Conv"}; }, "devices[1].ops[1]",
       "'Conv' is listed twice"},
      {"empty ops", [](J& j) { j["devices"][1]["ops"] = J::array(); }, "devices[1].ops",
       "expected at least one op type"},
      {"ops not an array", [](J& j) { j["devices"][1]["ops"] = "Conv"; }, "devices[1].ops", "expected an array"},
      {"unknown precision", [](J& j) { j["devices"][1]["precisions"] = {"int8", "int4"}; },
       "devices[1].precisions[1]", "unknown precision 'int4' (expected one of float32, float16, bfloat16, int8)"},
      {"precision twice", [](J& j) { j["devices"][1]["precisions"] = {"int8", "int8"}; },
       "devices[1].precisions[1]", "'int8' is listed twice"},
      {"empty precisions", [](J& j) { j["devices"][1]["precisions"] = J::array(); }, "devices[1].precisions",
       "expected at least one number format"},
      {"int8 rate without int8", [](J& j) { j["devices"][1]["precisions"] = {"float16"}; },
       "devices[1].int8_peak_gops", "the device's precisions do not list int8"},
      {"zero int8 rate", [](J& j) { j["devices"][1]["int8_peak_gops"] = 0; }, "devices[1].int8_peak_gops",
       "expected a positive number"},
      {"unlisted resource", [](J& j) { j["devices"][0]["shared_resource"] = "sram"; }, "devices[0].shared_resource",
       "'sram' is not listed in resources (it lists dram)"},
      {"zero resource bandwidth", [](J& j) { j["resources"][0]["bandwidth_gbps"] = 0; },
       "resources[0].bandwidth_gbps", "expected a positive number"},
      {"duplicate resource", [](J& j) { j["resources"].push_back(j["resources"][0]); }, "resources[1].name",
       "'dram' is listed twice"},
      {"space without links", [](J& j) { j.erase("links"); }, "devices[1].memory_space",
       "'acc-mem' needs a link from host to acc-mem"},
      {"one-way link", [](J& j) { j["links"][0].erase("bidirectional"); }, "devices[1].memory_space",
       "'acc-mem' needs a link from acc-mem to host"},
      {"link to an unknown space", [](J& j) { j["links"][0]["to"] = "acc-memory"; }, "links[0].to",
       "unknown memory space 'acc-memory' (expected one of acc-mem, host)"},
      {"link to itself", [](J& j) { j["links"][0]["to"] = "host"; }, "links[0].to", "not 'host' to itself"},
      {"link twice", [](J& j) { j["links"].push_back(j["links"][0]); }, "links[1]",
       "a second link from host to acc-mem"},
      {"link without bandwidth", [](J& j) { j["links"][0].erase("bandwidth_gbps"); }, "links[0].bandwidth_gbps",
       "missing"},
      {"bidirectional as a string", [](J& j) { j["links"][0]["bidirectional"] = "yes"; },
       "links[0].bidirectional", "expected true or false"},
      {"description not a string", [](J& j) { j["description"] = 5; }, "description",
       "expected a non-empty string"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Malformation& c = cases[i];
    SCOPED_TRACE(c.what);
    nlohmann::json j = full_file();
    c.edit(j);
    std::string path = scratch().write(fmt::format("malformed_{}.json", i), j.dump(2));
    Error e = expect_error([&] { load_platform_file(path); }, ErrorCode::kInvalidFile);
    EXPECT_THAT(e.what(), StartsWith(path + ": " + c.field + ": "));
    EXPECT_THAT(e.what(), HasSubstr(c.expected));
  }
}

TEST(PlatformFileTest, InvalidJsonIsRefused) {
  std::string path = scratch().write("broken.json", "{\"name\": \"x\",\n \"devices\": [}");
  Error e = expect_error([&] { load_platform_file(path); }, ErrorCode::kInvalidFile);
  EXPECT_THAT(e.what(), StartsWith(path + ": not valid JSON: "));
  EXPECT_THAT(e.what(), HasSubstr("line 2"));
  EXPECT_THAT(e.what(), Not(HasSubstr("json.exception")));

  std::string top = scratch().write("array.json", "[1, 2]");
  EXPECT_THAT(expect_error([&] { load_platform_file(top); }, ErrorCode::kInvalidFile).what(),
              HasSubstr("(top level): expected an object"));
}

TEST(PlatformFileTest, DuplicateKeysAreRefused) {
  std::string path = scratch().write(
      "twice.json",
      R"({"name": "t", "devices": [{"name": "a", "kind": "gpu", "peak_gflops": 1, "peak_gflops": 2, "bandwidth_gbps": 1}]})");
  Error e = expect_error([&] { load_platform_file(path); }, ErrorCode::kInvalidFile);
  EXPECT_EQ(std::string(e.what()), path + ": key 'peak_gflops' appears twice in one object");
  // The same key in two different objects is fine.
  std::string ok = scratch().write(
      "twice_ok.json",
      R"({"name": "t", "devices": [{"name": "a", "kind": "gpu", "peak_gflops": 1, "bandwidth_gbps": 1},
                                   {"name": "b", "kind": "gpu", "peak_gflops": 1, "bandwidth_gbps": 1}]})");
  EXPECT_EQ(load_platform_file(ok).devices.size(), 2u);
}

TEST(PlatformFileTest, UnreadableFilesAreIoErrors) {
  std::string missing = (scratch().path() / "no_such_platform.json").string();
  Error e = expect_error([&] { load_platform_file(missing); }, ErrorCode::kIo);
  EXPECT_THAT(e.what(), StartsWith(missing + ": cannot read platform file"));
  EXPECT_THAT(e.what(), HasSubstr("No such file"));
  Error dir = expect_error([&] { load_platform_file(scratch().path().string()); }, ErrorCode::kIo);
  EXPECT_THAT(dir.what(), HasSubstr("is a directory"));
}

// ---------------------------------------------------------------- device specs with emu:NAME

TEST(PlatformDeviceSpecTest, EmulatedEntriesParse) {
  auto devices = parse_device_spec(" emu:npu , emu:big-core_2");
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].kind, DeviceKind::kEmulated);
  EXPECT_EQ(devices[0].emulated, "npu");
  EXPECT_TRUE(devices[0].cores.empty());
  EXPECT_EQ(devices[0].name(), "emu:npu");
  EXPECT_EQ(devices[1].name(), "emu:big-core_2");

  int core = usable_cores().at(0);
  auto mixed = parse_device_spec(fmt::format("cpu:{},emu:npu", core));
  ASSERT_EQ(mixed.size(), 2u);
  EXPECT_EQ(mixed[0].kind, DeviceKind::kCpu);
  EXPECT_EQ(mixed[0].cores, std::vector<int>{core});
  EXPECT_EQ(mixed[1].name(), "emu:npu");
}

TEST(PlatformDeviceSpecTest, MalformedEmulatedEntriesAreErrors) {
  auto message = [](const std::string& spec) {
    return std::string(expect_error([&] { parse_device_spec(spec); }, ErrorCode::kUsage).what());
  };
  EXPECT_EQ(message("emu:npu,emu:npu"), "--devices 'emu:npu,emu:npu': emu:npu is listed twice");
  EXPECT_THAT(message("emu"), HasSubstr("'emu' names no device (expected emu:NAME"));
  EXPECT_THAT(message("cpu,emu:"), HasSubstr("'emu:' names no device"));
  EXPECT_THAT(message("emu:n/pu"), HasSubstr("'emu:n/pu' is not a device name"));
  EXPECT_THAT(message("emu:a:b"), HasSubstr("is not a device name"));
}

// ---------------------------------------------------------------- make_platform

TEST(MakePlatformTest, DeviceSpecAloneIsThisMachine) {
  auto cores = usable_cores();
  Platform p = make_platform(fmt::format("cpu:{}", cores[0]), "");
  EXPECT_EQ(p.name, "this machine");
  EXPECT_FALSE(p.has_emulated());
  ASSERT_EQ(p.devices.size(), 1u);
  const PlatformDevice& d = p.devices[0];
  EXPECT_EQ(d.name, fmt::format("cpu:{}", cores[0]));
  EXPECT_EQ(d.kind, DeviceKind::kCpu);
  EXPECT_EQ(d.cores, std::vector<int>{cores[0]});
  EXPECT_EQ(d.memory_space, kHostMemory);
  EXPECT_EQ(d.n_streams, 1);
  EXPECT_EQ(d.shared_resource, "host-dram");
  EXPECT_EQ(d.peak_gflops, 0) << "peaks come from calibration";
  EXPECT_EQ(d.bandwidth_gbps, 0);
  EXPECT_TRUE(d.ops.empty());
  std::string model = describe_machine().cpu_model;
  EXPECT_EQ(d.description, fmt::format("{}, cores {}", model, cores[0]));
  const dnnl_version_t* v = dnnl_version();
  EXPECT_EQ(d.signature,
            fmt::format("cpu|{}|cores=1|{}|onednn={}.{}.{}", model, cores[0], v->major, v->minor, v->patch));
  ASSERT_NE(p.resource("host-dram"), nullptr);
  EXPECT_EQ(p.resource("host-dram")->bandwidth_gbps, 0) << "0 = unknown until calibrated";
  EXPECT_TRUE(p.links.empty());
  EXPECT_EQ(p.find_device("emu:npu"), -1);
}

TEST(MakePlatformTest, UnionDeviceRecordsItsOverlaps) {
  auto cores = usable_cores();
  if (cores.size() < 2 || cores[1] != cores[0] + 1) GTEST_SKIP() << "needs two consecutive usable cores";
  std::string a = fmt::format("cpu:{}", cores[0]), b = fmt::format("cpu:{}", cores[1]);
  std::string wide = fmt::format("cpu:{}-{}", cores[0], cores[1]);
  Platform p = make_platform(a + "," + b + "," + wide, "");
  ASSERT_EQ(p.devices.size(), 3u);
  EXPECT_EQ(p.devices[0].overlaps, std::vector<std::string>{wide});
  EXPECT_EQ(p.devices[1].overlaps, std::vector<std::string>{wide});
  EXPECT_EQ(p.devices[2].overlaps, (std::vector<std::string>{a, b}));
  EXPECT_TRUE(p.has_overlaps());
  EXPECT_TRUE(p.overlapping(0, 2));
  EXPECT_TRUE(p.overlapping(2, 1));
  EXPECT_FALSE(p.overlapping(0, 1));
  EXPECT_FALSE(p.overlapping(2, 2));
  EXPECT_FALSE(make_platform(a + "," + b, "").has_overlaps());
  try {
    make_platform(a + "," + wide, "");
    ADD_FAILURE() << "a partial overlap was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
    EXPECT_THAT(e.what(), HasSubstr("devices may share cores only when one is the union"));
  }
}

TEST(MakePlatformTest, WholeMachineDevice) {
  Platform p = make_platform("cpu", "");
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].cores, usable_cores());
  EXPECT_THAT(p.devices[0].signature, HasSubstr(fmt::format("|cores={}|", usable_cores().size())));
}

TEST(MakePlatformTest, FileAloneIsEveryDeviceEmulated) {
  Platform from_file = load_platform_file(shipped("phone-soc"));
  Platform p = make_platform("", shipped("phone-soc"));
  EXPECT_EQ(p.name, "phone-soc");
  ASSERT_EQ(p.devices.size(), 3u);
  EXPECT_EQ(p.devices[0].name, "emu:big");
  EXPECT_EQ(p.devices[2].name, "emu:npu");
  EXPECT_EQ(p.signature(), from_file.signature());
}

TEST(MakePlatformTest, MixedSpecAndFile) {
  int core = usable_cores().at(0);
  Platform p = make_platform(fmt::format("cpu:{},emu:gpu", core), shipped("desktop-gpu"));
  EXPECT_EQ(p.name, "desktop-gpu");
  ASSERT_EQ(p.devices.size(), 2u);
  EXPECT_EQ(p.devices[0].name, fmt::format("cpu:{}", core));
  EXPECT_FALSE(p.devices[0].is_emulated());
  EXPECT_EQ(p.devices[1].name, "emu:gpu");
  EXPECT_TRUE(p.devices[1].is_emulated());
  EXPECT_TRUE(p.has_emulated());
  EXPECT_NE(p.link(kHostMemory, "gpu-vram"), nullptr);
  EXPECT_NE(p.link("gpu-vram", kHostMemory), nullptr);
  EXPECT_NE(p.resource("host-dram"), nullptr);

  // Only what the chosen devices use comes from the file.
  Platform cpu_only = make_platform(fmt::format("cpu:{},emu:cpu", core), shipped("desktop-gpu"));
  EXPECT_TRUE(cpu_only.links.empty());
  Platform phone = make_platform(fmt::format("emu:npu,cpu:{}", core), shipped("phone-soc"));
  ASSERT_EQ(phone.devices.size(), 2u);
  EXPECT_EQ(phone.devices[0].name, "emu:npu");
  EXPECT_NE(phone.resource("lpddr5"), nullptr);
  EXPECT_NE(phone.resource("host-dram"), nullptr);
  Platform npu_only = make_platform("emu:npu", shipped("phone-soc"));
  EXPECT_EQ(npu_only.resource("host-dram"), nullptr) << "no real device, no host DRAM to calibrate";
}

TEST(MakePlatformTest, UnknownEmulatedDeviceListsTheFilesDevices) {
  std::string file = shipped("phone-soc");
  Error e = expect_error([&] { make_platform("emu:gpu", file); }, ErrorCode::kUsage);
  EXPECT_EQ(std::string(e.what()),
            fmt::format("--devices 'emu:gpu': emu:gpu is not a device of {} (it has emu:big, emu:little, emu:npu)",
                        file));
}

TEST(MakePlatformTest, EmulatedDeviceWithoutFileIsAUsageError) {
  Error e = expect_error([] { make_platform("cpu,emu:npu", ""); }, ErrorCode::kUsage);
  EXPECT_THAT(e.what(), HasSubstr("emu:npu needs --platform FILE"));
}

TEST(MakePlatformTest, NothingAtAllIsAUsageError) {
  expect_error([] { make_platform("", ""); }, ErrorCode::kUsage);
}

TEST(MakePlatformTest, FileErrorsPassThrough) {
  expect_error([] { make_platform("emu:npu", "no_such_file.json"); }, ErrorCode::kIo);
  expect_error([] { make_platform("cpu", "no_such_file.json"); }, ErrorCode::kIo);
  expect_error([] { make_platform("emu:npu,emu:npu", shipped("phone-soc")); }, ErrorCode::kUsage);
}

// ---------------------------------------------------------------- signatures

TEST(PlatformSignatureTest, StableAndHex) {
  std::string a = load_platform_file(shipped("cpu-dsa")).signature();
  std::string b = load_platform_file(shipped("cpu-dsa")).signature();
  EXPECT_EQ(a, b);
  EXPECT_TRUE(std::regex_match(a, std::regex("[0-9a-f]{16}"))) << a;
  EXPECT_NE(a, load_platform_file(shipped("desktop-gpu")).signature());
  EXPECT_NE(load_platform_file(shipped("desktop-gpu")).signature(),
            load_platform_file(shipped("phone-soc")).signature());
}

TEST(PlatformSignatureTest, DeviceOrderDoesNotMatter) {
  auto cores = usable_cores();
  if (cores.size() < 2) GTEST_SKIP() << "needs two usable cores";
  EXPECT_EQ(make_platform(fmt::format("cpu:{},cpu:{}", cores[0], cores[1]), "").signature(),
            make_platform(fmt::format("cpu:{},cpu:{}", cores[1], cores[0]), "").signature());
  EXPECT_NE(make_platform(fmt::format("cpu:{},cpu:{}", cores[0], cores[1]), "").signature(),
            make_platform(fmt::format("cpu:{}", cores[0]), "").signature());
}

TEST(PlatformSignatureTest, SensitiveToWhatPlansDependOn) {
  using J = nlohmann::json;
  auto signature_of = [](const J& j, const std::string& name) {
    return load_platform_file(scratch().write(name, j.dump())).signature();
  };
  std::string base = signature_of(full_file(), "sig_base.json");
  EXPECT_EQ(base, signature_of(full_file(), "sig_same.json")) << "the path does not count";
  std::vector<std::pair<std::string, std::function<void(J&)>>> edits = {
      {"peak", [](J& j) { j["devices"][1]["peak_gflops"] = 1001; }},
      {"streams", [](J& j) { j["devices"][1]["streams"] = 3; }},
      {"ops", [](J& j) { j["devices"][1]["ops"] = {"Conv"}; }},
      {"device-name", [](J& j) { j["devices"][1]["name"] = "acc2"; }},
      {"memory-space", [](J& j) {
         j["devices"][1]["memory_space"] = "other";
         j["links"][0]["to"] = "other";
       }},
      {"link-latency", [](J& j) { j["links"][0]["latency_us"] = 6; }},
      {"platform-name", [](J& j) { j["name"] = "full2"; }},
      {"extra-device", [](J& j) {
         j["devices"].push_back(minimal_file()["devices"][0]);
         j["devices"].back()["name"] = "extra";
       }},
  };
  for (const auto& [what, edit] : edits) {
    J j = full_file();
    edit(j);
    EXPECT_NE(signature_of(j, "sig_" + what + ".json"), base) << what;
  }
  // Descriptions are for humans.
  J described = full_file();
  described["devices"][0]["description"] = "another text";
  EXPECT_EQ(signature_of(described, "sig_description.json"), base);
}

TEST(PlatformSignatureTest, CalibratedPeaksDoNotCount) {
  Platform p = make_platform(fmt::format("cpu:{}", usable_cores().at(0)), "");
  std::string before = p.signature();
  p.devices[0].peak_gflops = 123;
  p.devices[0].bandwidth_gbps = 45;
  p.devices[0].launch_overhead_us = 6;
  p.resources[0].bandwidth_gbps = 20;
  EXPECT_EQ(p.signature(), before);
  Link measured{kHostMemory, "x", 1, 2, "measured"};
  p.links.push_back(measured);
  std::string with_link = p.signature();
  EXPECT_NE(with_link, before) << "a link's existence counts";
  p.links.back().latency_us = 7;
  EXPECT_EQ(p.signature(), with_link) << "a measured link's numbers do not";
  p.devices[0].signature += "|onednn=9.9.9";
  EXPECT_NE(p.signature(), with_link);
}

// ---------------------------------------------------------------- lookups

TEST(PlatformLookupTest, FindDeviceLinkResource) {
  Platform p = load_platform_file(scratch().write("lookup.json", full_file().dump()));
  EXPECT_EQ(p.find_device("emu:cpu"), 0);
  EXPECT_EQ(p.find_device("emu:acc"), 1);
  EXPECT_EQ(p.find_device("acc"), -1);
  const Link* l = p.link(kHostMemory, "acc-mem");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->from_space, kHostMemory);
  EXPECT_EQ(l->to_space, "acc-mem");
  EXPECT_DOUBLE_EQ(l->bandwidth_gbps, 16);
  EXPECT_EQ(p.link(kHostMemory, kHostMemory), nullptr);
  EXPECT_EQ(p.link(kHostMemory, "elsewhere"), nullptr);
  ASSERT_NE(p.resource("dram"), nullptr);
  EXPECT_EQ(p.resource("dram")->name, "dram");
  EXPECT_EQ(p.resource("sram"), nullptr);
}

TEST(PlatformLookupTest, SupportsListsOpsOrEverything) {
  PlatformDevice all;
  EXPECT_TRUE(all.supports(node_of("Conv")));
  EXPECT_TRUE(all.supports(node_of("Gather")));
  PlatformDevice npu;
  npu.ops = {"Conv", "Gemm"};
  EXPECT_TRUE(npu.supports(node_of("Conv")));
  EXPECT_TRUE(npu.supports(node_of("Gemm")));
  EXPECT_FALSE(npu.supports(node_of("Relu")));
  EXPECT_FALSE(npu.supports(node_of("conv"))) << "op types are case-sensitive";
}

}  // namespace
}  // namespace hetsched
