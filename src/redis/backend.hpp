#pragma once
// What a Client forwards its calls to: one connection (ClientImpl), or a Redis Cluster's
// primaries (ClusterImpl). Everything here is thread-safe.

#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "widget_gateway/redis/client.hpp"

namespace wg::redis::detail {

// A move-only, type-erased "call once" completion, invoked on the client's strand. It forwards
// the result to the waiting operation's own executor.
class Completion {
 public:
  Completion() = default;
  template <class F>
  explicit Completion(F f) : impl_(std::make_unique<Model<F>>(std::move(f))) {}
  explicit operator bool() const { return impl_ != nullptr; }
  void operator()(std::error_code ec, Reply reply) {
    auto impl = std::move(impl_);
    impl->call(ec, std::move(reply));
  }

 private:
  struct Concept {
    virtual ~Concept() = default;
    virtual void call(std::error_code ec, Reply reply) = 0;
  };
  template <class F>
  struct Model final : Concept {
    explicit Model(F f) : f(std::move(f)) {}
    void call(std::error_code ec, Reply reply) override { f(ec, std::move(reply)); }
    F f;
  };
  std::unique_ptr<Concept> impl_;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual void start() = 0;
  virtual void stop() = 0;
  virtual bool connected() const noexcept = 0;
  virtual bool healthy() const noexcept = 0;
  // `done` runs exactly once, on the backend's strand (not when it is destroyed unstopped).
  virtual void submit(std::vector<std::string> args, Completion done) = 0;
  virtual void on_state_change(std::function<void(bool)> listener) = 0;
  virtual void on_error(std::function<void(ErrorKind)> listener) = 0;
  virtual void on_round_trip(Client::RoundTripListener listener) = 0;
  // Sentinel mode only (Client::use_primary); a cluster learns its primaries from its map.
  virtual void use_primary(std::string host, std::uint16_t port) {}
  // From the handle's destructor: no listener runs after this returns.
  virtual void detach_callbacks() = 0;
};

}  // namespace wg::redis::detail
