// Plain-text tables and plan summaries shared by the CLI and the reports
// built as text (explain).
#pragma once

#include <string>
#include <vector>

#include "hetsched/plan.h"

namespace hetsched {

// Rows of cells, the first row the header: each line starts with `indent`,
// columns are padded to their widest cell, the columns marked in `right` are
// aligned right, trailing blanks are cut; every line ends in a newline.
std::string format_table(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right,
                         const std::string& indent = "  ");

// "2 devices (cpu:0, cpu:1)": the devices the plan's lanes use, in lane order.
std::string devices_used(const Plan& plan);

}  // namespace hetsched
