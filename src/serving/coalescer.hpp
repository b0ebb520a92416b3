#pragma once
// In-process request coalescing ("single flight"): concurrent misses on one key run one fetch,
// and everybody else waits for its outcome. The fetch is not tied to any one client: a client
// that goes away does not cancel it for the others.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "fetch_outcome.hpp"

namespace wg::serving {

class Coalescer {
 public:
  using Fetch = std::function<boost::asio::awaitable<FetchOutcome>()>;
  struct Result {
    FetchOutcome outcome;
    bool collapsed = false;  // this caller waited for another caller's fetch
  };

  explicit Coalescer(std::size_t max_waiters_per_key) : max_waiters_(max_waiters_per_key) {}

  // Runs `fetch` unless a fetch for `key` is already under way, in which case it waits up to
  // `wait_timeout` for that one (errc::upstream_timeout after it; errc::overloaded when the
  // key already has max_waiters_per_key waiters). Thread-safe; resumes on the caller's
  // executor.
  boost::asio::awaitable<Result> run(const std::string& key, Fetch fetch,
                                     std::chrono::milliseconds wait_timeout);

  std::size_t in_flight() const;
  // Whether a fetch for `key` is under way here (a new caller would wait for it).
  bool in_flight(const std::string& key) const;

 private:
  struct Flight;
  std::size_t max_waiters_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<Flight>> flights_;
};

}  // namespace wg::serving
