#pragma once
// redis::Settings from the [redis] config section, for the gateway's clients and subscriber.

#include <optional>
#include <string>
#include <string_view>

#include "widget_gateway/redis/client.hpp"

namespace wg::config {
struct RedisConfig;
}

namespace wg::redis {

// The environment variable that carries the password.
inline constexpr const char* kPasswordEnv = "WG_REDIS_PASSWORD";

// The password AUTH sends: `env` (WG_REDIS_PASSWORD; unset or empty = absent) beats `file`
// (redis.password_file's content, trailing CR/LF stripped), which beats the URL's.
std::string pick_password(std::optional<std::string_view> env, std::optional<std::string_view> file,
                          std::string_view from_url);

// Endpoint (redis.url with the password picked as above), TLS files and timeouts. Reads
// redis.password_file: blocking, so call it at start or on a reload thread, not on an io
// thread. Throws std::invalid_argument for an invalid URL or an unreadable or empty password
// file.
Settings settings_from(const config::RedisConfig& config, std::optional<std::string_view> env);

}  // namespace wg::redis
