#include "h2_session.hpp"

#include "h2_memory.hpp"
#include "h2_stream.hpp"
#include "header_limits.hpp"
#include "http_date.hpp"
#include "response_head.hpp"
#include "streams.hpp"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <ctime>
#include <exception>
#include <iterator>
#include <limits>

#include "widget_gateway/common/log.hpp"

namespace wg::http {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using asio::as_tuple;

namespace {

// CONTINUATION frames per header block; browsers send none. nghttp2 closes the session
// beyond it (NGHTTP2_ERR_TOO_MANY_CONTINUATIONS).
constexpr std::size_t kMaxContinuations = 8;
// HPACK dynamic table, decoding (announced) and encoding (our answers).
constexpr std::uint32_t kHeaderTableSize = 4096;
// Rapid reset: early resets by the client plus refused streams allowed per window.
constexpr unsigned kMaxAbuse = 200;
constexpr std::chrono::seconds kAbuseWindow{10};
// nghttp2's own RST_STREAM token bucket (its defaults), kept behind ours.
constexpr std::uint64_t kResetBurst = 1000;
constexpr std::uint64_t kResetRate = 33;
// PING and SETTINGS ACKs queued before nghttp2 reports a flood (its default).
constexpr std::size_t kMaxOutboundAcks = 1000;
constexpr std::size_t kMaxSettingsEntries = 32;
// The reader pauses while nghttp2's outbound queue holds more frames than this.
constexpr std::size_t kMaxQueuedFrames = 512;
constexpr std::size_t kReadChunk = 16 * 1024;
constexpr std::size_t kWriteChunk = 64 * 1024;
// Once a GOAWAY ends the connection, the socket closes within this whatever the peer does.
constexpr std::chrono::milliseconds kCloseGrace{1000};
// The watchdog's reason when a send-rate interval ends (SendProgress).
constexpr std::string_view kSlowReader = "slow_reader";
// ... when a write has waited idle_timeout for the client to take it: closed at once (a GOAWAY
// could not go out either).
constexpr std::string_view kWriteStalled = "write_stalled";

struct CallbacksDeleter {
  void operator()(nghttp2_session_callbacks* p) const { nghttp2_session_callbacks_del(p); }
};
struct OptionDeleter {
  void operator()(nghttp2_option* p) const { nghttp2_option_del(p); }
};

}  // namespace

template <class Stream>
H2Session<Stream>::H2Session(Stream stream, RequestHandler& handler, H2Settings settings,
                             OutputBudget& output, asio::ip::address peer, std::string received)
    : stream_(std::move(stream)),
      handler_(handler),
      settings_(settings),
      peer_(peer),
      received_(std::move(received)),
      output_(output, settings.max_pending_output_bytes),
      progress_(settings.min_send_rate, settings.send_rate_interval),
      writer_wake_(stream_.get_executor()),
      reader_wake_(stream_.get_executor()),
      watchdog_(stream_.get_executor()),
      done_(stream_.get_executor()),
      room_(stream_.get_executor(), SteadyTimer::time_point::max()),
      read_buffer_(kReadChunk) {
  if (settings_.clock == nullptr) settings_.clock = &SystemClock::instance();
}

template <class Stream>
H2Session<Stream>::~H2Session() {
  if (session_ != nullptr) nghttp2_session_del(session_);
}

template <class Stream>
void H2Session<Stream>::drain() {
  asio::post(stream_.get_executor(), [self = this->shared_from_this()] { self->start_drain(); });
}

template <class Stream>
void H2Session<Stream>::force_close() {
  asio::post(stream_.get_executor(), [self = this->shared_from_this()] { self->close_now(); });
}

template <class Stream>
bool H2Session<Stream>::start_nghttp2() {
  nghttp2_session_callbacks* raw_callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&raw_callbacks) != 0) return false;
  std::unique_ptr<nghttp2_session_callbacks, CallbacksDeleter> callbacks(raw_callbacks);
  nghttp2_session_callbacks_set_on_begin_frame_callback(raw_callbacks, &Callbacks::on_begin_frame);
  nghttp2_session_callbacks_set_on_begin_headers_callback(raw_callbacks,
                                                          &Callbacks::on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(raw_callbacks, &Callbacks::on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(raw_callbacks, &Callbacks::on_frame_recv);
  nghttp2_session_callbacks_set_on_frame_send_callback(raw_callbacks, &Callbacks::on_frame_send);
  nghttp2_session_callbacks_set_on_stream_close_callback(raw_callbacks,
                                                         &Callbacks::on_stream_close);
  nghttp2_session_callbacks_set_send_data_callback(raw_callbacks, &Callbacks::send_data);

  nghttp2_option* raw_option = nullptr;
  if (nghttp2_option_new(&raw_option) != 0) return false;
  std::unique_ptr<nghttp2_option, OptionDeleter> option(raw_option);
  // HTTP messaging checks stay on (pseudo-headers, field names and values, content-length
  // against DATA) and so does automatic WINDOW_UPDATE: bodies are discarded as they come.
  nghttp2_option_set_max_continuations(raw_option, kMaxContinuations);
  nghttp2_option_set_stream_reset_rate_limit(raw_option, kResetBurst, kResetRate);
  nghttp2_option_set_max_outbound_ack(raw_option, kMaxOutboundAcks);
  nghttp2_option_set_max_settings(raw_option, kMaxSettingsEntries);
  nghttp2_option_set_max_deflate_dynamic_table_size(raw_option, kHeaderTableSize);
  nghttp2_option_set_no_closed_streams(raw_option, 1);  // no RFC 7540 priority tree to keep
  if (nghttp2_session_server_new3(&session_, raw_callbacks, this, raw_option, pooled_h2_memory()) !=
      0) {
    session_ = nullptr;
    return false;
  }

  const auto header_list = static_cast<std::uint32_t>(
      std::min<std::size_t>(settings_.max_header_bytes, std::numeric_limits<std::uint32_t>::max()));
  const nghttp2_settings_entry entries[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, settings_.max_concurrent_streams},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, header_list},
      {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, kHeaderTableSize},
      {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
  };
  return nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, entries, std::size(entries)) == 0;
}

template <class Stream>
Task<void> H2Session<Stream>::run() {
  Self self = this->shared_from_this();
  started_ = idle_since_ = last_progress_ = abuse_window_start_ = now();
  if (!start_nghttp2()) {
    log::error("h2_session_init_failed");
    close_now();
    co_return;
  }
  if (draining_) {  // drain() came before run()
    draining_ = false;
    start_drain();
  }
  auto executor = stream_.get_executor();
  asio::co_spawn(executor, read_loop(self), asio::detached);
  asio::co_spawn(executor, watchdog(self), asio::detached);
  co_await write_loop();
  close_now();
  // Handler calls hold references into this session and to the handler: wait for them
  // (each is bounded by the handler's own timeouts), and for the reader and the watchdog.
  while (!reader_done_ || !watchdog_done_ || running_handlers_ > 0) {
    done_.expires_at(SteadyTimer::time_point::max());
    co_await done_.async_wait(as_tuple(use_task));
  }
}

template <class Stream>
Task<void> H2Session<Stream>::read_loop(Self self) {
  if (!received_.empty()) {
    const std::string early = std::move(received_);
    received_.clear();
    feed(reinterpret_cast<const std::uint8_t*>(early.data()), early.size());
  }
  while (!closed_) {
    if (!closing_) {
      if (nghttp2_session_want_read(session_) == 0) break;
      if (nghttp2_session_get_outbound_queue_size(session_) > kMaxQueuedFrames) {
        // The client is not reading what it asks for: stop reading until the writer gets on.
        reader_wake_.expires_at(SteadyTimer::time_point::max());
        co_await reader_wake_.async_wait(as_tuple(use_task));
        continue;
      }
    }
    // The watchdog owns read deadlines: how long a quiet client may stay depends on the
    // streams, which change while the read is pending.
    auto [ec, n] = co_await stream_.async_read_some(asio::buffer(read_buffer_), as_tuple(use_task));
    if (ec) {
      if (!closing_) close_now();
      break;
    }
    // While a GOAWAY that ends the connection is being flushed, input is read and dropped,
    // so that the close does not turn into a reset that could destroy the GOAWAY.
    if (closing_) continue;
    feed(read_buffer_.data(), n);
  }
  reader_done_ = true;
  wake_writer();
  notify_done();
}

template <class Stream>
void H2Session<Stream>::feed(const std::uint8_t* data, std::size_t size) {
  const ssize_t rv = nghttp2_session_mem_recv(session_, data, size);
  if (rv < 0) {
    if (rv == NGHTTP2_ERR_BAD_CLIENT_MAGIC) {
      close_now();  // not HTTP/2
      return;
    }
    if (header_bomb_) {
      terminate(NGHTTP2_ENHANCE_YOUR_CALM, "header_bomb");
    } else if (rv == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS) {
      terminate(NGHTTP2_ENHANCE_YOUR_CALM, "continuation_flood");
    } else if (rv == NGHTTP2_ERR_FLOODED) {
      terminate(NGHTTP2_ENHANCE_YOUR_CALM, "flood");
    } else {
      terminate(NGHTTP2_INTERNAL_ERROR, nghttp2_strerror(static_cast<int>(rv)));
    }
    return;
  }
  wake_writer();
  rearm();
}

template <class Stream>
Task<void> H2Session<Stream>::write_loop() {
  while (!closed_) {
    write_buffer_.clear();
    body_pieces_.clear();
    batch_body_bytes_ = 0;
    ++batch_;
    writing_ = true;
    bool failed = false;
    while (write_buffer_.size() + batch_body_bytes_ < kWriteChunk) {
      const std::uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) {
        log::debug("h2_send_failed", {{"error", nghttp2_strerror(static_cast<int>(n))}});
        failed = true;
        break;
      }
      if (n == 0) break;
      write_buffer_.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
    }
    if (failed) break;
    if (write_buffer_.empty()) {
      writing_ = false;
      // Nothing to send and nothing more to receive: the connection is over (a GOAWAY that
      // ends it has gone out, or a drain finished its streams).
      if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0) {
        break;
      }
      writer_wake_.expires_at(SteadyTimer::time_point::max());
      co_await writer_wake_.async_wait(as_tuple(use_task));
      continue;
    }
    // Frames as nghttp2 serialised them, with each DATA payload read from its body.
    gather_.clear();
    std::size_t from = 0;
    for (const auto& [at, piece] : body_pieces_) {
      gather_.emplace_back(write_buffer_.data() + from, at - from);
      gather_.emplace_back(piece.data(), piece.size());
      from = at;
    }
    gather_.emplace_back(write_buffer_.data() + from, write_buffer_.size() - from);
    writing_since_ = now();
    rearm();
    auto [ec, n] = co_await asio::async_write(stream_, gather_, as_tuple(use_task));
    writing_since_ = TimePoint::max();
    writing_ = false;
    release_write_holds();
    if (ec) break;
    reader_wake_.cancel();  // the outbound queue may have room again
    rearm();
  }
  writing_ = false;  // nothing more is written: answers let go from now on go at once
  release_write_holds();
}

template <class Stream>
Task<void> H2Session<Stream>::watchdog(Self self) {
  while (!closed_) {
    std::string_view reason;
    const TimePoint due = deadline(&reason);
    const TimePoint now = this->now();
    if (now >= due) {
      if (closing_ || !settings_received_ || reason == kWriteStalled) {
        close_now();
      } else if (reason == kSlowReader) {
        // The end of a send-rate interval: too slow, or on to the next interval.
        if (progress_.too_slow(now)) {
          output_.budget().count_slow_reader();
          terminate(NGHTTP2_NO_ERROR, reason);
        }
      } else {
        terminate(NGHTTP2_NO_ERROR, reason);
      }
      continue;
    }
    watchdog_at_ = due;
    if (due == TimePoint::max()) {
      watchdog_.expires_at(SteadyTimer::time_point::max());
    } else {
      watchdog_.expires_after(due - now);
    }
    co_await watchdog_.async_wait(as_tuple(use_task));
    watchdog_at_ = TimePoint::max();
  }
  watchdog_done_ = true;
  notify_done();
}

template <class Stream>
typename H2Session<Stream>::TimePoint H2Session<Stream>::deadline(std::string_view* reason) const {
  std::string_view why;
  TimePoint due = TimePoint::max();
  if (closing_) {
    why = "close_grace";
    due = close_by_;
  } else if (!settings_received_) {
    why = "preface_timeout";
    due = started_ + settings_.header_timeout;
  } else {
    if (in_header_block_) {
      why = "header_timeout";
      due = block_started_ + settings_.header_timeout;
    }
    if (progress_.deadline() < due) {
      why = kSlowReader;
      due = progress_.deadline();
    }
    // A running handler is bounded by its own timeouts; a client waiting for it is not idle.
    // One waiting for room in the output budget waits on the client, which is.
    if (running_handlers_ == waiting_handlers_) {
      const bool idle = streams_.empty();
      const TimePoint quiet = (idle ? idle_since_ : last_progress_) + settings_.idle_timeout;
      if (quiet < due) {
        why = idle ? "idle" : "stalled";
        due = quiet;
      }
    }
  }
  if (writing_since_ != TimePoint::max()) {
    const TimePoint stalled = writing_since_ + settings_.idle_timeout;
    if (stalled < due) {
      why = kWriteStalled;
      due = stalled;
    }
  }
  if (reason != nullptr) *reason = why;
  return due;
}

template <class Stream>
void H2Session<Stream>::check_deadline() {
  asio::post(stream_.get_executor(),
             [self = this->shared_from_this()] { self->watchdog_.cancel(); });
}

template <class Stream>
void H2Session<Stream>::rearm() {
  if (!closed_ && deadline() < watchdog_at_) watchdog_.cancel();
}

template <class Stream>
void H2Session<Stream>::dispatch(const std::shared_ptr<StreamState>& stream, bool has_body) {
  StreamState& st = *stream;
  if (st.dispatched || closed_ || closing_) return;
  st.dispatched = true;
  if (draining_ && st.id > drain_last_stream_) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, st.id, NGHTTP2_REFUSED_STREAM);
    return;
  }
  st.reset_after_answer = has_body;

  // What the session refuses itself, in the HTTP/1.1 session's order.
  if (st.path_too_long) return refuse(st, Refusal::target_too_long);
  if (st.too_large) return refuse(st, Refusal::head_too_large);
  if (st.method == "CONNECT") return refuse(st, Refusal::tunnel);
  if (st.hosts > 1) return refuse(st, Refusal::duplicate_host);
  // nghttp2 resets these already.
  if (st.authority.empty() && st.hosts == 0) return refuse(st, Refusal::missing_authority);
  // RFC 9113 8.3.1: a Host that names another entity than :authority makes it malformed.
  if (!st.authority.empty() && st.hosts == 1 && !beast::iequals(st.host, st.authority)) {
    return refuse(st, Refusal::authority_mismatch);
  }
  st.fields.set(bhttp::field::host, st.authority.empty() ? st.host : st.authority);
  if (!st.cookie.empty()) st.fields.set(bhttp::field::cookie, st.cookie);
  header_lines(st.fields, st.lines);

  if (has_body) {
    // Bodies are never read. What the head alone decides (405) comes first, as over HTTP/1.1.
    const Request request{bhttp::string_to_verb(st.method), st.method, st.path, 11,
                          RequestHeaders(st.lines),         peer_,     true};
    if (auto early = handler_.answer_before_body(request)) {
      answer(st, std::move(*early));
    } else {
      refuse(st, Refusal::body_too_large);
    }
    return;
  }
  if (!output_.budget().has_room()) {
    // Answers not yet sent fill the listener's bound: no new work until they go (the client
    // may retry the request, RFC 9113 8.7). Not abuse: the client cannot see that bound.
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, st.id, NGHTTP2_REFUSED_STREAM);
    output_.budget().count_refused();
    return;
  }
  if (running_handlers_ >= settings_.max_concurrent_streams) {
    // Only reachable when the client resets streams whose handlers still run.
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, st.id, NGHTTP2_REFUSED_STREAM);
    count_abuse();
    return;
  }
  ++running_handlers_;
  asio::co_spawn(stream_.get_executor(), serve(this->shared_from_this(), stream), asio::detached);
}

template <class Stream>
Task<void> H2Session<Stream>::serve(Self self, std::shared_ptr<StreamState> stream) {
  // Leave nghttp2's callback first (co_spawn may start the coroutine inline); a stream the
  // client reset before its handler began is not worth starting it.
  const auto executor = stream_.get_executor();
  co_await asio::post(executor, use_task);
  // Near this connection's output bound the handler waits for its answers to go; the send
  // rate (or the connection's end) bounds the wait.
  while (!stream->closed && !closed_ && !output_.room_for_handler(answering_handlers_)) {
    ++waiting_handlers_;
    rearm();  // waiting on the client: the stall rule applies again
    co_await room_.async_wait(as_tuple(use_task));
    --waiting_handlers_;
  }
  if (!stream->closed && !closed_ && !output_.budget().has_room()) {
    // The listener filled up while this one waited.
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream->id, NGHTTP2_REFUSED_STREAM);
    output_.budget().count_refused();
  } else if (!stream->closed && !closed_) {
    ++answering_handlers_;
    const Request request{bhttp::string_to_verb(stream->method), stream->method, stream->path, 11,
                          RequestHeaders(stream->lines),         peer_,          true};
    Response response;
    try {
      response = co_await handler_.handle(request);
    } catch (const std::exception& e) {
      log::error("handler_exception", {{"protocol", "h2"}, {"what", e.what()}});
      response = handler_.refuse(Refusal::handler_failed);
    }
    --answering_handlers_;
    if (!stream->closed && !closed_) answer(*stream, std::move(response), true);
    wake_waiting_handlers();
  }
  --running_handlers_;
  last_progress_ = now();
  wake_writer();
  rearm();
  notify_done();
}

template <class Stream>
void H2Session<Stream>::answer(StreamState& st, Response response, bool may_refuse) {
  if (st.answered || closed_) return;
  st.answered = true;
  if (may_refuse && !output_.admits(response)) {
    // Other answers filled a bound while the handler ran. The handler only read (GET, HEAD,
    // OPTIONS): the client may retry.
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, st.id, NGHTTP2_REFUSED_STREAM);
    output_.budget().count_refused();
    return;
  }
  if (st.is_head() && response.body_mode == BodyMode::send) {
    response.body_mode = BodyMode::length_only;
  }
  if (response.status == 204 || response.status == 304) response.body_mode = BodyMode::none;
  st.response = std::move(response);
  Response& r = st.response;
  st.hold = output_.hold(r);  // the body view stays valid while the hold lives
  const H2Head head(r, date_value(settings_.clock->wall_now()));

  nghttp2_data_provider provider{};
  provider.source.ptr = &st;  // alive in streams_ until nghttp2 closes the stream
  provider.read_callback = &Callbacks::read_body;
  const bool data = r.body_mode == BodyMode::send && !r.body.empty();
  if (data) {
    st.unsent_counted = true;
    unsent_ += r.body.size();
    note_unsent();
  }
  const int rv = nghttp2_submit_response(session_, st.id, head.data(), head.size(),
                                         data ? &provider : nullptr);
  if (rv != 0) {
    log::debug("h2_submit_response_failed", {{"error", nghttp2_strerror(rv)}});
    let_go(st);
  }
}

template <class Stream>
void H2Session<Stream>::let_go(StreamState& st) {
  if (st.unsent_counted) {
    st.unsent_counted = false;
    unsent_ -= st.response.body.size() - st.sent;
    note_unsent();
  }
  if (st.hold.bytes() != 0) {
    if (writing_ && st.batch == batch_) {
      // The write under way refers to the body: the hold (memory and count) goes with it.
      write_holds_.push_back(std::move(st.hold));
    } else {
      st.hold.release();
      wake_waiting_handlers();
    }
  }
  st.response.body = {};  // its owner may be gone now
}

template <class Stream>
void H2Session<Stream>::release_write_holds() {
  if (write_holds_.empty()) return;
  write_holds_.clear();
  wake_waiting_handlers();
}

template <class Stream>
void H2Session<Stream>::note_unsent() {
  if (unsent_ == 0) {
    progress_.stop();
  } else if (!progress_.active()) {
    progress_.start(now());
    rearm();
  }
}

template <class Stream>
void H2Session<Stream>::refuse(StreamState& st, Refusal why) {
  answer(st, handler_.refuse(why));
}

template <class Stream>
void H2Session<Stream>::count_abuse() {
  const auto now = this->now();
  if (now - abuse_window_start_ >= kAbuseWindow) {
    abuse_window_start_ = now;
    abuse_in_window_ = 0;
  }
  if (++abuse_in_window_ > kMaxAbuse) terminate(NGHTTP2_ENHANCE_YOUR_CALM, "rapid_reset");
}

template <class Stream>
void H2Session<Stream>::terminate(std::uint32_t error_code, std::string_view reason) {
  if (closed_ || closing_) return;
  closing_ = true;
  close_by_ = now() + std::min<SteadyTime::duration>(kCloseGrace, settings_.idle_timeout);
  nghttp2_session_terminate_session(session_, error_code);
  if (error_code == NGHTTP2_NO_ERROR) {
    log::debug("h2_goaway", {{"reason", reason}});
  } else {
    log::warn("h2_goaway", {{"reason", reason},
                            {"error_code", static_cast<unsigned>(error_code)},
                            {"peer", peer_.to_string()}});
  }
  wake_writer();
  reader_wake_.cancel();
  rearm();
}

template <class Stream>
void H2Session<Stream>::start_drain() {
  if (closed_ || closing_ || draining_) return;
  draining_ = true;
  if (session_ == nullptr) return;  // run() has not begun: it drains once nghttp2 is set up
  drain_last_stream_ = nghttp2_session_get_last_proc_stream_id(session_);
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, drain_last_stream_, NGHTTP2_NO_ERROR, nullptr,
                        0);
  wake_writer();
  rearm();
}

template <class Stream>
void H2Session<Stream>::close_now() {
  if (closed_) return;
  closed_ = true;
  // nghttp2 is driven no more: every answer lets its body go now, not when the session ends
  // (which waits for running handlers).
  for (auto& [id, stream] : streams_) let_go(*stream);
  auto& lowest = beast::get_lowest_layer(stream_);
  boost::system::error_code ignored;
  lowest.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  lowest.close();
  writer_wake_.cancel();
  reader_wake_.cancel();
  watchdog_.cancel();
  room_.cancel();
  notify_done();
}

template class H2Session<TcpStream>;
template class H2Session<TlsStream>;

}  // namespace wg::http
