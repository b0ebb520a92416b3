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
  // An error about one key's value, e.g. from validate(): build_config() adds where that value
  // was set (the file's line, a flag or a variable), as it does for syntax errors.
  ConfigError(std::string key, const std::string& message)
      : runtime_error(message), key_(std::move(key)) {}
  // "section.name"; empty when the error is about no one key.
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

enum class Action { run, help, version, check_config, what_if };

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
  // WG_* variables of the environment that are none of known_environment(): ignored, and worth
  // a warning (WG_REDIS_URL for WG_REDIS). Names only: a value may be a secret.
  std::vector<std::string> unknown_environment;
  // --what-if: the access logs to replay (at least one).
  std::vector<std::string> what_if_logs;
};

// Parses argv ("--flag value" and "--flag=value"; unknown flags and positional arguments are
// errors), picks the contract's WG_* variables out of envp (other WG_* are ignored), then, unless
// the action is help or version, builds and validates the Config. Throws ConfigError.
Invocation parse_invocation(int argc, const char* const* argv, const char* const* envp);

// Every WG_* variable the gateway reads, in --help order.
std::vector<std::string> known_environment();

// A Config as build_config() layers it, and what the layering hides from the file.
struct BuiltConfig {
  Config config;
  // Keys the file sets that a flag or a WG_* variable overrides, so that editing them in the
  // file does nothing: "quota.monthly_limit (set by --quota-limit)", in the file's order.
  std::vector<std::string> overridden;
};

// defaults <- file <- env <- flags, then validate(). Used at start and again on SIGHUP (blocking
// file read: call it off the io threads). Throws ConfigError; one from validate() says where the
// value at fault was set: "(FILE:LINE:COLUMN)", "(from --flag)" or "(from WG_VARIABLE)".
BuiltConfig build_config(const Sources& sources);

// Where a config file sets one key.
struct KeyPosition {
  std::string key;    // "section.name"
  std::string where;  // "FILE:LINE:COLUMN", as syntax errors give it
};

// Applies a TOML document onto `base`. Unknown sections and keys, wrong TOML types and malformed
// values are rejected naming the key; `origin` (a file name) prefixes syntax errors. Does not run
// validate(): the file alone need not be complete (e.g. base_url may come from a flag). With
// `positions`, appends where the document sets each key, in the document's order.
Config parse_toml(std::string_view text, std::string_view origin, Config base = {},
                  std::vector<KeyPosition>* positions = nullptr);

// Sets one key ("server.listen", "quota.monthly_limit", ...) from its textual form, as given in
// an environment variable or flag. Lists are comma-separated (empty items skipped). Throws
// ConfigError.
void apply_value(Config& config, std::string_view key, std::string_view raw);

// Range and cross-field checks (base_url present, min_ttl <= max_ttl, jitter <= max_ttl, ...).
// Throws ConfigError, with key() set when one key is at fault.
void validate(const Config& config);

// Whether to_toml prints admin.token. --check-config output tends to end up in CI logs.
enum class Secrets { show, redact };

// Every key in the file's format, in the documented order; parse_toml(to_toml(c)) == c. With
// Secrets::redact a set token is printed as a comment instead, so the output still parses.
std::string to_toml(const Config& config, Secrets secrets = Secrets::show);

// The keys ("section.name", in documented order) whose values differ between two configs.
std::vector<std::string> changed_keys(const Config& before, const Config& after);

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
