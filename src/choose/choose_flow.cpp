// Choosing a throughput flow by measurement (see hetsched/choose.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "choose/rounds.h"
#include "hetsched/choose.h"
#include "hetsched/error.h"
#include "runtime/request_pool.h"

namespace hetsched {

namespace {

using Clock = std::chrono::steady_clock;

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
  if (n == 1) {  // nothing to choose: its workers warmed up, nothing measured
    MeasuredFlowChoice only;
    only.pool = make_pool(graph, flows[0], inputs, options.warmups, options.cuda_graph);
    double per_ms = 0;
    for (const RequestPool::Worker& w : only.pool->workers()) per_ms += 1 / std::max(w.expected_ms, 1e-3);
    only.per_s = {per_ms * 1000};
    only.p50_ms = {only.pool->workers().front().expected_ms};
    only.reason = fmt::format("{}, the only flow (not measured)", flows[0].name);
    return only;
  }
  std::vector<std::shared_ptr<RequestPool>> pools;
  std::vector<int> n_requests;  // per flow and round: enough for the window
  auto in_flight = [&](size_t f) {
    return options.in_flight > 0 ? options.in_flight : static_cast<int>(flows[f].workers.size());
  };
  for (size_t f = 0; f < n; ++f) {
    pools.push_back(make_pool(graph, flows[f], inputs, options.warmups, options.cuda_graph));
    // A round's requests: a window of them at the rate the pool serves a
    // short closed loop, dispatch included (for a tiny model the workers'
    // own times would ask for tens of thousands).
    RequestPool& pool = *pools.back();
    int workers = static_cast<int>(flows[f].workers.size());
    LoadResult probe = run_closed_loop(options.min_requests * workers, in_flight(f), [&](int i) {
      pool.run(inputs[static_cast<size_t>(i) % inputs.size()]);
    });
    n_requests.push_back(std::max(options.min_requests * workers,
                                  static_cast<int>(std::ceil(probe.per_s / 1000 * options.window_ms))));
  }
  // A round's time: per request served in a closed loop after rewarming
  // every worker, so that ratios of times compare rates.
  std::vector<bool> one_device;
  for (const RequestFlow& flow : flows) one_device.push_back(flow.one_device());
  std::vector<std::vector<double>> latencies(n);
  Rounds rounds = measure_in_rounds(
      one_device,
      [&](size_t f) {
        RequestPool& pool = *pools[f];
        rewarm_all(pool, inputs[0]);
        LoadResult load = run_closed_loop(n_requests[f], in_flight(f),
                                          [&](int i) { pool.run(inputs[static_cast<size_t>(i) % inputs.size()]); });
        latencies[f].insert(latencies[f].end(), load.latencies_ms.begin(), load.latencies_ms.end());
        return 1000 / load.per_s;
      },
      options.rounds, options.max_rounds, options.min_gain, options.undecided);

  MeasuredFlowChoice choice;
  choice.rounds = rounds.n_rounds();
  for (size_t f = 0; f < n; ++f) {
    std::vector<double> rates;
    for (double ms : rounds.times[f]) rates.push_back(1000 / ms);
    choice.per_s.push_back(median(rates));
    choice.p50_ms.push_back(median(latencies[f]));
  }
  const RequestFlow& base = flows[static_cast<size_t>(rounds.baseline)];
  choice.chosen = static_cast<size_t>(rounds.baseline);
  double base_rate = choice.per_s[choice.chosen];
  if (rounds.best < 0) {
    choice.reason = fmt::format("{} measured fastest ({:.1f} requests/s, {} interleaved rounds)", base.name,
                                base_rate, choice.rounds);
  } else {
    std::vector<double> r = rounds.ratios();
    int wins = static_cast<int>(std::count_if(r.begin(), r.end(), [](double x) { return x < 1; }));
    choice.ratio = median(r);
    const RequestFlow& flow = flows[static_cast<size_t>(rounds.best)];
    bool keep = plan_beats_baseline(r, options.min_gain);
    if (keep) choice.chosen = static_cast<size_t>(rounds.best);
    choice.reason = fmt::format(
        "{} measured {:.1f} requests/s, {} {:.1f} ({} interleaved rounds; {:.2f}x, faster in {} of {}): {}", flow.name,
        choice.per_s[static_cast<size_t>(rounds.best)], base.name, base_rate, choice.rounds, 1 / choice.ratio, wins,
        choice.rounds,
        keep ? fmt::format("keeping {}", flow.name)
             : fmt::format("running {} (a flow must serve {:.0f}% more, in two rounds of three)", base.name,
                           100 * options.min_gain / (1 - options.min_gain)));
  }
  choice.pool = pools[choice.chosen];
  return choice;
}

}  // namespace hetsched
