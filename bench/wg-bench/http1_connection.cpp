#include "wg-bench/http1_connection.hpp"

#include <vector>

#include "wg-bench/response_reader.hpp"
#include "wg-bench/transport.hpp"

namespace wg::bench {
namespace {

namespace net = boost::asio;
using boost::system::error_code;

// Transport: PlainTransport or TlsTransport (transport.hpp).
template <class Transport>
class Http1Connection final : public ClientConnection {
 public:
  Http1Connection(Worker& worker, std::size_t index)
      : worker_(worker),
        shared_(worker.shared),
        pacing_(worker.shared, index),
        transport_(worker.ioc, worker.shared.tls),
        timer_(worker.ioc),
        receive_buffer_(worker.shared.receive_buffer_bytes) {}

  void start() override { next(); }

  void expire_if_late(SteadyTime now) override {
    if (in_flight_ && now >= deadline_) {
      timed_out_ = true;
      close_socket();
    }
  }

  void stop() override {
    close_socket();
    timer_.cancel();
  }

 private:
  void next() {
    if (worker_.hard_stopped) return leave();
    const SteadyTime now = shared_.clock.steady_now();
    const Turn turn = pacing_.next(now);
    switch (turn.kind) {
      case Turn::Kind::leave:
        return leave();
      case Turn::Kind::retry:
        timer_.expires_at(turn.at);
        timer_.async_wait([this](const error_code&) { next(); });
        return;
      case Turn::Kind::send:
        break;
    }
    attempt_ = {&worker_.next_request(), turn.at, turn.measured};
    if (now >= turn.at) return send();
    timer_.expires_at(turn.at);
    timer_.async_wait([this](const error_code&) {
      if (!worker_.hard_stopped) return send();
      if (attempt_.measured) worker_.record_unsent(1);  // claimed, never sent
      leave();
    });
  }

  void send() {
    if (connected_) return write();
    begin_io(shared_.clock.steady_now());
    transport_.async_open(shared_.endpoint, [this](const error_code& ec) { on_connect(ec); });
  }

  void on_connect(const error_code& ec) {
    if (ec) {
      end_io();
      close_socket();
      worker_.record_failure(attempt_, ErrorKind::connect, shared_.clock.steady_now());
      if (shared_.open_loop || worker_.hard_stopped) return next();
      // Closed loop: do not spin against a refusing port.
      timer_.expires_after(kReconnectPause);
      timer_.async_wait([this](const error_code&) { next(); });
      return;
    }
    connected_ = true;
    worker_.connection_opened();
    write();
  }

  void write() {
    const SteadyTime sent = shared_.clock.steady_now();
    if (!shared_.open_loop) attempt_.started = sent;
    worker_.note_sent(attempt_, sent);
    begin_io(sent);
    reader_.reset(attempt_.request->head);
    transport_.async_write(
        net::buffer(attempt_.request->text), [this](const error_code& ec, std::size_t) {
          if (ec) {
            return fail(timed_out_ ? ErrorKind::timeout : classify_io_error(ec, true));
          }
          read();
        });
  }

  void read() {
    transport_.async_read_some(net::buffer(receive_buffer_),
                               [this](const error_code& ec, std::size_t n) { on_read(ec, n); });
  }

  void on_read(const error_code& ec, std::size_t n) {
    std::size_t used = 0;
    if (n > 0) used = reader_.consume(std::string_view(receive_buffer_.data(), n));
    if (!ec) {
      // Nothing is pipelined, so bytes beyond the answer mean the server misframed it.
      if (reader_.failed() || used < n) return fail(ErrorKind::parse);
      if (!reader_.done()) return read();
      return succeed();
    }
    if (Transport::is_end_of_stream(ec)) {
      reader_.finish_on_eof();
      if (reader_.done()) return succeed();
    }
    fail(timed_out_ ? ErrorKind::timeout : classify_io_error(ec, false));
  }

  void succeed() {
    end_io();
    worker_.record_answer(attempt_, shared_.clock.steady_now(), reader_.status(), reader_.bytes());
    if (!reader_.keep_alive()) {
      worker_.server_closed();
      close_socket();
    }
    next();
  }

  void fail(ErrorKind kind) {
    end_io();
    close_socket();
    worker_.record_failure(attempt_, kind, shared_.clock.steady_now());
    next();
  }

  void leave() {
    worker_.record_unsent(pacing_.unsent_on_leave());
    close_socket();
    worker_.leave();
  }

  void begin_io(SteadyTime now) {
    in_flight_ = true;
    timed_out_ = false;
    deadline_ = now + shared_.options.load.timeout;
  }
  void end_io() {
    in_flight_ = false;
    timed_out_ = false;
  }

  void close_socket() {
    connected_ = false;
    transport_.close();
  }

  Worker& worker_;
  RunShared& shared_;
  Pacing pacing_;
  Transport transport_;
  net::steady_timer timer_;  // open-loop waits, ramp waits and reconnect pauses only
  std::vector<char> receive_buffer_;
  ResponseReader reader_;
  Attempt attempt_;
  SteadyTime deadline_{};
  bool connected_ = false;
  bool in_flight_ = false;
  bool timed_out_ = false;
};

}  // namespace

std::unique_ptr<ClientConnection> make_http1_connection(Worker& worker,
                                                        std::size_t connection_index) {
  if (worker.shared.tls) {
    return std::make_unique<Http1Connection<TlsTransport>>(worker, connection_index);
  }
  return std::make_unique<Http1Connection<PlainTransport>>(worker, connection_index);
}

}  // namespace wg::bench
