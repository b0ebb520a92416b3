#pragma once
// Who the client is, behind the proxies we run ([access] trusted_proxies).
//
// X-Forwarded-For is a list every hop appends to, so only its right end is trustworthy: each
// entry was written by the hop to its right. We start from the TCP peer and step left only while
// the current hop is one of our proxies; the first address that is not ours is the client. An
// attacker can put anything at the left end, and it is never reached as long as a hop we do not
// trust stands between it and us. Pure and immutable: safe to share between threads.

#include <boost/asio/ip/address.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "widget_gateway/config/loader.hpp"

namespace wg::client_policy {

class TrustedProxies {
 public:
  // CIDRs as accepted by config::parse_cidr ("10.0.0.0/8", "::1", "2001:db8::/32"). Throws
  // std::invalid_argument on a malformed entry (config validation rejects those first).
  explicit TrustedProxies(const std::vector<std::string>& cidrs);

  bool empty() const { return networks_.empty(); }

  // IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are matched as the IPv4 address.
  bool contains(const boost::asio::ip::address& address) const;

  // The client address for a connection from `peer` whose request carried `x_forwarded_for`
  // (all field lines joined with ","; empty when absent). Walks from the peer leftwards through
  // the list while the current hop is trusted; returns the first untrusted hop, or the leftmost
  // entry when every hop is trusted. An entry that is not an address ("unknown", garbage,
  // obfuscated identifiers of RFC 7239) stops the walk at the last trusted hop. Entries may be
  // "1.2.3.4", "1.2.3.4:5678", "2001:db8::1" or "[2001:db8::1]:5678". The result is normalized:
  // IPv4-mapped IPv6 becomes IPv4.
  boost::asio::ip::address client_address(const boost::asio::ip::address& peer,
                                          std::string_view x_forwarded_for) const;

 private:
  std::vector<config::Cidr> networks_;
};

// ::ffff:a.b.c.d -> a.b.c.d; anything else unchanged.
boost::asio::ip::address normalize_address(const boost::asio::ip::address& address);

}  // namespace wg::client_policy
