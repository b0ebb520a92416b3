#include <boost/test/unit_test.hpp>

#include "widget_gateway/config/loader.hpp"

using namespace std::chrono_literals;
namespace cfg = wg::config;

BOOST_AUTO_TEST_SUITE(parsers_test)

BOOST_AUTO_TEST_SUITE(durations)

BOOST_AUTO_TEST_CASE(accepts_every_unit) {
  BOOST_TEST(cfg::parse_duration("500ms").value() == 500ms);
  BOOST_TEST(cfg::parse_duration("1s").value() == 1s);
  BOOST_TEST(cfg::parse_duration("10m").value() == 10min);
  BOOST_TEST(cfg::parse_duration("24h").value() == 24h);
  BOOST_TEST(cfg::parse_duration("7d").value() == std::chrono::days(7));
  BOOST_TEST(cfg::parse_duration("0s").value() == 0ms);
  BOOST_TEST(cfg::parse_duration("007s").value() == 7s);
}

BOOST_AUTO_TEST_CASE(rejects_malformed) {
  for (const char* bad : {"", "10", "s", "1.5h", "-1s", "+1s", " 1s", "1s ", "1 s", "1S", "1sec",
                          "1h30m", "ten", "1e3ms", "0x10s", "ms"}) {
    BOOST_TEST(!cfg::parse_duration(bad).has_value(), "accepted \"" << bad << "\"");
  }
}

BOOST_AUTO_TEST_CASE(rejects_overflow) {
  BOOST_TEST(!cfg::parse_duration("99999999999999999999ms").has_value());
  BOOST_TEST(!cfg::parse_duration("9223372036854775807s").has_value());
  BOOST_TEST(cfg::parse_duration("9223372036854775807ms").has_value());
  BOOST_TEST(!cfg::parse_duration("9223372036854775808ms").has_value());
}

BOOST_AUTO_TEST_CASE(formats_with_largest_exact_unit) {
  BOOST_TEST(cfg::format_duration(0ms) == "0s");
  BOOST_TEST(cfg::format_duration(500ms) == "500ms");
  BOOST_TEST(cfg::format_duration(1500ms) == "1500ms");
  BOOST_TEST(cfg::format_duration(60s) == "1m");
  BOOST_TEST(cfg::format_duration(90min) == "90m");
  BOOST_TEST(cfg::format_duration(24h) == "1d");
  BOOST_TEST(cfg::format_duration(25h) == "25h");
  for (cfg::Duration d : {1ms, 999ms, 1000ms, 1000ms * 61, 1000ms * 3600, 86400001ms}) {
    BOOST_TEST(cfg::parse_duration(cfg::format_duration(d)).value() == d);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(byte_sizes)

BOOST_AUTO_TEST_CASE(accepts_integers_and_binary_units) {
  BOOST_TEST(cfg::parse_byte_size("0").value() == 0u);
  BOOST_TEST(cfg::parse_byte_size("1000").value() == 1000u);
  BOOST_TEST(cfg::parse_byte_size("512B").value() == 512u);
  BOOST_TEST(cfg::parse_byte_size("16KiB").value() == 16u * 1024);
  BOOST_TEST(cfg::parse_byte_size("256MiB").value() == 256u * 1024 * 1024);
  BOOST_TEST(cfg::parse_byte_size("1GiB").value() == 1024u * 1024 * 1024);
  BOOST_TEST(cfg::parse_byte_size("2TiB").value() == std::size_t{2} << 40);
}

BOOST_AUTO_TEST_CASE(rejects_decimal_units_and_garbage) {
  for (const char* bad : {"", "512KB", "1MB", "1GB", "16kib", "16 KiB", "1.5MiB", "-1", "KiB",
                          "16K", "0x10", " 16"}) {
    BOOST_TEST(!cfg::parse_byte_size(bad).has_value(), "accepted \"" << bad << "\"");
  }
}

BOOST_AUTO_TEST_CASE(rejects_overflow) {
  BOOST_TEST(!cfg::parse_byte_size("18446744073709551616").has_value());
  BOOST_TEST(cfg::parse_byte_size("18446744073709551615").has_value());
  BOOST_TEST(!cfg::parse_byte_size("16777216TiB").has_value());
}

BOOST_AUTO_TEST_CASE(formats_round_trip) {
  BOOST_TEST(cfg::format_byte_size(0) == "0");
  BOOST_TEST(cfg::format_byte_size(1000) == "1000");
  BOOST_TEST(cfg::format_byte_size(16 * 1024) == "16KiB");
  BOOST_TEST(cfg::format_byte_size(1536 * 1024) == "1536KiB");
  BOOST_TEST(cfg::format_byte_size(std::size_t{1} << 30) == "1GiB");
  for (std::size_t n : {std::size_t{1}, std::size_t{1023}, std::size_t{1024}, std::size_t{3} << 20,
                        std::size_t{5} << 40}) {
    BOOST_TEST(cfg::parse_byte_size(cfg::format_byte_size(n)).value() == n);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(offsets_and_times)

BOOST_AUTO_TEST_CASE(utc_offsets) {
  BOOST_TEST(cfg::parse_utc_offset("+03:00").value() == 180min);
  BOOST_TEST(cfg::parse_utc_offset("-05:30").value() == -330min);
  BOOST_TEST(cfg::parse_utc_offset("Z").value() == 0min);
  BOOST_TEST(cfg::parse_utc_offset("+00:00").value() == 0min);
  BOOST_TEST(cfg::parse_utc_offset("-00:00").value() == 0min);
  BOOST_TEST(cfg::parse_utc_offset("+18:00").value() == 18h);
  for (const char* bad : {"", "03:00", "+3:00", "+0300", "+03", "+18:01", "+19:00", "+03:60", "z",
                          "UTC", "+03:00 ", "+0a:00"}) {
    BOOST_TEST(!cfg::parse_utc_offset(bad).has_value(), "accepted \"" << bad << "\"");
  }
  BOOST_TEST(cfg::format_utc_offset(180min) == "+03:00");
  BOOST_TEST(cfg::format_utc_offset(-330min) == "-05:30");
  BOOST_TEST(cfg::format_utc_offset(0min) == "+00:00");
}

BOOST_AUTO_TEST_CASE(times_of_day) {
  BOOST_TEST((cfg::parse_time_of_day("04:00").value() == cfg::TimeOfDay{4, 0}));
  BOOST_TEST((cfg::parse_time_of_day("00:00").value() == cfg::TimeOfDay{0, 0}));
  BOOST_TEST((cfg::parse_time_of_day("23:59").value() == cfg::TimeOfDay{23, 59}));
  for (const char* bad :
       {"", "4:00", "24:00", "23:60", "04:0", "0400", "04-00", "04:00:00", "ab:cd", " 4:00"}) {
    BOOST_TEST(!cfg::parse_time_of_day(bad).has_value(), "accepted \"" << bad << "\"");
  }
  BOOST_TEST(cfg::format_time_of_day({4, 5}) == "04:05");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(host_ports)

BOOST_AUTO_TEST_CASE(accepts_ipv4_ipv6_and_names) {
  auto hp = cfg::parse_host_port("127.0.0.1:8080").value();
  BOOST_TEST(hp.host == "127.0.0.1");
  BOOST_TEST(hp.port == 8080);
  hp = cfg::parse_host_port("[::1]:8080").value();
  BOOST_TEST(hp.host == "::1");
  BOOST_TEST(hp.port == 8080);
  hp = cfg::parse_host_port("0.0.0.0:0").value();
  BOOST_TEST(hp.port == 0);
  hp = cfg::parse_host_port("localhost:80").value();
  BOOST_TEST(hp.host == "localhost");
  BOOST_TEST(cfg::parse_host_port("my-host.example:65535").has_value());
  BOOST_TEST(cfg::parse_host_port("[::]:9090").has_value());
}

BOOST_AUTO_TEST_CASE(rejects_malformed) {
  for (const char* bad : {"", "127.0.0.1", "127.0.0.1:", ":8080", "127.0.0.1:65536", "127.0.0.1:-1",
                          "::1:8080", "[::1]", "[::1]8080", "[zz]:80", "256.0.0.1:80", "1.2.3:80",
                          "host name:80", "h:+80", "h:080808", "-host:80", "[::1]:"}) {
    BOOST_TEST(!cfg::parse_host_port(bad).has_value(), "accepted \"" << bad << "\"");
  }
  // A TOML string can hold "\u0000"; inet_pton would stop reading there.
  using namespace std::string_view_literals;
  BOOST_TEST(!cfg::parse_host_port("[::1\0junk]:80"sv).has_value());
}

BOOST_AUTO_TEST_CASE(formats_round_trip) {
  BOOST_TEST(cfg::format_host_port({"::1", 80}) == "[::1]:80");
  BOOST_TEST(cfg::format_host_port({"127.0.0.1", 8080}) == "127.0.0.1:8080");
  BOOST_TEST((cfg::parse_host_port(cfg::format_host_port({"::1", 80})).value() ==
              cfg::HostPort{"::1", 80}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cidrs)

BOOST_AUTO_TEST_CASE(accepts_networks_and_hosts) {
  auto c = cfg::parse_cidr("10.0.0.0/8").value();
  BOOST_TEST(!c.v6);
  BOOST_TEST(c.prefix == 8u);
  BOOST_TEST(c.address[0] == 10);
  BOOST_TEST((cfg::parse_cidr("10.1.2.3/8").value() == c));  // host bits cleared
  BOOST_TEST(cfg::parse_cidr("192.168.1.7").value().prefix == 32u);
  auto v6 = cfg::parse_cidr("2001:db8::/32").value();
  BOOST_TEST(v6.v6);
  BOOST_TEST(v6.prefix == 32u);
  BOOST_TEST(cfg::parse_cidr("::1").value().prefix == 128u);
  BOOST_TEST(cfg::parse_cidr("0.0.0.0/0").has_value());
  auto odd = cfg::parse_cidr("10.255.0.0/9").value();
  BOOST_TEST(odd.address[1] == 0x80);
}

BOOST_AUTO_TEST_CASE(rejects_malformed) {
  for (const char* bad : {"", "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/-1", "10.0.0/8",
                          "example.com/8", "10.0.0.0/8/8", "10.0.0.0/ 8", "1.2.3.4/0008"}) {
    BOOST_TEST(!cfg::parse_cidr(bad).has_value(), "accepted \"" << bad << "\"");
  }
  using namespace std::string_view_literals;
  for (const auto bad : {"10.0.0.0\0 junk/8"sv, "2001:db8::\0 "sv, "::1\0"sv}) {
    BOOST_TEST(!cfg::parse_cidr(bad).has_value());
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // parsers_test
