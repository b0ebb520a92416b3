#include "widget_gateway/client_policy/trusted_proxies.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>

#include "header_tokens.hpp"

namespace wg::client_policy {

namespace {

namespace ip = boost::asio::ip;

bool cidr_contains(const config::Cidr& cidr, const ip::address& address) {
  if (cidr.v6 != address.is_v6()) return false;
  std::array<std::uint8_t, 16> bytes{};
  if (address.is_v6()) {
    auto v6 = address.to_v6().to_bytes();
    std::copy(v6.begin(), v6.end(), bytes.begin());
  } else {
    auto v4 = address.to_v4().to_bytes();
    std::copy(v4.begin(), v4.end(), bytes.begin());
  }
  unsigned full = cidr.prefix / 8;
  for (unsigned i = 0; i < full; ++i)
    if (bytes[i] != cidr.address[i]) return false;
  unsigned rest = cidr.prefix % 8;
  if (rest == 0) return true;
  auto mask = static_cast<std::uint8_t>(0xFF00u >> rest);
  return (bytes[full] & mask) == cidr.address[full];
}

// One X-Forwarded-For entry: a bare address, or an address with a port as some proxies write
// it ("1.2.3.4:80", "[::1]:80"). Zone ids ("fe80::1%eth0") are refused: they mean nothing here.
std::optional<ip::address> parse_entry(std::string_view entry) {
  if (entry.empty() || entry.size() > 64) return std::nullopt;
  if (entry.front() == '[') {
    auto close = entry.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    std::string_view after = entry.substr(close + 1);
    if (!after.empty()) {
      if (after.size() < 2 || after[0] != ':') return std::nullopt;
      for (char c : after.substr(1))
        if (c < '0' || c > '9') return std::nullopt;
    }
    entry = entry.substr(1, close - 1);
    if (entry.find(':') == std::string_view::npos) return std::nullopt;  // "[1.2.3.4]"
  } else if (auto colon = entry.find(':');
             colon != std::string_view::npos && entry.find(':', colon + 1) == entry.npos) {
    // Exactly one colon: IPv4 with a port.
    for (char c : entry.substr(colon + 1))
      if (c < '0' || c > '9') return std::nullopt;
    if (colon + 1 == entry.size()) return std::nullopt;
    entry = entry.substr(0, colon);
  }
  if (entry.find('%') != std::string_view::npos) return std::nullopt;
  boost::system::error_code ec;
  auto address = ip::make_address(std::string(entry), ec);
  if (ec) return std::nullopt;
  return normalize_address(address);
}

}  // namespace

ip::address normalize_address(const ip::address& address) {
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return ip::make_address_v4(ip::v4_mapped, address.to_v6());
  }
  return address;
}

TrustedProxies::TrustedProxies(const std::vector<std::string>& cidrs) {
  for (const auto& text : cidrs) {
    auto cidr = config::parse_cidr(text);
    if (!cidr) throw std::invalid_argument("not a CIDR: \"" + text + "\"");
    networks_.push_back(*cidr);
  }
}

bool TrustedProxies::contains(const ip::address& address) const {
  ip::address normalized = normalize_address(address);
  for (const auto& cidr : networks_)
    if (cidr_contains(cidr, normalized)) return true;
  return false;
}

ip::address TrustedProxies::client_address(const ip::address& peer,
                                           std::string_view x_forwarded_for) const {
  ip::address current = normalize_address(peer);
  // Walk the list right to left; it is bounded by the request-head limit.
  std::string_view rest = x_forwarded_for;
  while (contains(current)) {
    rest = detail::trim_ows(rest);
    while (!rest.empty() && rest.back() == ',')
      rest = detail::trim_ows(rest.substr(0, rest.size() - 1));
    if (rest.empty()) break;  // every hop trusted: the leftmost one is all we know
    auto comma = rest.rfind(',');
    std::string_view entry =
        detail::trim_ows(comma == std::string_view::npos ? rest : rest.substr(comma + 1));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(0, comma);
    auto next = parse_entry(entry);
    if (!next) break;  // not an address: stop at the last hop we trust
    current = *next;
  }
  return current;
}

}  // namespace wg::client_policy
