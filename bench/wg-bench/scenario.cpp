#include "wg-bench/scenario.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <toml++/toml.h>

namespace wg::bench {
namespace {

[[noreturn]] void fail(std::string_view origin, const std::string& message) {
  throw ScenarioError(std::string(origin) + ": " + message);
}

// Walks one TOML table, handing each key to `on_key`; a key nobody claims is an error.
class TableReader {
 public:
  TableReader(const toml::table& table, std::string prefix, std::string_view origin)
      : table_(table), prefix_(std::move(prefix)), origin_(origin) {}

  const toml::node* get(std::string_view key) {
    seen_.insert(std::string(key));
    return table_.get(key);
  }

  std::string name(std::string_view key) const { return prefix_ + std::string(key); }

  void finish() const {
    for (const auto& [key, node] : table_) {
      if (!seen_.count(std::string(key.str()))) fail(origin_, "unknown key " + name(key.str()));
    }
  }

  void string(std::string_view key, std::string& out) {
    if (const auto* n = get(key)) {
      const auto v = n->value<std::string>();
      if (!v) fail(origin_, name(key) + " must be a string");
      out = *v;
    }
  }

  void number(std::string_view key, double& out, double lo, double hi) {
    if (const auto* n = get(key)) {
      const auto v = n->value<double>();  // integers convert too
      if (!v || !std::isfinite(*v) || *v < lo || *v > hi) {
        fail(origin_, name(key) + " must be a number in [" + fmt(lo) + ", " + fmt(hi) + "]");
      }
      out = *v;
    }
  }

  template <class Int>
  void integer(std::string_view key, Int& out, std::int64_t lo, std::int64_t hi) {
    if (const auto* n = get(key)) {
      if (!n->is_integer()) fail(origin_, name(key) + " must be an integer");
      const auto v = *n->value<std::int64_t>();
      if (v < lo || v > hi) {
        fail(origin_,
             name(key) + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
      }
      out = static_cast<Int>(v);
    }
  }

  void duration(std::string_view key, Millis& out) {
    if (const auto* n = get(key)) {
      const auto v = n->value<std::string>();
      if (!v) fail(origin_, name(key) + " must be a duration string such as \"2s\"");
      try {
        out = parse_duration(*v);
      } catch (const ScenarioError& e) {
        fail(origin_, name(key) + ": " + e.what());
      }
    }
  }

  template <class Enum, std::size_t N>
  void choice(std::string_view key, Enum& out,
              const std::pair<std::string_view, Enum> (&options)[N]) {
    std::string text;
    string(key, text);
    if (text.empty() && !table_.contains(key)) return;
    std::string allowed;
    for (const auto& [label, value] : options) {
      if (label == text) {
        out = value;
        return;
      }
      allowed += (allowed.empty() ? "" : ", ") + std::string(label);
    }
    fail(origin_, name(key) + " must be one of " + allowed);
  }

  void boolean(std::string_view key, bool& out) {
    if (const auto* n = get(key)) {
      const auto v = n->value<bool>();
      if (!n->is_boolean() || !v) fail(origin_, name(key) + " must be true or false");
      out = *v;
    }
  }

  // A non-empty array of strings, each one of `allowed`.
  void strings(std::string_view key, std::vector<std::string>& out,
               const std::vector<std::string_view>& allowed) {
    const auto* n = get(key);
    if (!n) return;
    const auto* array = n->as_array();
    if (!array || array->empty()) fail(origin_, name(key) + " must be a non-empty array");
    out.clear();
    for (const auto& item : *array) {
      const auto v = item.value<std::string>();
      if (!item.is_string() || std::find(allowed.begin(), allowed.end(), *v) == allowed.end()) {
        std::string names;
        for (auto a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
        fail(origin_, name(key) + " holds names out of " + names);
      }
      out.push_back(*v);
    }
  }

  const toml::table* subtable(std::string_view key) {
    const auto* n = get(key);
    if (!n) return nullptr;
    if (!n->is_table()) fail(origin_, name(key) + " must be a table");
    return n->as_table();
  }

 private:
  static std::string fmt(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
  }

  const toml::table& table_;
  std::string prefix_;
  std::string_view origin_;
  std::set<std::string> seen_;
};

constexpr std::pair<std::string_view, LoadMode> kModes[] = {{"closed", LoadMode::closed},
                                                            {"open", LoadMode::open}};
constexpr std::pair<std::string_view, KeyDistribution> kDistributions[] = {
    {"zipf", KeyDistribution::zipf},
    {"uniform", KeyDistribution::uniform},
    {"fresh", KeyDistribution::fresh}};
const std::vector<std::string_view> kSystems = {"gateway", "nginx", "varnish", "constant"};
constexpr std::pair<std::string_view, FaultKind> kFaults[] = {
    {"none", FaultKind::none}, {"upstream", FaultKind::upstream}, {"redis", FaultKind::redis}};

void read_load(TableReader& r, LoadSpec& load) {
  r.choice("mode", load.mode, kModes);
  r.integer("connections", load.connections, 1, 100000);
  r.number("rate", load.rate, 0, 1e8);
  r.duration("duration", load.duration);
  r.duration("warmup", load.warmup);
  r.integer("requests", load.requests, 0, std::int64_t{1} << 50);
  r.duration("timeout", load.timeout);
  r.integer("threads", load.threads, 1, 256);
  r.finish();
}

void read_keys(TableReader& r, KeySpec& keys) {
  r.integer("widgets", keys.widgets, 1, 10000000);
  r.choice("distribution", keys.distribution, kDistributions);
  r.number("zipf_exponent", keys.zipf_exponent, 0, 10);
  r.integer("repeat", keys.repeat, 1, 1000000);
  r.finish();
}

void read_mix(TableReader& r, MixSpec& mix) {
  r.number("widget", mix.widget, 0, 1e9);
  r.number("reviews", mix.reviews, 0, 1e9);
  r.number("head", mix.head, 0, 1);
  r.number("invalid", mix.invalid, 0, 1);
  r.number("hostile", mix.hostile, 0, 1);
  r.number("unknown_params", mix.unknown_params, 0, 1);
  r.finish();
}

void read_reviews(TableReader& r, ReviewsSpec& reviews, std::string_view origin) {
  if (const auto* n = r.get("limits")) {
    const auto* array = n->as_array();
    if (!array || array->empty()) fail(origin, r.name("limits") + " must be a non-empty array");
    reviews.limits.clear();
    for (const auto& item : *array) {
      const auto v = item.value<std::int64_t>();
      if (!item.is_integer() || *v < 1 || *v > 300) {
        fail(origin, r.name("limits") + " holds integers in [1, 300]");
      }
      reviews.limits.push_back(static_cast<unsigned>(*v));
    }
  }
  r.integer("max_pages", reviews.max_pages, 1, 100000);
  r.number("page_exponent", reviews.page_exponent, 0, 10);
  r.number("typed", reviews.typed, 0, 1);
  r.number("odd_skip", reviews.odd_skip, 0, 1);
  r.finish();
}

void read_walker(TableReader& r, WalkerSpec& walker) {
  r.number("share", walker.share, 0, 0.99);
  r.integer("widgets", walker.widgets, 1, 10000000);
  r.integer("limit", walker.limit, 1, 300);
  r.integer("skip_step", walker.skip_step, 1, 100000000);
  r.integer("skip_max", walker.skip_max, 0, 1000000000);
  r.finish();
}

void read_runner(TableReader& r, RunnerSpec& runner) {
  r.integer("stub_widgets", runner.stub_widgets, 1, 10000000);
  r.choice("fault", runner.fault, kFaults);
  r.string("fault_mode", runner.fault_mode);
  r.duration("fault_at", runner.fault_at);
  r.duration("fault_for", runner.fault_for);
  r.duration("cache_ttl", runner.cache_ttl);
  r.duration("upstream_latency", runner.upstream_latency);
  r.integer("reps", runner.reps, 1, 100);
  r.strings("systems", runner.systems, kSystems);
  r.boolean("gateway_l1", runner.gateway_l1);
  r.boolean("derive_pages", runner.derive_pages);
  r.string("baseline", runner.baseline);
  r.finish();
}

}  // namespace

Millis parse_duration(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() &&
         ((text[digits] >= '0' && text[digits] <= '9') || text[digits] == '.')) {
    ++digits;
  }
  const std::string_view number = text.substr(0, digits);
  const std::string_view unit = text.substr(digits);
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc{} || end != number.data() + number.size()) {
    throw ScenarioError("bad duration \"" + std::string(text) + "\" (expected e.g. 500ms, 2s, 1m)");
  }
  double ms = 0;
  if (unit == "ms") {
    ms = value;
  } else if (unit == "s") {
    ms = value * 1000;
  } else if (unit == "m") {
    ms = value * 60'000;
  } else if (unit == "h") {
    ms = value * 3'600'000;
  } else {
    throw ScenarioError("bad duration unit in \"" + std::string(text) + "\" (ms, s, m or h)");
  }
  if (ms > 7 * 24 * 3'600'000.0) throw ScenarioError("duration too long: " + std::string(text));
  return Millis(static_cast<Millis::rep>(std::llround(ms)));
}

Scenario parse_scenario(std::string_view text, std::string_view origin) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    std::ostringstream message;
    message << "line " << e.source().begin.line << ": " << e.description();
    fail(origin, message.str());
  }
  Scenario s;
  TableReader top(root, "", origin);
  top.string("name", s.name);
  top.string("description", s.description);
  top.integer("seed", s.seed, 0, INT64_MAX);
  top.integer("pool", s.pool, 1, 10000000);
  if (const auto* t = top.subtable("load")) {
    TableReader r(*t, "load.", origin);
    read_load(r, s.load);
  }
  if (const auto* t = top.subtable("keys")) {
    TableReader r(*t, "keys.", origin);
    read_keys(r, s.keys);
  }
  if (const auto* t = top.subtable("mix")) {
    TableReader r(*t, "mix.", origin);
    read_mix(r, s.mix);
  }
  if (const auto* t = top.subtable("reviews")) {
    TableReader r(*t, "reviews.", origin);
    read_reviews(r, s.reviews, origin);
  }
  if (const auto* t = top.subtable("walker")) {
    TableReader r(*t, "walker.", origin);
    read_walker(r, s.walker);
  }
  if (const auto* t = top.subtable("runner")) {
    TableReader r(*t, "runner.", origin);
    read_runner(r, s.runner);
  }
  top.finish();

  if (s.mix.widget + s.mix.reviews <= 0) fail(origin, "mix.widget + mix.reviews must be > 0");
  if (s.mix.invalid + s.mix.hostile > 1) fail(origin, "mix.invalid + mix.hostile must be <= 1");
  if (s.load.mode == LoadMode::open && !(s.load.rate > 0)) {
    fail(origin, "load.rate must be > 0 when load.mode = \"open\"");
  }
  if (s.load.timeout.count() <= 0) fail(origin, "load.timeout must be > 0");
  if (s.load.duration.count() <= 0 && s.load.requests == 0) {
    fail(origin, "one of load.duration and load.requests must be > 0");
  }
  for (char c : s.runner.fault_mode) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      fail(origin, "runner.fault_mode may hold only a-z, 0-9 and '_'");
    }
  }
  if (s.name.empty()) fail(origin, "name must not be empty");
  const auto is_name = [](std::string_view name) {
    return std::all_of(name.begin(), name.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    });
  };
  if (!is_name(s.name)) fail(origin, "name may hold only a-z, 0-9, '-' and '_'");
  if (!is_name(s.runner.baseline)) {
    fail(origin, "runner.baseline may hold only a-z, 0-9, '-' and '_' (a scenario's name)");
  }
  if (s.runner.baseline == s.name) fail(origin, "runner.baseline must name another scenario");
  return s;
}

Scenario load_scenario_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ScenarioError(path + ": cannot read");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_scenario(text.str(), path);
}

std::string_view to_string(LoadMode mode) {
  return mode == LoadMode::open ? "open" : "closed";
}

std::string_view to_string(KeyDistribution distribution) {
  switch (distribution) {
    case KeyDistribution::zipf:
      return "zipf";
    case KeyDistribution::uniform:
      return "uniform";
    case KeyDistribution::fresh:
      return "fresh";
  }
  return "?";
}

std::string_view to_string(FaultKind fault) {
  switch (fault) {
    case FaultKind::none:
      return "none";
    case FaultKind::upstream:
      return "upstream";
    case FaultKind::redis:
      return "redis";
  }
  return "?";
}

namespace {
std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : std::string(separator)) + item;
  return out;
}
}  // namespace

std::string runner_lines(const Scenario& s) {
  // Values are plain tokens (no spaces or quotes), so the script can read them with `read`.
  std::ostringstream out;
  out << "name=" << s.name << "\n"
      << "stub_widgets=" << s.runner.stub_widgets << "\n"
      << "fault=" << to_string(s.runner.fault) << "\n"
      << "fault_mode=" << s.runner.fault_mode << "\n"
      << "fault_at_ms=" << s.runner.fault_at.count() << "\n"
      << "fault_for_ms=" << s.runner.fault_for.count() << "\n"
      << "cache_ttl_ms=" << s.runner.cache_ttl.count() << "\n"
      << "upstream_latency_ms=" << s.runner.upstream_latency.count() << "\n"
      << "reps=" << s.runner.reps << "\n"
      << "systems=" << join(s.runner.systems, ",") << "\n"
      << "gateway_l1=" << s.runner.gateway_l1 << "\n"
      << "derive_pages=" << s.runner.derive_pages << "\n"
      << "baseline=" << s.runner.baseline << "\n"
      << "walker_share=" << s.walker.share << "\n"
      << "requests=" << s.load.requests
      << "\n"
      // The constant-response reference answers reviews requests with a page of this size.
      << "first_limit=" << s.reviews.limits.front() << "\n"
      << "widgets=" << s.keys.widgets << "\n"
      << "mode=" << to_string(s.load.mode) << "\n"
      << "connections=" << s.load.connections << "\n"
      << "duration_ms=" << s.load.duration.count() << "\n"
      << "warmup_ms=" << s.load.warmup.count() << "\n";
  return out.str();
}

}  // namespace wg::bench
