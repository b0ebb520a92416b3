#include <boost/test/unit_test.hpp>

#include <string>
#include <string_view>

#include "wg-bench/response_reader.hpp"

using wg::bench::ResponseReader;

namespace {

// Feeds `text` in pieces of `step` bytes (1 = byte by byte); returns how many were consumed.
std::size_t feed(ResponseReader& reader, std::string_view text, std::size_t step) {
  std::size_t used = 0;
  while (used < text.size() && !reader.done() && !reader.failed()) {
    const std::size_t n = reader.consume(text.substr(used, step));
    if (n == 0) break;
    used += n;
  }
  return used;
}

const std::string kLengthAnswer =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
    "11\r\n\r\n{\"a\":\"bcd\"}";

}  // namespace

BOOST_AUTO_TEST_SUITE(response_reader_test)

BOOST_AUTO_TEST_SUITE(response_reader)

BOOST_AUTO_TEST_CASE(content_length_answer_in_one_piece_or_byte_by_byte) {
  for (std::size_t step : {kLengthAnswer.size(), std::size_t{1}, std::size_t{7}}) {
    ResponseReader reader;
    reader.reset(false);
    BOOST_TEST(feed(reader, kLengthAnswer, step) == kLengthAnswer.size());
    BOOST_TEST(reader.done());
    BOOST_TEST(reader.status() == 200u);
    BOOST_TEST(reader.keep_alive());
    BOOST_TEST(reader.bytes() == kLengthAnswer.size());
  }
}

BOOST_AUTO_TEST_CASE(stops_at_the_end_of_the_answer) {
  ResponseReader reader;
  reader.reset(false);
  const std::string two = kLengthAnswer + "HTTP/1.1 404 Not Found\r\n";
  BOOST_TEST(reader.consume(two) == kLengthAnswer.size());
  BOOST_TEST(reader.done());
  BOOST_TEST(reader.consume("more") == 0u);
}

BOOST_AUTO_TEST_CASE(incomplete_body_is_not_done) {
  ResponseReader reader;
  reader.reset(false);
  reader.consume(std::string_view(kLengthAnswer).substr(0, kLengthAnswer.size() - 1));
  BOOST_TEST(!reader.done());
  BOOST_TEST(!reader.failed());
  reader.finish_on_eof();  // a close cannot complete a body with a length
  BOOST_TEST(!reader.done());
}

BOOST_AUTO_TEST_CASE(chunked_body_with_extensions_and_trailer) {
  const std::string answer =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
      "5;name=value\r\nhello\r\n"
      "A\r\n0123456789\r\n"
      "0\r\nX-Trailer: 1\r\n\r\n";
  for (std::size_t step : {answer.size(), std::size_t{1}, std::size_t{3}}) {
    ResponseReader reader;
    reader.reset(false);
    BOOST_TEST(feed(reader, answer, step) == answer.size());
    BOOST_TEST(reader.done());
    BOOST_TEST(reader.keep_alive());
  }
}

BOOST_AUTO_TEST_CASE(bad_chunk_size_fails) {
  ResponseReader reader;
  reader.reset(false);
  reader.consume("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
  BOOST_TEST(reader.failed());
}

BOOST_AUTO_TEST_CASE(chunk_data_must_end_with_crlf) {
  ResponseReader reader;
  reader.reset(false);
  reader.consume("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY\r\n");
  BOOST_TEST(reader.failed());
}

BOOST_AUTO_TEST_CASE(head_and_304_and_204_have_no_body) {
  {
    ResponseReader reader;
    reader.reset(true);
    const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 2900\r\n\r\n";
    BOOST_TEST(reader.consume(head) == head.size());
    BOOST_TEST(reader.done());
  }
  for (const char* status : {"304 Not Modified", "204 No Content"}) {
    ResponseReader reader;
    reader.reset(false);
    const std::string head = std::string("HTTP/1.1 ") + status + "\r\nContent-Length: 50\r\n\r\n";
    BOOST_TEST(reader.consume(head) == head.size());
    BOOST_TEST(reader.done());
  }
}

BOOST_AUTO_TEST_CASE(body_until_close) {
  ResponseReader reader;
  reader.reset(false);
  reader.consume("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nsome bytes");
  BOOST_TEST(!reader.done());
  reader.consume(" and more");
  reader.finish_on_eof();
  BOOST_TEST(reader.done());
  BOOST_TEST(!reader.keep_alive());
}

BOOST_AUTO_TEST_CASE(connection_header_and_version_decide_keep_alive) {
  struct Case {
    const char* head;
    bool keep_alive;
  };
  for (const Case& c : {Case{"HTTP/1.1 200 OK\r\nConnection: close\r\n", false},
                        Case{"HTTP/1.1 200 OK\r\nconnection: Keep-Alive, Close\r\n", false},
                        Case{"HTTP/1.0 200 OK\r\n", false},
                        Case{"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n", true},
                        Case{"HTTP/1.1 503 Service Unavailable\r\n", true}}) {
    ResponseReader reader;
    reader.reset(false);
    reader.consume(std::string(c.head) + "Content-Length: 0\r\n\r\n");
    BOOST_TEST_CONTEXT(c.head) {
      BOOST_TEST(reader.done());
      BOOST_TEST(reader.keep_alive() == c.keep_alive);
    }
  }
}

BOOST_AUTO_TEST_CASE(interim_answer_is_skipped) {
  ResponseReader reader;
  reader.reset(false);
  const std::string answer = "HTTP/1.1 100 Continue\r\n\r\n" + kLengthAnswer;
  BOOST_TEST(feed(reader, answer, 5) == answer.size());
  BOOST_TEST(reader.done());
  BOOST_TEST(reader.status() == 200u);
}

BOOST_AUTO_TEST_CASE(malformed_heads_fail) {
  for (const char* head : {"HTTP/2 200 OK\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n",
                           "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
                           "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
                           "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
                           "HTTP/1.1 101 Switching Protocols\r\n\r\n", "garbage\r\n\r\n"}) {
    ResponseReader reader;
    reader.reset(false);
    reader.consume(head);
    BOOST_TEST_CONTEXT(head) {
      BOOST_TEST(reader.failed());
    }
  }
}

BOOST_AUTO_TEST_CASE(oversized_head_fails) {
  ResponseReader reader;
  reader.reset(false);
  reader.consume("HTTP/1.1 200 OK\r\n");
  const std::string filler(ResponseReader::kMaxHeadBytes, 'x');
  reader.consume(filler);
  BOOST_TEST(reader.failed());
}

BOOST_AUTO_TEST_CASE(reset_starts_over) {
  ResponseReader reader;
  reader.reset(false);
  reader.consume("garbage\r\n\r\n");
  BOOST_TEST(reader.failed());
  reader.reset(false);
  BOOST_TEST(reader.consume(kLengthAnswer) == kLengthAnswer.size());
  BOOST_TEST(reader.done());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // response_reader_test
