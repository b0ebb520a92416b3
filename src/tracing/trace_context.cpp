#include "widget_gateway/tracing/trace_context.hpp"

#include <algorithm>

namespace wg::tracing {
namespace {

constexpr char kHex[] = "0123456789abcdef";
constexpr std::size_t kVersion00Length = 55;  // 2 + 1 + 32 + 1 + 16 + 1 + 2

// Lowercase hex only: the spec's HEXDIGLC.
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

template <std::size_t N>
bool parse_bytes(std::string_view hex, std::array<std::uint8_t, N>& out) {
  if (hex.size() != 2 * N) return false;
  for (std::size_t i = 0; i < N; ++i) {
    const int high = hex_value(hex[2 * i]);
    const int low = hex_value(hex[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    out[i] = static_cast<std::uint8_t>(high << 4 | low);
  }
  return true;
}

template <std::size_t N>
void append_bytes(std::string& out, const std::array<std::uint8_t, N>& bytes) {
  for (std::uint8_t b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xF]);
  }
}

template <std::size_t N>
bool any_set(const std::array<std::uint8_t, N>& bytes) {
  return std::any_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b != 0; });
}

}  // namespace

bool TraceId::valid() const {
  return any_set(bytes);
}
bool SpanId::valid() const {
  return any_set(bytes);
}

void append_hex(std::string& out, const TraceId& id) {
  append_bytes(out, id.bytes);
}
void append_hex(std::string& out, const SpanId& id) {
  append_bytes(out, id.bytes);
}
std::string to_hex(const TraceId& id) {
  std::string out;
  append_hex(out, id);
  return out;
}
std::string to_hex(const SpanId& id) {
  std::string out;
  append_hex(out, id);
  return out;
}
void write_hex(const TraceId& id, char* out) {
  for (std::uint8_t b : id.bytes) {
    *out++ = kHex[b >> 4];
    *out++ = kHex[b & 0xF];
  }
}

std::optional<TraceParent> parse_traceparent(std::string_view value) {
  if (value.size() < kVersion00Length) return std::nullopt;
  std::array<std::uint8_t, 1> version{};
  if (!parse_bytes(value.substr(0, 2), version) || version[0] == 0xFF) return std::nullopt;
  if (version[0] == 0x00 && value.size() != kVersion00Length) return std::nullopt;
  // A later version may append fields, always after a dash.
  if (value.size() > kVersion00Length && value[kVersion00Length] != '-') return std::nullopt;
  if (value[2] != '-' || value[35] != '-' || value[52] != '-') return std::nullopt;
  TraceParent parsed;
  std::array<std::uint8_t, 1> flags{};
  if (!parse_bytes(value.substr(3, 32), parsed.trace_id.bytes) ||
      !parse_bytes(value.substr(36, 16), parsed.parent_id.bytes) ||
      !parse_bytes(value.substr(53, 2), flags)) {
    return std::nullopt;
  }
  if (!parsed.trace_id.valid() || !parsed.parent_id.valid()) return std::nullopt;
  parsed.flags = flags[0];
  return parsed;
}

std::string format_traceparent(const TraceId& trace_id, const SpanId& span_id, std::uint8_t flags) {
  std::string out;
  out.reserve(kVersion00Length);
  out += "00-";
  append_hex(out, trace_id);
  out.push_back('-');
  append_hex(out, span_id);
  out.push_back('-');
  out.push_back(kHex[flags >> 4]);
  out.push_back(kHex[flags & 0xF]);
  return out;
}

bool carries_tracestate(std::string_view value) {
  if (value.empty() || value.size() > kMaxTraceStateBytes) return false;
  // Printable ASCII, spaces and tabs: what the spec's list members and OWS are made of.
  return std::all_of(value.begin(), value.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u >= 0x20 && u < 0x7F) || c == '\t';
  });
}

}  // namespace wg::tracing
