#include "config/keys.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

#include "widget_gateway/common/redact.hpp"
#include "widget_gateway/common/utf8.hpp"
#include "widget_gateway/config/loader.hpp"

namespace wg::config::detail {
namespace {

// How a value that did not fit is shown in an error message.
std::string describe(const Value& value) {
  struct Visitor {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const {
      char buf[32];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
      return std::string(buf, end);
    }
    std::string operator()(const std::string& s) const {
      // Long values are cut: the message is for a log line, the key already locates the value.
      return toml_string(s.size() > 80 ? s.substr(0, 80) + "..." : s);
    }
    std::string operator()(const std::vector<std::string>&) const { return "an array of strings"; }
    std::string operator()(const OtherValue& o) const { return o.description; }
  };
  return std::visit(Visitor{}, value);
}

// The kind of a value, without the value: for secrets, whose errors must not show them.
std::string describe_kind(const Value& value) {
  struct Visitor {
    std::string operator()(bool) const { return "a boolean"; }
    std::string operator()(std::int64_t) const { return "an integer"; }
    std::string operator()(double) const { return "a float"; }
    std::string operator()(const std::string&) const { return "a string"; }
    std::string operator()(const std::vector<std::string>&) const { return "an array of strings"; }
    std::string operator()(const OtherValue& o) const { return o.description; }
  };
  return std::visit(Visitor{}, value);
}

[[noreturn]] void fail(std::string_view key, std::string_view expected, const Value& got) {
  throw ConfigError(std::string(key) + ": expected " + std::string(expected) + ", got " +
                    describe(got));
}

// A codec whose TOML form is a string parsed by `Parse`; env and flags give the same text.
template <class T, std::optional<T> (*Parse)(std::string_view), std::string (*Format)(T),
          const char* Expected>
struct TextCodec {
  static T from_raw(std::string_view raw, std::string_view key) {
    auto parsed = Parse(raw);
    if (!parsed) fail(key, Expected, std::string(raw));
    return *parsed;
  }
  static T from_value(const Value& value, std::string_view key) {
    const auto* text = std::get_if<std::string>(&value);
    if (!text) fail(key, Expected, value);
    return from_raw(*text, key);
  }
  static std::string to_toml(const T& value) { return toml_string(Format(value)); }
};

std::string format_host_port_value(HostPort hp) {
  return format_host_port(hp);
}
std::optional<LogLevel> parse_log_level(std::string_view text) {
  LogLevel level{};
  if (!wg::log::parse_level(text, level)) return std::nullopt;
  return level;
}
std::string format_log_level(LogLevel level) {
  return std::string(wg::log::to_string(level));
}

constexpr char kDurationExpected[] = R"(a duration like "500ms", "10s", "10m", "24h" or "7d")";
constexpr char kHostPortExpected[] = R"(HOST:PORT like "127.0.0.1:8080" or "[::1]:8080")";
constexpr char kTimeExpected[] = R"(a time of day "HH:MM" like "04:00")";
constexpr char kOffsetExpected[] = R"(a UTC offset like "+03:00", "-05:30" or "Z")";
constexpr char kLevelExpected[] = R"(one of "debug", "info", "warn", "error")";

using DurationCodec = TextCodec<Duration, parse_duration, format_duration, kDurationExpected>;
using HostPortCodec =
    TextCodec<HostPort, parse_host_port, format_host_port_value, kHostPortExpected>;
using TimeOfDayCodec = TextCodec<TimeOfDay, parse_time_of_day, format_time_of_day, kTimeExpected>;
using UtcOffsetCodec =
    TextCodec<std::chrono::minutes, parse_utc_offset, format_utc_offset, kOffsetExpected>;
using LogLevelCodec = TextCodec<LogLevel, parse_log_level, format_log_level, kLevelExpected>;

struct ByteSizeCodec {
  static constexpr const char* expected =
      R"(a byte size: an integer or a string like "16KiB", "256MiB", "1GiB" (binary units))";
  static std::size_t from_raw(std::string_view raw, std::string_view key) {
    auto parsed = parse_byte_size(raw);
    if (!parsed) fail(key, expected, std::string(raw));
    return *parsed;
  }
  static std::size_t from_value(const Value& value, std::string_view key) {
    if (const auto* i = std::get_if<std::int64_t>(&value)) {
      if (*i < 0) fail(key, expected, value);
      return static_cast<std::size_t>(*i);
    }
    if (const auto* text = std::get_if<std::string>(&value)) return from_raw(*text, key);
    fail(key, expected, value);
  }
  static std::string to_toml(std::size_t bytes) {
    // Integers that are not a whole number of KiB are printed bare, the rest with their unit;
    // a count beyond TOML's (signed 64-bit) integers as a string, which reads the same.
    std::string text = format_byte_size(bytes);
    bool has_unit = !text.empty() && !std::isdigit(static_cast<unsigned char>(text.back()));
    bool fits = bytes <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    return has_unit || !fits ? toml_string(text) : text;
  }
};

template <class T>
struct IntCodec {
  // A file's integers are TOML's, signed 64-bit; the environment and flags take no more, so
  // that every config read prints as a file that reads back.
  static constexpr std::uint64_t max = std::min<std::uint64_t>(
      std::numeric_limits<T>::max(), std::numeric_limits<std::int64_t>::max());
  static std::string expected() {
    return "a non-negative integer (at most " + std::to_string(max) + ")";
  }
  static T from_raw(std::string_view raw, std::string_view key) {
    std::uint64_t parsed = 0;
    auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), parsed);
    bool digits_only = !raw.empty() && std::all_of(raw.begin(), raw.end(),
                                                   [](char c) { return c >= '0' && c <= '9'; });
    if (!digits_only || ec != std::errc{} || end != raw.data() + raw.size() || parsed > max) {
      fail(key, expected(), std::string(raw));
    }
    return static_cast<T>(parsed);
  }
  static T from_value(const Value& value, std::string_view key) {
    const auto* i = std::get_if<std::int64_t>(&value);
    if (!i || *i < 0 || static_cast<std::uint64_t>(*i) > max) fail(key, expected(), value);
    return static_cast<T>(*i);
  }
  static std::string to_toml(T value) {
    // TOML integers are signed 64-bit; larger values cannot be written (nor read) as integers.
    return std::to_string(std::min<std::uint64_t>(value, std::numeric_limits<std::int64_t>::max()));
  }
};

struct NumberCodec {
  static constexpr const char* expected = "a finite number";
  static double from_raw(std::string_view raw, std::string_view key) {
    double parsed = 0;
    auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), parsed);
    if (raw.empty() || ec != std::errc{} || end != raw.data() + raw.size() ||
        !std::isfinite(parsed)) {
      fail(key, expected, std::string(raw));
    }
    return parsed;
  }
  static double from_value(const Value& value, std::string_view key) {
    if (const auto* i = std::get_if<std::int64_t>(&value)) return static_cast<double>(*i);
    const auto* d = std::get_if<double>(&value);
    if (!d || !std::isfinite(*d)) fail(key, expected, value);
    return *d;
  }
  static std::string to_toml(double value) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    std::string text(buf, end);
    // "1" would read back as an integer; keep it a float.
    if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
    return text;
  }
};

struct BoolCodec {
  static constexpr const char* expected = "true or false";
  static bool from_raw(std::string_view raw, std::string_view key) {
    if (raw == "true") return true;
    if (raw == "false") return false;
    fail(key, expected, std::string(raw));
  }
  static bool from_value(const Value& value, std::string_view key) {
    const auto* b = std::get_if<bool>(&value);
    if (!b) fail(key, expected, value);
    return *b;
  }
  static std::string to_toml(bool value) { return value ? "true" : "false"; }
};

struct StringCodec {
  static std::string from_raw(std::string_view raw, std::string_view) { return std::string(raw); }
  static std::string from_value(const Value& value, std::string_view key) {
    const auto* text = std::get_if<std::string>(&value);
    if (!text) fail(key, "a string", value);
    return *text;
  }
  static std::string to_toml(const std::string& value) { return toml_string(value); }
};

// A string that is a secret (admin.token): an error says what kind of value was given instead,
// never the value, which may well be the secret written without quotes.
struct SecretCodec : StringCodec {
  static std::string from_value(const Value& value, std::string_view key) {
    const auto* text = std::get_if<std::string>(&value);
    if (!text)
      throw ConfigError(std::string(key) + ": expected a string, got " + describe_kind(value));
    return *text;
  }
};

struct StringListCodec {
  // Environment variables and flags carry lists comma-separated, spaces around items ignored.
  // Empty items are skipped wherever they are ("a,", ",a" and "a,,b" alike), as HTTP lists do.
  static std::vector<std::string> from_raw(std::string_view raw, std::string_view) {
    std::vector<std::string> items;
    while (true) {
      auto comma = raw.find(',');
      auto item = raw.substr(0, comma);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      if (!item.empty()) items.emplace_back(item);
      if (comma == std::string_view::npos) return items;
      raw.remove_prefix(comma + 1);
    }
  }
  static std::vector<std::string> from_value(const Value& value, std::string_view key) {
    const auto* list = std::get_if<std::vector<std::string>>(&value);
    if (!list) fail(key, "an array of strings", value);
    return *list;
  }
  static std::string to_toml(const std::vector<std::string>& value) {
    std::string out = "[";
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (i != 0) out += ", ";
      out += toml_string(value[i]);
    }
    return out + "]";
  }
};

template <class Codec, auto Section, auto Member>
constexpr KeySpec make_key(std::string_view section, std::string_view name) {
  return KeySpec{
      section,
      name,
      [](Config& c, const Value& v, std::string_view key) {
        (c.*Section).*Member = Codec::from_value(v, key);
      },
      [](Config& c, std::string_view raw, std::string_view key) {
        (c.*Section).*Member = Codec::from_raw(raw, key);
      },
      [](const Config& c) -> std::string { return Codec::to_toml((c.*Section).*Member); },
  };
}

// The section and key names are spelled once, as the struct members they set.
#define WG_KEY(codec, section, name) \
  make_key<codec, &Config::section, &decltype(Config::section)::name>(#section, #name)

const KeySpec kKeys[] = {
    WG_KEY(HostPortCodec, server, listen),
    WG_KEY(IntCodec<unsigned>, server, threads),
    WG_KEY(IntCodec<std::size_t>, server, max_connections),
    WG_KEY(DurationCodec, server, header_timeout),
    WG_KEY(DurationCodec, server, idle_timeout),
    WG_KEY(DurationCodec, server, drain_timeout),
    WG_KEY(ByteSizeCodec, server, max_header_bytes),
    WG_KEY(ByteSizeCodec, server, max_target_bytes),
    WG_KEY(StringCodec, server, http1_parser),
    WG_KEY(StringCodec, server, tls_cert_file),
    WG_KEY(StringCodec, server, tls_key_file),
    WG_KEY(IntCodec<std::uint32_t>, server, h2_max_concurrent_streams),
    WG_KEY(ByteSizeCodec, server, max_pending_output_bytes),
    WG_KEY(ByteSizeCodec, server, max_pending_output_bytes_per_connection),
    WG_KEY(ByteSizeCodec, server, min_send_rate),
    WG_KEY(DurationCodec, server, send_rate_interval),
    WG_KEY(BoolCodec, server, public_readyz_detail),

    WG_KEY(StringCodec, upstream, base_url),
    WG_KEY(DurationCodec, upstream, connect_timeout),
    WG_KEY(DurationCodec, upstream, timeout),
    WG_KEY(IntCodec<std::size_t>, upstream, pool_size),
    WG_KEY(IntCodec<std::size_t>, upstream, max_in_flight),
    WG_KEY(IntCodec<std::size_t>, upstream, max_queued),
    WG_KEY(StringCodec, upstream, ca_file),
    WG_KEY(ByteSizeCodec, upstream, max_body_bytes),
    WG_KEY(IntCodec<unsigned>, upstream, circuit_failures),
    WG_KEY(DurationCodec, upstream, circuit_open_for),

    WG_KEY(StringCodec, redis, url),
    WG_KEY(DurationCodec, redis, timeout),
    WG_KEY(DurationCodec, redis, reconnect_max),
    WG_KEY(StringCodec, redis, password_file),
    WG_KEY(StringCodec, redis, tls_ca_file),
    WG_KEY(StringCodec, redis, tls_cert_file),
    WG_KEY(StringCodec, redis, tls_key_file),
    WG_KEY(StringCodec, redis, tls_server_name),
    WG_KEY(StringCodec, redis, mode),
    WG_KEY(StringListCodec, redis, nodes),
    WG_KEY(StringCodec, redis, sentinel_master),
    WG_KEY(StringCodec, redis, key_prefix),

    WG_KEY(TimeOfDayCodec, cache, refresh_at),
    WG_KEY(UtcOffsetCodec, cache, utc_offset),
    WG_KEY(DurationCodec, cache, refresh_lag),
    WG_KEY(DurationCodec, cache, min_ttl),
    WG_KEY(DurationCodec, cache, max_ttl),
    WG_KEY(DurationCodec, cache, jitter),
    WG_KEY(DurationCodec, cache, stale_while_revalidate),
    WG_KEY(DurationCodec, cache, stale_if_error),
    WG_KEY(DurationCodec, cache, negative_ttl),
    WG_KEY(DurationCodec, cache, max_age_cap),
    WG_KEY(DurationCodec, cache, negative_max_age),
    WG_KEY(ByteSizeCodec, cache, l1_max_bytes),
    WG_KEY(BoolCodec, cache, derive_pages),
    WG_KEY(DurationCodec, cache, confirm_after),
    WG_KEY(BoolCodec, cache, empty_reviews_on_error),
    WG_KEY(BoolCodec, cache, prefetch),
    WG_KEY(NumberCodec, cache, prefetch_share),
    WG_KEY(DurationCodec, cache, prefetch_window),
    WG_KEY(IntCodec<std::uint64_t>, cache, prefetch_min_requests),

    WG_KEY(IntCodec<std::uint64_t>, quota, monthly_limit),
    WG_KEY(UtcOffsetCodec, quota, utc_offset),
    WG_KEY(NumberCodec, quota, economy_at),
    WG_KEY(BoolCodec, quota, pacing),
    WG_KEY(NumberCodec, quota, unknown_share),
    WG_KEY(IntCodec<std::uint64_t>, quota, widget_slack),
    WG_KEY(DurationCodec, quota, widget_pace),
    WG_KEY(StringCodec, quota, state_file),

    WG_KEY(StringListCodec, cors, allowed_origins),
    WG_KEY(StringListCodec, cors, allowed_headers),
    WG_KEY(DurationCodec, cors, max_age),
    WG_KEY(BoolCodec, cors, timing_allow_origin),

    WG_KEY(StringCodec, access, widget_pattern),
    WG_KEY(StringListCodec, access, widgets),
    WG_KEY(NumberCodec, access, per_ip_rate),
    WG_KEY(IntCodec<std::uint32_t>, access, per_ip_burst),
    WG_KEY(StringListCodec, access, trusted_proxies),
    WG_KEY(NumberCodec, access, unknown_per_ip_rate),
    WG_KEY(IntCodec<std::uint32_t>, access, unknown_per_ip_burst),

    WG_KEY(HostPortCodec, admin, listen),
    WG_KEY(SecretCodec, admin, token),
    WG_KEY(StringCodec, admin, tls_cert_file),
    WG_KEY(StringCodec, admin, tls_key_file),

    WG_KEY(LogLevelCodec, log, level),
    WG_KEY(StringCodec, log, access_log),
    WG_KEY(NumberCodec, log, sample),

    WG_KEY(StringCodec, tracing, otlp_endpoint),
    WG_KEY(NumberCodec, tracing, sample),
    WG_KEY(StringCodec, tracing, service_name),
    WG_KEY(IntCodec<std::size_t>, tracing, max_queued_spans),
    WG_KEY(DurationCodec, tracing, export_timeout),
};

#undef WG_KEY

constexpr std::string_view kSections[] = {"server", "upstream", "redis", "cache", "quota",
                                          "cors",   "access",   "admin", "log",   "tracing"};

// Keys earlier versions accepted, with why they went: a file that still sets one is refused
// with that reason rather than as a typo.
struct RemovedKey {
  std::string_view section;
  std::string_view name;
  std::string_view why;
};
constexpr RemovedKey kRemovedKeys[] = {
    {"server", "pipeline_limit",
     "HTTP/1.1 answers are written one at a time, so there is nothing for it to limit"},
};

}  // namespace

std::span<const std::string_view> sections() {
  return kSections;
}
std::span<const KeySpec> keys() {
  return kKeys;
}

bool is_section(std::string_view section) {
  return std::find(std::begin(kSections), std::end(kSections), section) != std::end(kSections);
}

const KeySpec* find_key(std::string_view section, std::string_view name) {
  for (const auto& spec : kKeys) {
    if (spec.section == section && spec.name == name) return &spec;
  }
  return nullptr;
}

std::string unknown_key_message(std::string_view section, std::string_view name) {
  std::string key(section);
  if (!section.empty()) key += '.';
  key += name;
  for (const auto& removed : kRemovedKeys) {
    if (removed.section == section && removed.name == name) {
      return key + ": this config key was removed (" + std::string(removed.why) +
             "); delete it from the configuration";
    }
  }
  return key + ": unknown config key";
}

std::string toml_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (u < 0x20 || u == 0x7F) {
          static constexpr char hex[] = "0123456789ABCDEF";
          out += "\\u00";
          out.push_back(hex[u >> 4]);
          out.push_back(hex[u & 0xF]);
        } else {
          out.push_back(c);
        }
    }
  }
  return out + "\"";
}

}  // namespace wg::config::detail

namespace wg::config {

void apply_value(Config& config, std::string_view key, std::string_view raw) {
  auto dot = key.find('.');
  const detail::KeySpec* spec = dot == std::string_view::npos
                                    ? nullptr
                                    : detail::find_key(key.substr(0, dot), key.substr(dot + 1));
  if (!spec) {
    throw ConfigError(dot == std::string_view::npos
                          ? detail::unknown_key_message({}, key)
                          : detail::unknown_key_message(key.substr(0, dot), key.substr(dot + 1)));
  }
  // A file can only hold UTF-8 (TOML), and --check-config prints what was read as a file: an
  // environment variable or a flag gives text, as the file does.
  if (!utf8::valid(raw)) throw ConfigError(std::string(key) + ": not valid UTF-8 text");
  spec->from_raw(config, raw, key);
}

std::vector<std::string> changed_keys(const Config& before, const Config& after) {
  // Compared as printed: one comparison for every kind of value, and what the file would show.
  std::vector<std::string> changed;
  for (const auto& spec : detail::keys()) {
    if (spec.to_toml(before) != spec.to_toml(after)) {
      changed.push_back(std::string(spec.section) + "." + std::string(spec.name));
    }
  }
  return changed;
}

std::string to_toml(const Config& config, Secrets secrets) {
  std::string out = "# widget-gateway effective configuration\n";
  if (!config.config_file.empty()) {
    std::string file = config.config_file;
    std::replace(file.begin(), file.end(), '\n', ' ');
    out += "# file: " + file + "\n";
  }
  for (auto section : detail::sections()) {
    out += "\n[";
    out += section;
    out += "]\n";
    for (const auto& spec : detail::keys()) {
      if (spec.section != section) continue;
      bool hide = secrets == Secrets::redact && section == "admin" && spec.name == "token" &&
                  !config.admin.token.empty();
      if (hide) {
        out += "# token = (set, redacted)\n";
        continue;
      }
      out += spec.name;
      out += " = ";
      // Printed, and such output ends up in CI logs: a URL's password is shown as "***".
      out += secrets == Secrets::redact ? redact(spec.to_toml(config)) : spec.to_toml(config);
      out += '\n';
    }
  }
  return out;
}

}  // namespace wg::config
