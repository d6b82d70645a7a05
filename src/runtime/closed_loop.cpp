// Driving a stream of requests (see hetsched/throughput.h, run_closed_loop).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "hetsched/error.h"
#include "hetsched/throughput.h"

namespace hetsched {

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  double rank = p / 100.0 * static_cast<double>(values.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(rank));
  size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - static_cast<double>(lo));
}

LoadResult run_closed_loop(int n, int in_flight, const std::function<void(int)>& request) {
  if (n < 1 || in_flight < 1)
    throw Error(ErrorCode::kUsage,
                fmt::format("a stream of requests needs n >= 1 and in_flight >= 1, got n {}, in_flight {}", n,
                            in_flight));
  using Clock = std::chrono::steady_clock;
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::exception_ptr first_error;
  LoadResult result;
  result.n_requests = 0;
  result.in_flight = in_flight;
  auto start = Clock::now();
  auto client = [&] {
    for (int i = next++; i < n && !failed; i = next++) {
      auto begin = Clock::now();
      try {
        request(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!first_error) first_error = std::current_exception();
        failed = true;
        return;
      }
      double ms = std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
      std::lock_guard<std::mutex> lock(mutex);
      result.latencies_ms.push_back(ms);
    }
  };
  std::vector<std::thread> clients;
  for (int k = 0; k < std::min(in_flight, n); ++k) clients.emplace_back(client);
  for (std::thread& t : clients) t.join();
  if (first_error) std::rethrow_exception(first_error);
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.n_requests = static_cast<int>(result.latencies_ms.size());
  result.per_s = result.seconds > 0 ? result.n_requests / result.seconds : 0;
  result.p50_ms = percentile(result.latencies_ms, 50);
  result.p90_ms = percentile(result.latencies_ms, 90);
  result.p99_ms = percentile(result.latencies_ms, 99);
  return result;
}

}  // namespace hetsched
