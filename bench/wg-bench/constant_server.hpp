#pragma once
// The reference server: answers every request with the same pre-built bytes, as fast as one
// event loop can. What it measures is the physical limit of the machine, the kernel's loopback
// and the load generator; a cache can approach it but not beat it.
//
// It reads request heads only (requests must not carry a body), answers pipelined requests in
// order, keeps every connection alive, and closes a connection idle for 60 s or whose request
// head exceeds 16 KiB. HEAD gets the same head without the body. With a second body, requests
// whose target holds "/reviews/" get that one (the same bytes a cache would serve for a mix of
// widget data and reviews pages). Answers are written straight from the stored bytes.

#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace wg::bench {

class ConstantServer {
 public:
  // Binds and listens at once (throws on failure); serves after start().
  ConstantServer(boost::asio::io_context& ioc, const boost::asio::ip::tcp::endpoint& endpoint,
                 std::string body, std::string reviews_body = {},
                 std::string content_type = "application/json; charset=utf-8");
  ~ConstantServer();
  ConstantServer(const ConstantServer&) = delete;
  ConstantServer& operator=(const ConstantServer&) = delete;

  void start();
  void stop();  // closes the listener; open connections end at their next read
  boost::asio::ip::tcp::endpoint local_endpoint() const;

  struct State;  // shared with the connection coroutines, which may outlive the server object

 private:
  std::shared_ptr<State> state_;
};

}  // namespace wg::bench
