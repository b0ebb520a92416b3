#include "widget_gateway/tracing/otlp_json.hpp"

#include <chrono>

#include "widget_gateway/common/json_writer.hpp"

namespace wg::tracing {
namespace {

void append_string_attribute(std::string& out, std::string_view key, std::string_view value) {
  out += "{\"key\":";
  json::append_string(out, key);
  out += ",\"value\":{\"stringValue\":";
  json::append_string(out, value);
  out += "}}";
}

void append_attribute(std::string& out, const Attribute& attribute) {
  if (const auto* text = std::get_if<std::string>(&attribute.value)) {
    append_string_attribute(out, attribute.key, *text);
    return;
  }
  out += "{\"key\":";
  json::append_string(out, attribute.key);
  if (const auto* number = std::get_if<std::int64_t>(&attribute.value)) {
    out += ",\"value\":{\"intValue\":\"";
    out += std::to_string(*number);
    out += "\"}}";
  } else {
    out += ",\"value\":{\"boolValue\":";
    out += std::get<bool>(attribute.value) ? "true" : "false";
    out += "}}";
  }
}

void append_nanos(std::string& out, WallTime time) {
  const auto nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
  out.push_back('"');
  out += std::to_string(nanos);
  out.push_back('"');
}

void append_span(std::string& out, const SpanData& span) {
  out += "{\"traceId\":\"";
  append_hex(out, span.trace_id);
  out += "\",\"spanId\":\"";
  append_hex(out, span.span_id);
  out += '"';
  if (span.parent_id.valid()) {
    out += ",\"parentSpanId\":\"";
    append_hex(out, span.parent_id);
    out += '"';
  }
  if (!span.trace_state.empty()) {
    out += ",\"traceState\":";
    json::append_string(out, span.trace_state);
  }
  out += ",\"name\":";
  json::append_string(out, span.name);
  out += ",\"kind\":";
  out += std::to_string(static_cast<int>(span.kind));
  out += ",\"startTimeUnixNano\":";
  append_nanos(out, span.start);
  out += ",\"endTimeUnixNano\":";
  append_nanos(out, span.end);
  out += ",\"attributes\":[";
  for (std::size_t i = 0; i < span.attributes.size(); ++i) {
    if (i > 0) out.push_back(',');
    append_attribute(out, span.attributes[i]);
  }
  out += "],\"links\":[";
  for (std::size_t i = 0; i < span.links.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += "{\"traceId\":\"";
    append_hex(out, span.links[i].trace_id);
    out += "\",\"spanId\":\"";
    append_hex(out, span.links[i].span_id);
    out += "\"}";
  }
  // STATUS_CODE_ERROR = 2; unset (0) otherwise.
  out += span.error ? "],\"status\":{\"code\":2}}" : "],\"status\":{}}";
}

}  // namespace

void append_otlp_json(std::string& out, const Resource& resource, std::span<const SpanData> spans) {
  out += "{\"resourceSpans\":[{\"resource\":{\"attributes\":[";
  append_string_attribute(out, "service.name", resource.service_name);
  out.push_back(',');
  append_string_attribute(out, "service.version", resource.service_version);
  out += "]},\"scopeSpans\":[{\"scope\":{\"name\":";
  json::append_string(out, kScopeName);
  out += ",\"version\":";
  json::append_string(out, resource.service_version);
  out += "},\"spans\":[";
  for (std::size_t i = 0; i < spans.size(); ++i) {
    if (i > 0) out.push_back(',');
    append_span(out, spans[i]);
  }
  out += "]}]}]}";
}

}  // namespace wg::tracing
