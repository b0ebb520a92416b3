#pragma once
// Metric families with a fixed label set, created up front and rendered in the Prometheus
// text exposition format 0.0.4. Registration returns a reference that stays valid for the
// registry's lifetime; the request path keeps those references and never looks a metric up
// by name.

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "widget_gateway/metrics/instruments.hpp"

namespace wg::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Whether a series is rendered while it is still zero. Large label spaces (route x status x
// cache result) are pre-created in full but only rendered once used, so a scrape lists the
// combinations that happen rather than hundreds of zeros.
enum class Exposition : std::uint8_t { always, when_nonzero };

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Each call adds one series to the family `name` (created on first use, with `help`).
  // Registering a name with another type, the same label set twice, or an invalid metric or
  // label name is a bug and throws std::logic_error (or std::invalid_argument for names).
  Counter& counter(std::string name, std::string help, Labels labels = {},
                   Exposition exposition = Exposition::always);
  Gauge& gauge(std::string name, std::string help, Labels labels = {});
  Histogram& histogram(std::string name, std::string help, std::vector<double> upper_bounds,
                       Labels labels = {});

  // Series whose value is read when rendering, for state owned elsewhere (quota used, L1
  // bytes, open connections). `read` runs on the scraping thread with the registry's lock
  // held: it must be thread-safe, quick, and must not call back into the registry.
  void callback_gauge(std::string name, std::string help, Labels labels,
                      std::function<double()> read);
  void callback_counter(std::string name, std::string help, Labels labels,
                        std::function<double()> read);

  // The whole exposition: families in registration order, each with one # HELP and # TYPE.
  std::string render() const;

 private:
  struct Family;
  struct Series;
  enum class Type : std::uint8_t { counter, gauge, histogram };

  Series& add_series(std::string name, std::string help, Type type, const Labels& labels);

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Family>> families_;
};

}  // namespace wg::metrics
