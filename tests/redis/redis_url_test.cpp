#define BOOST_TEST_MODULE redis_url_test
#include <boost/test/unit_test.hpp>

#include "widget_gateway/redis/client.hpp"

using wg::redis::parse_url;

BOOST_AUTO_TEST_CASE(full_url) {
  auto ep = parse_url("redis://cache.local:6380/2");
  BOOST_REQUIRE(ep);
  BOOST_TEST(ep->host == "cache.local");
  BOOST_TEST(ep->port == 6380);
  BOOST_TEST(ep->db == 2);
  BOOST_TEST(ep->to_string() == "cache.local:6380/2");
}

BOOST_AUTO_TEST_CASE(defaults) {
  auto ep = parse_url("redis://127.0.0.1");
  BOOST_REQUIRE(ep);
  BOOST_TEST(ep->host == "127.0.0.1");
  BOOST_TEST(ep->port == 6379);
  BOOST_TEST(ep->db == 0);
  BOOST_REQUIRE(parse_url("redis://h/"));
  BOOST_TEST(parse_url("redis://h/")->db == 0);
  BOOST_TEST(parse_url("redis://h/7")->port == 6379);
  BOOST_TEST(parse_url("redis://h/7")->db == 7);
  BOOST_TEST(parse_url("redis://h:1")->port == 1);
  BOOST_TEST(parse_url("redis://h:65535/0")->port == 65535);
}

BOOST_AUTO_TEST_CASE(ipv6) {
  auto ep = parse_url("redis://[::1]:7000/1");
  BOOST_REQUIRE(ep);
  BOOST_TEST(ep->host == "::1");
  BOOST_TEST(ep->port == 7000);
  BOOST_TEST(ep->db == 1);
  BOOST_TEST(ep->to_string() == "[::1]:7000/1");
  auto bare = parse_url("redis://[fe80::1]");
  BOOST_REQUIRE(bare);
  BOOST_TEST(bare->host == "fe80::1");
  BOOST_TEST(bare->port == 6379);
}

BOOST_AUTO_TEST_CASE(rejected) {
  for (const char* bad : {"",
                          "redis://",
                          "http://h:1/0",
                          "rediss://h",
                          "redis://:6379",
                          "redis://h:",
                          "redis://h:0",
                          "redis://h:65536",
                          "redis://h:12x",
                          "redis://h:-1",
                          "redis://h/x",
                          "redis://h/-1",
                          "redis://h/1/2",
                          "redis://user:pw@h:1/0",
                          "redis://[::1",
                          "redis://[::1]x",
                          "redis://[::1]:",
                          "redis://[]:1",
                          "redis://h/0?x=1",
                          "REDIS"}) {
    BOOST_TEST(!parse_url(bad).has_value(), "accepted: " << bad);
  }
}
