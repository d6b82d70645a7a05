// Noticing other processes on the cores while the profiler times launches.
//
// A profile taken while a browser or a compiler holds a core records times
// that are wrong for every later plan (squeezenet1_0 on cpu:0-1 stored at
// 50 ms where it runs in 3.8). The kernel counts, per thread, the time it was
// ready to run but waited for a CPU (the run delay of
// /proc/self/task/*/schedstat). On a quiet machine the profiler's pinned
// threads wait almost never; with another process on one of their cores
// they wait for a large share of each run. The profiler times each run's
// share of waiting and keeps quiet runs (profiler.h).
#pragma once

namespace hetsched {

// A run is quiet when its threads waited less than a share of its cores'
// time (wall time x cores): ProfileOptions::max_wait, 5% by default;
// measured quiet runs wait under 1%.

// Nanoseconds this process's threads have waited for a CPU, summed over its
// threads now alive (threads that ended are not counted: measure a
// difference across work whose threads outlive it); -1 where the kernel does
// not report it (no schedstat), and then every run counts as quiet.
double process_wait_ns();

// The share of `cores` x `wall_us` that the process's threads waited during
// a run beyond kWakeUpWaitUs, from process_wait_ns() before (`before_ns`)
// and now; 0 where not reported.
double waited_share(double before_ns, double wall_us, int cores);

// Waiting a run may do on a quiet machine: the executor's threads wake each
// other at every hand-over, and a woken thread waits a few microseconds for
// its core. On a quiet 2-core VM a one-node graph's 45 µs run waited 3-12 µs
// (a share of 10-50%, which counted as another process before), squeezenet's
// 4-5 ms runs on both cores 150-250 µs. Another process holding a core takes
// it for a time slice, milliseconds: far above this.
constexpr double kWakeUpWaitUs = 100;

}  // namespace hetsched
