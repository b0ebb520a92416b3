#pragma once
// How the metrics and the access log read what the serving core answered: serving's own
// vocabulary mapped onto the metrics' enums, here and nowhere else (metrics does not depend on
// serving, and nothing is passed as a string to be parsed back).

#include "serving/gateway_service.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"

namespace wg::frontend {

// Stale, local and derived answers told apart from plain hits, with the same precedence as
// Cache-Status' detail; none for an answer without an entry.
metrics::CacheResult cache_result_of(const serving::Served& served);

}  // namespace wg::frontend
