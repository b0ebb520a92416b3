#include <boost/test/unit_test.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "widget_gateway/client_policy/trusted_proxies.hpp"

using wg::client_policy::TrustedProxies;
namespace ip = boost::asio::ip;

namespace {

ip::address ip_of(const char* text) {
  return ip::make_address(text);
}

struct Walk {
  std::string peer;
  std::string xff;
  std::string client;
};

const TrustedProxies kProxies({"10.0.0.0/8", "192.168.1.1", "2001:db8:1::/48", "::1"});

}  // namespace

BOOST_AUTO_TEST_SUITE(trusted_proxies_test)

BOOST_AUTO_TEST_CASE(contains) {
  BOOST_TEST(kProxies.contains(ip_of("10.0.0.1")));
  BOOST_TEST(kProxies.contains(ip_of("10.255.255.255")));
  BOOST_TEST(!kProxies.contains(ip_of("11.0.0.1")));
  BOOST_TEST(kProxies.contains(ip_of("192.168.1.1")));
  BOOST_TEST(!kProxies.contains(ip_of("192.168.1.2")));
  BOOST_TEST(kProxies.contains(ip_of("2001:db8:1:ffff::1")));
  BOOST_TEST(!kProxies.contains(ip_of("2001:db8:2::1")));
  BOOST_TEST(kProxies.contains(ip_of("::1")));
  BOOST_TEST(!kProxies.contains(ip_of("::2")));
  // IPv4-mapped IPv6 is the IPv4 address.
  BOOST_TEST(kProxies.contains(ip_of("::ffff:10.1.2.3")));
  BOOST_TEST(!kProxies.contains(ip_of("::ffff:11.1.2.3")));
  // An IPv4 network never matches IPv6 addresses and the reverse.
  BOOST_TEST(!TrustedProxies({"0.0.0.0/0"}).contains(ip_of("2001:db8::1")));
  BOOST_TEST(!TrustedProxies({"::/0"}).contains(ip_of("1.2.3.4")));
  BOOST_TEST(TrustedProxies({"0.0.0.0/0"}).contains(ip_of("1.2.3.4")));
  // Odd prefix lengths.
  TrustedProxies odd({"172.16.0.0/12", "2001:db8::/33"});
  BOOST_TEST(odd.contains(ip_of("172.31.255.255")));
  BOOST_TEST(!odd.contains(ip_of("172.32.0.0")));
  BOOST_TEST(odd.contains(ip_of("2001:db8:7fff::1")));
  BOOST_TEST(!odd.contains(ip_of("2001:db8:8000::1")));
}

BOOST_AUTO_TEST_CASE(empty_and_malformed_lists) {
  TrustedProxies none({});
  BOOST_TEST(none.empty());
  BOOST_TEST(!none.contains(ip_of("127.0.0.1")));
  BOOST_CHECK_THROW(TrustedProxies({"10.0.0.0/33"}), std::invalid_argument);
  BOOST_CHECK_THROW(TrustedProxies({"proxy.example"}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(walks) {
  const std::vector<Walk> walks = {
      // Untrusted peer: X-Forwarded-For is ignored, whatever it says.
      {"203.0.113.9", "", "203.0.113.9"},
      {"203.0.113.9", "1.1.1.1", "203.0.113.9"},
      {"203.0.113.9", "10.0.0.5", "203.0.113.9"},
      // Trusted peer without X-Forwarded-For: the peer is all we know.
      {"10.0.0.2", "", "10.0.0.2"},
      {"10.0.0.2", " , ", "10.0.0.2"},
      // One proxy.
      {"10.0.0.2", "198.51.100.7", "198.51.100.7"},
      {"10.0.0.2", " 198.51.100.7 ", "198.51.100.7"},
      // Spoofed leftmost entries are never reached past an untrusted hop.
      {"10.0.0.2", "6.6.6.6, 198.51.100.7", "198.51.100.7"},
      {"10.0.0.2", "10.0.0.99, 198.51.100.7", "198.51.100.7"},
      {"10.0.0.2", "6.6.6.6,7.7.7.7,198.51.100.7", "198.51.100.7"},
      // Chains of trusted proxies are walked through.
      {"10.0.0.2", "198.51.100.7, 10.0.0.3, 192.168.1.1", "198.51.100.7"},
      {"10.0.0.2", "6.6.6.6, 198.51.100.7, 10.0.0.3", "198.51.100.7"},
      // Every hop trusted: the leftmost.
      {"10.0.0.2", "10.0.0.4, 10.0.0.3", "10.0.0.4"},
      // Malformed entries stop the walk at the last trusted hop.
      {"10.0.0.2", "unknown", "10.0.0.2"},
      {"10.0.0.2", "198.51.100.7, garbage", "10.0.0.2"},
      {"10.0.0.2", "198.51.100.7, _hidden, 10.0.0.3", "10.0.0.3"},
      {"10.0.0.2", "198.51.100.7, 999.1.1.1", "10.0.0.2"},
      {"10.0.0.2", "198.51.100.7, fe80::1%eth0", "10.0.0.2"},
      {"10.0.0.2", "198.51.100.7, [1.2.3.4]", "10.0.0.2"},
      {"10.0.0.2", "198.51.100.7, 1.2.3.4:", "10.0.0.2"},
      {"10.0.0.2", "198.51.100.7, 1.2.3.4:x", "10.0.0.2"},
      // Ports as some proxies write them.
      {"10.0.0.2", "198.51.100.7:51234", "198.51.100.7"},
      {"10.0.0.2", "[2001:db8:9::1]:443", "2001:db8:9::1"},
      {"10.0.0.2", "[2001:db8:9::1]", "2001:db8:9::1"},
      // IPv6.
      {"::1", "2001:db8:9::1", "2001:db8:9::1"},
      {"2001:db8:1::2", "2001:db8:9::1, 2001:db8:1::5", "2001:db8:9::1"},
      {"2001:db8:1::2", "6.6.6.6, 2001:db8:9::1", "2001:db8:9::1"},
      {"2001:db8:2::2", "2001:db8:9::1", "2001:db8:2::2"},
      // IPv4-mapped IPv6 is normalized, as peer and as entry.
      {"::ffff:10.0.0.2", "198.51.100.7", "198.51.100.7"},
      {"::ffff:203.0.113.9", "198.51.100.7", "203.0.113.9"},
      {"10.0.0.2", "::ffff:198.51.100.7", "198.51.100.7"},
      {"10.0.0.2", "198.51.100.7, ::ffff:10.0.0.3", "198.51.100.7"},
      // Mixed families along the chain.
      {"10.0.0.2", "2001:db8:9::1, ::1", "2001:db8:9::1"},
  };
  for (const auto& w : walks) {
    ip::address got = kProxies.client_address(ip_of(w.peer.c_str()), w.xff);
    BOOST_TEST(got == ip_of(w.client.c_str()), "peer " << w.peer << " XFF [" << w.xff << "]: got "
                                                      << got << ", expected " << w.client);
  }
}

BOOST_AUTO_TEST_CASE(no_trusted_proxies_means_the_peer) {
  TrustedProxies none({});
  BOOST_TEST(none.client_address(ip_of("10.0.0.2"), "1.2.3.4") == ip_of("10.0.0.2"));
  BOOST_TEST(none.client_address(ip_of("::ffff:1.2.3.4"), "") == ip_of("1.2.3.4"));
}

BOOST_AUTO_TEST_CASE(long_lists_are_walked_linearly) {
  std::string xff = "198.51.100.7";
  for (int i = 0; i < 2000; ++i) xff += ", 10.0.0." + std::to_string(i % 250 + 1);
  BOOST_TEST(kProxies.client_address(ip_of("10.0.0.2"), xff) == ip_of("198.51.100.7"));
}

BOOST_AUTO_TEST_SUITE_END()  // trusted_proxies_test
