// Command line and environment: which flags and WG_* variables exist, and how they layer over
// the file (flags > environment > file > defaults).
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "widget_gateway/config/loader.hpp"

namespace wg::config {
namespace {

// One overridable key: its flag, its environment variable, and its line in --help.
struct Option {
  std::string_view flag;
  std::string_view env;
  std::string_view key;
  std::string_view meta;
  std::string_view help;
};

constexpr Option kOptions[] = {
    {"--listen", "WG_LISTEN", "server.listen", "HOST:PORT",
     "public listener (default 127.0.0.1:8080)"},
    {"--upstream", "WG_UPSTREAM", "upstream.base_url", "URL",
     "upstream base URL, http:// or https://, may carry a path prefix (required)"},
    {"--redis", "WG_REDIS", "redis.url", "URL",
     "redis[s]://[[user]:password@]host:port/db (default redis://127.0.0.1:6379/0)"},
    {"--quota-limit", "WG_QUOTA_LIMIT", "quota.monthly_limit", "N",
     "upstream requests per month; 0 = unlimited, still counted (default 0)"},
    {"--threads", "WG_THREADS", "server.threads", "N", "io threads; 0 = CPU cores (default 0)"},
    {"--admin-listen", "WG_ADMIN_LISTEN", "admin.listen", "HOST:PORT",
     "admin listener (default 127.0.0.1:9090)"},
    {"--admin-token", "WG_ADMIN_TOKEN", "admin.token", "T",
     "bearer token for /admin/*; none = admin endpoints disabled"},
    {"--log-level", "WG_LOG_LEVEL", "log.level", "L", "debug, info, warn or error (default info)"},
    {"--quota-state-file", "WG_QUOTA_STATE_FILE", "quota.state_file", "FILE",
     "quota lease a stop without Redis leaves; one file per instance (default none)"},
    {"--trusted-proxies", "WG_TRUSTED_PROXIES", "access.trusted_proxies", "CIDRS",
     "comma-separated proxies whose X-Forwarded-For is believed (default none)"},
};

constexpr std::string_view kConfigFlag = "--config";
constexpr std::string_view kConfigEnv = "WG_CONFIG";
// Read by the Redis client's settings (redis::kPasswordEnv), not a config key: the password
// stays out of the process list and of every printed config.
constexpr std::string_view kRedisPasswordEnv = "WG_REDIS_PASSWORD";
// A config file is a few KiB; anything this large is a wrong path (a log, a binary).
constexpr std::size_t kMaxConfigFileBytes = 1024 * 1024;

const Option* option_for_flag(std::string_view flag) {
  for (const auto& option : kOptions) {
    if (option.flag == flag) return &option;
  }
  return nullptr;
}

const Option* option_for_env(std::string_view env) {
  for (const auto& option : kOptions) {
    if (option.env == env) return &option;
  }
  return nullptr;
}

const Option* option_for_key(std::string_view key) {
  for (const auto& option : kOptions) {
    if (option.key == key) return &option;
  }
  return nullptr;
}

std::string read_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("cannot read config file \"" + path + "\": " + std::strerror(errno));
  std::string text;
  char buf[8192];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxConfigFileBytes) {
      throw ConfigError("config file \"" + path + "\" is larger than 1 MiB");
    }
  }
  if (in.bad()) throw ConfigError("cannot read config file \"" + path + "\"");
  return text;
}

// Applies one env/flag value, adding where it came from to any error.
void apply_from(Config& config, const std::string& key, const std::string& raw,
                std::string_view origin) {
  try {
    apply_value(config, key, raw);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string(e.what()) + " (from " + std::string(origin) + ")");
  }
}

bool takes_no_value(std::string_view flag) {
  return flag == "--help" || flag == "-h" || flag == "--version" || flag == "--check-config";
}

bool sets(const std::vector<std::pair<std::string, std::string>>& values, std::string_view key) {
  for (const auto& [set_key, raw] : values) {
    if (set_key == key) return true;
  }
  return false;
}

// The flag or variable whose value `key` has, when one overrides the file (a flag beats a
// variable); empty when neither does.
std::string_view overridden_by(const Sources& sources, std::string_view key) {
  const Option* option = option_for_key(key);
  if (option == nullptr) return {};
  if (sets(sources.flag_values, key)) return option->flag;
  if (sets(sources.env_values, key)) return option->env;
  return {};
}

// " (from --flag)", " (from WG_VARIABLE)", " (FILE:LINE:COLUMN)" for the value `key` has, or ""
// for a default.
std::string where_set(const Sources& sources, const std::vector<KeyPosition>& in_file,
                      std::string_view key) {
  if (auto by = overridden_by(sources, key); !by.empty()) return " (from " + std::string(by) + ")";
  for (const auto& position : in_file) {
    if (position.key == key) return " (" + position.where + ")";
  }
  return {};
}

}  // namespace

BuiltConfig build_config(const Sources& sources) {
  BuiltConfig built;
  Config& config = built.config;
  std::vector<KeyPosition> in_file;
  if (sources.config_file) {
    config =
        parse_toml(read_config_file(*sources.config_file), *sources.config_file, config, &in_file);
    config.config_file = *sources.config_file;
  }
  for (const auto& [key, raw] : sources.env_values) {
    const Option* option = option_for_key(key);
    apply_from(config, key, raw, option ? option->env : "environment");
  }
  for (const auto& [key, raw] : sources.flag_values) {
    const Option* option = option_for_key(key);
    apply_from(config, key, raw, option ? option->flag : "command line");
  }
  try {
    validate(config);
  } catch (const ConfigError& e) {
    if (e.key().empty()) throw;
    throw ConfigError(e.key(), e.what() + where_set(sources, in_file, e.key()));
  }
  for (const auto& position : in_file) {
    if (auto by = overridden_by(sources, position.key); !by.empty()) {
      built.overridden.push_back(position.key + " (set by " + std::string(by) + ")");
    }
  }
  return built;
}

std::vector<std::string> known_environment() {
  std::vector<std::string> names{std::string(kConfigEnv)};
  for (const auto& option : kOptions) names.emplace_back(option.env);
  names.emplace_back(kRedisPasswordEnv);
  return names;
}

Invocation parse_invocation(int argc, const char* const* argv, const char* const* envp) {
  Invocation invocation;
  std::vector<std::string_view> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);

  // --help and --version answer even when the rest of the command line is wrong.
  for (auto arg : args) {
    if (arg == "--help" || arg == "-h") {
      invocation.action = Action::help;
      return invocation;
    }
  }
  for (auto arg : args) {
    if (arg == "--version") {
      invocation.action = Action::version;
      return invocation;
    }
  }

  Sources& sources = invocation.sources;
  std::optional<std::string> config_flag;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg.substr(0, 2) != "--") {
      throw ConfigError("unexpected argument \"" + std::string(arg) + "\" (see --help)");
    }
    std::string_view flag = arg;
    std::optional<std::string_view> value;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    if (flag == "--what-if") {
      // Every file up to the next flag: the logs of one or more instances.
      invocation.action = Action::what_if;
      if (value) invocation.what_if_logs.emplace_back(*value);
      while (i + 1 < args.size() && args[i + 1].substr(0, 2) != "--") {
        invocation.what_if_logs.emplace_back(args[++i]);
      }
      if (invocation.what_if_logs.empty()) throw ConfigError("--what-if needs an access log file");
      continue;
    }
    if (takes_no_value(flag)) {
      if (value) throw ConfigError(std::string(flag) + " takes no value");
      if (flag == "--check-config") invocation.action = Action::check_config;
      continue;
    }
    const Option* option = option_for_flag(flag);
    if (!option && flag != kConfigFlag) {
      throw ConfigError("unknown flag " + std::string(flag) + " (see --help)");
    }
    if (!value) {
      // "--listen --threads 4" is a forgotten value, not a listen address.
      if (i + 1 >= args.size() || args[i + 1].substr(0, 2) == "--") {
        throw ConfigError(std::string(flag) + " needs a value");
      }
      value = args[++i];
    }
    if (!option) {
      if (value->empty()) throw ConfigError("--config needs a file name");
      config_flag = std::string(*value);
    } else {
      sources.flag_values.emplace_back(std::string(option->key), std::string(*value));
    }
  }

  std::optional<std::string> config_env;
  for (const char* const* entry = envp; entry && *entry; ++entry) {
    std::string_view var(*entry);
    auto eq = var.find('=');
    if (eq == std::string_view::npos || var.substr(0, 3) != "WG_") continue;
    auto name = var.substr(0, eq);
    auto raw = var.substr(eq + 1);
    if (name == kConfigEnv) {
      // An empty WG_CONFIG (declared but unset in a container spec) means no file.
      if (!raw.empty()) config_env = std::string(raw);
    } else if (const Option* option = option_for_env(name)) {
      sources.env_values.emplace_back(std::string(option->key), std::string(raw));
    } else if (name != kRedisPasswordEnv) {
      invocation.unknown_environment.emplace_back(name);
    }
  }
  sources.config_file = config_flag ? config_flag : config_env;

  if (invocation.action == Action::what_if) {
    // A replay sends nothing upstream: it needs no upstream URL, only the caching rules.
    try {
      invocation.config = build_config(sources).config;
    } catch (const ConfigError& e) {
      if (e.key() != "upstream.base_url") throw;
      Sources replay = sources;
      replay.flag_values.emplace_back("upstream.base_url", "http://127.0.0.1");
      invocation.config = build_config(replay).config;
    }
    return invocation;
  }
  invocation.config = build_config(sources).config;
  return invocation;
}

std::string usage() {
  std::string out =
      "usage: widget-gateway [--config FILE] [flags]\n"
      "\n"
      "Caching reverse proxy for the Widget Reviews Data API.\n"
      "Settings come from built-in defaults, then the TOML file, then WG_* environment\n"
      "variables, then flags (later wins). conf/widget-gateway.toml documents every key.\n"
      "\n"
      "flags (environment variable, config key):\n";
  auto line = [&out](std::string left, std::string_view env, std::string_view key,
                     std::string_view help) {
    out += "  " + left;
    out.append(left.size() < 26 ? 26 - left.size() : 1, ' ');
    out += help;
    out += "\n";
    out.append(28, ' ');
    out += "[";
    out += env;
    if (!key.empty()) {
      out += ", ";
      out += key;
    }
    out += "]\n";
  };
  line("--config FILE", kConfigEnv, "", "TOML config file (default: none)");
  for (const auto& option : kOptions) {
    line(std::string(option.flag) + " " + std::string(option.meta), option.env, option.key,
         option.help);
  }
  out +=
      "  --check-config            validate the config, print it as TOML, exit 0 (valid) or 1\n"
      "  --what-if LOG...          replay access logs through the config's caching rules and\n"
      "                            print what it would cost upstream as JSON (sends nothing)\n"
      "  --version                 print the version and exit\n"
      "  --help, -h                print this help and exit\n"
      "\n"
      "  WG_REDIS_PASSWORD         the Redis password; beats redis.password_file, which beats a\n"
      "                            password in redis.url (neither shows in the process list)\n"
      "\n"
      "Flags take their value as \"--flag value\" or \"--flag=value\". Other WG_* variables are\n"
      "ignored, with a warning at start. SIGHUP reloads the file (the environment and flags given\n"
      "at start still apply, and the \"reloaded\" event names the file's keys they override).\n";
  return out;
}

}  // namespace wg::config
