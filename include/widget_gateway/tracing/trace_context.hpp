#pragma once
// W3C Trace Context (https://www.w3.org/TR/trace-context/): the ids of a trace and a span, and
// the `traceparent` header that carries them. Pure functions, no allocation but the formatted
// header.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wg::tracing {

// 16 bytes; all zero is invalid (and means "none").
struct TraceId {
  std::array<std::uint8_t, 16> bytes{};
  bool valid() const;
  friend bool operator==(const TraceId&, const TraceId&) = default;
};

// 8 bytes; all zero is invalid (and means "none").
struct SpanId {
  std::array<std::uint8_t, 8> bytes{};
  bool valid() const;
  friend bool operator==(const SpanId&, const SpanId&) = default;
};

inline constexpr std::uint8_t kSampled = 0x01;

// What a valid `traceparent` says.
struct TraceParent {
  TraceId trace_id;
  SpanId parent_id;
  std::uint8_t flags = 0;
  bool sampled() const { return (flags & kSampled) != 0; }
};

// Lowercase hex, 32 and 16 characters.
void append_hex(std::string& out, const TraceId& id);
void append_hex(std::string& out, const SpanId& id);
std::string to_hex(const TraceId& id);
std::string to_hex(const SpanId& id);
// Writes the 32 characters of `id` to `out` (no terminator).
void write_hex(const TraceId& id, char* out);

// A `traceparent` value, or nullopt when it is not valid (the caller then starts a trace):
// version 00 exactly `00-<32 hex>-<16 hex>-<2 hex>`; a higher version at least that long, the
// next character (if any) a '-', its first four fields read as version 00's; version ff,
// uppercase hex, all-zero ids and any other shape are invalid.
std::optional<TraceParent> parse_traceparent(std::string_view value);

// `00-<trace id>-<span id>-<flags>` (version 00, 55 characters).
std::string format_traceparent(const TraceId& trace_id, const SpanId& span_id, std::uint8_t flags);

// Longest `tracestate` carried on (the spec's limit of 32 list members fits in 512 bytes as
// vendors write them); a longer one, or one with characters a header value cannot hold, is
// dropped rather than cut: a cut list could end inside a member.
inline constexpr std::size_t kMaxTraceStateBytes = 512;
bool carries_tracestate(std::string_view value);

}  // namespace wg::tracing
