#pragma once
// The OTLP/HTTP JSON encoding of a batch of spans (an ExportTraceServiceRequest): one resource
// (`service.name`, `service.version`), one scope, the spans. Ids are lowercase hex, as OTLP's
// JSON mapping requires (not base64), times and int64 values are decimal strings. Pure.

#include <span>
#include <string>
#include <string_view>

#include "widget_gateway/tracing/span.hpp"

namespace wg::tracing {

struct Resource {
  std::string_view service_name;
  std::string_view service_version;
};

// The scope every span of the gateway is reported under.
inline constexpr std::string_view kScopeName = "widget-gateway";

void append_otlp_json(std::string& out, const Resource& resource, std::span<const SpanData> spans);

}  // namespace wg::tracing
