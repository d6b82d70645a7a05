// Platforms: the devices work can be placed on and the links between their
// memory spaces.
//
// A Platform is what schedulers, cost models, the simulator and the executor
// agree on. It is built from
//   - a device spec alone (`--devices cpu:0,cpu:1`): real CPU core groups of
//     this machine, all in the "host" memory space;
//   - a platform file alone (`--platform platforms/phone-soc.json`): every
//     device of the file, each an emulated device named "emu:NAME" (see
//     docs/platforms.md for the format);
//   - both: the spec picks devices; `cpu...` entries are real, `emu:NAME`
//     entries are the file's device NAME, emulated.
// The memory space "host" is the machine's main memory in every platform. A
// device whose memory space is another one (a discrete GPU's, a DSA's) needs
// a Copy step over a Link to read a value produced elsewhere.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hetsched/device.h"
#include "hetsched/graph.h"

namespace hetsched {

constexpr const char* kHostMemory = "host";

struct PlatformDevice {
  std::string name;  // "cpu:0-1" (real), "emu:npu" (emulated): what plans and --devices call it
  DeviceKind kind = DeviceKind::kCpu;
  std::vector<int> cores;  // kCpu: the OS processors it runs on
  // kEmulated: what the device models ("cpu", "gpu", "npu", "dsa"); the
  // executor runs it with reference kernels held to modeled durations.
  std::string model_kind;
  std::string memory_space = kHostMemory;
  int n_streams = 1;  // CPU core groups have one; a GPU or an emulated device may have more
  // Roofline parameters: achievable FLOP/s and memory bandwidth of the device
  // alone, and the fixed cost of one launch. 0 = not known yet (real devices
  // get them from micro-benchmarks, see profile/calibrate.h).
  double peak_gflops = 0;
  double bandwidth_gbps = 0;
  double launch_overhead_us = 0;
  // Op types the device runs; empty = every op (an NPU lists Conv, Gemm...).
  std::vector<std::string> ops;
  // The number formats its arithmetic units compute in (an emulated device's
  // platform file says; empty = every format, as a CPU): "float32",
  // "float16", "bfloat16", "int8". A node runs on it when its
  // NodeCost::precision is "" or listed, and a float node also when any
  // float format is: real NPUs and TPU-like DSAs run float32 models in
  // their float16 or bfloat16 units (peak_gflops is that rate). A device
  // listing only "int8" runs quantized work alone.
  std::vector<std::string> precisions;
  // Achievable int8 operations per second (multiply and add count as two),
  // in billions; 0 = peak_gflops.
  double int8_peak_gops = 0;
  // Devices naming the same resource share its bandwidth when they run at
  // once (two core groups of one socket share its DRAM); see
  // Platform::resources. Empty: shares nothing.
  std::string shared_resource;
  // On-chip memory (a DSA's scratchpad; for a real CPU core group the L2
  // caches its cores cover), 0 when none. The roofline cost model keeps the
  // values between a launch's kernels there when they all fit.
  int64_t onchip_bytes = 0;
  // What a real CPU device computes float32 convolutions and matrix
  // products (Conv, MatMul, Gemm) in: "float32", or "bfloat16"
  // (set_precision): inputs and weights rounded to bfloat16, products
  // accumulated in float32. Part of `signature`.
  std::string precision = "float32";
  std::string description;   // one line for humans
  // Stable identity for stored profiles: for a real CPU device the CPU model,
  // its cores and the oneDNN version; for an emulated one its model
  // parameters. Equal signatures mean interchangeable measurements.
  std::string signature;

  // The devices of the platform sharing cores with this one (by name): a
  // union device ("cpu:0-1" over "cpu:0" and "cpu:1") and the devices it is
  // the union of overlap each other. Plans never run launches on
  // overlapping devices at once: build_plan orders them with events and
  // validate_plan refuses a plan that does not.
  std::vector<std::string> overlaps;

  // Nodes the user pinned to another device (apply_pins): node name -> the
  // pin, e.g. "Conv=cpu:0". The device does not run them.
  std::map<std::string, std::string> pinned_elsewhere;
  // A CUDA GPU: nodes of the graph its kernels decline (apply_pins): node
  // name -> why ("not float32"). The device does not run them.
  std::map<std::string, std::string> declined;

  bool is_emulated() const { return kind == DeviceKind::kEmulated; }
  // `node`'s NodeCost::precision is one the device computes in (precisions).
  bool computes(const Node& node) const;
  // The node's FLOPs in units of peak_gflops: int8 work counts
  // peak_gflops / int8_peak_gops per operation, so that a roofline divides
  // every node's work by one peak.
  double peak_equivalent_flops(const Node& node) const;
  // Op type in `ops` (or `ops` empty), in a precision it computes in, not
  // pinned to another device and not declined.
  bool supports(const Node& node) const;
  bool supports_all(const Graph& graph) const;  // supports() every node: it can run the graph alone
  // supports() every node not pinned to another device: it can run the
  // graph with the pinned nodes on their own devices (what one-device
  // schedulers need).
  bool supports_all_unpinned(const Graph& graph) const;
  // Why it does not run `node` ("it runs only Conv, Gemm", "pinned to cpu:0
  // by Conv=cpu:0"); "" when it does.
  std::string why_not(const Node& node) const;
  // The first node of `graph` it does not run, for errors: "cuda:0 does not
  // run Gather 'g' (no CUDA kernel for Gather)"; "" when it runs them all.
  // With `pinned_ok`, a node pinned to another device does not count.
  std::string first_refusal(const Graph& graph, bool pinned_ok = false) const;
};

// A user's placement override, `--pin NODE_OR_OP=DEVICE`: the node of that
// name, or every node of that op type, runs on DEVICE. A node name wins over
// an op type when both name a node.
struct Pin {
  std::string node_or_op;
  std::string device;
  std::string text() const { return node_or_op + "=" + device; }
};

// Transfers from one memory space to another take latency + bytes / bandwidth.
struct Link {
  std::string from_space, to_space;
  double latency_us = 0;
  double bandwidth_gbps = 0;
  std::string source;  // "file", "measured", "default"
};

struct SharedResource {
  std::string name;
  double bandwidth_gbps = 0;  // what all devices sharing it get together
};

struct Platform {
  std::string name;  // "this machine" or the file's name
  std::vector<PlatformDevice> devices;
  std::vector<Link> links;
  std::vector<SharedResource> resources;
  // The pins applied (apply_pins): node name -> the pin placing it.
  std::map<std::string, Pin> pinned;

  int find_device(const std::string& device_name) const;  // -1 when absent
  // Devices a and b (indices) share cores (PlatformDevice::overlaps); a
  // device does not overlap itself.
  bool overlapping(int a, int b) const;
  bool has_overlaps() const;  // some device overlaps another
  // The link between two memory spaces; nullptr when there is none (a value
  // cannot move that way). Not used within one space.
  const Link* link(const std::string& from_space, const std::string& to_space) const;
  const SharedResource* resource(const std::string& resource_name) const;
  bool has_emulated() const;
  // Every device's first_refusal, "; "-joined: what an error saying that no
  // device runs the whole graph names.
  std::string refusals(const Graph& graph, bool pinned_ok = false) const;
  // Hash (hex) of what a plan depends on: device names, kinds, signatures,
  // memory spaces, stream counts, supported ops and links. Measured
  // peaks are excluded: they change with every calibration.
  std::string signature() const;
};

// Makes every real CPU device of `platform` compute in `precision`
// ("float32" or "bfloat16"; PlatformDevice::precision), its signature
// saying so. "bfloat16" on a CPU without native bfloat16 instructions
// (AVX512-BF16 or AMX) keeps float32, which the returned warning says
// (empty otherwise); another name is ErrorCode::kUsage.
std::string set_precision(Platform& platform, const std::string& precision);

// Reads and checks a platform file; an unreadable file is ErrorCode::kIo, a
// malformed one ErrorCode::kInvalidFile naming the file and field.
Platform load_platform_file(const std::string& path);

// The platform for a device spec and/or a platform file (either may be
// empty, not both): see the top of this file. Unknown devices are
// ErrorCode::kUsage.
Platform make_platform(const std::string& device_spec, const std::string& platform_file);

// A warning when a real CPU device holds every one of `usable_cores` (the
// machine's: MachineInfo::usable_cores) beside a CUDA GPU: the CPU device
// pins its threads to all of its cores, and the host threads that drive the
// GPU's streams then take cores from its kernels. "" otherwise.
std::string cpu_beside_gpu_warning(const Platform& platform, const std::vector<int>& usable_cores);

// A warning when the platform has a real CPU device of several cores and
// this process's libgomp waits as by default (neither OMP_WAIT_POLICY nor
// GOMP_SPINCOUNT set when it was loaded; see prefer_active_openmp_waits in
// device.h): plans
// measured side by side, as a Session's measured check of "auto" does, then
// find that device slower than it is. "" otherwise.
std::string openmp_waits_warning(const Platform& platform);

// Parses "NODE_OR_OP=DEVICE"; ErrorCode::kUsage when malformed.
Pin parse_pin(const std::string& text);

// Makes every scheduler honour the pins: each pinned node is taken from the
// other devices (PlatformDevice::pinned_elsewhere), so the pinned device is
// the only one that runs it, and recorded in Platform::pinned (plans then
// give "pinned by ..." as the placement's reason). First, each CUDA GPU's
// PlatformDevice::declined gets the nodes of `graph` its kernels decline, so
// that schedulers keep them off it (with or without pins). ErrorCode::kUsage, naming
// the pin, when its device is not on the platform or does not run the
// node's op, when it names no node or op type of `graph`, or when two pins
// send one node to different devices with the same precedence.
void apply_pins(Platform& platform, const Graph& graph, const std::vector<Pin>& pins);

}  // namespace hetsched
