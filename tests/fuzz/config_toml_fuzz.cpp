// Fuzz target: a whole configuration file through the loader (TOML syntax, the key table,
// validation, --check-config's print). Input: the file.
// Invariants: nothing but ConfigError comes out; a file that reads prints (to_toml) as TOML that
// reads back equal, and its redacted print still reads; a config that validates can serve every
// widget it allowlists (the serving side's own WidgetPolicy says so); no error and no redacted
// print shows the admin token or a URL's password, found here in the text wherever a "token", "url"
// or "base_url" key is given a value.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "fuzz_input.hpp"
#include "secret_echo.hpp"
#include "widget_gateway/api/widget_policy.hpp"
#include "widget_gateway/config/loader.hpp"

namespace {

namespace cfg = wg::config;
using wg::fuzz::Span;

constexpr std::string_view kOrigin = "fuzz.toml";

// The one key no file needs to set when the command line gives it.
cfg::Config base_config() {
  cfg::Config config;
  config.upstream.base_url = "http://127.0.0.1:8081";
  return config;
}

// A custom access.widget_pattern is the operator's own regular expression, and std::regex
// backtracks: matching a long id against "(a*)*b" takes exponential time, which is the
// operator's to avoid. Allowlisted ids matched against a pattern that repeats anything are
// kept short here, so that such a pattern is still read and validated without stalling the run.
void keep_custom_pattern_matches_short(cfg::Config& config) {
  const std::string& pattern = config.access.widget_pattern;
  if (pattern == wg::api::kDefaultWidgetPattern ||
      pattern.find_first_of("*+?{") == std::string::npos) {
    return;
  }
  std::erase_if(config.access.widgets, [](const std::string& id) { return id.size() > 16; });
}

// Reads and validates a file as the gateway does; throws ConfigError.
cfg::Config load(std::string_view text) {
  cfg::Config config = cfg::parse_toml(text, kOrigin, base_config());
  keep_custom_pattern_matches_short(config);
  cfg::validate(config);
  return config;
}

// What the loader says about a file: its error, or the redacted print of what it read.
std::string say(std::string_view text) {
  try {
    return cfg::to_toml(load(text), cfg::Secrets::redact);
  } catch (const cfg::ConfigError& e) {
    return e.what();
  }
}

void check_printed(const cfg::Config& config) {
  const std::string printed = cfg::to_toml(config);
  try {
    WG_FUZZ_CHECK(cfg::parse_toml(printed, "printed", base_config()) == config);
    cfg::parse_toml(cfg::to_toml(config, cfg::Secrets::redact), "printed", base_config());
  } catch (const cfg::ConfigError& e) {
    std::fprintf(stderr, "%s\n%s\n", e.what(), printed.c_str());
    WG_FUZZ_CHECK(!"the printed config does not read back");
  }
}

// Validation refuses allowlisted ids the gateway would then refuse to serve.
void check_widgets_servable(const cfg::Config& config) {
  const wg::api::WidgetPolicy policy(config.access.widget_pattern, config.access.widgets);
  for (const auto& id : config.access.widgets) {
    if (!policy.allows(id)) {
      std::fprintf(stderr, "allowlisted, never served: \"%s\" (pattern \"%s\")\n", id.c_str(),
                   config.access.widget_pattern.c_str());
      WG_FUZZ_CHECK(!"validation passed an allowlisted id that cannot be served");
    }
  }
}

// The value given to a key that ends at `at`, when an '=' follows: a quoted string's contents,
// or a bare value up to a delimiter. Generous on purpose: any text an operator may have meant as
// the secret.
std::optional<Span> value_after(std::string_view text, std::size_t at) {
  auto skip_blanks = [&] {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
  };
  skip_blanks();
  if (at >= text.size() || text[at] != '=') return std::nullopt;
  ++at;
  skip_blanks();
  if (at >= text.size()) return std::nullopt;
  const char quote = text[at];
  if (quote == '"' || quote == '\'') {
    const std::size_t begin = ++at;
    while (at < text.size() && text[at] != quote && text[at] != '\n') {
      at += quote == '"' && text[at] == '\\' ? 2 : 1;
    }
    return Span{begin, std::min(at, text.size()) - begin};
  }
  const std::size_t begin = at;
  while (at < text.size() &&
         std::string_view(" \t\r\n,}]#").find(text[at]) == std::string_view::npos) {
    ++at;
  }
  return Span{begin, at - begin};
}

bool bare_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// Where the file gives secrets: the value of every key called "token" (the admin token), and the
// password in the value of every "url" or "base_url" (redis.url, upstream.base_url), wherever the
// key stands (under a table, dotted, in an inline table, bare or quoted). Keys are looked for
// outside strings and comments only, by a small scan of TOML's lexical structure.
std::vector<Span> secrets_in(std::string_view text) {
  std::vector<Span> secrets;
  auto note_key = [&](std::string_view key, std::size_t after) {
    const bool token = key == "token";
    if (!token && key != "url" && key != "base_url") return;
    const auto value = value_after(text, after);
    if (!value) return;
    if (token) {
      secrets.push_back(*value);
    } else if (auto password = wg::fuzz::url_password(text.substr(value->offset, value->size))) {
      secrets.push_back({value->offset + password->offset, password->size});
    }
  };
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '#') {  // a comment, to the end of its line
      i = std::min(text.find('\n', i), text.size());
    } else if (c == '"' || c == '\'') {
      const std::string triple(3, c);
      if (text.substr(i, 3) == triple) {  // a multi-line string
        i = std::min(text.find(triple, i + 3), text.size() - 3) + 3;
        continue;
      }
      std::size_t end = i + 1;
      while (end < text.size() && text[end] != c && text[end] != '\n') {
        end += c == '"' && text[end] == '\\' ? 2 : 1;
      }
      if (end < text.size() && text[end] == c) note_key(text.substr(i + 1, end - i - 1), end + 1);
      i = end + 1;
    } else if (bare_key_char(c)) {
      std::size_t end = i;
      while (end < text.size() && bare_key_char(text[end])) ++end;
      note_key(text.substr(i, end - i), end);
      i = end;
    } else {
      ++i;
    }
  }
  return secrets;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = wg::fuzz::as_text(data, size);
  try {
    check_printed(cfg::parse_toml(text, kOrigin, base_config()));
    check_widgets_servable(load(text));
  } catch (const cfg::ConfigError& e) {
    WG_FUZZ_CHECK(*e.what() != '\0');
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    WG_FUZZ_CHECK(!"the loader threw something else than ConfigError");
  }

  for (const Span secret : secrets_in(text)) wg::fuzz::check_no_echo(text, secret, say);
  return 0;
}
