#include "widget_gateway/metrics/registry.hpp"

#include <stdexcept>

#include "metrics/exposition.hpp"

namespace wg::metrics {

struct Registry::Series {
  std::string labels;  // rendered once: name="value",...
  Exposition exposition = Exposition::always;
  std::unique_ptr<Counter> counter;
  std::unique_ptr<Gauge> gauge;
  std::unique_ptr<Histogram> histogram;
  std::function<double()> read;  // callback series
};

struct Registry::Family {
  std::string name;
  std::string help;
  Type type;
  std::vector<Series> series;
};

namespace {

std::string_view type_name(bool counter, bool histogram) {
  return counter ? "counter" : histogram ? "histogram" : "gauge";
}

// name{labels} or name{labels,extra} or name{extra} or name.
void append_series_name(std::string& out, std::string_view name, std::string_view suffix,
                        std::string_view labels, std::string_view extra = {}) {
  out += name;
  out += suffix;
  if (labels.empty() && extra.empty()) return;
  out.push_back('{');
  out += labels;
  if (!labels.empty() && !extra.empty()) out.push_back(',');
  out += extra;
  out.push_back('}');
}

}  // namespace

Registry::Registry() = default;
Registry::~Registry() = default;

Registry::Series& Registry::add_series(std::string name, std::string help, Type type,
                                       const Labels& labels) {
  if (!exposition::valid_metric_name(name)) {
    throw std::invalid_argument("invalid metric name: " + name);
  }
  for (const auto& [label, value] : labels) {
    if (!exposition::valid_label_name(label) || (type == Type::histogram && label == "le")) {
      throw std::invalid_argument("invalid label name '" + label + "' on metric " + name);
    }
  }
  Family* family = nullptr;
  for (auto& f : families_) {
    if (f->name == name) family = f.get();
  }
  if (family == nullptr) {
    families_.push_back(
        std::make_unique<Family>(Family{std::move(name), std::move(help), type, {}}));
    family = families_.back().get();
  } else if (family->type != type) {
    throw std::logic_error("metric " + family->name + " registered with two types");
  }
  std::string text = exposition::label_text(labels);
  for (const Series& s : family->series) {
    if (s.labels == text) {
      throw std::logic_error("metric " + family->name + "{" + text + "} registered twice");
    }
  }
  Series& series = family->series.emplace_back();
  series.labels = std::move(text);
  return series;
}

Counter& Registry::counter(std::string name, std::string help, Labels labels,
                           Exposition exposition) {
  std::lock_guard lock(mutex_);
  Series& s = add_series(std::move(name), std::move(help), Type::counter, labels);
  s.exposition = exposition;
  s.counter = std::make_unique<Counter>();
  return *s.counter;
}

Gauge& Registry::gauge(std::string name, std::string help, Labels labels) {
  std::lock_guard lock(mutex_);
  Series& s = add_series(std::move(name), std::move(help), Type::gauge, labels);
  s.gauge = std::make_unique<Gauge>();
  return *s.gauge;
}

Histogram& Registry::histogram(std::string name, std::string help, std::vector<double> upper_bounds,
                               Labels labels) {
  auto histogram = std::make_unique<Histogram>(std::move(upper_bounds));
  std::lock_guard lock(mutex_);
  Series& s = add_series(std::move(name), std::move(help), Type::histogram, labels);
  s.histogram = std::move(histogram);
  return *s.histogram;
}

void Registry::callback_gauge(std::string name, std::string help, Labels labels,
                              std::function<double()> read) {
  if (!read) throw std::invalid_argument("callback gauge " + name + " without a function");
  std::lock_guard lock(mutex_);
  add_series(std::move(name), std::move(help), Type::gauge, labels).read = std::move(read);
}

void Registry::callback_counter(std::string name, std::string help, Labels labels,
                                std::function<double()> read) {
  if (!read) throw std::invalid_argument("callback counter " + name + " without a function");
  std::lock_guard lock(mutex_);
  add_series(std::move(name), std::move(help), Type::counter, labels).read = std::move(read);
}

std::string Registry::render() const {
  std::string out;
  std::lock_guard lock(mutex_);
  out.reserve(4096);
  for (const auto& family : families_) {
    out += "# HELP ";
    out += family->name;
    out.push_back(' ');
    exposition::append_help(out, family->help);
    out += "\n# TYPE ";
    out += family->name;
    out.push_back(' ');
    out += type_name(family->type == Type::counter, family->type == Type::histogram);
    out.push_back('\n');

    for (const Series& s : family->series) {
      if (s.histogram) {
        const Histogram::Snapshot snap = s.histogram->snapshot();
        std::string le;
        for (std::size_t i = 0; i < snap.cumulative_counts.size(); ++i) {
          le.assign("le=\"");
          if (i < snap.upper_bounds.size()) {
            exposition::append_value(le, snap.upper_bounds[i]);
          } else {
            le += "+Inf";
          }
          le.push_back('"');
          append_series_name(out, family->name, "_bucket", s.labels, le);
          out.push_back(' ');
          exposition::append_value(out, snap.cumulative_counts[i]);
          out.push_back('\n');
        }
        append_series_name(out, family->name, "_sum", s.labels);
        out.push_back(' ');
        exposition::append_value(out, snap.sum);
        out.push_back('\n');
        append_series_name(out, family->name, "_count", s.labels);
        out.push_back(' ');
        exposition::append_value(out, snap.count);
        out.push_back('\n');
        continue;
      }
      if (s.counter) {
        const std::uint64_t v = s.counter->value();
        if (v == 0 && s.exposition == Exposition::when_nonzero) continue;
        append_series_name(out, family->name, "", s.labels);
        out.push_back(' ');
        exposition::append_value(out, v);
      } else {
        append_series_name(out, family->name, "", s.labels);
        out.push_back(' ');
        exposition::append_value(out, s.gauge ? s.gauge->value() : s.read());
      }
      out.push_back('\n');
    }
  }
  return out;
}

}  // namespace wg::metrics
