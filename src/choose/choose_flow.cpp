// Choosing a throughput flow by measurement (see hetsched/choose.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "hetsched/choose.h"
#include "hetsched/error.h"
#include "runtime/request_pool.h"

namespace hetsched {

namespace {

using Clock = std::chrono::steady_clock;

double median(const std::vector<double>& v) { return percentile(v, 50); }

// The flow's workers, each warmed up with `warmups` untimed runs and one
// more timed: its expected time per request, which the pool's dispatch
// starts from.
std::shared_ptr<RequestPool> make_pool(const Graph& graph, const RequestFlow& flow,
                                       const std::vector<TensorMap>& inputs, int warmups, CudaGraphMode cuda_graph) {
  std::vector<RequestPool::Worker> workers;
  for (const FlowWorker& w : flow.workers) {
    auto executor = std::make_shared<Executor>(graph, *w.plan, *flow.platform, flow.cost, cuda_graph);
    double ms = 0;
    for (int i = 0; i <= warmups; ++i) {
      auto start = Clock::now();
      executor->run(inputs[static_cast<size_t>(i) % inputs.size()]);
      ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    }
    workers.push_back({w.device, std::move(executor), flow.platform, ms});
  }
  return std::make_shared<RequestPool>(std::move(workers));
}

// Every worker of the pool rewarmed at once, as they will serve.
void rewarm_all(RequestPool& pool, const TensorMap& inputs) {
  std::vector<std::thread> threads;
  for (const RequestPool::Worker& w : pool.workers())
    threads.emplace_back([&w, &inputs] { rewarm(*w.executor, inputs); });
  for (std::thread& t : threads) t.join();
}

// The fastest flow by median rate among those with one worker (`one`) or
// several; -1 when there is none.
int fastest(const std::vector<RequestFlow>& flows, const std::vector<std::vector<double>>& rates, bool one) {
  int best = -1;
  for (size_t f = 0; f < flows.size(); ++f)
    if (flows[f].one_device() == one && (best < 0 || median(rates[f]) > median(rates[static_cast<size_t>(best)])))
      best = static_cast<int>(f);
  return best;
}

}  // namespace

MeasuredFlowChoice choose_flow_by_measurement(const Graph& graph, const std::vector<RequestFlow>& flows,
                                              const std::vector<TensorMap>& inputs,
                                              const FlowChoiceOptions& options) {
  if (options.rounds < 1 || options.max_rounds < options.rounds || options.warmups < 0 ||
      options.min_requests < 1 || options.in_flight < 0 || inputs.empty())
    throw Error(ErrorCode::kUsage,
                fmt::format("choosing a flow: expected 1 <= rounds <= max_rounds, warmups >= 0, min_requests >= 1, "
                            "in_flight >= 0 and inputs, got rounds {}, max_rounds {}, warmups {}, min_requests {}, "
                            "in_flight {}, {} inputs",
                            options.rounds, options.max_rounds, options.warmups, options.min_requests,
                            options.in_flight, inputs.size()));
  if (std::none_of(flows.begin(), flows.end(), [](const RequestFlow& f) { return f.one_device(); }))
    throw Error(ErrorCode::kUsage, "choosing a flow: no flow runs on one device alone");

  size_t n = flows.size();
  std::vector<std::shared_ptr<RequestPool>> pools;
  std::vector<int> n_requests;  // per flow and round: enough for the window
  for (const RequestFlow& flow : flows) {
    pools.push_back(make_pool(graph, flow, inputs, options.warmups, options.cuda_graph));
    double per_ms = 0;  // the workers' rates alone
    for (const RequestPool::Worker& w : pools.back()->workers()) per_ms += 1 / std::max(w.expected_ms, 1e-3);
    int workers = static_cast<int>(flow.workers.size());
    n_requests.push_back(
        std::max(options.min_requests * workers, static_cast<int>(std::ceil(per_ms * options.window_ms))));
  }
  std::vector<std::vector<double>> rates(n);
  std::vector<std::vector<double>> latencies(n);
  auto run_rounds = [&](int count) {
    for (int r = 0; r < count; ++r) {
      size_t round = rates[0].size();
      for (size_t k = 0; k < n; ++k) {
        size_t f = (k + round) % n;
        RequestPool& pool = *pools[f];
        rewarm_all(pool, inputs[0]);
        int in_flight = options.in_flight > 0 ? options.in_flight : static_cast<int>(flows[f].workers.size());
        LoadResult load = run_closed_loop(n_requests[f], in_flight,
                                          [&](int i) { pool.run(inputs[static_cast<size_t>(i) % inputs.size()]); });
        rates[f].push_back(load.per_s);
        latencies[f].insert(latencies[f].end(), load.latencies_ms.begin(), load.latencies_ms.end());
      }
    }
  };
  auto ratios = [&](int flow, int baseline) {
    std::vector<double> r;
    for (size_t i = 0; i < rates[0].size(); ++i)
      r.push_back(rates[static_cast<size_t>(baseline)][i] / rates[static_cast<size_t>(flow)][i]);
    return r;
  };

  run_rounds(options.rounds);
  int baseline = fastest(flows, rates, true);
  int best = fastest(flows, rates, false);
  while (best >= 0 && static_cast<int>(rates[0].size()) < options.max_rounds &&
         std::abs(median(ratios(best, baseline)) - (1 - options.min_gain)) < options.undecided) {
    run_rounds(std::min(options.rounds, options.max_rounds - static_cast<int>(rates[0].size())));
    baseline = fastest(flows, rates, true);
    best = fastest(flows, rates, false);
  }

  MeasuredFlowChoice choice;
  choice.rounds = static_cast<int>(rates[0].size());
  for (size_t f = 0; f < n; ++f) {
    choice.per_s.push_back(median(rates[f]));
    choice.p50_ms.push_back(median(latencies[f]));
  }
  const RequestFlow& base = flows[static_cast<size_t>(baseline)];
  choice.chosen = static_cast<size_t>(baseline);
  double base_rate = choice.per_s[choice.chosen];
  if (best < 0) {
    choice.reason = fmt::format("{} measured fastest ({:.1f} requests/s, {} interleaved rounds)", base.name,
                                base_rate, choice.rounds);
  } else {
    std::vector<double> r = ratios(best, baseline);
    int wins = static_cast<int>(std::count_if(r.begin(), r.end(), [](double x) { return x < 1; }));
    choice.ratio = median(r);
    const RequestFlow& flow = flows[static_cast<size_t>(best)];
    bool keep = plan_beats_baseline(r, options.min_gain);
    if (keep) choice.chosen = static_cast<size_t>(best);
    choice.reason = fmt::format(
        "{} measured {:.1f} requests/s, {} {:.1f} ({} interleaved rounds; {:.2f}x, faster in {} of {}): {}", flow.name,
        choice.per_s[static_cast<size_t>(best)], base.name, base_rate, choice.rounds, 1 / choice.ratio, wins,
        choice.rounds,
        keep ? fmt::format("keeping {}", flow.name)
             : fmt::format("running {} (a flow must serve {:.0f}% more, in two rounds of three)", base.name,
                           100 * options.min_gain / (1 - options.min_gain)));
  }
  choice.pool = pools[choice.chosen];
  return choice;
}

}  // namespace hetsched
