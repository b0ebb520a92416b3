#include "test_server.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>

namespace wg::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;

namespace {
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}
}  // namespace

struct TestServer::State {
  // Declared before the io_context so they outlive the session frames it destroys.
  std::optional<ssl::context> tls;
  Script script;
  std::atomic<std::size_t> accepted{0};
  std::atomic<std::size_t> closed_by_server{0};
  mutable std::mutex mutex;
  std::vector<ReceivedRequest> requests;
  asio::io_context ioc{1};
  tcp::acceptor acceptor{ioc};

  ScriptedReply record(const http::request<http::string_body>& request) {
    ReceivedRequest received;
    received.method = std::string(request.method_string());
    received.target = std::string(request.target());
    for (const auto& field : request) {
      received.headers[lower(field.name_string())] = std::string(field.value());
    }
    {
      std::lock_guard lock(mutex);
      requests.push_back(received);
    }
    return script(received);  // only ever called on the server thread
  }

  template <class Stream>
  void close(Stream& stream) {
    beast::get_lowest_layer(stream).socket().close();
    ++closed_by_server;
  }

  template <class Stream>
  asio::awaitable<void> serve(Stream stream) {
    beast::flat_buffer buffer;
    for (;;) {
      http::request<http::string_body> request;
      auto [read_ec, n] = co_await http::async_read(stream, buffer, request, use_tuple);
      if (read_ec) co_return;  // the client closed (or gave up): nothing more to do
      const ScriptedReply reply = record(request);
      using Mode = ScriptedReply::Mode;
      switch (reply.mode) {
        case Mode::hang:
          continue;  // keep reading: returns when the client closes
        case Mode::close_without_answer:
          close(stream);
          co_return;
        case Mode::truncate: {
          const std::string head =
              "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
              "Content-Length: " +
              std::to_string(reply.body.size() + 50) + "\r\n\r\n";
          const std::string bytes = head + reply.body;
          co_await asio::async_write(stream, asio::buffer(bytes), use_tuple);
          close(stream);
          co_return;
        }
        case Mode::trickle: {
          const std::string bytes =
              "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
              "Content-Length: " +
              std::to_string(reply.body.size()) + "\r\n\r\n" + reply.body;
          asio::steady_timer pause(co_await asio::this_coro::executor);
          const std::size_t piece = bytes.size() / 7 + 1;  // the head itself arrives in pieces
          for (std::size_t at = 0; at < bytes.size(); at += piece) {
            const std::size_t n = std::min(piece, bytes.size() - at);
            auto [write_ec, written] =
                co_await asio::async_write(stream, asio::buffer(bytes.data() + at, n), use_tuple);
            if (write_ec) co_return;
            pause.expires_after(5ms);
            co_await pause.async_wait(use_tuple);
          }
          break;
        }
        case Mode::respond:
        case Mode::respond_then_close: {
          http::response<http::string_body> response{static_cast<http::status>(reply.status), 11};
          response.set(http::field::content_type, "application/json");
          response.keep_alive(!reply.connection_close);
          for (const auto& [name, value] : reply.headers) response.insert(name, value);
          response.body() = reply.body;
          response.prepare_payload();
          auto [write_ec, written] = co_await http::async_write(stream, response, use_tuple);
          if (write_ec) co_return;
          if (reply.connection_close || reply.mode == Mode::respond_then_close) {
            close(stream);
            co_return;
          }
          break;
        }
      }
    }
  }

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor.async_accept(use_tuple);
      if (ec) co_return;
      ++accepted;
      if (tls) {
        ssl::stream<beast::tcp_stream> stream(std::move(socket), *tls);
        co_spawn(ioc, handshake_then_serve(std::move(stream)), asio::detached);
      } else {
        co_spawn(ioc, serve(beast::tcp_stream(std::move(socket))), asio::detached);
      }
    }
  }

  asio::awaitable<void> handshake_then_serve(ssl::stream<beast::tcp_stream> stream) {
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
    auto [ec] = co_await stream.async_handshake(ssl::stream_base::server, use_tuple);
    if (ec) co_return;  // e.g. the client rejected our certificate
    beast::get_lowest_layer(stream).expires_never();
    co_await serve(std::move(stream));
  }
};

TestServer::TestServer(Script script, std::optional<Tls> tls) : state_(std::make_unique<State>()) {
  state_->script = std::move(script);
  if (tls) {
    state_->tls.emplace(ssl::context::tls_server);
    state_->tls->use_certificate_chain_file(tls->cert_chain_file);
    state_->tls->use_private_key_file(tls->key_file, ssl::context::pem);
  }
  tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
  state_->acceptor.open(endpoint.protocol());
  state_->acceptor.set_option(tcp::acceptor::reuse_address(true));
  state_->acceptor.bind(endpoint);
  state_->acceptor.listen();
  co_spawn(state_->ioc, state_->accept_loop(), asio::detached);
  thread_ = std::thread([state = state_.get()] {
    // Bounded: no test needs the server for longer.
    state->ioc.run_for(std::chrono::minutes(2));
  });
}

TestServer::~TestServer() {
  state_->ioc.stop();
  thread_.join();
  // Pending sessions (coroutine frames and their sockets) are destroyed with the io_context.
}

std::uint16_t TestServer::port() const {
  return state_->acceptor.local_endpoint().port();
}
std::size_t TestServer::accepted() const {
  return state_->accepted.load();
}
std::size_t TestServer::closed_by_server() const {
  return state_->closed_by_server.load();
}

std::vector<ReceivedRequest> TestServer::requests() const {
  std::lock_guard lock(state_->mutex);
  return state_->requests;
}

bool TestServer::wait_closed_by_server(std::size_t count, std::chrono::milliseconds timeout) const {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (closed_by_server() < count) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

ScratchDir::ScratchDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "wg-upstream-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

namespace {

void run_openssl(const ScratchDir& dir, const std::string& args) {
  const std::string command =
      "cd '" + dir.file("") + "' && openssl " + args + " >> openssl.log 2>&1";
  if (std::system(command.c_str()) != 0) {
    throw std::runtime_error("openssl failed: " + args);
  }
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream(path) << content;
}

void make_ca(const ScratchDir& dir, const std::string& name) {
  run_openssl(dir, "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " +
                       name + ".key -out " + name + ".pem -days 2 -subj '/CN=" + name +
                       "' -addext 'basicConstraints=critical,CA:TRUE' -addext "
                       "'keyUsage=critical,keyCertSign,cRLSign'");
}

TestServer::Tls make_server_cert(const ScratchDir& dir, const std::string& name,
                                 const std::string& ca, const std::string& san) {
  write_file(dir.file(name + ".ext"), "subjectAltName=" + san +
                                          "\nbasicConstraints=CA:FALSE\n"
                                          "keyUsage=digitalSignature\n"
                                          "extendedKeyUsage=serverAuth\n");
  run_openssl(dir, "req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " + name +
                       ".key -out " + name + ".csr -subj '/CN=" + name + "'");
  run_openssl(dir, "x509 -req -in " + name + ".csr -CA " + ca + ".pem -CAkey " + ca +
                       ".key -CAcreateserial -out " + name + ".pem -days 2 -extfile " + name +
                       ".ext");
  return {dir.file(name + ".pem"), dir.file(name + ".key")};
}

}  // namespace

TestPki make_test_pki(const ScratchDir& dir) {
  make_ca(dir, "test-ca");
  make_ca(dir, "other-ca");
  TestPki pki;
  pki.ca_file = dir.file("test-ca.pem");
  pki.other_ca_file = dir.file("other-ca.pem");
  pki.server = make_server_cert(dir, "server", "test-ca", "IP:127.0.0.1");
  pki.wrong_name_server = make_server_cert(dir, "wrong-name", "test-ca", "DNS:other.test");
  return pki;
}

std::uint16_t unused_port() {
  asio::io_context ioc;
  tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();  // closed on return: nothing listens there now
}

}  // namespace wg::test
