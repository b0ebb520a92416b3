#include "wg-bench/target.hpp"

#include <charconv>

#include <boost/asio/ip/address.hpp>

namespace wg::bench {
namespace {

std::optional<Target> split_host_port(std::string_view text, bool allow_port_zero,
                                      std::string& error) {
  std::string_view host;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {  // [::1]:8080
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      error = "expected [ADDRESS]:PORT";
      return std::nullopt;
    }
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos || colon == 0) {
      error = "expected HOST:PORT";
      return std::nullopt;
    }
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  unsigned port = 0;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc{} || end != port_text.data() + port_text.size() ||
      port > 65535 || (port == 0 && !allow_port_zero)) {
    error = "bad port \"" + std::string(port_text) + "\"";
    return std::nullopt;
  }
  if (!is_loopback_host(host)) {
    error = "refusing \"" + std::string(host) +
            "\": wg-bench only sends traffic to loopback addresses (127.0.0.0/8, ::1, localhost)";
    return std::nullopt;
  }
  Target target;
  target.address = host == "localhost" ? "127.0.0.1" : std::string(host);
  target.port = static_cast<std::uint16_t>(port);
  target.host_header = std::string(text);
  return target;
}

}  // namespace

bool is_loopback_host(std::string_view host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(std::string(host), ec);
  return !ec && address.is_loopback();
}

std::optional<Target> parse_target(std::string_view url, std::string& error) {
  constexpr std::string_view kHttp = "http://";
  constexpr std::string_view kHttps = "https://";
  bool tls = false;
  if (url.find("://") != std::string_view::npos) {
    if (url.substr(0, kHttps.size()) == kHttps) {
      tls = true;
      url.remove_prefix(kHttps.size());
    } else if (url.substr(0, kHttp.size()) == kHttp) {
      url.remove_prefix(kHttp.size());
    } else {
      error = "only http:// and https:// targets are supported";
      return std::nullopt;
    }
  }
  if (!url.empty() && url.back() == '/') url.remove_suffix(1);
  if (url.find_first_of("/?#@") != std::string_view::npos) {
    error = "the target is scheme://host:port only (paths come from the scenario)";
    return std::nullopt;
  }
  auto target = split_host_port(url, false, error);
  if (target) target->tls = tls;
  return target;
}

std::optional<Target> parse_listen(std::string_view host_port, std::string& error) {
  return split_host_port(host_port, true, error);
}

}  // namespace wg::bench
