#include "profile/interference.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace hetsched {

double process_wait_ns() {
  std::error_code ec;
  std::filesystem::directory_iterator tasks("/proc/self/task", ec);
  if (ec) return -1;
  double total = 0;
  bool any = false;
  for (const auto& task : tasks) {
    // "<on-CPU ns> <waiting ns> <timeslices>"; a thread that ended since the
    // listing has no file any more.
    std::ifstream in(task.path() / "schedstat");
    double on_cpu = 0, waiting = 0;
    if (in >> on_cpu >> waiting) {
      total += waiting;
      any = true;
    }
  }
  return any ? total : -1;
}

double waited_share(double before_ns, double wall_us, int cores) {
  if (before_ns < 0 || wall_us <= 0 || cores < 1) return 0;
  double now_ns = process_wait_ns();
  if (now_ns < 0) return 0;
  return std::max(0.0, (now_ns - before_ns) / 1e3 - kWakeUpWaitUs) / (wall_us * cores);
}

}  // namespace hetsched
