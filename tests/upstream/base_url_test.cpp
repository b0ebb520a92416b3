#include <boost/test/unit_test.hpp>

#include <stdexcept>

#include "upstream/base_url.hpp"
#include "upstream/error_map.hpp"
#include "widget_gateway/common/error.hpp"

#include <boost/asio/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>

using wg::upstream::parse_base_url;

BOOST_AUTO_TEST_SUITE(base_url_test)

BOOST_AUTO_TEST_CASE(plain_host_default_port) {
  auto url = parse_base_url("http://api.example.test");
  BOOST_TEST(!url.tls);
  BOOST_TEST(url.host == "api.example.test");
  BOOST_TEST(url.host_is_name);
  BOOST_TEST(url.port == 80);
  BOOST_TEST(url.host_header == "api.example.test");
  BOOST_TEST(url.path_prefix == "");
}

BOOST_AUTO_TEST_CASE(https_with_port_and_prefix) {
  auto url = parse_base_url("https://api.example.test:8443/p/q/");
  BOOST_TEST(url.tls);
  BOOST_TEST(url.port == 8443);
  BOOST_TEST(url.host_header == "api.example.test:8443");
  BOOST_TEST(url.path_prefix == "/p/q");
}

BOOST_AUTO_TEST_CASE(default_port_written_out_is_not_in_host_header) {
  BOOST_TEST(parse_base_url("https://h.test:443/").host_header == "h.test");
  BOOST_TEST(parse_base_url("http://h.test:80").host_header == "h.test");
  BOOST_TEST(parse_base_url("HTTP://h.test/").path_prefix == "");
}

BOOST_AUTO_TEST_CASE(ip_literals) {
  auto v4 = parse_base_url("http://127.0.0.1:8081/base");
  BOOST_TEST(v4.host == "127.0.0.1");
  BOOST_TEST(!v4.host_is_name);
  BOOST_TEST(v4.host_header == "127.0.0.1:8081");
  BOOST_TEST(v4.path_prefix == "/base");

  auto v6 = parse_base_url("https://[::1]:9443");
  BOOST_TEST(v6.host == "::1");
  BOOST_TEST(!v6.host_is_name);
  BOOST_TEST(v6.host_header == "[::1]:9443");
}

BOOST_AUTO_TEST_CASE(rejects_bad_urls) {
  for (const char* bad : {"", "api.example.test", "/api", "ftp://h.test", "http://", "http:///path",
                          "http://user:pw@h.test", "http://h.test/?a=1", "http://h.test/#f",
                          "http://h.test:0", "http://h.test:99999", "http://h.test:abc"}) {
    BOOST_TEST_CONTEXT(bad) {
      BOOST_CHECK_THROW(parse_base_url(bad), std::invalid_argument);
    }
  }
}

BOOST_AUTO_TEST_CASE(error_mapping) {
  using wg::errc;
  namespace beast = boost::beast;
  using boost_code = boost::system::error_code;
  const boost_code timeout = beast::error::timeout;
  const boost_code refused = boost::asio::error::connection_refused;
  const boost_code eof = beast::http::error::end_of_stream;
  const boost_code partial = beast::http::error::partial_message;
  const boost_code too_big = beast::http::error::body_limit;

  BOOST_TEST((wg::upstream::map_connect_error(timeout) == errc::upstream_timeout));
  BOOST_TEST((wg::upstream::map_connect_error(refused) == errc::upstream_connect_failed));
  BOOST_TEST((wg::upstream::map_handshake_error(refused, true) == errc::upstream_tls));
  BOOST_TEST((wg::upstream::map_handshake_error(timeout, false) == errc::upstream_timeout));
  BOOST_TEST((wg::upstream::map_handshake_error(eof, false) == errc::upstream_connect_failed));
  BOOST_TEST((wg::upstream::map_write_error(timeout) == errc::upstream_timeout));
  BOOST_TEST((wg::upstream::map_write_error(refused) == errc::upstream_closed));
  BOOST_TEST((wg::upstream::map_read_error(timeout, true) == errc::upstream_timeout));
  BOOST_TEST((wg::upstream::map_read_error(eof, false) == errc::upstream_closed));
  BOOST_TEST((wg::upstream::map_read_error(partial, true) == errc::upstream_invalid_body));
  BOOST_TEST((wg::upstream::map_read_error(too_big, true) == errc::upstream_invalid_body));
  BOOST_TEST((wg::upstream::map_read_error(too_big, false) == errc::upstream_invalid_body));
}

BOOST_AUTO_TEST_SUITE_END()  // base_url_test
