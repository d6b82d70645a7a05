// Abstract task graphs in the JSON format scheduling papers use
// (`hetsched schedule-dag`):
//   {"devices": ["p1", "p2"],
//    "tasks": [{"id": "1", "cost": [14, 16]}, ...],
//    "edges": [{"from": "1", "to": "2", "comm": 18}, ...]}
// cost[i] is the task's time on devices[i] (null: that device cannot run
// it); comm is the delay when the two tasks run on different devices, 0 on
// the same one (the papers' model: receiver_pays_communication false).
#pragma once

#include <string>
#include <vector>

#include "sched/list_scheduling.h"

namespace hetsched {

struct NamedTaskGraph {
  std::vector<std::string> devices;
  std::vector<std::string> task_ids;  // [task]
  TaskGraph graph;
};

// Parses and checks `text`; anything malformed (not JSON, a missing or
// mistyped field, a cost list of the wrong length, a negative number, an
// unknown or repeated id, a self-edge, a cycle) is ErrorCode::kInvalidFile:
// one line naming `source`, the field and what was expected.
NamedTaskGraph parse_task_graph(const std::string& text, const std::string& source);
// Reads the file first (unreadable: ErrorCode::kIo).
NamedTaskGraph read_task_graph_file(const std::string& path);

}  // namespace hetsched
