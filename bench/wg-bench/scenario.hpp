#pragma once
// A benchmark scenario: the load shape, which keys are asked for, the request mix, and what the
// runner script does around the run (data set size, faults, cache TTL). Parsed from a TOML file
// (bench/scenarios/*.toml) by one function that rejects unknown keys and names the bad one;
// command-line flags of wg-bench override the [load] values.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "wg-bench/load_profile.hpp"

namespace wg::bench {

using Millis = std::chrono::milliseconds;

class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class LoadMode { closed, open };
// zipf: rank k drawn with P ∝ 1/(k+1)^s; uniform: any key alike; fresh: keys taken in order,
// each once (with `repeat`, a burst of identical requests per key: a cold storm).
enum class KeyDistribution { zipf, uniform, fresh };
enum class FaultKind { none, upstream, redis };

struct LoadSpec {
  LoadMode mode = LoadMode::closed;
  unsigned connections = 16;
  double rate = 0;  // open loop: requests per second over all connections
  Millis duration = std::chrono::seconds(10);
  Millis warmup = std::chrono::seconds(2);
  std::uint64_t requests = 0;  // > 0: stop after this many measured requests
  Millis timeout = std::chrono::seconds(5);
  unsigned threads = 1;
  // Stages of a ramp (--ramp): open loop, the rate; closed loop, the connections; from 0.
  std::vector<RampStage> ramp;
  // --slow-above: answers that take longer are counted per second (SecondStats::slow); 0 = not
  // counted.
  Millis slow_above{0};
};

struct KeySpec {
  std::size_t widgets = 100;  // how many distinct widget ids are drawn from
  KeyDistribution distribution = KeyDistribution::zipf;
  double zipf_exponent = 1.1;
  unsigned repeat = 1;  // each drawn request is sent this many times in a row
};

// Shares of the request mix, each in [0, 1]. widget/reviews are relative weights of the valid
// requests; invalid and hostile are shares of all requests.
struct MixSpec {
  double widget = 0.3;
  double reviews = 0.7;
  double head = 0;            // valid requests sent as HEAD
  double invalid = 0;         // well-formed but wrong: bad limit, unknown type, unknown widget
  double hostile = 0;         // traversal, encoded slashes, duplicated params, oversized targets
  double unknown_params = 0;  // valid requests with a random unknown parameter appended
};

struct ReviewsSpec {
  std::vector<unsigned> limits{20};  // page sizes, picked uniformly
  unsigned max_pages = 10;           // pages beyond this are never asked for
  double page_exponent = 1.5;        // page n drawn Zipf-like: the first page is the most common
  double typed = 0;                  // share with a `type` filter
  double odd_skip = 0;               // share with a skip that is not a page boundary
};

// A walker: one client that walks the reviews of known widgets (the first `widgets` ids of the
// list) with every `skip` from 0 to skip_max in steps of skip_step, far past the end, and each
// of the nine platform codes (`type`), `limit` reviews a page (walker_target in
// request_mix.hpp gives the order). Its requests are a share of the pool,
// interleaved with the visitors' (whose sequence stays what it is without the walker), and are
// recorded apart from them (RunStats::roles).
struct WalkerSpec {
  double share = 0;  // share of all requests that are the walker's; 0: no walker
  std::size_t widgets = 20;
  unsigned limit = 1;
  std::uint64_t skip_step = 300;
  std::uint64_t skip_max = 179700;  // the last skip asked for
};

// Read by bench/run.sh (through `wg-bench --print-runner`), not by the load generator.
struct RunnerSpec {
  std::size_t stub_widgets = 1000;  // --widgets of the stub upstream
  FaultKind fault = FaultKind::none;
  std::string fault_mode = "status503";       // stub fault mode for fault = "upstream"
  Millis fault_at = std::chrono::seconds(3);  // after the start of the measured period
  Millis fault_for = std::chrono::seconds(3);
  Millis cache_ttl{0};         // 0 = each system's usual TTL; otherwise forced on all of them
  Millis upstream_latency{0};  // stub delay before every API answer (a distant upstream)
  unsigned reps = 1;           // repetitions per system with --compare
  // Systems this scenario is meant for (empty: all). A scenario about the gateway's own
  // internals (L1 off, memory) names only "gateway", so --compare does not rerun the others.
  std::vector<std::string> systems;
  bool gateway_l1 = true;    // false: the gateway runs with cache.l1_max_bytes = 0 (Redis only)
  bool derive_pages = true;  // the gateway's cache.derive_pages
  // A scenario run.sh runs first in the same folder, when it is not already in the run (e.g.
  // zipf-site for quota-walk: the visitors without the walker), to compare against.
  std::string baseline;
};

struct Scenario {
  std::string name = "default";
  std::string description;
  std::uint64_t seed = 1;
  std::size_t pool = 100000;  // pre-generated requests, cycled through
  LoadSpec load;
  KeySpec keys;
  MixSpec mix;
  ReviewsSpec reviews;
  WalkerSpec walker;
  RunnerSpec runner;
};

// Parses TOML text; `origin` names the source in error messages. Throws ScenarioError.
Scenario parse_scenario(std::string_view text, std::string_view origin = "scenario");
Scenario load_scenario_file(const std::string& path);

// "500ms", "2s", "1.5s", "3m", "1h" → milliseconds. Throws ScenarioError.
Millis parse_duration(std::string_view text);

// The [runner] section and a few [load] values as KEY=VALUE lines for the runner script.
std::string runner_lines(const Scenario& scenario);

std::string_view to_string(LoadMode mode);
std::string_view to_string(KeyDistribution distribution);
std::string_view to_string(FaultKind fault);

}  // namespace wg::bench
