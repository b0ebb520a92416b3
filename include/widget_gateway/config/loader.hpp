#pragma once
// Builds a Config from built-in defaults, a TOML file, WG_* environment variables and command-line
// flags, in that order of increasing precedence, then validates it. Every error is a ConfigError
// whose message starts with the config key at fault, so an operator can find it in the file.
//
// Value syntax shared by the file, the environment and flags:
//   durations   integer + unit: "500ms", "1s", "10m", "24h", "7d" ("0s" is a valid duration;
//               fractions such as "1.5h" and bare integers are rejected: say "90m")
//   byte sizes  a plain integer (bytes) or integer + binary unit: "512B", "16KiB", "256MiB",
//               "1GiB", "1TiB". Decimal units ("512KB", "1MB") are rejected because operators
//               read them as both 1000 and 1024; the error says which unit to use instead.
//   utc offsets "+03:00", "-05:30", "Z" (within +-18:00)
//   time of day "HH:MM", two digits each, 00:00..23:59
//   host:port   "127.0.0.1:8080", "[::1]:8080", "localhost:80"; port 0 = ephemeral

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "widget_gateway/config/config.hpp"

namespace wg::config {

class ConfigError : public std::runtime_error {
 public:
  using runtime_error::runtime_error;
};

enum class Action { run, help, version, check_config };

// Everything needed to rebuild the config on SIGHUP: the file is read again, the environment and
// flags captured at start are applied again on top of it.
struct Sources {
  std::optional<std::string> config_file;                        // from --config or WG_CONFIG
  std::vector<std::pair<std::string, std::string>> flag_values;  // config key -> raw value
  std::vector<std::pair<std::string, std::string>> env_values;   // config key -> raw value
};

struct Invocation {
  Action action = Action::run;
  Sources sources;
  Config config;  // built and validated for run and check_config; defaults for help and version
};

// Parses argv ("--flag value" and "--flag=value"; unknown flags and positional arguments are
// errors), picks the contract's WG_* variables out of envp (other WG_* are ignored), then, unless
// the action is help or version, builds and validates the Config. Throws ConfigError.
Invocation parse_invocation(int argc, const char* const* argv, const char* const* envp);

// defaults <- file <- env <- flags, then validate(). Used at start and again on SIGHUP (blocking
// file read: call it off the io threads). Throws ConfigError.
Config build_config(const Sources& sources);

// Applies a TOML document onto `base`. Unknown sections and keys, wrong TOML types and malformed
// values are rejected naming the key; `origin` (a file name) prefixes syntax errors. Does not run
// validate(): the file alone need not be complete (e.g. base_url may come from a flag).
Config parse_toml(std::string_view text, std::string_view origin, Config base = {});

// Sets one key ("server.listen", "quota.monthly_limit", ...) from its textual form, as given in
// an environment variable or flag. Lists are comma-separated (empty items skipped). Throws
// ConfigError.
void apply_value(Config& config, std::string_view key, std::string_view raw);

// Range and cross-field checks (base_url present, min_ttl <= max_ttl, ...). Throws ConfigError.
void validate(const Config& config);

// Whether to_toml prints admin.token. --check-config output tends to end up in CI logs.
enum class Secrets { show, redact };

// Every key in the file's format, in the documented order; parse_toml(to_toml(c)) == c. With
// Secrets::redact a set token is printed as a comment instead, so the output still parses.
std::string to_toml(const Config& config, Secrets secrets = Secrets::show);

std::string usage();

// Parsers shared with other components. Each returns nullopt on any malformed or out-of-range
// input; none accepts surrounding whitespace.
std::optional<Duration> parse_duration(std::string_view text);
std::optional<std::size_t> parse_byte_size(std::string_view text);
std::optional<std::chrono::minutes> parse_utc_offset(std::string_view text);
std::optional<TimeOfDay> parse_time_of_day(std::string_view text);
std::optional<HostPort> parse_host_port(std::string_view text);

// An IPv4 or IPv6 network, "10.0.0.0/8", "2001:db8::/32"; a bare address is a host route (/32 or
// /128). Host bits beyond the prefix are cleared, so "10.1.2.3/8" is 10.0.0.0/8. IPv4 addresses
// are stored in the first 4 bytes.
struct Cidr {
  bool v6 = false;
  std::array<std::uint8_t, 16> address{};
  unsigned prefix = 0;
  friend bool operator==(const Cidr&, const Cidr&) = default;
};
std::optional<Cidr> parse_cidr(std::string_view text);

// Inverses: largest exact unit ("90m", "1500ms", "0s"); largest exact binary unit or bytes
// ("16KiB", "1000"); "+03:00"/"-05:30"; "04:00"; "host:port" with IPv6 hosts bracketed.
std::string format_duration(Duration duration);
std::string format_byte_size(std::size_t bytes);
std::string format_utc_offset(std::chrono::minutes offset);
std::string format_time_of_day(TimeOfDay time);
std::string format_host_port(const HostPort& host_port);

}  // namespace wg::config
