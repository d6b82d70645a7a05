#include "cli_common.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace hetsched::cli {

Platform make_cli_platform(const ModelOptions& options) {
  SessionOptions o = options.session_options();
  return make_platform(o.devices, o.platform);
}

std::shared_ptr<const CostModel> make_cli_cost_model(Platform& platform, const std::string& db_path) {
  std::vector<std::string> warnings;
  auto cost = open_cost_model(platform, db_path, &warnings);
  for (const auto& w : warnings) fmt::print(stderr, "hetsched: warning: {}\n", w);
  return cost;
}

void print_table(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right,
                 const std::string& indent) {
  std::vector<size_t> widths;
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (widths.size() <= c) widths.push_back(0);
      widths[c] = std::max(widths[c], row[c].size());
    }
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t c = 0; c < row.size(); ++c) {
      bool last = c + 1 == row.size();
      bool align_right = c < right.size() && right[c];
      if (align_right)
        line += fmt::format("{:>{}}", row[c], widths[c]);
      else
        line += last ? row[c] : fmt::format("{:<{}}", row[c], widths[c]);
      if (!last) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    fmt::print("{}\n", line);
  }
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
