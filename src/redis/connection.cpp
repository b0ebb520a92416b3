#include "redis/connection.hpp"

namespace wg::redis::detail {

namespace asio = boost::asio;
using Descriptor = asio::posix::stream_descriptor;

Connection::Connection(const Strand& strand, ConnectionEvents& events)
    : descriptor_(strand), events_(&events) {}

std::shared_ptr<Connection> Connection::open(const Strand& strand, const std::string& ip,
                                             std::uint16_t port, ConnectionEvents& events,
                                             std::string& error) {
  redisAsyncContext* ac = redisAsyncConnect(ip.c_str(), port);
  if (ac == nullptr) {
    error = "out of memory";
    return nullptr;
  }
  if (ac->err != 0) {
    error = ac->errstr;
    redisAsyncFree(ac);  // no hooks attached yet: only frees
    return nullptr;
  }

  std::shared_ptr<Connection> c(new Connection(strand, events));
  boost::system::error_code ec;
  c->descriptor_.assign(ac->c.fd, ec);
  if (ec) {
    error = "cannot watch the socket: " + ec.message();
    redisAsyncFree(ac);
    return nullptr;
  }
  // Keepalive probes notice a peer that vanished without closing, even on an idle connection.
  redisEnableKeepAlive(&ac->c);
  c->ac_ = ac;
  ac->data = c.get();
  ac->ev.data = c.get();
  ac->ev.addRead = &Connection::add_read;
  ac->ev.delRead = &Connection::del_read;
  ac->ev.addWrite = &Connection::add_write;
  ac->ev.delWrite = &Connection::del_write;
  ac->ev.cleanup = &Connection::cleanup;
  // Setting the connect callback asks for write readiness: that is how hiredis learns that the
  // non-blocking connect finished. The hooks must be in place before.
  redisAsyncSetConnectCallback(ac, &Connection::connect_callback);
  redisAsyncSetDisconnectCallback(ac, &Connection::disconnect_callback);
  return c;
}

Connection::~Connection() {
  // Normally closed already; this is the safety net for teardown paths.
  if (ac_ != nullptr) {
    events_ = nullptr;
    redisAsyncFree(ac_);
  }
}

bool Connection::send(const std::vector<std::string>& args, redisCallbackFn* fn, void* privdata) {
  if (ac_ == nullptr || args.empty()) return false;
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  argv.reserve(args.size());
  lengths.reserve(args.size());
  for (const auto& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  // hiredis formats (copies) the arguments into its output buffer right away.
  return redisAsyncCommandArgv(ac_, fn, privdata, static_cast<int>(argv.size()), argv.data(),
                               lengths.data()) == REDIS_OK;
}

void Connection::close() {
  if (ac_ == nullptr) return;
  events_ = nullptr;
  redisAsyncFree(ac_);  // runs cleanup(), which resets ac_
}

void Connection::add_read(void* data) {
  auto* self = static_cast<Connection*>(data);
  self->want_read_ = true;
  self->wait_read();
}

void Connection::del_read(void* data) {
  static_cast<Connection*>(data)->want_read_ = false;
}

void Connection::add_write(void* data) {
  auto* self = static_cast<Connection*>(data);
  self->want_write_ = true;
  self->wait_write();
}

void Connection::del_write(void* data) {
  static_cast<Connection*>(data)->want_write_ = false;
}

void Connection::cleanup(void* data) {
  auto* self = static_cast<Connection*>(data);
  self->want_read_ = false;
  self->want_write_ = false;
  self->ac_ = nullptr;
  // hiredis closes the socket right after this hook: give it back without closing it. Waits
  // still outstanding complete with operation_aborted and see ac_ == nullptr.
  if (self->descriptor_.is_open()) self->descriptor_.release();
}

void Connection::connect_callback(const redisAsyncContext* ac, int status) {
  auto* self = static_cast<Connection*>(ac->data);
  if (status != REDIS_OK && ac->errstr != nullptr) self->error_ = ac->errstr;
  // After a failure hiredis frees the context as soon as this returns.
  if (self->events_ != nullptr) self->events_->on_connect(status == REDIS_OK);
}

void Connection::disconnect_callback(const redisAsyncContext* ac, int status) {
  auto* self = static_cast<Connection*>(ac->data);
  if (status != REDIS_OK) {
    self->error_ = ac->errstr != nullptr ? ac->errstr : "connection lost";
  } else {
    self->error_ = "connection closed";
  }
  if (self->events_ != nullptr) self->events_->on_disconnect();
}

// A wait stays outstanding even if hiredis drops its interest meanwhile; the handler checks
// want_read_ when it fires. The shared_ptr keeps this object alive until then, so a handler
// never touches freed memory even after the context is gone.
void Connection::wait_read() {
  if (read_waiting_ || ac_ == nullptr) return;
  read_waiting_ = true;
  descriptor_.async_wait(Descriptor::wait_read,
                         [self = shared_from_this()](boost::system::error_code ec) {
                           self->read_waiting_ = false;
                           if (ec || self->ac_ == nullptr || !self->want_read_) return;
                           redisAsyncHandleRead(self->ac_);  // may free the context
                           if (self->ac_ != nullptr && self->want_read_) self->wait_read();
                         });
}

void Connection::wait_write() {
  if (write_waiting_ || ac_ == nullptr) return;
  write_waiting_ = true;
  descriptor_.async_wait(Descriptor::wait_write,
                         [self = shared_from_this()](boost::system::error_code ec) {
                           self->write_waiting_ = false;
                           if (ec || self->ac_ == nullptr || !self->want_write_) return;
                           redisAsyncHandleWrite(self->ac_);  // may free the context
                           if (self->ac_ != nullptr && self->want_write_) self->wait_write();
                         });
}

}  // namespace wg::redis::detail
