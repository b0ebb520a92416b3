// Endpoint text forms: redis:// and rediss:// URLs in, host:port/db out.
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

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX escapes decoded (a password may hold any byte); a malformed escape gives nullopt.
std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    int high = hex_value(text[i + 1]);
    int low = hex_value(text[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
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
  static constexpr std::string_view plain = "redis://";
  static constexpr std::string_view tls = "rediss://";
  Endpoint ep;
  std::string_view rest;
  if (url.substr(0, plain.size()) == plain) {
    rest = url.substr(plain.size());
  } else if (url.substr(0, tls.size()) == tls) {
    rest = url.substr(tls.size());
    ep.tls = true;
  } else {
    return std::nullopt;
  }

  std::string_view authority = rest.substr(0, rest.find('/'));
  std::string_view path = rest.substr(authority.size());
  // [user][:password]@ ; '@' and ':' inside either are percent-encoded.
  if (auto at = authority.rfind('@'); at != std::string_view::npos) {
    std::string_view userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    auto colon = userinfo.find(':');
    auto user = percent_decode(userinfo.substr(0, colon));
    auto password = percent_decode(colon == std::string_view::npos ? std::string_view()
                                                                   : userinfo.substr(colon + 1));
    if (!user || !password) return std::nullopt;
    ep.user = std::move(*user);
    ep.password = std::move(*password);
  }

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
