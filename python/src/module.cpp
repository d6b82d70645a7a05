// The Python module `hetsched` (built as hetsched._hetsched; the package's
// __init__.py re-exports it). See docs/python.md for the API.
//
// Memory: numpy inputs that are C-contiguous, aligned, in native byte order
// and of the graph's dtype are handed to the engine without a copy
// (Tensor::wrap; the engine only reads graph inputs); others are copied once.
// Outputs are the engine's own buffers, handed to numpy with a capsule that
// keeps them alive, so they outlive the Session and are never copied — but
// for an output that would alias a caller's input or the model's weights
// (the reference kernels pass such values through), which is cloned.
//
// Threads: the GIL is released while the engine works (loading and planning,
// run, compare, profile); progress callbacks take it back to call Python.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "hetsched/compare.h"
#include "hetsched/cost_model.h"
#include "hetsched/device.h"
#include "hetsched/error.h"
#include "hetsched/explain.h"
#include "hetsched/plan.h"
#include "hetsched/platform.h"
#include "hetsched/profile.h"
#include "hetsched/quantize.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"
#include "hetsched/zoo.h"

namespace py = pybind11;

namespace hetsched::python {
namespace {

// ------------------------------------------------------------------ errors

// hetsched.Error and its ValueError-compatible subclasses, created at import.
struct ErrorClasses {
  py::object base;
  py::object usage;
  py::object invalid_input;
};
ErrorClasses& error_classes() {
  static ErrorClasses* classes = new ErrorClasses();  // never destroyed: outlives the interpreter's teardown
  return *classes;
}

// "invalid-input" -> "invalid_input": the C++ names, spelt as Python likes.
std::string code_name(ErrorCode code) {
  std::string name = error_code_name(code);
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

void raise_error(const Error& e) {
  const ErrorClasses& classes = error_classes();
  py::object cls = e.code() == ErrorCode::kUsage           ? classes.usage
                   : e.code() == ErrorCode::kInvalidInput ? classes.invalid_input
                                                          : classes.base;
  py::object instance = cls(py::str(e.what()));
  instance.attr("code") = code_name(e.code());
  PyErr_SetObject(cls.ptr(), instance.ptr());
}

py::object make_error_class(py::module_& m, const char* name, const char* doc, py::handle bases) {
  std::string qualified = std::string("hetsched.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (!cls) throw py::error_already_set();
  py::object out = py::reinterpret_steal<py::object>(cls);
  m.attr(name) = out;
  return out;
}

// ------------------------------------------------------------------ tensors

// The engine's dtype of a numpy dtype; kUndefined for one it has no match for.
DType dtype_of_numpy(const py::dtype& dtype) {
  int size = static_cast<int>(dtype.itemsize());
  switch (dtype.kind()) {
    case 'f':
      return size == 4   ? DType::kFloat32
             : size == 8 ? DType::kFloat64
             : size == 2 ? DType::kFloat16
                         : DType::kUndefined;
    case 'i':
      return size == 1   ? DType::kInt8
             : size == 2 ? DType::kInt16
             : size == 4 ? DType::kInt32
             : size == 8 ? DType::kInt64
                         : DType::kUndefined;
    case 'u':
      return size == 1   ? DType::kUInt8
             : size == 2 ? DType::kUInt16
             : size == 4 ? DType::kUInt32
             : size == 8 ? DType::kUInt64
                         : DType::kUndefined;
    case 'b': return size == 1 ? DType::kBool : DType::kUndefined;
    default: return DType::kUndefined;
  }
}

py::dtype numpy_dtype(DType dtype) {
  if (dtype == DType::kUndefined) throw Error(ErrorCode::kRuntime, "a tensor of undefined dtype has no numpy dtype");
  if (dtype == DType::kBFloat16)
    throw Error(ErrorCode::kUnsupported, "numpy has no bfloat16: a bfloat16 input or output needs a Cast to float32 in the model");
  return py::dtype(std::string(dtype_name(dtype)));  // the engine's names are numpy's
}

// Keeps a Tensor's storage alive for as long as numpy needs it.
py::capsule tensor_owner(const Tensor& tensor) {
  return py::capsule(new Tensor(tensor), [](void* p) { delete static_cast<Tensor*>(p); });
}

// A numpy array over the tensor's own buffer: no copy; the array's base is a
// capsule holding the storage.
py::array to_numpy(const Tensor& tensor) {
  std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  // Writable: the tensors handed over (fresh outputs, random inputs) are
  // read by nothing else.
  void* data = const_cast<void*>(tensor.raw());
  return py::array(numpy_dtype(tensor.dtype()), shape, data, tensor_owner(tensor));
}

// An input for the engine. `keep` receives the numpy array the tensor may
// point into; it must outlive every use of the tensor. `wrapped` says
// whether the tensor wraps numpy's memory (no copy).
Tensor from_numpy(const std::string& name, const py::handle& value, std::vector<py::object>& keep, bool* wrapped) {
  py::module_ numpy = py::module_::import("numpy");
  py::array array = numpy.attr("asarray")(value);
  py::dtype dtype = array.dtype();
  DType engine_dtype = dtype_of_numpy(dtype);
  if (engine_dtype == DType::kUndefined)
    throw Error(ErrorCode::kInvalidInput,
                fmt::format("input '{}': numpy dtype {} has no hetsched dtype", name,
                            py::str(dtype).cast<std::string>()));
  Shape shape(array.shape(), array.shape() + array.ndim());
  py::object flags = array.attr("flags");
  bool native = dtype.attr("isnative").cast<bool>();
  bool in_place = native && flags.attr("c_contiguous").cast<bool>() && flags.attr("aligned").cast<bool>() &&
                  array.nbytes() > 0;
  *wrapped = in_place;
  if (in_place) {
    keep.push_back(array);
    // The engine never writes graph inputs: a read-only array is safe too.
    return Tensor::wrap(engine_dtype, std::move(shape), const_cast<void*>(array.data()));
  }
  // One copy, straight into the tensor, whatever the source's strides or
  // byte order.
  Tensor tensor(engine_dtype, shape);
  if (tensor.nbytes() > 0) {
    std::vector<py::ssize_t> dims(shape.begin(), shape.end());
    py::array destination(numpy_dtype(engine_dtype), dims, tensor.raw(), tensor_owner(tensor));
    numpy.attr("copyto")(destination, array, py::arg("casting") = "equiv");
  }
  return tensor;
}

bool overlaps(const Tensor& a, const void* begin, size_t bytes) {
  auto* p = static_cast<const std::byte*>(a.raw());
  auto* q = static_cast<const std::byte*>(begin);
  return a.nbytes() > 0 && bytes > 0 && p < q + bytes && q < p + a.nbytes();
}

// ------------------------------------------------------------------ helpers

std::vector<std::string> to_strings(const py::object& value, const char* what) {
  if (value.is_none()) return {};
  if (py::isinstance<py::str>(value)) {
    // "a,b" as a convenience, like the CLI's comma-separated lists.
    std::vector<std::string> out;
    std::string text = value.cast<std::string>();
    size_t start = 0;
    while (start <= text.size()) {
      size_t comma = text.find(',', start);
      if (comma == std::string::npos) comma = text.size();
      if (comma > start) out.push_back(text.substr(start, comma - start));
      start = comma + 1;
    }
    return out;
  }
  try {
    return value.cast<std::vector<std::string>>();
  } catch (const py::cast_error&) {
    throw Error(ErrorCode::kUsage, fmt::format("{}: expected a list of strings", what));
  }
}

py::object number_or_none(double value) { return value >= 0 ? py::object(py::float_(value)) : py::object(py::none()); }

py::object json_to_python(const std::string& text) { return py::module_::import("json").attr("loads")(text); }

// A Python progress callable as the engine's progress function: it takes
// the GIL to call Python; what it raises propagates (and stops the work).
std::function<void(int, int, const std::string&)> progress_function(const py::object& callback) {
  if (callback.is_none()) return {};
  if (!PyCallable_Check(callback.ptr()))
    throw Error(ErrorCode::kUsage, "progress: expected a callable(done, total, what)");
  // Held in a shared_ptr whose deleter takes the GIL: the std::function may
  // be destroyed where the GIL is released.
  auto held = std::shared_ptr<py::object>(new py::object(callback), [](py::object* p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
  return [held](int done, int total, const std::string& what) {
    py::gil_scoped_acquire gil;
    (*held)(done, total, what);
  };
}

py::dict device_dict(const PlatformDevice& d) {
  py::dict out;
  out["name"] = d.name;
  out["kind"] = d.is_emulated() ? "emulated" : d.kind == DeviceKind::kCuda ? "cuda" : "cpu";
  out["description"] = d.description;
  out["cores"] = d.cores;
  if (d.is_emulated()) out["model_kind"] = d.model_kind;
  out["memory_space"] = d.memory_space;
  out["n_streams"] = d.n_streams;
  out["ops"] = d.ops;
  out["shared_resource"] = d.shared_resource;
  return out;
}

// ------------------------------------------------------------------ Session

class PySession {
 public:
  PySession(const std::string& model, const py::object& devices, const std::string& scheduler,
            const py::object& platform, const py::object& plan, const py::object& db, const py::object& shapes,
            const py::object& params, bool reference, const py::object& pins, const py::object& cuda_graph,
            const std::string& mode, int concurrency, int max_shapes, bool remeasure, const std::string& precision)
      : model_(model) {
    if (!platform.is_none()) options_.platform = platform.cast<std::string>();
    // Like the CLI: a platform file alone means its devices only.
    if (!devices.is_none()) options_.devices = devices.cast<std::string>();
    else options_.devices = options_.platform.empty() ? "cpu" : "";
    options_.scheduler = scheduler;
    options_.reference = reference;
    if (!plan.is_none()) options_.plan = plan.cast<std::string>();
    if (!db.is_none()) options_.profile_db = db.cast<std::string>();
    options_.pins = to_strings(pins, "pins");
    if (mode != "latency" && mode != "throughput")
      throw Error(ErrorCode::kUsage, fmt::format("mode: expected 'latency' or 'throughput', got '{}'", mode));
    options_.mode = mode == "throughput" ? RunMode::kThroughput : RunMode::kLatency;
    options_.concurrency = concurrency;
    options_.max_shapes = max_shapes;
    options_.remeasure = remeasure;
    options_.precision = precision;
    if (!cuda_graph.is_none()) {
      std::string mode = py::str(cuda_graph).cast<std::string>();
      if (mode != "on" && mode != "off")
        throw Error(ErrorCode::kUsage, fmt::format("cuda_graph: expected 'on', 'off' or None, got '{}'", mode));
      options_.cuda_graph = mode == "on" ? CudaGraphMode::kOn : CudaGraphMode::kOff;
    }
    if (!shapes.is_none()) {
      if (!py::isinstance<py::dict>(shapes))
        throw Error(ErrorCode::kUsage, "shapes: expected a dict name -> tuple of dims");
      for (auto [name, dims] : shapes.cast<py::dict>()) {
        std::string input = py::str(name).cast<std::string>();
        Shape shape;
        try {
          shape = dims.cast<Shape>();
        } catch (const py::cast_error&) {
          throw Error(ErrorCode::kUsage, fmt::format("shapes['{}']: expected a tuple of dims", input));
        }
        for (int64_t d : shape)
          if (d < 0) throw Error(ErrorCode::kUsage, fmt::format("shapes['{}']: dim {} is negative", input, d));
        load_.input_shapes[input] = shape;
      }
    }
    if (!params.is_none()) {
      if (!py::isinstance<py::dict>(params)) throw Error(ErrorCode::kUsage, "params: expected a dict name -> value");
      for (auto [key, value] : params.cast<py::dict>())
        load_.zoo_params[py::str(key).cast<std::string>()] = py::str(value).cast<std::string>();
    }
    py::gil_scoped_release release;
    session_ = std::make_unique<Session>(Session::load(model_, load_, options_));
  }

  py::dict run(const py::dict& inputs) {
    TensorMap feeds;
    std::vector<py::object> keep;  // numpy arrays the wrapped tensors point into
    std::vector<std::pair<const void*, size_t>> wrapped_memory;
    for (auto [key, value] : inputs) {
      if (!py::isinstance<py::str>(key)) throw Error(ErrorCode::kUsage, "run: input names must be strings");
      std::string name = key.cast<std::string>();
      bool wrapped = false;
      Tensor t = from_numpy(name, value, keep, &wrapped);
      if (wrapped) wrapped_memory.emplace_back(t.raw(), t.nbytes());
      feeds.emplace(name, std::move(t));
    }
    TensorMap outputs;
    {
      py::gil_scoped_release release;
      outputs = session_->run(feeds);
    }
    py::dict out;
    for (auto& [name, tensor] : outputs) {
      if (aliases_foreign_memory(tensor, wrapped_memory)) tensor = tensor.clone();
      out[py::str(name)] = to_numpy(tensor);
    }
    return out;
  }

  py::object plan() const {
    const Plan* p = session_->plan();
    if (!p) return py::none();
    return json_to_python(plan_to_json(*p, session_->plan_graph()));
  }

  py::object plan_json() const {
    const Plan* p = session_->plan();
    if (!p) return py::none();
    return py::str(plan_to_json(*p, session_->plan_graph()));
  }

  std::string explain() const {
    const Plan* plan = session_->plan();
    if (!plan)
      throw Error(ErrorCode::kUsage,
                  fmt::format("explain: the session on {} runs the reference kernels, without a plan", model_));
    Platform platform = session_->platform();
    py::gil_scoped_release release;  // calibrating a device takes a second
    auto cost = open_cost_model(platform, options_.profile_db, nullptr);
    return explain_plan(*plan, session_->plan_graph(), platform, *cost, model_);
  }

  py::dict summary() const {
    ExecutionSummary s = session_->summary();
    py::dict out;
    out["device"] = s.device;
    out["n_nodes"] = s.n_nodes;
    out["n_steps"] = s.n_steps;
    out["n_fused_nodes"] = s.n_fused_nodes;
    out["n_reorders"] = s.n_reorders;
    out["n_fallbacks"] = s.n_fallbacks;
    out["fallbacks"] = s.fallbacks;
    out["float_chains"] = s.float_chains;
    out["arena_bytes"] = s.arena_bytes;
    out["weight_bytes"] = s.weight_bytes;
    out["note"] = s.note;
    out["scheduler"] = s.scheduler;
    out["n_lanes"] = s.n_lanes;
    out["n_copies"] = s.n_copies;
    out["n_events"] = s.n_events;
    out["emulated"] = s.emulated;
    out["n_emulation_overruns"] = s.n_emulation_overruns;
    out["choice"] = s.choice;
    out["cuda_graph"] = s.cuda_graph;
    out["flow"] = s.flow;
    out["workers"] = s.workers;
    py::list flows;
    for (const FlowOutcome& f : s.flows) {
      py::dict d;
      d["name"] = f.name;
      d["workers"] = f.workers;
      d["predicted_per_s"] = f.predicted_per_s;
      d["measured_per_s"] = f.measured_per_s;
      d["measured_p50_ms"] = f.measured_p50_ms;
      d["chosen"] = f.chosen;
      flows.append(d);
    }
    out["flows"] = flows;
    py::dict shapes;
    shapes["free_dims"] = s.shapes.free_dims;
    shapes["kept"] = s.shapes.kept;
    shapes["hits"] = s.shapes.n_hits;
    shapes["compiles"] = s.shapes.n_compiles;
    shapes["evictions"] = s.shapes.n_evictions;
    shapes["compile_ms"] = s.shapes.compile_ms;
    out["shapes"] = shapes;
    return out;
  }

  py::list loads() const {
    py::list out;
    for (const WorkerLoad& load : session_->loads()) {
      py::dict d;
      d["device"] = load.device;
      d["requests"] = load.n_requests;
      d["failed"] = load.n_failed;
      d["busy_s"] = load.busy_s;
      out.append(d);
    }
    return out;
  }

  py::list values(bool inputs) const {
    const Graph& g = session_->graph();
    py::list out;
    for (ValueId id : inputs ? g.inputs : g.outputs) {
      const Value& v = g.values[id];
      py::object shape = py::none();
      if (v.has_shape) {
        py::list dims;
        for (int64_t d : v.shape) dims.append(d >= 0 ? py::object(py::int_(d)) : py::object(py::none()));
        shape = py::tuple(dims);
      }
      out.append(py::make_tuple(v.name, dtype_name(v.dtype), shape));
    }
    return out;
  }

  py::dict random_inputs(uint64_t seed) const {
    TensorMap inputs = session_->random_inputs(seed);
    py::dict out;
    for (const auto& [name, tensor] : inputs) out[py::str(name)] = to_numpy(tensor);
    return out;
  }

  // The graph compare() and profile() work on: with free dims, the one
  // compiled for the most recently run input shapes, as the session runs it.
  const Graph& graph_with_shapes(const char* what) const {
    ShapeSpecializations shapes = session_->summary().shapes;
    if (shapes.free_dims && shapes.kept.empty())
      throw Error(ErrorCode::kUsage, fmt::format("{}: the model has free dims and has not run yet: run it once at "
                                                 "the input shapes to {}, or load it with shapes=",
                                                 what, what));
    return session_->plan_graph();
  }

  py::dict compare(const py::object& schedulers, bool measure, int rounds, int warmups, uint64_t seed,
                   const py::object& progress) const {
    if (options_.reference)
      throw Error(ErrorCode::kUsage, "compare: reference=True does not apply: it compares plans");
    CompareOptions options;
    options.schedulers = to_strings(schedulers, "schedulers");
    options.measure = measure;
    options.rounds = rounds;
    options.warmups = warmups;
    options.seed = seed;
    options.progress = progress_function(progress);
    Platform platform;
    Comparison c;
    {
      py::gil_scoped_release release;
      platform = make_platform(options_.devices, options_.platform);
      auto cost = open_cost_model(platform, options_.profile_db, nullptr);
      c = compare_schedulers(graph_with_shapes("compare"), platform, cost, options_.profile_db, options);
    }
    // The keys of `hetsched compare --json`.
    auto add_times = [](py::dict& row, double predicted_ms, const Measurement& m) {
      row["predicted_ms"] = number_or_none(predicted_ms);
      row["measured_p50_ms"] = number_or_none(m.p50_ms);
      row["measured_min_ms"] = number_or_none(m.min_ms);
      row["measured_max_ms"] = number_or_none(m.max_ms);
    };
    py::list sequential;
    for (const auto& b : c.sequential) {
      py::dict row;
      row["device"] = b.device;
      add_times(row, b.predicted_ms, b.measured);
      sequential.append(row);
    }
    py::list rows;
    for (const SchedulerOutcome& s : c.schedulers) {
      py::dict row;
      row["name"] = s.name;
      add_times(row, s.predicted_ms, s.measured);
      row["plan_ms"] = s.plan_ms;
      if (!s.error.empty()) row["error"] = s.error;
      rows.append(row);
    }
    py::dict out;
    out["model"] = model_;
    out["platform"] = platform.name;
    out["measured"] = measure;
    out["emulated"] = platform.has_emulated();
    out["lower_bound_ms"] = c.lower_bound_ms;
    out["critical_path_ms"] = c.critical_path_ms;
    out["capacity_ms"] = c.capacity_ms;
    out["combined_ms"] = c.combined_ms;
    out["best_sequential_ms"] = c.best_sequential_ms;
    out["best_sequential_device"] = c.best_sequential_device;
    out["sequential"] = sequential;
    out["schedulers"] = rows;
    return out;
  }

  py::dict profile(const py::object& repeats, const py::object& warmups, bool force, const py::object& max_wait,
                   const py::object& progress) {
    if (options_.reference)
      throw Error(ErrorCode::kUsage,
                  "profile: reference=True does not apply: profiling times the devices' own kernels");
    ProfileOptions options;
    if (!repeats.is_none()) options.repeats = repeats.cast<int>();
    if (!warmups.is_none()) options.warmups = warmups.cast<int>();
    options.force = force;
    if (!max_wait.is_none()) options.max_wait = max_wait.cast<double>();
    options.progress = progress_function(progress);
    ModelProfile result;
    {
      py::gil_scoped_release release;
      Platform platform = make_platform(options_.devices, options_.platform);
      result = profile_model(graph_with_shapes("profile"), platform, options_.profile_db, std::move(options));
    }
    py::list calibration;
    for (const DeviceCalibration& c : result.calibration) {
      py::dict row;
      row["name"] = c.name;
      row["peak_gflops"] = c.peak_gflops;
      row["bandwidth_gbps"] = c.bandwidth_gbps;
      row["launch_overhead_us"] = c.launch_overhead_us;
      row["from_database"] = c.from_database;
      calibration.append(row);
    }
    py::list devices;
    int measured = 0, reused = 0;
    for (const ProfileReport::Device& d : result.report.devices) {
      py::dict row;
      row["name"] = d.name;
      row["skipped"] = d.skipped;
      row["units_measured"] = d.n_measured;
      row["units_reused"] = d.n_reused;
      row["corun_measured"] = d.n_corun_measured;
      row["corun_reused"] = d.n_corun_reused;
      row["seconds"] = d.seconds;
      row["runs_timed"] = d.n_timed_runs;
      row["runs_disturbed"] = d.n_disturbed_runs;
      row["stored_under_load"] = d.stored_under_load;
      measured += d.n_measured;
      reused += d.n_reused;
      devices.append(row);
    }
    py::dict out;
    out["db_path"] = result.db_path;
    out["warnings"] = result.warnings;
    out["calibration"] = calibration;
    out["calibration_seconds"] = result.calibration_seconds;
    out["devices"] = devices;
    out["units_measured"] = measured;
    out["units_reused"] = reused;
    out["links_measured"] = result.report.n_links_measured;
    out["links_in_context"] = result.report.n_links_in_context;
    out["seconds"] = result.report.seconds;
    return out;
  }

  const std::string& model() const { return model_; }

  std::string repr() const {
    ExecutionSummary s = session_->summary();
    return fmt::format("<hetsched.Session {} on {} ({})>", model_, s.device,
                       s.scheduler.empty() ? std::string("reference kernels") : "scheduler " + s.scheduler);
  }

 private:
  // An output sharing memory with a caller's wrapped input or the model's
  // weights must not be handed to numpy as its own.
  bool aliases_foreign_memory(const Tensor& output,
                              const std::vector<std::pair<const void*, size_t>>& wrapped_memory) const {
    for (const auto& [begin, bytes] : wrapped_memory)
      if (overlaps(output, begin, bytes)) return true;
    // With free dims, the graph that ran may hold constants of its own.
    for (const Graph* g : {&session_->graph(), &session_->plan_graph()})
      for (const Value& v : g->values)
        if (v.initializer && overlaps(output, v.initializer->raw(), v.initializer->nbytes())) return true;
    return false;
  }

  std::string model_;
  LoadOptions load_;
  SessionOptions options_;
  std::unique_ptr<Session> session_;
};

// ------------------------------------------------------------------ module functions

py::list devices(const py::object& spec, const py::object& platform_file) {
  std::string file = platform_file.is_none() ? "" : platform_file.cast<std::string>();
  std::string devices_spec;
  if (!spec.is_none()) {
    devices_spec = spec.cast<std::string>();
  } else if (file.empty()) {
    // Every usable core as its own device: the finest split this machine offers.
    for (int core : describe_machine().usable_cores)
      devices_spec += (devices_spec.empty() ? "" : ",") + fmt::format("cpu:{}", core);
  }
  Platform platform = make_platform(devices_spec, file);
  py::list out;
  for (const PlatformDevice& d : platform.devices) out.append(device_dict(d));
  return out;
}

py::dict machine() {
  MachineInfo m = describe_machine();
  py::list caches;
  for (const auto& c : m.caches) {
    py::dict row;
    row["level"] = c.level;
    row["size_bytes"] = c.size_bytes;
    row["sharing"] = c.n_sharing_cores;
    caches.append(row);
  }
  py::dict out;
  out["cpu_model"] = m.cpu_model;
  out["logical_cores"] = m.n_logical_cores;
  out["physical_cores"] = m.n_physical_cores;
  out["numa_nodes"] = m.n_numa_nodes;
  out["cores"] = m.usable_cores;
  out["caches"] = caches;
  out["gpus"] = m.gpus;
  out["gpu_note"] = m.gpu_note;
  out["openmp_waits"] = m.openmp_waits;
  return out;
}

py::list zoo_models() {
  py::list out;
  for (const auto& m : zoo::zoo_models()) {
    py::dict row;
    row["name"] = "zoo:" + m.name;
    row["description"] = m.description;
    row["params"] = m.params;
    out.append(row);
  }
  return out;
}

py::bytes export_model(const std::string& model, const py::object& path, const py::object& shapes,
                       const py::object& params) {
  LoadOptions options;
  if (!shapes.is_none())
    for (auto [name, dims] : shapes.cast<py::dict>())
      options.input_shapes[py::str(name).cast<std::string>()] = dims.cast<Shape>();
  if (!params.is_none())
    for (auto [key, value] : params.cast<py::dict>())
      options.zoo_params[py::str(key).cast<std::string>()] = py::str(value).cast<std::string>();
  std::string bytes;
  {
    py::gil_scoped_release release;
    bytes = model_to_onnx_bytes(model, options);
  }
  if (!path.is_none()) {
    std::string file = py::str(path).cast<std::string>();
    FILE* out = std::fopen(file.c_str(), "wb");
    if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: cannot open for writing", file));
    bool ok = std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size();
    ok = std::fclose(out) == 0 && ok;
    if (!ok) throw Error(ErrorCode::kIo, fmt::format("{}: write failed", file));
  }
  return py::bytes(bytes);
}

// hetsched.quantize: `hetsched quantize` (quantize.h) with calibration
// inputs given as dicts of numpy arrays, one per run.
py::dict quantize(const std::string& model, const std::string& output, const py::object& calibration,
                  bool per_channel, int random, const std::string& devices, bool dynamic, const std::string& method,
                  double percentile) {
  if (dynamic && !calibration.is_none())
    throw Error(ErrorCode::kUsage, "calibration: dynamic quantization takes each run's range from its own data");
  QuantizeOptions options;
  options.per_channel = per_channel;
  options.dynamic = dynamic;
  options.n_random = random;
  options.devices = devices;
  options.method = method;
  options.percentile = percentile;
  std::vector<py::object> keep;  // numpy arrays the tensors point into
  if (!calibration.is_none()) {
    for (const py::handle& run : calibration) {
      TensorMap feeds;
      for (auto [key, value] : run.cast<py::dict>()) {
        bool wrapped = false;
        std::string name = py::str(key).cast<std::string>();
        feeds.emplace(name, from_numpy(name, value, keep, &wrapped));
      }
      options.calibration.push_back(std::move(feeds));
    }
  }
  QuantizeReport report;
  {
    py::gil_scoped_release release;
    report = quantize_model(model, output, options);
  }
  py::dict out;
  out["quantized_convs"] = report.n_quantized_convs;
  out["quantized_matmuls"] = report.n_quantized_matmuls;
  out["activations"] = report.n_activations;
  out["calibration_runs"] = report.n_calibration_runs;
  out["random_calibration"] = report.random_calibration;
  out["skipped"] = report.skipped;
  return out;
}

}  // namespace
}  // namespace hetsched::python

PYBIND11_MODULE(_hetsched, m) {
  using namespace hetsched::python;
  using hetsched::Error;
  m.doc() =
      "hetsched: run ONNX models across heterogeneous devices (CPU core groups running oneDNN kernels, emulated "
      "accelerators from platform files), plan with a scheduler, predict with a simulator.\n\n"
      "    import hetsched\n"
      "    s = hetsched.Session('zoo:squeezenet1_0', devices='cpu:0,cpu:1', scheduler='auto')\n"
      "    outputs = s.run({'input': array})\n";
#ifdef HETSCHED_VERSION
  m.attr("__version__") = HETSCHED_VERSION;
#endif

  ErrorClasses& errors = error_classes();
  errors.base = make_error_class(
      m, "Error",
      "A failure hetsched reports: its message is the engine's, unchanged, and `code` names its kind "
      "('usage', 'io', 'invalid_model', 'unsupported', 'invalid_input', 'invalid_file', 'runtime', 'resource').",
      PyExc_RuntimeError);
  errors.usage = make_error_class(m, "UsageError", "A bad argument (code 'usage'); also a ValueError.",
                                  py::make_tuple(errors.base, py::handle(PyExc_ValueError)));
  errors.invalid_input =
      make_error_class(m, "InvalidInputError",
                       "An input of the wrong name, dtype or shape (code 'invalid_input'); also a ValueError.",
                       py::make_tuple(errors.base, py::handle(PyExc_ValueError)));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      raise_error(e);
    }
  });

  py::class_<PySession>(m, "Session",
                        "A model loaded, checked and planned over devices, ready to run.\n\n"
                        "Loading parses the model (an .onnx path or 'zoo:NAME'), runs ONNX's checker and shape "
                        "inference, optimises the graph and makes the plan: the trivial one on one device, a plan "
                        "file's, or the scheduler's (which opens the profile database and calibrates the devices). "
                        "Failures raise hetsched.Error with the engine's message.")
      .def(py::init<const std::string&, const py::object&, const std::string&, const py::object&, const py::object&,
                    const py::object&, const py::object&, const py::object&, bool, const py::object&,
                    const py::object&, const std::string&, int, int, bool, const std::string&>(),
           py::arg("model"), py::arg("devices") = py::none(), py::arg("scheduler") = "sequential",
           py::arg("platform") = py::none(), py::arg("plan") = py::none(), py::arg("db") = py::none(),
           py::arg("shapes") = py::none(), py::arg("params") = py::none(), py::arg("reference") = false,
           py::arg("pins") = py::none(), py::arg("cuda_graph") = py::none(), py::arg("mode") = "latency",
           py::arg("concurrency") = 0, py::arg("max_shapes") = 8, py::arg("remeasure") = false,
           py::arg("precision") = "float32",
           "Loads `model` and plans it.\n\n"
           "model: an .onnx file or 'zoo:NAME' (see zoo_models()).\n"
           "devices: a device spec such as 'cpu', 'cpu:0-1', 'cpu:0,cpu:1', 'cpu:0,emu:npu'. Default: 'cpu', or "
           "with a platform file, the file's devices.\n"
           "scheduler: a scheduler's name (see schedulers()), e.g. 'sequential', 'heft', 'auto'.\n"
           "platform: a platform file describing emulated devices (platforms/*.json).\n"
           "plan: a plan file (from `hetsched plan`), used instead of the scheduler.\n"
           "db: the profile database (default: $XDG_CACHE_HOME/hetsched/profile.db).\n"
           "shapes: fixes free input dims ahead of time, e.g. {'input': (1, 3, 224, 224)}. Without it, a model "
           "with free dims is compiled for each new set of input shapes at its first run; summary['shapes'] "
           "says which are kept.\n"
           "params: zoo model parameters, e.g. {'layers': 2}.\n"
           "reference: run every node with the plain C++ reference kernels (the ground truth) instead.\n"
           "pins: 'NODE_OR_OP=DEVICE' strings placing nodes on devices, where this build supports it.\n"
           "cuda_graph: 'on' or 'off' (None: on when every lane of the plan is on one GPU): run a plan on one GPU "
           "as one captured CUDA Graph, or step by step; summary['cuda_graph'] says which ran.\n"
           "mode: 'latency' (one request at a time over the devices) or 'throughput': many requests at once, "
           "each on a device of its own, the flow chosen by measurement (docs/throughput.md); run() may then be "
           "called from several threads and serves them side by side. summary['flow'] and summary['workers'] "
           "say what was chosen.\n"
           "concurrency: with mode='throughput', the requests callers keep in flight (0: one per worker).\n"
           "max_shapes: with free dims, the sets of input shapes kept compiled; a new one past it drops the "
           "least recently run.\n"
           "remeasure: with scheduler='auto' on real devices, measure its candidates again instead of running "
           "the choice the profile database keeps for this graph, devices and options.\n"
           "precision: 'float32', or 'bfloat16': the CPU devices compute float32 convolutions and matrix products in "
           "bfloat16 where "
           "the CPU has bfloat16 instructions (faster, less exact; opt-in).")
      .def("run", &PySession::run, py::arg("inputs"),
           "Runs the model once on a dict name -> numpy array and returns a dict name -> numpy array.\n\n"
           "Every graph input must be given with the graph's dtype and shape (free dims match any size, the "
           "same wherever the model names them alike; the first run of new shapes compiles the graph for them); "
           "a wrong, missing or extra input raises hetsched.InvalidInputError naming it. C-contiguous, "
           "aligned arrays are read in place; others are copied once. The outputs are the engine's own "
           "buffers (no copy) and stay valid after the Session is gone. The GIL is released while it runs.")
      .def_property_readonly("loads", &PySession::loads,
                             "Per worker of the flow (one in latency mode): a dict device, requests, failed and "
                             "busy_s (time running requests) since the session was made.")
      .def_property_readonly("plan", &PySession::plan,
                             "The plan the session runs, as a dict (the plan file's JSON, see docs/plans.md): "
                             "devices, lanes of steps, placements; None on reference kernels.")
      .def_property_readonly("plan_json", &PySession::plan_json,
                             "The plan as JSON text (what `hetsched plan` writes); None on reference kernels.")
      .def("explain", &PySession::explain,
           "What the plan runs where, and why: the report `hetsched explain` prints, as text (the cost "
           "model's estimates come from the profile database).")
      .def_property_readonly("summary", &PySession::summary,
                             "How the session runs, as a dict: device, node, step, fusion, reorder and fallback "
                             "counts, memory, scheduler, lanes, copies, events, emulation and auto's choice.")
      .def_property_readonly(
          "inputs", [](const PySession& s) { return s.values(true); },
          "The graph inputs as a list of (name, dtype, shape); unknown dims are None, an unknown rank a None shape.")
      .def_property_readonly(
          "outputs", [](const PySession& s) { return s.values(false); },
          "The graph outputs as a list of (name, dtype, shape); unknown dims are None, an unknown rank a None shape.")
      .def_property_readonly("model", &PySession::model, "The model as given: an .onnx path or 'zoo:NAME'.")
      .def("random_inputs", &PySession::random_inputs, py::arg("seed") = 0,
           "Deterministic random inputs for every graph input (free dims set to 1): floats uniform in [-1, 1), "
           "integers in [0, 10), bools alternating. A dict name -> numpy array.")
      .def("compare", &PySession::compare, py::arg("schedulers") = py::none(), py::arg("measure") = false,
           py::arg("rounds") = 10, py::arg("warmups") = 2, py::arg("seed") = 0, py::arg("progress") = py::none(),
           "Every scheduler's plan (or those named) for the session's model and devices, predicted by the "
           "simulator with one cost model and with measure=True also run in `rounds` interleaved rounds after "
           "`warmups`, against each device alone and a lower bound. Returns a dict with the keys of "
           "`hetsched compare --json`: lower_bound_ms, best_sequential_ms, best_sequential_device, "
           "sequential [{device, predicted_ms, measured_*}], schedulers [{name, predicted_ms, "
           "measured_p50_ms, measured_min_ms, measured_max_ms, plan_ms, error?}]; numbers not measured are None. "
           "progress: callable(done, total, what).")
      .def("profile", &PySession::profile, py::arg("repeats") = py::none(), py::arg("warmups") = py::none(),
           py::arg("force") = false, py::arg("max_wait") = py::none(), py::arg("progress") = py::none(),
           "Times every launch unit of the model on the session's real devices into the profile database "
           "(what `hetsched profile` does): calibration, fusion units, nodes, every scheduler's units, co-run "
           "times and the hand-over between devices; emulated devices are skipped. Measurements already "
           "stored are reused unless force=True. A run during which another process kept the cores max_wait "
           "(default 0.05) of the time or more is repeated, and entries taken under load are measured again next "
           "time (1 keeps everything). Returns a summary dict: db_path, calibration, devices "
           "[{name, units_measured, units_reused, ...}], units_measured, units_reused, links_measured, seconds. "
           "The session's own plan does not change. progress: callable(done, total, what).")
      .def("__repr__", &PySession::repr, "'<hetsched.Session MODEL on DEVICE (scheduler NAME)>'.");
  // Shown as hetsched.Session, the name users import it by.
  m.attr("Session").attr("__module__") = "hetsched";

  m.def("devices", &devices, py::arg("spec") = py::none(), py::arg("platform") = py::none(),
        "The devices of a device spec and/or platform file as dicts (name, kind, description, cores, "
        "memory_space, n_streams, ops, ...). Default: every usable core of this machine as its own device "
        "('cpu:0', 'cpu:1', ...).");
  m.def("machine", &machine,
        "This machine's CPU model, cores, NUMA nodes, caches and GPUs (what `hetsched devices --json` shows).");
  m.def("schedulers", [] { return hetsched::scheduler_names(); },
        "The registered schedulers: a dict name -> one-line summary.");
  m.def("zoo_models", &zoo_models,
        "The built-in models: a list of dicts {name: 'zoo:NAME', description, params (accepted parameters "
        "with their defaults)}.");
  m.def("quantize", &quantize, py::arg("model"), py::arg("output"), py::arg("calibration") = py::none(),
        py::arg("per_channel") = false, py::arg("random") = 8, py::arg("devices") = "cpu", py::arg("dynamic") = false,
        py::arg("method") = "minmax", py::arg("percentile") = 99.999,
        "Quantizes the float32 model's Convs to int8 in the QDQ format (with dynamic=True its MatMuls, in ONNX "
        "Runtime's dynamic format, without calibration) and writes `output` (what `hetsched quantize` does). "
        "calibration: a list of input dicts, one per run (default: `random` random inputs); method: 'minmax' "
        "(each activation's whole range), 'percentile' (the central `percentile` % of its values) or 'entropy' (its "
        "range clipped where the KL divergence between its values and their quantized form is least). Returns "
        "{'quantized_convs', 'quantized_matmuls', 'activations', 'calibration_runs', 'random_calibration', "
        "'skipped'}.");
  m.def("export_model", &export_model, py::arg("model"), py::arg("path") = py::none(), py::arg("shapes") = py::none(),
        py::arg("params") = py::none(),
        "The model as given (a zoo model built, a file checked) as serialized ONNX, without hetsched's own "
        "optimisations (what `hetsched export` writes); also written to `path` when given.");
}
