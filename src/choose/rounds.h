// Interleaved measurement rounds: what choosing a plan and choosing a flow
// by measurement (hetsched/choose.h) share.
#pragma once

#include <functional>
#include <vector>

namespace hetsched {

// Each round measures every candidate once, in an order rotated from round
// to round (a candidate does not always run after the same other one); the
// figure is a time, lower being better (a run's, or a request's share of a
// closed loop). After `rounds` rounds, more (`rounds` at a time, `max_rounds`
// in all) while the best candidate's median ratio to the baseline is within
// `undecided` of 1 - `min_gain`.
struct Rounds {
  std::vector<std::vector<double>> times;  // per candidate, per round
  int baseline = -1;  // the fastest one-device candidate by median time
  int best = -1;      // the fastest other candidate by median time; -1 when none
  int n_rounds() const { return times.empty() ? 0 : static_cast<int>(times[0].size()); }
  // best / baseline, round by round (empty without a best).
  std::vector<double> ratios() const;
};

// `one_device[c]`: candidate c is a baseline (one device alone); at least
// one must be. `measure(c)` runs candidate c once for the round and returns
// its time.
Rounds measure_in_rounds(const std::vector<bool>& one_device, const std::function<double(size_t)>& measure,
                         int rounds, int max_rounds, double min_gain, double undecided);

// percentile(values, 50) (throughput.h).
double median(const std::vector<double>& values);

}  // namespace hetsched
