#include "wg-bench/thresholds.hpp"

#include <charconv>
#include <cstdio>

#include "wg-bench/scenario.hpp"

namespace wg::bench {
namespace {

using Metric = Condition::Metric;
using Op = Condition::Op;

struct MetricName {
  std::string_view name;
  Metric metric;
};
constexpr MetricName kMetrics[] = {
    {"p50", Metric::p50},   {"p90", Metric::p90},       {"p99.9", Metric::p999},
    {"p999", Metric::p999}, {"p99", Metric::p99},       {"max", Metric::max},
    {"mean", Metric::mean}, {"errors", Metric::errors}, {"unexpected", Metric::unexpected},
    {"late", Metric::late}, {"unsent", Metric::unsent}, {"rps", Metric::rps},
    {"rate", Metric::rate},
};

bool is_latency(Metric m) {
  return m == Metric::p50 || m == Metric::p90 || m == Metric::p99 || m == Metric::p999 ||
         m == Metric::max || m == Metric::mean;
}
bool is_count(Metric m) {
  return m == Metric::errors || m == Metric::unexpected || m == Metric::late || m == Metric::unsent;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

Condition parse_one(std::string_view text) {
  Condition c;
  c.text = std::string(text);
  const auto bad = [&](const std::string& why) {
    return ScenarioError("--fail-if \"" + c.text + "\": " + why);
  };
  const auto op_at = text.find_first_of("<>");
  if (op_at == std::string_view::npos) throw bad("expected METRIC<VALUE or METRIC>VALUE");
  const std::string_view name = trim(text.substr(0, op_at));
  bool known = false;
  for (const auto& m : kMetrics) {
    if (m.name == name) {
      c.metric = m.metric;
      known = true;
    }
  }
  if (!known) {
    throw bad("unknown metric \"" + std::string(name) +
              "\" (p50 p90 p99 p99.9 max mean errors unexpected late unsent rps rate)");
  }
  std::string_view rest = text.substr(op_at);
  const bool or_equal = rest.size() > 1 && rest[1] == '=';
  c.op = rest[0] == '>' ? (or_equal ? Op::greater_equal : Op::greater)
                        : (or_equal ? Op::less_equal : Op::less);
  rest = trim(rest.substr(or_equal ? 2 : 1));
  double number = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), number);
  if (rest.empty() || ec != std::errc{} || !(number >= 0)) throw bad("expected a number >= 0");
  const std::string_view unit = rest.substr(static_cast<std::size_t>(end - rest.data()));
  if (is_latency(c.metric)) {
    double scale = 1e6;  // ms by default
    if (unit == "us")
      scale = 1e3;
    else if (unit == "s")
      scale = 1e9;
    else if (!unit.empty() && unit != "ms")
      throw bad("latency units are us, ms or s");
    c.value = number * scale;
  } else if (unit == "%") {
    if (!is_count(c.metric)) throw bad("only counts take a percentage");
    c.share = true;
    c.value = number / 100;
  } else if (!unit.empty()) {
    throw bad("unexpected \"" + std::string(unit) + "\" after the number");
  } else {
    c.value = number;
  }
  return c;
}

double share(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace

std::vector<Condition> parse_fail_if(std::string_view text) {
  std::vector<Condition> conditions;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view one = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (one.empty() || (comma != std::string_view::npos && trim(text).empty())) {
      throw ScenarioError("--fail-if: empty condition");
    }
    conditions.push_back(parse_one(one));
  }
  if (conditions.empty()) throw ScenarioError("--fail-if needs at least one condition");
  return conditions;
}

double condition_value(const Condition& c, const RunFigures& f) {
  const auto quantile = [&](double q) {
    return f.latency ? static_cast<double>(f.latency->value_at(q)) : 0.0;
  };
  switch (c.metric) {
    case Metric::p50:
      return quantile(0.50);
    case Metric::p90:
      return quantile(0.90);
    case Metric::p99:
      return quantile(0.99);
    case Metric::p999:
      return quantile(0.999);
    case Metric::max:
      return f.latency ? static_cast<double>(f.latency->max()) : 0.0;
    case Metric::mean:
      return f.latency ? f.latency->mean() : 0.0;
    case Metric::errors:
      return c.share ? share(f.failed, f.requests) : static_cast<double>(f.failed);
    case Metric::unexpected:
      return c.share ? share(f.unexpected, f.requests) : static_cast<double>(f.unexpected);
    case Metric::late:
      return c.share ? share(f.late_sends, f.sends) : static_cast<double>(f.late_sends);
    case Metric::unsent:
      return c.share ? share(f.unsent, f.requests) : static_cast<double>(f.unsent);
    case Metric::rps:
      return f.achieved_rps;
    case Metric::rate:
      return f.rate_ratio;
  }
  return 0;
}

bool holds(const Condition& c, const RunFigures& f) {
  const double v = condition_value(c, f);
  switch (c.op) {
    case Op::greater:
      return v > c.value;
    case Op::greater_equal:
      return v >= c.value;
    case Op::less:
      return v < c.value;
    case Op::less_equal:
      return v <= c.value;
  }
  return false;
}

std::vector<std::string> crossed(const std::vector<Condition>& conditions, const RunFigures& f) {
  std::vector<std::string> out;
  for (const auto& c : conditions) {
    if (!holds(c, f)) continue;
    const double v = condition_value(c, f);
    char measured[96];
    if (is_latency(c.metric)) {
      std::snprintf(measured, sizeof measured, "%.3f ms", v / 1e6);
    } else if (c.share) {
      std::snprintf(measured, sizeof measured, "%.2f %%", 100 * v);
    } else if (c.metric == Metric::rate) {
      std::snprintf(measured, sizeof measured, "%.3f", v);
    } else {
      std::snprintf(measured, sizeof measured, "%.0f", v);
    }
    out.push_back(c.text + " (measured " + measured + ")");
  }
  return out;
}

}  // namespace wg::bench
