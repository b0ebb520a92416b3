#pragma once
// One finished span, as the exporter sends it (OTLP's Span, the fields the gateway uses).

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/tracing/trace_context.hpp"

namespace wg::tracing {

// OTLP's SpanKind numbers.
enum class SpanKind : std::uint8_t { internal = 1, server = 2, client = 3 };

struct Attribute {
  std::string_view key;  // a literal: attribute keys are the gateway's own names
  std::variant<std::string, std::int64_t, bool> value;
};

// A span of another trace, or of another request of this one, that this span waited for.
struct Link {
  TraceId trace_id;
  SpanId span_id;
};

struct SpanData {
  TraceId trace_id;
  SpanId span_id;
  SpanId parent_id;       // none: a root span
  std::string_view name;  // a literal
  SpanKind kind = SpanKind::internal;
  WallTime start;
  WallTime end;
  std::vector<Attribute> attributes;
  std::vector<Link> links;
  bool error = false;
  std::string trace_state;  // the request's `tracestate`, on its server span
};

}  // namespace wg::tracing
