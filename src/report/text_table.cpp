// Plain-text tables (see report/text_table.h).
#include "report/text_table.h"

#include <algorithm>

#include <fmt/format.h>

namespace hetsched {

std::string format_table(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right,
                         const std::string& indent) {
  std::vector<size_t> widths;
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (widths.size() <= c) widths.push_back(0);
      widths[c] = std::max(widths[c], row[c].size());
    }
  std::string text;
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
    text += line;
    text += '\n';
  }
  return text;
}

std::string devices_used(const Plan& plan) {
  std::vector<std::string> used;
  for (const Lane& lane : plan.lanes) {
    const std::string& name = plan.devices[lane.device];
    if (std::find(used.begin(), used.end(), name) == used.end()) used.push_back(name);
  }
  return fmt::format("{} device{} ({})", used.size(), used.size() == 1 ? "" : "s", fmt::join(used, ", "));
}

}  // namespace hetsched
