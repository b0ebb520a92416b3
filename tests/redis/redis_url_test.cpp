#include <boost/test/unit_test.hpp>

#include <cstdlib>

#include "support/process.hpp"
#include "widget_gateway/config/config.hpp"
#include "widget_gateway/redis/client.hpp"
#include "widget_gateway/redis/settings_from.hpp"

using wg::redis::parse_url;

BOOST_AUTO_TEST_SUITE(redis_url_test)

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
                          "redis://:6379",
                          "redis://h:",
                          "redis://h:0",
                          "redis://h:65536",
                          "redis://h:12x",
                          "redis://h:-1",
                          "redis://h/x",
                          "redis://h/-1",
                          "redis://h/1/2",
                          "redis://user:p%zzw@h:1/0",
                          "redis://user:pw%4@h",
                          "redis://u:p@",
                          "redis://u:p@:1",
                          "rediss://",
                          "redis:/h",
                          "redis://[::1",
                          "redis://[::1]x",
                          "redis://[::1]:",
                          "redis://[]:1",
                          "redis://h/0?x=1",
                          "REDIS"}) {
    BOOST_TEST(!parse_url(bad).has_value(), "accepted: " << bad);
  }
}

BOOST_AUTO_TEST_CASE(credentials_and_tls) {
  auto ep = parse_url("redis://app:s3cret@cache.local:6380/2");
  BOOST_REQUIRE(ep);
  BOOST_TEST(ep->user == "app");
  BOOST_TEST(ep->password == "s3cret");
  BOOST_TEST(!ep->tls);
  BOOST_TEST(ep->host == "cache.local");
  BOOST_TEST(ep->port == 6380);
  BOOST_TEST(ep->db == 2);
  // Logs never see credentials.
  BOOST_TEST(ep->to_string() == "cache.local:6380/2");

  auto password_only = parse_url("rediss://:pw@[::1]");
  BOOST_REQUIRE(password_only);
  BOOST_TEST(password_only->tls);
  BOOST_TEST(password_only->user.empty());
  BOOST_TEST(password_only->password == "pw");
  BOOST_TEST(password_only->host == "::1");

  // A user alone: the password comes from WG_REDIS_PASSWORD or redis.password_file.
  auto user_only = parse_url("redis://app@h");
  BOOST_REQUIRE(user_only);
  BOOST_TEST(user_only->user == "app");
  BOOST_TEST(user_only->password.empty());

  // Percent-decoded; the last '@' ends the user info.
  auto escaped = parse_url("redis://a%40b:p%3Aw%2F%25@h:1/0");
  BOOST_REQUIRE(escaped);
  BOOST_TEST(escaped->user == "a@b");
  BOOST_TEST(escaped->password == "p:w/%");
  auto bare_at = parse_url("redis://u:p@ss@h");
  BOOST_REQUIRE(bare_at);
  BOOST_TEST(bare_at->password == "p@ss");
  BOOST_TEST(bare_at->host == "h");

  auto plain = parse_url("rediss://h");
  BOOST_REQUIRE(plain);
  BOOST_TEST(plain->tls);
  BOOST_TEST(plain->port == 6379);
}

BOOST_AUTO_TEST_CASE(password_precedence) {
  using wg::redis::pick_password;
  BOOST_TEST(pick_password("env", "file", "url") == "env");
  BOOST_TEST(pick_password("", "file", "url") == "file");  // an empty variable is unset
  BOOST_TEST(pick_password(std::nullopt, "file", "url") == "file");
  BOOST_TEST(pick_password(std::nullopt, std::nullopt, "url") == "url");
  BOOST_TEST(pick_password(std::nullopt, std::nullopt, "").empty());
}

BOOST_AUTO_TEST_CASE(settings_from_config) {
  wg::test::TempDir dir;
  wg::config::RedisConfig config;
  config.url = "rediss://app:fromurl@redis.internal:6380/3";
  config.timeout = std::chrono::milliseconds(250);
  config.reconnect_max = std::chrono::seconds(2);
  config.tls_ca_file = "/ca.pem";
  config.tls_server_name = "redis.example";

  auto s = wg::redis::settings_from(config, std::nullopt);
  BOOST_TEST(s.endpoint.host == "redis.internal");
  BOOST_TEST(s.endpoint.user == "app");
  BOOST_TEST(s.endpoint.password == "fromurl");
  BOOST_TEST(s.endpoint.tls);
  BOOST_TEST(s.endpoint.db == 3);
  BOOST_TEST(s.tls.ca_file == "/ca.pem");
  BOOST_TEST(s.tls.server_name == "redis.example");
  BOOST_TEST(s.command_timeout.count() == 250);
  BOOST_TEST(s.connect_timeout.count() == 250);
  BOOST_TEST(s.reconnect_max.count() == 2000);

  config.password_file = dir.write("password", "from file\r\n");
  BOOST_TEST(wg::redis::settings_from(config, std::nullopt).endpoint.password == "from file");
  BOOST_TEST(wg::redis::settings_from(config, "from env").endpoint.password == "from env");

  config.password_file = dir.write("empty", "\n");
  BOOST_CHECK_THROW(wg::redis::settings_from(config, std::nullopt), std::invalid_argument);
  config.password_file = dir.file("missing");
  BOOST_CHECK_THROW(wg::redis::settings_from(config, std::nullopt), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(settings_from_config_per_mode) {
  wg::config::RedisConfig config;
  config.url = "redis://:pw@ignored:1/0";
  config.nodes = {"10.0.0.1:7000", "[::1]:7001", "redis-3.internal:7002"};

  config.mode = "cluster";
  auto cluster = wg::redis::settings_from(config, std::nullopt);
  BOOST_TEST(!cluster.sentinel.has_value());
  BOOST_REQUIRE(cluster.cluster.has_value());
  using Seeds = std::vector<std::pair<std::string, std::uint16_t>>;
  BOOST_TEST((cluster.cluster->seeds ==
              Seeds{{"10.0.0.1", 7000}, {"::1", 7001}, {"redis-3.internal", 7002}}));
  BOOST_TEST(cluster.endpoint.password == "pw");  // every node gets the URL's credentials

  config.mode = "sentinel";
  config.sentinel_master = "mymaster";
  auto sentinel = wg::redis::settings_from(config, std::nullopt);
  BOOST_TEST(!sentinel.cluster.has_value());
  BOOST_REQUIRE(sentinel.sentinel.has_value());
  BOOST_TEST(sentinel.sentinel->master == "mymaster");
  BOOST_TEST(sentinel.sentinel->sentinels.size() == 3u);

  config.mode = "standalone";
  auto standalone = wg::redis::settings_from(config, std::nullopt);
  BOOST_TEST(!standalone.cluster.has_value());
  BOOST_TEST(!standalone.sentinel.has_value());
}

BOOST_AUTO_TEST_SUITE_END()  // redis_url_test
