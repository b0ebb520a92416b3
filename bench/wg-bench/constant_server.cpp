#include "wg-bench/constant_server.hpp"

#include <string_view>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>

namespace wg::bench {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;
constexpr auto kAwait = net::as_tuple(net::use_awaitable);
constexpr std::size_t kMaxHead = 16 * 1024;
constexpr auto kIdleTimeout = std::chrono::seconds(60);
constexpr auto kWriteTimeout = std::chrono::seconds(30);

}  // namespace

struct ConstantServer::State {
  State(net::io_context& ioc, const tcp::endpoint& endpoint) : acceptor(ioc, endpoint) {}
  tcp::acceptor acceptor;
  struct Answer {
    std::string full;  // head + body
    std::string head;  // head only, for HEAD
  };
  Answer answer;
  Answer reviews_answer;  // for targets with "/reviews/" (the same as `answer` by default)
  bool stopped = false;
};

namespace {

// Serves one connection until the peer leaves, it idles out, or a head is too large.
net::awaitable<void> serve(std::shared_ptr<ConstantServer::State> state, tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  std::string in;
  std::vector<net::const_buffer> out;  // views of the stored answers: nothing is copied
  std::size_t scanned = 0;             // bytes of `in` known to hold no complete head
  char chunk[16 * 1024];
  for (;;) {
    stream.expires_after(kIdleTimeout);
    auto [ec, n] = co_await stream.async_read_some(net::buffer(chunk), kAwait);
    if (ec || state->stopped) break;
    in.append(chunk, n);
    out.clear();
    std::size_t begin = 0;
    for (;;) {
      const std::size_t from = std::max(begin, scanned >= 3 ? scanned - 3 : 0);
      const std::size_t end = in.find("\r\n\r\n", from);
      if (end == std::string::npos) break;
      const std::string_view request(in.data() + begin, end - begin);
      const std::string_view line = request.substr(0, request.find("\r\n"));
      const auto& answer =
          line.find("/reviews/") != std::string_view::npos ? state->reviews_answer : state->answer;
      out.push_back(net::buffer(request.substr(0, 5) == "HEAD " ? answer.head : answer.full));
      begin = end + 4;
    }
    in.erase(0, begin);
    scanned = in.size();
    if (in.size() > kMaxHead) break;
    if (!out.empty()) {
      stream.expires_after(kWriteTimeout);
      auto [write_ec, written] = co_await net::async_write(stream, out, kAwait);
      if (write_ec) break;
    }
  }
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream.socket().close(ignored);
}

net::awaitable<void> accept_loop(std::shared_ptr<ConstantServer::State> state) {
  for (;;) {
    auto [ec, socket] = co_await state->acceptor.async_accept(kAwait);
    if (state->stopped || ec == net::error::operation_aborted) co_return;
    if (ec) continue;  // e.g. EMFILE; the next accept may succeed
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    net::co_spawn(state->acceptor.get_executor(), serve(state, std::move(socket)), net::detached);
  }
}

}  // namespace

ConstantServer::ConstantServer(net::io_context& ioc, const tcp::endpoint& endpoint,
                               std::string body, std::string reviews_body, std::string content_type)
    : state_(std::make_shared<State>(ioc, endpoint)) {
  auto make = [&](const std::string& bytes) {
    State::Answer answer;
    answer.head = "HTTP/1.1 200 OK\r\nContent-Type: " + content_type +
                  "\r\nContent-Length: " + std::to_string(bytes.size()) +
                  "\r\nCache-Control: public, max-age=3600\r\n\r\n";
    answer.full = answer.head + bytes;
    return answer;
  };
  state_->answer = make(body);
  state_->reviews_answer = reviews_body.empty() ? state_->answer : make(reviews_body);
}

ConstantServer::~ConstantServer() {
  stop();
}

void ConstantServer::start() {
  net::co_spawn(state_->acceptor.get_executor(), accept_loop(state_), net::detached);
}

void ConstantServer::stop() {
  if (state_->stopped) return;
  state_->stopped = true;
  boost::system::error_code ignored;
  state_->acceptor.close(ignored);
}

tcp::endpoint ConstantServer::local_endpoint() const {
  return state_->acceptor.local_endpoint();
}

}  // namespace wg::bench
