// Fuzz target: the client address behind [access] trusted_proxies, from X-Forwarded-For.
// Input: four lines, the trusted CIDRs (comma-separated), the TCP peer's address, the field
// value (all field lines joined with ","), and text an attacker prepends to the field.
// Invariants: the address chosen is the peer or one written in the field, never an IPv4-mapped
// IPv6 form; every hop between it and us (the peer, and each entry to its right) is a trusted
// proxy, by a prefix comparison done here; an untrusted peer is the client whatever the field
// says; and once the walk stopped at an untrusted address, nothing prepended to the field can
// change the answer.

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "fuzz_input.hpp"
#include "widget_gateway/client_policy/trusted_proxies.hpp"
#include "widget_gateway/config/loader.hpp"

namespace {

namespace ip = boost::asio::ip;
using wg::client_policy::normalize_address;
using wg::client_policy::TrustedProxies;
using wg::config::Cidr;

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> split_list(std::string_view list) {
  std::vector<std::string_view> items;
  while (true) {
    const std::size_t comma = list.find(',');
    items.push_back(trim(list.substr(0, comma)));
    if (comma == std::string_view::npos) return items;
    list.remove_prefix(comma + 1);
  }
}

std::optional<ip::address> address_of(std::string_view text) {
  boost::system::error_code ec;
  const auto address = ip::make_address(std::string(text), ec);
  if (ec) return std::nullopt;
  return normalize_address(address);
}

// What an entry can name, read leniently ("1.2.3.4", "1.2.3.4:80", "::1", "[::1]:80"): the
// chosen address must be one of these, so being generous here only weakens nothing.
std::optional<ip::address> entry_address(std::string_view entry) {
  if (auto plain = address_of(entry)) return plain;
  if (!entry.empty() && entry.front() == '[') {
    const std::size_t close = entry.find(']');
    if (close != std::string_view::npos) return address_of(entry.substr(1, close - 1));
  }
  if (const std::size_t colon = entry.rfind(':'); colon != std::string_view::npos) {
    return address_of(entry.substr(0, colon));
  }
  return std::nullopt;
}

// Whether `address` is in `cidr`, bit by bit.
bool in_network(const Cidr& cidr, const ip::address& address) {
  if (cidr.v6 != address.is_v6()) return false;
  std::array<std::uint8_t, 16> bytes{};
  if (address.is_v6()) {
    const auto v6 = address.to_v6().to_bytes();
    std::copy(v6.begin(), v6.end(), bytes.begin());
  } else {
    const auto v4 = address.to_v4().to_bytes();
    std::copy(v4.begin(), v4.end(), bytes.begin());
  }
  for (unsigned bit = 0; bit < cidr.prefix; ++bit) {
    const unsigned mask = 0x80u >> (bit % 8);
    if ((bytes[bit / 8] & mask) != (cidr.address[bit / 8] & mask)) return false;
  }
  return true;
}

bool trusted(const std::vector<Cidr>& networks, const ip::address& address) {
  const ip::address normalized = normalize_address(address);
  return std::any_of(networks.begin(), networks.end(),
                     [&](const Cidr& cidr) { return in_network(cidr, normalized); });
}

bool is_v4_mapped(const ip::address& address) {
  return address.is_v6() && address.to_v6().is_v4_mapped();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto [cidr_line, peer_line, field, prefix] =
      wg::fuzz::split_lines<4>(wg::fuzz::as_text(data, size));

  // Only CIDRs config validation accepts reach TrustedProxies; the others are dropped here.
  std::vector<std::string> cidrs;
  std::vector<Cidr> networks;
  for (const auto text : split_list(cidr_line)) {
    if (auto cidr = wg::config::parse_cidr(text)) {
      cidrs.emplace_back(text);
      networks.push_back(*cidr);
    }
  }
  const TrustedProxies proxies(cidrs);
  boost::system::error_code ec;
  ip::address peer = ip::make_address(std::string(peer_line), ec);
  if (ec) peer = ip::make_address("127.0.0.1");

  const ip::address client = proxies.client_address(peer, field);
  WG_FUZZ_CHECK(!is_v4_mapped(client));
  WG_FUZZ_CHECK(proxies.contains(peer) == trusted(networks, peer));
  WG_FUZZ_CHECK(proxies.contains(client) == trusted(networks, client));
  if (!trusted(networks, peer)) {
    WG_FUZZ_CHECK(client == normalize_address(peer));
    return 0;
  }

  if (client != normalize_address(peer)) {
    // Written in the field, and every entry to the right of it names a trusted proxy.
    const std::vector<std::string_view> entries = split_list(field);
    std::optional<std::size_t> at;
    for (std::size_t i = entries.size(); i-- > 0;) {
      if (entry_address(entries[i]) == client) {
        at = i;
        break;
      }
    }
    WG_FUZZ_CHECK(at.has_value());
    for (std::size_t i = *at + 1; i < entries.size(); ++i) {
      if (entries[i].empty()) continue;  // empty list elements are skipped
      const auto hop = entry_address(entries[i]);
      WG_FUZZ_CHECK(hop.has_value() && trusted(networks, *hop));
    }
  }

  if (!trusted(networks, client)) {
    // The walk stopped at the first hop we do not run: what lies beyond it is never read.
    const std::string longer = std::string(prefix) + "," + std::string(field);
    WG_FUZZ_CHECK(proxies.client_address(peer, longer) == client);
  }
  return 0;
}
