#include <boost/test/unit_test.hpp>

#include <set>

#include <string>
#include <utility>
#include <vector>

#include "redis/resp_codec.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/redis/error_kind.hpp"

using namespace wg::redis;
using namespace wg::redis::detail;
using Type = Reply::Type;
using namespace std::string_literals;

BOOST_AUTO_TEST_SUITE(resp_codec_test)

BOOST_AUTO_TEST_CASE(commands_are_binary_safe_and_appended) {
  std::string out;
  BOOST_TEST(append_command({"SET", std::string("k\0ey", 4), "a\r\nb"}, out));
  const std::string set = "*3\r\n$3\r\nSET\r\n$4\r\nk\0ey\r\n$4\r\na\r\nb\r\n"s;
  BOOST_TEST(out == set);
  BOOST_TEST(append_command({"PING"}, out));
  BOOST_TEST(out.substr(set.size()) == "*1\r\n$4\r\nPING\r\n");
  BOOST_TEST(!append_command({}, out));
  BOOST_TEST(out.size() == set.size() + 14u);
}

BOOST_AUTO_TEST_CASE(replies_in_order_whatever_the_chunking) {
  const std::string bytes =
      "+OK\r\n-NOPERM this user has no permissions\r\n:42\r\n$-1\r\n$5\r\na\0b\r\n\r\n"
      "*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n*1\r\n:1\r\n"s;
  for (std::size_t chunk : {std::size_t(1), std::size_t(3), std::size_t(7), bytes.size()}) {
    ReplyParser parser;
    std::vector<Reply> replies;
    for (std::size_t i = 0; i < bytes.size(); i += chunk) {
      parser.feed(bytes.data() + i, std::min(chunk, bytes.size() - i));
      while (auto reply = parser.next()) replies.push_back(std::move(*reply));
    }
    BOOST_TEST(parser.error().empty());
    BOOST_REQUIRE(replies.size() == 6u);
    BOOST_TEST((replies[0].type == Type::status && replies[0].str == "OK"));
    BOOST_TEST(replies[1].is_error());
    BOOST_TEST(replies[1].str == "NOPERM this user has no permissions");
    BOOST_TEST((replies[2].type == Type::integer && replies[2].integer == 42));
    BOOST_TEST(replies[3].is_nil());
    BOOST_TEST(replies[4].str == std::string("a\0b\r\n", 5));
    BOOST_REQUIRE(replies[5].elements.size() == 3u);
    BOOST_TEST(replies[5].elements[0].str == "message");
    BOOST_TEST(replies[5].elements[2].elements[0].integer == 1);
  }
}

BOOST_AUTO_TEST_CASE(malformed_stream_is_an_error_that_stays) {
  ReplyParser parser;
  parser.feed("+OK\r\n?what\r\n", 12);
  auto first = parser.next();
  BOOST_REQUIRE(first.has_value());
  BOOST_TEST(first->str == "OK");
  BOOST_TEST(!parser.next().has_value());
  BOOST_TEST(!parser.error().empty());
  parser.feed("+OK\r\n", 5);
  BOOST_TEST(!parser.next().has_value());
}

namespace {

// Feeds `bytes` to a fresh parser: the replies it completes, and its error.
std::pair<std::vector<Reply>, std::string> read_all(const std::string& bytes) {
  ReplyParser parser;
  parser.feed(bytes.data(), bytes.size());
  std::vector<Reply> replies;
  while (auto reply = parser.next()) replies.push_back(std::move(*reply));
  return {std::move(replies), parser.error()};
}

std::string array_header(long long elements) {
  return "*" + std::to_string(elements) + "\r\n";
}

}  // namespace

// hiredis allocates an array's element pointers when its header arrives: the elements a reply
// may announce are bounded, and what is over the bound is an error before anything is allocated.
BOOST_AUTO_TEST_CASE(array_announcements_are_bounded_per_reply) {
  constexpr long long kMax = ReplyParser::kMaxReplyElements;
  BOOST_TEST(!read_all(array_header(2147483647)).second.empty());
  BOOST_TEST(!read_all(array_header(kMax + 1)).second.empty());
  BOOST_TEST(!read_all(array_header(-5)).second.empty());
  // Nested arrays count together.
  BOOST_TEST(read_all(array_header(2) + array_header(kMax - 2)).second.empty());
  BOOST_TEST(!read_all(array_header(2) + array_header(kMax - 1)).second.empty());
  // Each reply has its own bound.
  const auto [replies, error] =
      read_all(array_header(2) + ":1\r\n:2\r\n" + array_header(kMax) + ":1\r\n");
  BOOST_TEST(error.empty());
  BOOST_REQUIRE(replies.size() == 1u);
  BOOST_TEST(replies[0].elements.size() == 2u);
}

BOOST_AUTO_TEST_CASE(error_replies_are_classified) {
  BOOST_TEST((classify_error_reply("NOAUTH Authentication required.") == ErrorKind::auth));
  BOOST_TEST((classify_error_reply("WRONGPASS invalid username-password pair") == ErrorKind::auth));
  BOOST_TEST((classify_error_reply("NOPERM this user has no permissions") == ErrorKind::auth));
  BOOST_TEST((classify_error_reply("READONLY You can't write against a read only replica.") ==
              ErrorKind::readonly));
  BOOST_TEST((classify_error_reply("OOM command not allowed") == ErrorKind::oom));
  BOOST_TEST((classify_error_reply("LOADING Redis is loading") == ErrorKind::unavailable));
  BOOST_TEST((classify_error_reply("MISCONF Redis is configured") == ErrorKind::unavailable));
  BOOST_TEST((classify_error_reply("CLUSTERDOWN The cluster is down") == ErrorKind::unavailable));
  BOOST_TEST((classify_error_reply("MOVED 3999 127.0.0.1:6381") == ErrorKind::moved));
  BOOST_TEST((classify_error_reply("ASK 3999 127.0.0.1:6381") == ErrorKind::moved));
  BOOST_TEST((classify_error_reply("CROSSSLOT Keys in request") == ErrorKind::crossslot));
  BOOST_TEST((classify_error_reply("BUSYGROUP Consumer Group name") == ErrorKind::other));
  BOOST_TEST((classify_error_reply("ERR syntax error") == ErrorKind::other));
  BOOST_TEST((classify_error_reply("") == ErrorKind::other));
  BOOST_TEST(is_server_condition(ErrorKind::auth));
  BOOST_TEST(!is_server_condition(ErrorKind::other));
  BOOST_TEST(!is_server_condition(ErrorKind::timeout));
  BOOST_TEST(to_string(ErrorKind::crossslot) == "crossslot");
  BOOST_TEST(to_string(ErrorKind::other) == "other");
}

// Each kind has a name of its own: wg_redis_errors_total{kind} is indexed by the kind and
// labelled with that name.
BOOST_AUTO_TEST_CASE(every_kind_has_its_own_name) {
  std::set<std::string_view> names;
  for (std::size_t k = 0; k < kErrorKinds; ++k) names.insert(to_string(static_cast<ErrorKind>(k)));
  BOOST_TEST(names.size() == kErrorKinds);
}

BOOST_AUTO_TEST_SUITE_END()  // resp_codec_test
