#include "test_client.hpp"

#include <cstdlib>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace wg::stub::test {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

template <class Stream>
net::awaitable<void> exchange(Stream& stream, beast::flat_buffer& buffer,
                              const std::vector<std::string>& targets, http::verb method,
                              std::vector<Result>& results) {
  std::string wire;
  for (const auto& target : targets) {
    wire += std::string(http::to_string(method)) + " " + target +
            " HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: stub-test\r\n\r\n";
  }
  auto [wec, written] = co_await net::async_write(stream, net::buffer(wire), use_tuple);
  if (wec) {
    results.push_back(Result{wec, {}});
    co_return;
  }
  for (std::size_t i = 0; i < targets.size(); ++i) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    if (method == http::verb::head) parser.skip(true);
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, use_tuple);
    results.push_back(Result{ec, parser.release()});
    if (ec) co_return;
  }
}

}  // namespace

TestClient::TestClient(std::uint16_t port, ssl::context* tls) : port_(port), tls_context_(tls) {}

TestClient::~TestClient() {
  disconnect();
}

void TestClient::disconnect() {
  beast::error_code ignored;
  if (plain_) plain_->socket().close(ignored);
  if (tls_) beast::get_lowest_layer(*tls_).socket().close(ignored);
  plain_.reset();
  tls_.reset();
  buffer_.clear();
  connected_ = false;
}

Result TestClient::request(http::verb method, const std::string& target,
                           std::chrono::milliseconds timeout) {
  return run({target}, method, timeout, nullptr);
}

std::vector<Result> TestClient::pipeline(const std::vector<std::string>& targets,
                                         std::chrono::milliseconds timeout) {
  std::vector<Result> all;
  run(targets, http::verb::get, timeout, &all);
  return all;
}

Result TestClient::run(const std::vector<std::string>& targets, http::verb method,
                       std::chrono::milliseconds timeout, std::vector<Result>* all) {
  std::vector<Result> results;
  auto op = [&]() -> net::awaitable<void> {
    const tcp::endpoint endpoint{net::ip::make_address("127.0.0.1"), port_};
    if (!connected_) {
      if (tls_context_) {
        tls_.emplace(ioc_, *tls_context_);
        auto& lowest = beast::get_lowest_layer(*tls_);
        lowest.expires_after(timeout);
        auto [ec] = co_await lowest.async_connect(endpoint, use_tuple);
        if (!ec) {
          // Verifies the certificate chain and that it names 127.0.0.1.
          tls_->set_verify_callback(ssl::host_name_verification("127.0.0.1"));
          std::tie(ec) = co_await tls_->async_handshake(ssl::stream_base::client, use_tuple);
        }
        if (ec) {
          results.push_back(Result{ec, {}});
          co_return;
        }
      } else {
        plain_.emplace(ioc_);
        plain_->expires_after(timeout);
        auto [ec] = co_await plain_->async_connect(endpoint, use_tuple);
        if (ec) {
          results.push_back(Result{ec, {}});
          co_return;
        }
      }
      connected_ = true;
    }
    if (tls_) {
      beast::get_lowest_layer(*tls_).expires_after(timeout);
      co_await exchange(*tls_, buffer_, targets, method, results);
    } else {
      plain_->expires_after(timeout);
      co_await exchange(*plain_, buffer_, targets, method, results);
    }
  };
  bool done = false;
  net::co_spawn(ioc_, op, [&](std::exception_ptr e) {
    done = true;
    if (e) std::rethrow_exception(e);
  });
  ioc_.restart();
  // The stream's own deadline ends the exchange; this bound only guards against a test bug.
  ioc_.run_for(timeout + std::chrono::seconds(5));
  if (!done) {
    // Cancel by closing, and let the coroutine finish: it refers to locals of this frame.
    beast::error_code ignored;
    if (plain_) plain_->socket().close(ignored);
    if (tls_) beast::get_lowest_layer(*tls_).socket().close(ignored);
    ioc_.run_for(std::chrono::seconds(5));
    if (!done) std::abort();
    results.push_back(Result{net::error::timed_out, {}});
  }

  const bool failed = results.empty() || results.back().ec;
  if (failed || !results.back().response.keep_alive()) disconnect();
  if (all) *all = results;
  return results.empty() ? Result{net::error::timed_out, {}} : results.back();
}

}  // namespace wg::stub::test
