#include "service_settings.hpp"

namespace wg::serving {

SettingsPtr settings_from(const config::Config& config) {
  // A lock holder gives up after one full upstream exchange; a waiter in this process may wait
  // for a leader that first waited for another instance's lock and then fetched itself.
  const auto lock_ttl =
      config.upstream.connect_timeout + config.upstream.timeout + std::chrono::seconds(1);
  const auto wait = lock_ttl * 2 + config.redis.timeout * 4 + std::chrono::seconds(1);
  FetchSettings fetch{cache::TtlPolicy(config.cache), config.cache.negative_ttl.count() > 0,
                      std::chrono::seconds(60)};
  fetch.queue_wait = config.upstream.timeout;

  ServiceSettings settings{SharedFetchSettings{std::move(fetch)}, {}, true, false, false};
  settings.shared.wait_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(wait);
  settings.shared.lock_ttl = std::chrono::duration_cast<std::chrono::milliseconds>(lock_ttl);
  settings.shared.widget_slack = config.quota.widget_slack;
  settings.shared.widget_pace = config.quota.widget_pace;
  settings.stale = {config.cache.stale_while_revalidate, config.cache.stale_if_error};
  settings.derive_pages = config.cache.derive_pages;
  settings.all_known = !config.access.widgets.empty();
  settings.empty_reviews_on_error = config.cache.empty_reviews_on_error;
  return std::make_shared<const ServiceSettings>(std::move(settings));
}

}  // namespace wg::serving
