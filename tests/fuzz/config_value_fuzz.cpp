// Fuzz target: the config value syntaxes, as an environment variable or a flag gives them.
// Input: a first line naming a config key ("cache.refresh_at"; anything else picks one), then
// the raw value.
// Invariants, for the value read by every shared parser: durations and byte sizes are exactly
// number x unit, or refused when that does not fit (computed here in 128 bits); offsets and times
// of day are exactly the documented forms; host:port and CIDRs survive their printed form;
// none accepts surrounding whitespace; every printed form reads back the same. For the key:
// setting it throws nothing but ConfigError; a set list reads back from its items joined; a
// config that validates prints (--check-config) as TOML that reads back equal; and neither an
// error nor the redacted print shows the admin token or a URL's password.

#include <arpa/inet.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "config/keys.hpp"
#include "fuzz_check.hpp"
#include "fuzz_input.hpp"
#include "secret_echo.hpp"
#include "widget_gateway/config/loader.hpp"

namespace {

namespace cfg = wg::config;
using u128 = unsigned __int128;

// "123unit" -> the number (nullopt without digits; over 30 significant digits is "too large")
// and the unit.
struct Number {
  std::optional<u128> value;
  bool too_large = false;
  std::string_view unit;
};
Number read_number(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  Number out;
  out.unit = text.substr(i);
  if (i == 0) return out;
  std::size_t first = 0;  // leading zeros add nothing
  while (first + 1 < i && text[first] == '0') ++first;
  if (i - first > 30) {
    out.too_large = true;
    out.value = 0;
    return out;
  }
  u128 value = 0;
  for (std::size_t j = first; j < i; ++j) value = value * 10 + static_cast<unsigned>(text[j] - '0');
  out.value = value;
  return out;
}

// number x unit when it is at most `max`; nullopt otherwise or for an unknown unit.
std::optional<u128> scaled(std::string_view text, std::optional<u128> (*unit_of)(std::string_view),
                           u128 max) {
  const Number number = read_number(text);
  const auto unit = unit_of(number.unit);
  if (!number.value || !unit) return std::nullopt;
  if (number.too_large) return std::nullopt;
  if (*unit != 0 && *number.value > max / *unit) return std::nullopt;
  return *number.value * *unit;
}

std::optional<u128> duration_unit(std::string_view unit) {
  if (unit == "ms") return 1;
  if (unit == "s") return 1000;
  if (unit == "m") return 60'000;
  if (unit == "h") return 3'600'000;
  if (unit == "d") return 86'400'000;
  return std::nullopt;
}

std::optional<u128> size_unit(std::string_view unit) {
  if (unit.empty() || unit == "B") return 1;
  if (unit == "KiB") return u128{1} << 10;
  if (unit == "MiB") return u128{1} << 20;
  if (unit == "GiB") return u128{1} << 30;
  if (unit == "TiB") return u128{1} << 40;
  return std::nullopt;
}

bool two_digits(std::string_view text, int& value) {
  if (text.size() != 2 || text[0] < '0' || text[0] > '9' || text[1] < '0' || text[1] > '9') {
    return false;
  }
  value = (text[0] - '0') * 10 + (text[1] - '0');
  return true;
}

std::optional<std::chrono::minutes> expected_offset(std::string_view text) {
  if (text == "Z") return std::chrono::minutes(0);
  int h = 0, m = 0;
  if (text.size() != 6 || (text[0] != '+' && text[0] != '-') || text[3] != ':' ||
      !two_digits(text.substr(1, 2), h) || !two_digits(text.substr(4, 2), m) || m > 59 ||
      h * 60 + m > 18 * 60) {
    return std::nullopt;
  }
  return std::chrono::minutes(text[0] == '-' ? -(h * 60 + m) : h * 60 + m);
}

std::optional<cfg::TimeOfDay> expected_time(std::string_view text) {
  int h = 0, m = 0;
  if (text.size() != 5 || text[2] != ':' || !two_digits(text.substr(0, 2), h) ||
      !two_digits(text.substr(3, 2), m) || h > 23 || m > 59) {
    return std::nullopt;
  }
  return cfg::TimeOfDay{h, m};
}

template <class Parse>
void check_no_surrounding_space(std::string_view text, Parse parse) {
  for (const char* space : {" ", "\t"}) {
    WG_FUZZ_CHECK(!parse(space + std::string(text)));
    WG_FUZZ_CHECK(!parse(std::string(text) + space));
  }
}

void check_parsers(std::string_view text) {
  const auto duration = cfg::parse_duration(text);
  const auto expected_ms =
      scaled(text, duration_unit, static_cast<u128>(std::numeric_limits<std::int64_t>::max()));
  WG_FUZZ_CHECK(duration.has_value() == expected_ms.has_value());
  if (duration) {
    WG_FUZZ_CHECK(static_cast<u128>(duration->count()) == *expected_ms);
    WG_FUZZ_CHECK(cfg::parse_duration(cfg::format_duration(*duration)) == duration);
  }
  check_no_surrounding_space(text, cfg::parse_duration);

  const auto bytes = cfg::parse_byte_size(text);
  const auto expected_bytes =
      scaled(text, size_unit, static_cast<u128>(std::numeric_limits<std::size_t>::max()));
  WG_FUZZ_CHECK(bytes.has_value() == expected_bytes.has_value());
  if (bytes) {
    WG_FUZZ_CHECK(static_cast<u128>(*bytes) == *expected_bytes);
    WG_FUZZ_CHECK(cfg::parse_byte_size(cfg::format_byte_size(*bytes)) == bytes);
  }
  check_no_surrounding_space(text, cfg::parse_byte_size);

  const auto offset = cfg::parse_utc_offset(text);
  WG_FUZZ_CHECK(offset == expected_offset(text));
  if (offset) WG_FUZZ_CHECK(cfg::parse_utc_offset(cfg::format_utc_offset(*offset)) == offset);

  const auto time = cfg::parse_time_of_day(text);
  WG_FUZZ_CHECK(time == expected_time(text));
  if (time) WG_FUZZ_CHECK(cfg::format_time_of_day(*time) == text);

  const auto host_port = cfg::parse_host_port(text);
  if (host_port) {
    WG_FUZZ_CHECK(!host_port->host.empty());
    WG_FUZZ_CHECK(cfg::parse_host_port(cfg::format_host_port(*host_port)) == host_port);
  }
  check_no_surrounding_space(text, cfg::parse_host_port);

  const auto cidr = cfg::parse_cidr(text);
  if (cidr) {
    const unsigned bits = cidr->v6 ? 128 : 32;
    WG_FUZZ_CHECK(cidr->prefix <= bits);
    for (unsigned bit = cidr->prefix; bit < 128; ++bit) {
      WG_FUZZ_CHECK((cidr->address[bit / 8] & (0x80u >> (bit % 8))) == 0);  // host bits cleared
    }
    char printed[INET6_ADDRSTRLEN] = {};
    WG_FUZZ_CHECK(inet_ntop(cidr->v6 ? AF_INET6 : AF_INET, cidr->address.data(), printed,
                            sizeof printed) != nullptr);
    const std::string again = std::string(printed) + "/" + std::to_string(cidr->prefix);
    WG_FUZZ_CHECK(cfg::parse_cidr(again) == cidr);
  }
  check_no_surrounding_space(text, cfg::parse_cidr);
}

// The config every key is set on: the defaults, and the one key that has none.
cfg::Config base_config() {
  cfg::Config config;
  config.upstream.base_url = "http://127.0.0.1:8081";
  return config;
}

const wg::config::detail::KeySpec& pick_key(std::string_view name) {
  const auto keys = wg::config::detail::keys();
  std::size_t hash = 0;
  for (const auto& spec : keys) {
    if (name == std::string(spec.section) + "." + std::string(spec.name)) return spec;
  }
  for (const char c : name) hash = hash * 31 + static_cast<unsigned char>(c);
  return keys[hash % keys.size()];
}

// What the loader says about `raw` as the value of `key`: its error, or the redacted print of
// the config that validated.
std::string say(const std::string& key, std::string_view raw) {
  cfg::Config config = base_config();
  try {
    cfg::apply_value(config, key, raw);
    cfg::validate(config);
  } catch (const cfg::ConfigError& e) {
    return e.what();
  }
  return cfg::to_toml(config, cfg::Secrets::redact);
}

void check_key(const wg::config::detail::KeySpec& spec, std::string_view raw) {
  const std::string key = std::string(spec.section) + "." + std::string(spec.name);
  cfg::Config config = base_config();
  try {
    cfg::apply_value(config, key, raw);
  } catch (const cfg::ConfigError& e) {
    WG_FUZZ_CHECK(std::string_view(e.what()).starts_with(key + ": "));
    return;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", key.c_str(), e.what());
    WG_FUZZ_CHECK(!"apply_value threw something else than ConfigError");
  }

  // Lists (env and flags: comma-separated, spaces around items dropped, empty items skipped)
  // hold exactly the items of the raw text.
  const std::string printed_value = spec.to_toml(config);
  if (printed_value.starts_with("[")) {
    std::string expected;
    std::string_view rest = raw;
    while (true) {
      const std::size_t comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      if (!item.empty()) {
        expected += expected.empty() ? "" : ", ";
        expected += wg::config::detail::toml_string(item);
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    WG_FUZZ_CHECK(printed_value == "[" + expected + "]");
  }

  bool valid = true;
  try {
    cfg::validate(config);
  } catch (const cfg::ConfigError& e) {
    valid = false;
    // Every message starts with the key at fault, so an operator can find it.
    bool names_a_key = false;
    for (const auto& other : wg::config::detail::keys()) {
      const std::string name = std::string(other.section) + "." + std::string(other.name);
      names_a_key = names_a_key || std::string_view(e.what()).starts_with(name);
    }
    WG_FUZZ_CHECK(names_a_key);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: validate: %s\n", key.c_str(), e.what());
    WG_FUZZ_CHECK(!"validate threw something else than ConfigError");
  }
  if (valid) {
    // What --check-config prints reads back as the same config.
    const std::string printed = cfg::to_toml(config);
    try {
      WG_FUZZ_CHECK(cfg::parse_toml(printed, "printed", base_config()) == config);
    } catch (const cfg::ConfigError& e) {
      std::fprintf(stderr, "%s\n%s\n", e.what(), printed.c_str());
      WG_FUZZ_CHECK(!"the printed config does not read back");
    }
  }

  std::optional<wg::fuzz::Span> secret;
  if (key == "admin.token") secret = wg::fuzz::Span{0, raw.size()};
  if (key == "redis.url" || key == "upstream.base_url") secret = wg::fuzz::url_password(raw);
  if (secret) {
    wg::fuzz::check_no_echo(raw, *secret, [&](std::string_view input) { return say(key, input); });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto [name, raw] = wg::fuzz::split_lines<2>(wg::fuzz::as_text(data, size));
  check_parsers(raw);
  check_key(pick_key(name), raw);
  return 0;
}
