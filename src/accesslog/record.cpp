#include "widget_gateway/accesslog/record.hpp"

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "widget_gateway/common/json_writer.hpp"

namespace wg::accesslog {

namespace {

bool continuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

// Cuts `text` to at most kMaxFieldBytes without splitting a UTF-8 sequence.
std::string_view bounded(std::string_view text) {
  if (text.size() <= kMaxFieldBytes) return text;
  std::size_t n = kMaxFieldBytes;
  for (int k = 0; k < 3 && n > 0 && continuation(static_cast<unsigned char>(text[n])); ++k) --n;
  return text.substr(0, n);
}

// A field as a JSON string: bounded here, escaped (and made valid UTF-8) by the one writer.
void append_field(std::string& out, std::string_view raw) {
  json::append_string(out, bounded(raw));
}

// A field, or null when it is empty.
void append_nullable(std::string& out, std::string_view raw) {
  if (raw.empty()) {
    out += "null";
  } else {
    append_field(out, raw);
  }
}

// Milliseconds with three decimals; null for what JSON cannot hold or a clock gone backwards.
void append_ms(std::string& out, double ms) {
  if (!(ms >= 0.0 && ms < 1e15)) {
    out += "null";
    return;
  }
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, ms, std::chars_format::fixed, 3);
  if (ec != std::errc{}) {
    out += "null";
    return;
  }
  out.append(buf, end);
}

void append_unsigned(std::string& out, std::uint64_t value) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, ec == std::errc{} ? end : buf);
}

}  // namespace

void append_time(std::string& out, WallTime time) {
  using namespace std::chrono;
  const auto ms = floor<milliseconds>(time);
  const auto second = floor<seconds>(ms);
  // Calendar arithmetic and formatting once per second per thread; the milliseconds are
  // appended by hand. Every request of a busy gateway passes here.
  thread_local seconds::rep cached_second = std::numeric_limits<seconds::rep>::min();
  thread_local char prefix[32];
  thread_local std::size_t prefix_length = 0;
  if (second.time_since_epoch().count() != cached_second) {
    const auto day = floor<days>(second);
    const year_month_day ymd{day};
    const hh_mm_ss hms{second - day};
    const int n = std::snprintf(
        prefix, sizeof prefix, "%04d-%02u-%02uT%02d:%02d:%02d.", static_cast<int>(ymd.year()),
        static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
        static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
        static_cast<int>(hms.seconds().count()));
    prefix_length = n > 0 && static_cast<std::size_t>(n) < sizeof prefix ? n : 0;
    cached_second = second.time_since_epoch().count();
  }
  out.append(prefix, prefix_length);
  const auto millis = static_cast<int>((ms - second).count());
  const char digits[4] = {static_cast<char>('0' + millis / 100),
                          static_cast<char>('0' + millis / 10 % 10),
                          static_cast<char>('0' + millis % 10), 'Z'};
  out.append(digits, 4);
}

std::string counts_json(const api::WidgetSummary& widget) {
  std::string out = "{\"total\":";
  append_unsigned(out, widget.total_review_amount);
  out += ",\"reviewAmount\":{";
  for (std::size_t i = 0; i < widget.review_amount.size(); ++i) {
    if (i > 0) out.push_back(',');
    append_field(out, widget.review_amount[i].first);
    out.push_back(':');
    append_unsigned(out, widget.review_amount[i].second);
  }
  out += "},\"sources\":[";
  for (std::size_t i = 0; i < widget.source_types.size(); ++i) {
    if (i > 0) out.push_back(',');
    append_field(out, widget.source_types[i]);
  }
  out += "],\"consistent\":";
  out += widget.consistent ? "true}" : "false}";
  return out;
}

void append_line(std::string& out, const Record& r) {
  out += "{\"time\":\"";
  append_time(out, r.time);
  out += "\",\"client\":";
  append_field(out, r.client);
  out += ",\"method\":";
  append_field(out, r.method);
  out += ",\"route\":";
  append_field(out, r.route);
  out += ",\"widget\":";
  append_nullable(out, r.widget);
  out += ",\"status\":";
  append_unsigned(out, r.status);
  out += ",\"cache\":";
  append_field(out, r.cache);
  if (!r.reason.empty()) {
    out += ",\"reason\":";
    append_field(out, r.reason);
  }
  if (r.limit) {
    out += ",\"limit\":";
    append_unsigned(out, *r.limit);
    out += ",\"skip\":";
    append_unsigned(out, r.skip);
    out += ",\"type\":";
    append_nullable(out, r.type);
  }
  if (!r.counts.empty()) out.append(",\"counts\":").append(r.counts);
  if (r.sample) {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, *r.sample);
    out.append(",\"sample\":").append(buf, ec == std::errc{} ? end : buf);
  }
  out += ",\"upstream_ms\":";
  if (r.upstream_ms) {
    append_ms(out, *r.upstream_ms);
  } else {
    out += "null";
  }
  out += ",\"bytes\":";
  append_unsigned(out, r.bytes);
  out += ",\"duration_ms\":";
  append_ms(out, r.duration_ms);
  out += ",\"trace_id\":";
  append_nullable(out, r.trace_id);
  out += "}\n";
}

}  // namespace wg::accesslog
