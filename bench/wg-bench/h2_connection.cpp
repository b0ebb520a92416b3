#include "wg-bench/h2_connection.hpp"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

#include "wg-bench/h2_request.hpp"
#include "wg-bench/transport.hpp"

namespace wg::bench {
namespace {

namespace net = boost::asio;
using boost::system::error_code;

constexpr std::size_t kWriteChunk = 64 * 1024;
constexpr std::size_t kMinReadBuffer = 16 * 1024;
// Flow control: answers are discarded as they arrive, so the windows only need to be large
// enough that the server never waits for a WINDOW_UPDATE on a large page.
constexpr std::int32_t kStreamWindow = 1 << 20;
constexpr std::int32_t kConnectionWindow = 16 << 20;

struct CallbacksDeleter {
  void operator()(nghttp2_session_callbacks* p) const { nghttp2_session_callbacks_del(p); }
};

// One request's place on the connection.
struct Slot {
  enum class State {
    free,
    waiting,  // has a request, not yet submitted (no connection yet, or a GOAWAY drains it)
    open,     // submitted: a stream of the session
  };
  State state = State::free;
  Attempt attempt;
  std::int32_t stream_id = 0;
  SteadyTime deadline{};
  unsigned status = 0;
  std::uint64_t bytes = 0;
  bool complete = false;  // END_STREAM received
  bool resent = false;    // refused once and sent again: not noted as sent twice
};

// Transport: PlainTransport or TlsTransport (transport.hpp).
template <class Transport>
class H2Connection final : public ClientConnection {
 public:
  H2Connection(Worker& worker, std::size_t index)
      : worker_(worker),
        shared_(worker.shared),
        table_(*worker.shared.h2_requests),
        pacing_(worker.shared, index),
        transport_(worker.ioc, worker.shared.tls),
        timer_(worker.ioc),
        slots_(std::max(1u, worker.shared.options.streams)),
        read_buffer_(std::max(kMinReadBuffer, worker.shared.receive_buffer_bytes)) {
    free_.reserve(slots_.size());
    waiting_.reserve(slots_.size());
    for (auto it = slots_.rbegin(); it != slots_.rend(); ++it) free_.push_back(&*it);
    write_buffer_.reserve(kWriteChunk + 16 * 1024);
    nghttp2_session_callbacks* raw = nullptr;
    if (nghttp2_session_callbacks_new(&raw) != 0) throw std::bad_alloc();
    callbacks_.reset(raw);
    nghttp2_session_callbacks_set_on_begin_frame_callback(raw, &on_begin_frame);
    nghttp2_session_callbacks_set_on_header_callback(raw, &on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(raw, &on_frame_recv);
    nghttp2_session_callbacks_set_on_frame_not_send_callback(raw, &on_frame_not_send);
    nghttp2_session_callbacks_set_on_stream_close_callback(raw, &on_stream_close);
  }

  ~H2Connection() override { delete_session(); }

  void start() override { after_event(); }

  void expire_if_late(SteadyTime now) override {
    if (left_) return;
    if (link_ == Link::connecting) {
      if (now >= connect_deadline_) transport_.close();  // on_open counts the connect errors
      return;
    }
    if (link_ != Link::up) return;
    bool expired = false;
    for (Slot& slot : slots_) {
      if (slot.state != Slot::State::open || now < slot.deadline) continue;
      // Forget the stream first, so that nghttp2's later callbacks for it find nothing.
      nghttp2_session_set_stream_user_data(session_, slot.stream_id, nullptr);
      nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, slot.stream_id, NGHTTP2_CANCEL);
      worker_.record_failure(slot.attempt, ErrorKind::timeout, now);
      release(slot);
      expired = true;
    }
    if (expired) after_event();
  }

  void stop() override {
    timer_.cancel();
    transport_.close();
  }

 private:
  enum class Link {
    down,        // no connection and no operation pending
    connecting,  // TCP connect and TLS handshake under way
    up,          // the session runs
    closing,     // closed; waiting for the last read or write handler before reconnecting
  };

  // --- Pacing: which requests go when --------------------------------------------------------

  // What every completion ends with: place what pacing allows, (re)connect or submit, write,
  // and leave once the run is over for this connection.
  void after_event() {
    if (left_) return;
    if (worker_.hard_stopped) {
      drop_unsent();
      return maybe_leave();
    }
    place_pending();
    pull();
    if (link_ == Link::up && goaway_ && open_ == 0) retire();
    if (link_ == Link::down && !waiting_.empty()) {
      open();
    } else if (link_ == Link::up) {
      if (!goaway_) submit_waiting();
      write();
    }
    maybe_leave();
  }

  std::size_t limit() const {
    std::size_t n = slots_.size();
    if (link_ == Link::up) {
      const std::uint32_t remote =
          nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
      n = std::min<std::size_t>(n, std::max<std::uint32_t>(1, remote));
    }
    return n;
  }
  std::size_t occupied() const { return slots_.size() - free_.size(); }

  // Asks the pacing for requests while a slot is free. Closed loop: every free slot gets one
  // now. Open loop: the next request of the schedule; one not yet due waits on the timer.
  void pull() {
    while (!pending_ && !timer_armed_ && !leaving_ && occupied() < limit()) {
      const SteadyTime now = shared_.clock.steady_now();
      const Turn turn = pacing_.next(now);
      if (turn.kind == Turn::Kind::leave) {
        leaving_ = true;
        return;
      }
      if (turn.kind == Turn::Kind::retry) return arm_timer(turn.at);
      const Attempt attempt{&worker_.next_request(), turn.at, turn.measured};
      if (turn.at > now) {
        pending_ = attempt;
        pending_due_ = false;
        return arm_timer(turn.at);
      }
      assign(attempt);
    }
  }

  // An open-loop request whose time has come takes the first free slot.
  void place_pending() {
    if (!pending_ || !pending_due_ || occupied() >= limit()) return;
    assign(*pending_);
    pending_.reset();
    pending_due_ = false;
  }

  void assign(const Attempt& attempt) {
    Slot& slot = *free_.back();
    free_.pop_back();
    slot.state = Slot::State::waiting;
    slot.attempt = attempt;
    slot.resent = false;
    waiting_.push_back(&slot);
  }

  void release(Slot& slot) {
    if (slot.state == Slot::State::open) --open_;
    slot.state = Slot::State::free;
    slot.stream_id = 0;
    free_.push_back(&slot);
  }

  void arm_timer(SteadyTime at) {
    timer_armed_ = true;
    timer_.expires_at(at);
    timer_.async_wait([this](const error_code&) {
      timer_armed_ = false;
      if (left_) return;
      if (pending_) pending_due_ = true;
      after_event();
    });
  }

  // Hard stop: what was claimed but never sent.
  void drop_unsent() {
    if (pending_) {
      if (pending_->measured) worker_.record_unsent(1);
      pending_.reset();
    }
    if (link_ == Link::connecting) return;  // on_open counts those as connect errors
    for (Slot* slot : waiting_) {
      if (slot->attempt.measured) worker_.record_unsent(1);
      release(*slot);
    }
    waiting_.clear();
  }

  void maybe_leave() {
    if (left_ || !(leaving_ || worker_.hard_stopped)) return;
    if (occupied() > 0 || pending_ || link_ == Link::connecting) return;
    left_ = true;
    timer_.cancel();
    delete_session();
    transport_.close();
    worker_.record_unsent(pacing_.unsent_on_leave());
    worker_.leave();
  }

  // --- The connection -----------------------------------------------------------------------

  void open() {
    link_ = Link::connecting;
    connect_deadline_ = shared_.clock.steady_now() + shared_.options.load.timeout;
    transport_.async_open(shared_.endpoint, [this](const error_code& ec) { on_open(ec); });
  }

  void on_open(error_code ec) {
    if (left_) return;
    if (!ec && !start_session()) ec = net::error::no_memory;
    if (ec) {
      link_ = Link::down;
      transport_.close();
      delete_session();
      const SteadyTime now = shared_.clock.steady_now();
      for (Slot* slot : waiting_) {
        worker_.record_failure(slot->attempt, ErrorKind::connect, now);
        release(*slot);
      }
      waiting_.clear();
      // Closed loop: do not spin against a refusing port.
      if (!shared_.open_loop && !worker_.hard_stopped && !timer_armed_) {
        arm_timer(now + kReconnectPause);
      }
      return after_event();
    }
    link_ = Link::up;
    goaway_ = false;
    worker_.connection_opened();
    read();
    after_event();
  }

  bool start_session() {
    if (nghttp2_session_client_new(&session_, callbacks_.get(), this) != 0) {
      session_ = nullptr;
      return false;
    }
    const nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<std::uint32_t>(kStreamWindow)},
    };
    return nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings)) ==
               0 &&
           nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                                 kConnectionWindow) == 0;
  }

  void delete_session() {
    if (session_ == nullptr) return;
    nghttp2_session_del(session_);  // calls no callbacks
    session_ = nullptr;
  }

  void submit_waiting() {
    while (!waiting_.empty() && open_ < limit()) {
      Slot& slot = *waiting_.front();
      waiting_.erase(waiting_.begin());  // a handful of entries at most: cheap
      submit(slot);
    }
  }

  void submit(Slot& slot) {
    const SteadyTime now = shared_.clock.steady_now();
    if (!slot.resent) {
      if (!shared_.open_loop) slot.attempt.started = now;
      worker_.note_sent(slot.attempt, now);
    }
    slot.deadline = now + shared_.options.load.timeout;
    slot.status = 0;
    slot.bytes = 0;
    slot.complete = false;
    const auto headers = table_.headers(*slot.attempt.request);
    const std::int32_t id =
        nghttp2_submit_request(session_, nullptr, headers.data(), headers.size(), nullptr, &slot);
    if (id < 0) {  // stream ids used up (after 2^30 requests) or no memory
      worker_.record_failure(slot.attempt, ErrorKind::write, now);
      slot.state = Slot::State::free;
      free_.push_back(&slot);
      goaway_ = true;  // finish this connection, the next request reconnects
      return;
    }
    slot.state = Slot::State::open;
    slot.stream_id = id;
    ++open_;
  }

  void read() {
    reading_ = true;
    transport_.async_read_some(net::buffer(read_buffer_),
                               [this](const error_code& ec, std::size_t n) { on_read(ec, n); });
  }

  void on_read(const error_code& ec, std::size_t n) {
    reading_ = false;
    if (left_) return;
    if (link_ != Link::up) {
      // Closed under this read (a failed write, a timeout after a GOAWAY): like the write
      // handler, go on from here, or nothing would reconnect for the requests still waiting
      // and, at the hard stop, leave the run.
      settle();
      return after_event();
    }
    // Over TLS, the records that came with the same socket read: all of them go to the session
    // before anything is submitted or written, so that the streams they end are sent again
    // together (one write, one TLS record, as h2load does) rather than one write per answer.
    if (!ec) {
      while (n < read_buffer_.size()) {
        const std::size_t more =
            transport_.read_buffered(net::buffer(read_buffer_.data() + n, read_buffer_.size() - n));
        if (more == 0) break;
        n += more;
      }
    }
    if (n > 0) {
      const auto rv = nghttp2_session_mem_recv(
          session_, reinterpret_cast<const std::uint8_t*>(read_buffer_.data()), n);
      if (rv < 0) {
        fail_connection(ErrorKind::parse);
        return after_event();
      }
    }
    if (ec) {
      fail_connection(worker_.hard_stopped ? ErrorKind::timeout : classify_io_error(ec, false));
      return after_event();
    }
    if (nghttp2_session_want_read(session_) != 0) read();
    after_event();
  }

  void write() {
    if (link_ != Link::up || writing_) return;
    write_buffer_.clear();
    while (write_buffer_.size() < kWriteChunk) {
      const std::uint8_t* data = nullptr;
      const auto n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) {
        fail_connection(ErrorKind::write);
        return;
      }
      if (n == 0) break;
      write_buffer_.insert(write_buffer_.end(), data, data + n);
    }
    if (write_buffer_.empty()) {
      // Nothing to send and nothing more to read: the session is over (after a GOAWAY).
      if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0) {
        retire();
      }
      return;
    }
    writing_ = true;
    transport_.async_write(net::buffer(write_buffer_), [this](const error_code& ec, std::size_t) {
      writing_ = false;
      if (left_) return;
      if (link_ != Link::up) {
        settle();
        return after_event();
      }
      if (ec)
        fail_connection(worker_.hard_stopped ? ErrorKind::timeout : classify_io_error(ec, true));
      after_event();
    });
  }

  // The connection failed: its open streams fail with it; waiting requests go on the next one.
  void fail_connection(ErrorKind kind) {
    if (link_ != Link::up) return;
    const SteadyTime now = shared_.clock.steady_now();
    for (Slot& slot : slots_) {
      if (slot.state != Slot::State::open) continue;
      worker_.record_failure(slot.attempt, kind, now);
      release(slot);
    }
    retire();
  }

  // Ends the connection (nothing in flight any more, or all of it failed).
  void retire() {
    delete_session();
    transport_.close();
    link_ = Link::closing;
    settle();
  }

  void settle() {
    if (link_ == Link::closing && !reading_ && !writing_) link_ = Link::down;
  }

  // --- nghttp2 callbacks: record, never submit ----------------------------------------------

  static H2Connection& self(void* user_data) { return *static_cast<H2Connection*>(user_data); }

  // The slot of an open stream, or null (a stream given up on, or not ours).
  static Slot* slot_of(nghttp2_session* session, std::int32_t stream_id) {
    if (stream_id == 0) return nullptr;
    auto* slot = static_cast<Slot*>(nghttp2_session_get_stream_user_data(session, stream_id));
    if (slot == nullptr || slot->state != Slot::State::open || slot->stream_id != stream_id) {
      return nullptr;
    }
    return slot;
  }

  static int on_begin_frame(nghttp2_session* session, const nghttp2_frame_hd* hd, void*) {
    if (Slot* slot = slot_of(session, hd->stream_id)) slot->bytes += hd->length + 9;
    return 0;
  }

  static int on_header(nghttp2_session* session, const nghttp2_frame* frame,
                       const std::uint8_t* name, std::size_t name_length, const std::uint8_t* value,
                       std::size_t value_length, std::uint8_t, void*) {
    if (frame->hd.type != NGHTTP2_HEADERS || name_length != 7 ||
        std::string_view(reinterpret_cast<const char*>(name), name_length) != ":status") {
      return 0;
    }
    Slot* slot = slot_of(session, frame->hd.stream_id);
    if (slot == nullptr) return 0;
    unsigned status = 0;
    for (std::size_t i = 0; i < value_length; ++i) status = status * 10 + (value[i] - '0');
    slot->status = status;  // interim 1xx answers are followed by the final one
    return 0;
  }

  static int on_frame_recv(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type == NGHTTP2_GOAWAY) {
      self(user_data).goaway_ = true;
      return 0;
    }
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
      if (Slot* slot = slot_of(session, frame->hd.stream_id)) slot->complete = true;
    }
    return 0;
  }

  // A request whose HEADERS never went out (the session is going away): send it again.
  static int on_frame_not_send(nghttp2_session* session, const nghttp2_frame* frame, int,
                               void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    if (Slot* slot = slot_of(session, frame->hd.stream_id)) self(user_data).refused(*slot);
    return 0;
  }

  static int on_stream_close(nghttp2_session* session, std::int32_t stream_id,
                             std::uint32_t error_code, void* user_data) {
    Slot* slot = slot_of(session, stream_id);
    if (slot == nullptr) return 0;
    H2Connection& c = self(user_data);
    const SteadyTime now = c.shared_.clock.steady_now();
    if (slot->complete && slot->status != 0) {
      c.worker_.record_answer(slot->attempt, now, slot->status, slot->bytes);
    } else if (error_code == NGHTTP2_REFUSED_STREAM && slot->status == 0) {
      c.refused(*slot);  // not processed by the server (RFC 9113 8.7): safe to send again
      return 0;
    } else {
      c.worker_.record_failure(slot->attempt, ErrorKind::closed, now);
    }
    c.release(*slot);
    return 0;
  }

  // Sent once more on the next connection (or this one, once a stream frees); refused twice,
  // it counts as closed.
  void refused(Slot& slot) {
    if (slot.resent) {
      worker_.record_failure(slot.attempt, ErrorKind::closed, shared_.clock.steady_now());
      return release(slot);
    }
    --open_;
    slot.stream_id = 0;
    slot.resent = true;
    slot.state = Slot::State::waiting;
    waiting_.push_back(&slot);
  }

  Worker& worker_;
  RunShared& shared_;
  const H2RequestTable& table_;
  Pacing pacing_;
  Transport transport_;
  net::steady_timer timer_;  // open-loop waits, ramp waits and reconnect pauses only
  std::unique_ptr<nghttp2_session_callbacks, CallbacksDeleter> callbacks_;
  nghttp2_session* session_ = nullptr;
  std::vector<Slot> slots_;  // fixed: nghttp2 holds pointers to them as stream user data
  std::vector<Slot*> free_;
  std::vector<Slot*> waiting_;  // in the order they should go out
  std::size_t open_ = 0;
  std::optional<Attempt> pending_;  // open loop: the next request of the schedule
  bool pending_due_ = false;        // ... and its time has come (it waits for a slot)
  std::vector<char> read_buffer_;
  std::vector<std::uint8_t> write_buffer_;
  SteadyTime connect_deadline_{};
  Link link_ = Link::down;
  bool reading_ = false;
  bool writing_ = false;
  bool goaway_ = false;  // no new streams on this session
  bool timer_armed_ = false;
  bool leaving_ = false;  // the pacing has nothing more for this connection
  bool left_ = false;
};

}  // namespace

std::unique_ptr<ClientConnection> make_h2_connection(Worker& worker, std::size_t connection_index) {
  if (worker.shared.tls) {
    return std::make_unique<H2Connection<TlsTransport>>(worker, connection_index);
  }
  return std::make_unique<H2Connection<PlainTransport>>(worker, connection_index);
}

}  // namespace wg::bench
