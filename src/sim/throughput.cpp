// A flow's steady state (see hetsched/throughput.h, predict_flow).
#include <algorithm>
#include <functional>

#include "hetsched/throughput.h"
#include "plan/plan_builder.h"
#include "sim/simulator.h"

namespace hetsched {

FlowPrediction predict_flow(const Graph& graph, const RequestFlow& flow, int in_flight) {
  FlowPrediction p;
  const Platform& platform = *flow.platform;
  SimOptions quiet;
  quiet.trace = false;
  std::vector<double> rates;  // per worker, requests per ms while all are busy
  for (const FlowWorker& worker : flow.workers) {
    double alone_us = simulate(*worker.plan, graph, platform, *flow.cost, quiet).makespan_us;
    // Beside the others, each unit as the profile's co-run pass measured it
    // (every device of the shared resource running the graph at once: what
    // a side-by-side flow does); one worker runs alone.
    double corun_us = 0;
    for (const LaunchAssignment& launch : plan_launches(*worker.plan, graph, platform)) {
      const PlatformDevice& device = platform.devices[static_cast<size_t>(launch.device)];
      double us = flow.cost->launch(graph, launch.nodes, device).us;
      ++p.n_units;
      if (!flow.one_device())
        if (std::optional<double> corun = flow.cost->corun_us(graph, launch.nodes, device)) {
          us = std::max(us, *corun);
          ++p.n_corun_measured;
        }
      corun_us += us;
    }
    // The simulator's makespan holds what a plan adds beyond its launches;
    // keep it beside the co-run slowdown.
    corun_us = std::max(corun_us, alone_us);
    p.alone_ms.push_back(alone_us / 1000);
    p.corun_ms.push_back(corun_us / 1000);
    rates.push_back(1000 / corun_us);
  }
  size_t busy = in_flight <= 0 ? rates.size() : std::min(rates.size(), static_cast<size_t>(in_flight));
  std::sort(rates.begin(), rates.end(), std::greater<>());
  for (size_t w = 0; w < busy; ++w) p.per_s += rates[w] * 1000;
  int requests = in_flight <= 0 ? static_cast<int>(rates.size()) : in_flight;
  p.latency_ms = p.per_s > 0 ? 1000.0 * requests / p.per_s : 0;
  return p;
}

}  // namespace hetsched
