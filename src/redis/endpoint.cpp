// Endpoint text forms: redis:// URLs in, host:port/db out.
#include <charconv>

#include "widget_gateway/redis/client.hpp"

namespace wg::redis {
namespace {

template <class Int>
bool parse_number(std::string_view text, Int& out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string Endpoint::to_string() const {
  std::string out;
  if (host.find(':') != std::string::npos) {
    out = "[" + host + "]";
  } else {
    out = host;
  }
  out += ":" + std::to_string(port) + "/" + std::to_string(db);
  return out;
}

std::optional<Endpoint> parse_url(std::string_view url) {
  static constexpr std::string_view scheme = "redis://";
  if (url.substr(0, scheme.size()) != scheme) return std::nullopt;
  std::string_view rest = url.substr(scheme.size());

  std::string_view authority = rest.substr(0, rest.find('/'));
  std::string_view path = rest.substr(authority.size());
  // Credentials would have to be sent with AUTH, which the client does not do: refuse them
  // rather than silently connecting without.
  if (authority.find('@') != std::string_view::npos) return std::nullopt;

  Endpoint ep;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    ep.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return std::nullopt;
      port_text = after.substr(1);
      if (port_text.empty()) return std::nullopt;
    }
  } else {
    auto colon = authority.find(':');
    ep.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return std::nullopt;
    }
  }
  if (ep.host.empty()) return std::nullopt;
  if (!port_text.empty()) {
    unsigned port = 0;
    if (!parse_number(port_text, port) || port == 0 || port > 65535) return std::nullopt;
    ep.port = static_cast<std::uint16_t>(port);
  }

  if (!path.empty()) path.remove_prefix(1);  // the '/'
  if (!path.empty()) {
    int db = 0;
    // Redis' default configuration has 16 databases; larger numbers need a configured server,
    // so allow them up to a sane limit.
    if (!parse_number(path, db) || db < 0 || db > 1'000'000) return std::nullopt;
    ep.db = db;
  }
  return ep;
}

}  // namespace wg::redis
