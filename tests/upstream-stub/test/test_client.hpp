#pragma once
// A small blocking HTTP/1.1 client for the stub's tests: keep-alive, optional TLS, and a
// deadline on every exchange (its own io_context, run for a bounded time per call).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace wg::stub::test {

struct Result {
  boost::beast::error_code ec;  // transport or parse error; timeout = boost::beast::error::timeout
  boost::beast::http::response<boost::beast::http::string_body> response;
  unsigned status() const { return response.result_int(); }
  const std::string& body() const { return response.body(); }
};

class TestClient {
 public:
  // `tls`, when set, must outlive the client; the server certificate is verified with it.
  explicit TestClient(std::uint16_t port, boost::asio::ssl::context* tls = nullptr);
  ~TestClient();

  // One request on the current connection (opening one if needed). The connection is dropped
  // after an error or a response without keep-alive.
  Result request(boost::beast::http::verb method, const std::string& target,
                 std::chrono::milliseconds timeout = std::chrono::seconds(10));
  Result get(const std::string& target,
             std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    return request(boost::beast::http::verb::get, target, timeout);
  }
  Result post(const std::string& target) { return request(boost::beast::http::verb::post, target); }

  // Writes all requests at once (pipelined), then reads one response per request.
  std::vector<Result> pipeline(const std::vector<std::string>& targets,
                               std::chrono::milliseconds timeout = std::chrono::seconds(10));

  bool connected() const { return connected_; }
  void disconnect();

 private:
  struct Exchange;
  Result run(const std::vector<std::string>& targets, boost::beast::http::verb method,
             std::chrono::milliseconds timeout, std::vector<Result>* all);

  boost::asio::io_context ioc_;
  std::uint16_t port_;
  boost::asio::ssl::context* tls_context_;
  std::optional<boost::beast::tcp_stream> plain_;
  std::optional<boost::asio::ssl::stream<boost::beast::tcp_stream>> tls_;
  boost::beast::flat_buffer buffer_;
  bool connected_ = false;
};

}  // namespace wg::stub::test
