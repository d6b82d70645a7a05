// Interleaved measurement rounds (see rounds.h).
#include "choose/rounds.h"

#include <algorithm>
#include <cmath>

#include "hetsched/throughput.h"

namespace hetsched {

double median(const std::vector<double>& values) { return percentile(values, 50); }

std::vector<double> Rounds::ratios() const {
  std::vector<double> r;
  if (best < 0) return r;
  for (int i = 0; i < n_rounds(); ++i)
    r.push_back(times[static_cast<size_t>(best)][static_cast<size_t>(i)] /
                times[static_cast<size_t>(baseline)][static_cast<size_t>(i)]);
  return r;
}

namespace {

// The fastest candidate by median time among those with one_device == `one`;
// -1 when there is none.
int fastest(const std::vector<bool>& one_device, const std::vector<std::vector<double>>& times, bool one) {
  int best = -1;
  for (size_t c = 0; c < times.size(); ++c)
    if (one_device[c] == one && (best < 0 || median(times[c]) < median(times[static_cast<size_t>(best)])))
      best = static_cast<int>(c);
  return best;
}

}  // namespace

Rounds measure_in_rounds(const std::vector<bool>& one_device, const std::function<double(size_t)>& measure,
                         int rounds, int max_rounds, double min_gain, double undecided) {
  size_t n = one_device.size();
  Rounds r;
  r.times.resize(n);
  auto run_rounds = [&](int count) {
    for (int k = 0; k < count; ++k) {
      size_t round = static_cast<size_t>(r.n_rounds());
      for (size_t i = 0; i < n; ++i) {
        size_t c = (i + round) % n;  // rotated: each candidate follows each other one in turn
        r.times[c].push_back(measure(c));
      }
    }
    r.baseline = fastest(one_device, r.times, true);
    r.best = fastest(one_device, r.times, false);
  };
  run_rounds(rounds);
  while (r.best >= 0 && r.n_rounds() < max_rounds && std::abs(median(r.ratios()) - (1 - min_gain)) < undecided)
    run_rounds(std::min(rounds, max_rounds - r.n_rounds()));
  return r;
}

}  // namespace hetsched
