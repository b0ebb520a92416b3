// Parsers and formatters for the value syntaxes the config uses (durations, byte sizes, offsets,
// times of day, host:port, CIDR). Strict on purpose: a config value that is almost right is
// rejected at start-up rather than silently read as something else.
#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>

#include "widget_gateway/config/loader.hpp"

namespace wg::config {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A run of ASCII digits (no sign, no spaces) as an unsigned value; nullopt on overflow.
std::optional<std::uint64_t> parse_digits(std::string_view text) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), is_digit)) return std::nullopt;
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Splits "123unit" into its leading digits and the rest.
std::pair<std::string_view, std::string_view> split_number(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && is_digit(text[i])) ++i;
  return {text.substr(0, i), text.substr(i)};
}

std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b, std::uint64_t max) {
  if (b != 0 && a > max / b) return std::nullopt;
  return a * b;
}

// `text` as a C string for inet_pton, which would stop at an embedded NUL and so accept
// whatever follows it; nullopt when there is one.
std::optional<std::string> c_string(std::string_view text) {
  if (text.find('\0') != std::string_view::npos) return std::nullopt;
  return std::string(text);
}

bool valid_hostname(std::string_view host) {
  if (host.empty() || host.size() > 253) return false;
  bool numeric = true;  // digits and dots only: must then be a well-formed IPv4 address
  for (char c : host) {
    bool alnum = is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alnum && c != '.' && c != '-' && c != '_') return false;
    if (!is_digit(c) && c != '.') numeric = false;
  }
  if (numeric) {
    in_addr addr{};
    return inet_pton(AF_INET, std::string(host).c_str(), &addr) == 1;
  }
  return host.front() != '.' && host.front() != '-';
}

std::string two_digits(long value) {
  std::string out;
  out.push_back(static_cast<char>('0' + value / 10 % 10));
  out.push_back(static_cast<char>('0' + value % 10));
  return out;
}

}  // namespace

std::optional<Duration> parse_duration(std::string_view text) {
  auto [number, unit] = split_number(text);
  auto value = parse_digits(number);
  if (!value) return std::nullopt;
  std::uint64_t unit_ms = 0;
  if (unit == "ms") {
    unit_ms = 1;
  } else if (unit == "s") {
    unit_ms = 1000;
  } else if (unit == "m") {
    unit_ms = 60 * 1000;
  } else if (unit == "h") {
    unit_ms = 3600 * 1000;
  } else if (unit == "d") {
    unit_ms = 24 * 3600 * 1000;
  } else {
    return std::nullopt;
  }
  auto ms = checked_mul(*value, unit_ms,
                        static_cast<std::uint64_t>(std::numeric_limits<Duration::rep>::max()));
  if (!ms) return std::nullopt;
  return Duration(static_cast<Duration::rep>(*ms));
}

std::string format_duration(Duration duration) {
  auto ms = duration.count();
  if (ms == 0) return "0s";
  struct Unit {
    const char* name;
    std::int64_t ms;
  };
  static constexpr Unit units[] = {
      {"d", 24 * 3600 * 1000}, {"h", 3600 * 1000}, {"m", 60 * 1000}, {"s", 1000}, {"ms", 1}};
  for (const auto& unit : units) {
    if (ms % unit.ms == 0) return std::to_string(ms / unit.ms) + unit.name;
  }
  return std::to_string(ms) + "ms";  // unreachable: every count is a multiple of 1 ms
}

std::optional<std::size_t> parse_byte_size(std::string_view text) {
  auto [number, unit] = split_number(text);
  auto value = parse_digits(number);
  if (!value) return std::nullopt;
  std::uint64_t multiplier = 0;
  if (unit.empty() || unit == "B") {
    multiplier = 1;
  } else if (unit == "KiB") {
    multiplier = 1ull << 10;
  } else if (unit == "MiB") {
    multiplier = 1ull << 20;
  } else if (unit == "GiB") {
    multiplier = 1ull << 30;
  } else if (unit == "TiB") {
    multiplier = 1ull << 40;
  } else {
    return std::nullopt;
  }
  auto bytes = checked_mul(*value, multiplier, std::numeric_limits<std::size_t>::max());
  if (!bytes) return std::nullopt;
  return static_cast<std::size_t>(*bytes);
}

std::string format_byte_size(std::size_t bytes) {
  if (bytes == 0) return "0";
  static constexpr std::pair<const char*, int> units[] = {
      {"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}};
  for (const auto& [name, shift] : units) {
    std::size_t unit = std::size_t{1} << shift;
    if (bytes % unit == 0) return std::to_string(bytes / unit) + name;
  }
  return std::to_string(bytes);
}

std::optional<std::chrono::minutes> parse_utc_offset(std::string_view text) {
  if (text == "Z") return std::chrono::minutes(0);
  if (text.size() != 6 || (text[0] != '+' && text[0] != '-') || text[3] != ':') {
    return std::nullopt;
  }
  auto hours = parse_digits(text.substr(1, 2));
  auto minutes = parse_digits(text.substr(4, 2));
  if (!hours || !minutes || *minutes > 59) return std::nullopt;
  long total = static_cast<long>(*hours * 60 + *minutes);
  if (total > 18 * 60) return std::nullopt;
  return std::chrono::minutes(text[0] == '-' ? -total : total);
}

std::string format_utc_offset(std::chrono::minutes offset) {
  long total = static_cast<long>(offset.count());
  std::string out(1, total < 0 ? '-' : '+');
  if (total < 0) total = -total;
  out += two_digits(total / 60);
  out += ':';
  out += two_digits(total % 60);
  return out;
}

std::optional<TimeOfDay> parse_time_of_day(std::string_view text) {
  if (text.size() != 5 || text[2] != ':') return std::nullopt;
  auto hour = parse_digits(text.substr(0, 2));
  auto minute = parse_digits(text.substr(3, 2));
  if (!hour || !minute || *hour > 23 || *minute > 59) return std::nullopt;
  return TimeOfDay{static_cast<int>(*hour), static_cast<int>(*minute)};
}

std::string format_time_of_day(TimeOfDay time) {
  return two_digits(time.hour) + ":" + two_digits(time.minute);
}

std::optional<HostPort> parse_host_port(std::string_view text) {
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return std::nullopt;
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    in6_addr addr{};
    const auto address = c_string(host);
    if (!address || inet_pton(AF_INET6, address->c_str(), &addr) != 1) return std::nullopt;
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    // A bare IPv6 address would be ambiguous ("::1:80"); it has to be bracketed.
    if (!valid_hostname(host)) return std::nullopt;
  }
  if (port.size() > 5) return std::nullopt;
  auto number = parse_digits(port);
  if (!number || *number > 65535) return std::nullopt;
  return HostPort{std::string(host), static_cast<std::uint16_t>(*number)};
}

std::string format_host_port(const HostPort& host_port) {
  bool v6 = host_port.host.find(':') != std::string::npos;
  return (v6 ? "[" + host_port.host + "]" : host_port.host) + ":" + std::to_string(host_port.port);
}

std::optional<Cidr> parse_cidr(std::string_view text) {
  auto slash = text.find('/');
  const auto address = c_string(text.substr(0, slash));
  if (!address) return std::nullopt;
  Cidr cidr;
  cidr.v6 = address->find(':') != std::string::npos;
  int family = cidr.v6 ? AF_INET6 : AF_INET;
  if (inet_pton(family, address->c_str(), cidr.address.data()) != 1) return std::nullopt;
  unsigned bits = cidr.v6 ? 128 : 32;
  cidr.prefix = bits;
  if (slash != std::string_view::npos) {
    auto prefix_text = text.substr(slash + 1);
    if (prefix_text.size() > 3) return std::nullopt;
    auto prefix = parse_digits(prefix_text);
    if (!prefix || *prefix > bits) return std::nullopt;
    cidr.prefix = static_cast<unsigned>(*prefix);
  }
  for (unsigned i = 0; i < bits / 8; ++i) {
    unsigned kept = cidr.prefix > i * 8 ? std::min(8u, cidr.prefix - i * 8) : 0;
    cidr.address[i] &= static_cast<std::uint8_t>(0xFF00u >> kept);
  }
  return cidr;
}

}  // namespace wg::config
