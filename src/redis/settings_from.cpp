#include "widget_gateway/redis/settings_from.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "widget_gateway/config/config.hpp"

namespace wg::redis {
namespace {

std::string read_password_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("redis.password_file \"" + path + "\": cannot be read");
  std::ostringstream content;
  content << in.rdbuf();
  std::string password = content.str();
  // Editors and `echo` end the file with a newline that is not part of the password.
  while (!password.empty() && (password.back() == '\n' || password.back() == '\r')) {
    password.pop_back();
  }
  if (password.empty()) {
    throw std::invalid_argument("redis.password_file \"" + path + "\": is empty");
  }
  return password;
}

// "host:port" entries (validated by the config loader); an IPv6 host comes in brackets.
std::vector<std::pair<std::string, std::uint16_t>> host_ports(
    const std::vector<std::string>& nodes) {
  std::vector<std::pair<std::string, std::uint16_t>> out;
  for (const auto& node : nodes) {
    const auto colon = node.rfind(':');
    std::string host = node.substr(0, colon);
    if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
    out.emplace_back(host, static_cast<std::uint16_t>(std::stoul(node.substr(colon + 1))));
  }
  return out;
}

}  // namespace

std::string pick_password(std::optional<std::string_view> env, std::optional<std::string_view> file,
                          std::string_view from_url) {
  if (env && !env->empty()) return std::string(*env);
  if (file) return std::string(*file);
  return std::string(from_url);
}

Settings settings_from(const config::RedisConfig& config, std::optional<std::string_view> env) {
  auto endpoint = parse_url(config.url);
  if (!endpoint) throw std::invalid_argument("redis.url: not a valid redis:// or rediss:// URL");
  std::optional<std::string> file;
  if (!config.password_file.empty()) file = read_password_file(config.password_file);

  Settings settings;
  settings.endpoint = std::move(*endpoint);
  settings.endpoint.password = pick_password(env, file, settings.endpoint.password);
  settings.tls.ca_file = config.tls_ca_file;
  settings.tls.cert_file = config.tls_cert_file;
  settings.tls.key_file = config.tls_key_file;
  settings.tls.server_name = config.tls_server_name;
  settings.command_timeout = config.timeout;
  settings.connect_timeout = config.timeout;
  settings.reconnect_max = config.reconnect_max;
  if (config.mode == "sentinel") {
    settings.sentinel = SentinelSettings{host_ports(config.nodes), config.sentinel_master};
  } else if (config.mode == "cluster") {
    ClusterSettings cluster;
    cluster.seeds = host_ports(config.nodes);
    settings.cluster = std::move(cluster);
  }
  return settings;
}

}  // namespace wg::redis
