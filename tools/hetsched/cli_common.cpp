#include "cli_common.h"

#include "graph/specialize.h"
#include "report/text_table.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace hetsched::cli {

Graph load_static_model(const ModelOptions& options, const std::string& command) {
  Graph graph = load_model(options.model, options.load_options());
  if (!has_free_input_dims(graph)) return graph;
  std::vector<std::string> free;
  for (ValueId id : graph.inputs) {
    const Value& v = graph.values[id];
    std::vector<std::string> dims;
    bool any = !v.has_shape;
    for (size_t d = 0; d < v.shape.size(); ++d) {
      bool named = d < v.dim_params.size() && !v.dim_params[d].empty();
      any = any || v.shape[d] < 0;
      dims.push_back(v.shape[d] >= 0 ? std::to_string(v.shape[d]) : named ? v.dim_params[d] : "?");
    }
    if (any) free.push_back(fmt::format("{}: [{}]", v.name, v.has_shape ? fmt::format("{}", fmt::join(dims, ", ")) : "?"));
  }
  throw Error(ErrorCode::kUsage,
              fmt::format("{}: free input dims ({}): `hetsched {}` works on fixed shapes; give them with --shape "
                          "NAME=DIMS (`hetsched run` compiles each shape at its first run)",
                          options.model, fmt::join(free, ", "), command));
}

Platform make_cli_platform(const ModelOptions& options, const Graph& graph) {
  SessionOptions o = options.session_options();
  Platform platform = make_platform(o.devices, o.platform);
  std::vector<Pin> pins;
  for (const auto& text : o.pins) pins.push_back(parse_pin(text));
  apply_pins(platform, graph, pins);
  return platform;
}

std::shared_ptr<const CostModel> make_cli_cost_model(Platform& platform, const std::string& db_path) {
  std::vector<std::string> warnings;
  auto cost = open_cost_model(platform, db_path, &warnings);
  for (const auto& w : warnings) fmt::print(stderr, "hetsched: warning: {}\n", w);
  return cost;
}

std::string tensor_difference(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.dtype() != want.dtype())
    return fmt::format("dtype {} != expected {}", dtype_name(got.dtype()), dtype_name(want.dtype()));
  if (got.shape() != want.shape())
    return fmt::format("shape {} != expected {}", shape_to_string(got.shape()), shape_to_string(want.shape()));
  bool is_float = got.dtype() == DType::kFloat32 || got.dtype() == DType::kFloat64 ||
                  got.dtype() == DType::kFloat16 || got.dtype() == DType::kBFloat16;
  // A 16-bit result is right within one unit in its last place: the
  // expected value was itself rounded to 16 bits (ONNX 1.12's test data
  // truncate to bfloat16 where the engine rounds to nearest even).
  if (got.dtype() == DType::kFloat16) rtol = std::max(rtol, 1.0 / 1024);
  if (got.dtype() == DType::kBFloat16) rtol = std::max(rtol, 1.0 / 128);
  if (!is_float) {
    auto a = got.to_int64_vector(), b = want.to_int64_vector();
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i]) return fmt::format("element {}: {} != expected {}", i, a[i], b[i]);
    return "";
  }
  auto a = got.to_double_vector(), b = want.to_double_vector();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::isinf(a[i]) && a[i] == b[i]) continue;
    if (!(std::fabs(a[i] - b[i]) <= atol + rtol * std::fabs(b[i])))
      return fmt::format("element {}: {} != expected {}", i, a[i], b[i]);
  }
  return "";
}

void print_table(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right,
                 const std::string& indent) {
  fmt::print("{}", format_table(rows, right, indent));
}

namespace {

std::string format_duration(double seconds) {
  if (seconds < 60) return fmt::format("{:.0f}s", seconds);
  return fmt::format("{}m{:02}s", static_cast<int>(seconds) / 60, static_cast<int>(seconds) % 60);
}

}  // namespace

ProgressBar::ProgressBar() : enabled_(isatty(fileno(stderr)) != 0), start_(std::chrono::steady_clock::now()) {}

void ProgressBar::update(int done, int total, const std::string& what) {
  if (!enabled_ || total <= 0) return;
  constexpr int kWidth = 30;
  int filled = done * kWidth / total;
  std::string eta = "ETA --";
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (done > 0) eta = "ETA " + format_duration(elapsed * (total - done) / done);
  fmt::print(stderr, "\r\033[K[{}{}] {}/{} {:3d}% {}  {}", std::string(static_cast<size_t>(filled), '#'),
             std::string(static_cast<size_t>(kWidth - filled), '.'), done, total, done * 100 / total, eta, what);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::clear() {
  if (!drawn_) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace hetsched::cli
