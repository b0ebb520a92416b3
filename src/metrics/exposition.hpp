#pragma once
// Text pieces of the Prometheus exposition format 0.0.4.

#include <cstdint>
#include <string>
#include <string_view>

#include "widget_gateway/metrics/registry.hpp"

namespace wg::metrics::exposition {

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool valid_metric_name(std::string_view name);
// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved for Prometheus itself).
bool valid_label_name(std::string_view name);

// Escapes \ and newline, as # HELP text requires.
void append_help(std::string& out, std::string_view text);
// Escapes \, " and newline, as label values require.
void append_label_value(std::string& out, std::string_view text);
// name="value",name="value" (no braces).
std::string label_text(const Labels& labels);

// Shortest text that reads back as the same double; NaN, +Inf and -Inf as Prometheus spells them.
void append_value(std::string& out, double value);
void append_value(std::string& out, std::uint64_t value);

}  // namespace wg::metrics::exposition
