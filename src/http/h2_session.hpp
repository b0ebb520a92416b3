#pragma once
// One HTTP/2 connection (RFC 9113) on nghttp2's server API: for the public listener after
// ALPN "h2" on TLS, or on plain TCP when the first bytes are the client preface (h2c prior
// knowledge).
//
// Ownership and executor. The session owns the stream and the nghttp2_session. run() must be
// spawned on the stream's executor (its io_context's, run by one thread: executor.hpp), and
// everything else runs there too: the reader, the writer, the watchdog and every handler call;
// nghttp2 is only ever called from that executor. drain() and force_close() post to it. Each
// of those coroutines holds a shared_ptr to the session. run() returns once the socket is
// closed and every handler call of the connection has returned, so the RequestHandler may go
// away after run() has completed.
//
// Data flow. The reader feeds received bytes to nghttp2_session_mem_recv; a complete request
// head becomes an http::Request shaped like HTTP/1.1's (version 11, :authority as Host, cookie
// crumbs joined, keep_alive, no body), so routing, validation, cache and errors are the same
// code path as for HTTP/1.1, and so are refusals (RequestHandler::refuse). Each request's handler
// call is its own coroutine. An answer is submitted to nghttp2 with a data provider that reads
// straight from Response::body (kept alive by body_owner until the stream closes) as flow control
// allows. The writer is the only coroutine that writes to the socket: it drains
// nghttp2_session_mem_send, at most 64 KiB per write. Response::close means nothing here: an HTTP/2
// stream ends on its own.
//
// Limits (H2Settings, plus constants in h2_session.cpp):
// - Handler calls: at most max_concurrent_streams at once per connection, and a stream the
//   client reset counts until its handler returns; a request beyond that is refused
//   (RST_STREAM REFUSED_STREAM) without calling the handler.
// - Rapid reset (CVE-2023-44487): the client resetting a stream before its answer is complete,
//   and a stream refused as above, each count one; more than 200 within 10 s -> GOAWAY
//   ENHANCE_YOUR_CALM and close. nghttp2's own RST_STREAM token bucket (burst 1000, 33/s)
//   stays on behind it.
// - Header blocks: decoded size counted as name + value + 32 per field (as
//   SETTINGS_MAX_HEADER_LIST_SIZE, which is announced as max_header_bytes). :path over
//   max_target_bytes -> 414; over max_header_bytes or more than 100 fields -> 431 (the fields
//   are then no longer stored); a block decoding to more than 4 x max_header_bytes (an HPACK
//   bomb) -> GOAWAY ENHANCE_YOUR_CALM. At most 8 CONTINUATION frames per block (nghttp2's
//   max_continuations) -> close. The HPACK dynamic tables stay at 4 KiB both ways. Malformed
//   requests (missing or bad pseudo-headers, neither :authority nor Host, invalid names or
//   values, connection-specific fields) are reset with PROTOCOL_ERROR by nghttp2's HTTP
//   messaging checks, which stay on; CONNECT gets 405, several or conflicting Host fields 400.
// - Request bodies are never read: a head announcing one goes to answer_before_body (405) or
//   gets 413, and once that answer is sent the stream is reset (NO_ERROR). A head with
//   content-length 0 waits for its END_STREAM and is then served like any other.
// - Time: preface and SETTINGS within header_timeout; a header block within header_timeout;
//   no stream open for idle_timeout -> GOAWAY (PING, SETTINGS, WINDOW_UPDATE do not keep a
//   connection alive, requests do); open streams whose answers make no progress
//   (no HEADERS or DATA sent, e.g. a flow-control window left at 0) for idle_timeout while no
//   handler runs -> GOAWAY and close; every socket write has a deadline of idle_timeout.
//   After a GOAWAY that ends the connection, the socket closes within 1 s whatever happens.
// - Memory: the reader pauses while nghttp2's outbound queue holds more than 512 frames (a
//   client must read what it asks for); more than 1000 queued PING/SETTINGS ACKs (ping or
//   settings flood) make nghttp2 give up (-> close); at most 32 entries per SETTINGS frame.
// - Answers not yet sent (docs/listener.md, "Output budget"): what each answer keeps alive
//   (its body's owner) is held in the listener's OutputBudget from its submission until the
//   write that carries its last byte ends (or the stream or connection ends; a write under way
//   that refers to the body keeps the hold until it ends). While the listener has
//   no room for another answer a new request is refused (RST_STREAM REFUSED_STREAM, no handler
//   call, not counted as abuse). A handler starts only while the answers this connection
//   holds, and those expected from its handlers already running, fit max_pending_output_bytes;
//   it waits otherwise (its stream stays open, within max_concurrent_streams; the stall rule
//   applies meanwhile, a waiting handler is not running). A handler's answer that
//   would still cross a bound is refused (REFUSED_STREAM). While any answer has bytes left to
//   send, the DATA frames sent must carry min_send_rate bytes per second over every
//   send_rate_interval (SendProgress: a window trickled open one byte at a time is not
//   progress) -> GOAWAY and close, which lets every answer go.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "output_budget.hpp"
#include "send_progress.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/http/executor.hpp"
#include "widget_gateway/http/request_handler.hpp"

struct nghttp2_session;

namespace wg::http {

struct H2Settings {
  std::uint32_t max_concurrent_streams = 100;           // SETTINGS_MAX_CONCURRENT_STREAMS
  std::size_t max_header_bytes = 16 * 1024;             // decoded header list (name+value+32 each)
  std::size_t max_target_bytes = 8 * 1024;              // :path longer -> 414 on that stream
  std::chrono::milliseconds header_timeout{10000};      // preface+SETTINGS must arrive within this
  std::chrono::milliseconds idle_timeout{60000};        // no stream open (or no progress): close
  std::size_t max_pending_output_bytes = 512 * 1024;    // kept alive by this connection's answers
  std::size_t min_send_rate = 2 * 1024;                 // bytes/s while answers wait, or close
  std::chrono::milliseconds send_rate_interval{20000};  // ... measured over each such interval
  // The session's time (its deadlines, the send rate, the Date field); null: the system's.
  // Must outlive the session.
  const Clock* clock = nullptr;
};

// One HTTP/2 connection. Stream is TcpStream or
// TlsStream (explicitly instantiated for both).
template <class Stream>
class H2Session : public std::enable_shared_from_this<H2Session<Stream>> {
 public:
  // `received`: bytes already read from the connection (e.g. the client preface the listener
  // peeked at); they are processed before anything is read. `output`: the listener's budget
  // for answers not yet sent; it must outlive the session.
  H2Session(Stream stream, RequestHandler& handler, H2Settings settings, OutputBudget& output,
            boost::asio::ip::address peer, std::string received = {});
  ~H2Session();
  H2Session(const H2Session&) = delete;
  H2Session& operator=(const H2Session&) = delete;

  // Serves until the connection ends, closes the socket, and completes once every handler
  // call of the connection has returned. Spawn it on the stream's executor.
  Task<void> run();
  // Thread-safe. GOAWAY (last stream id), finish the streams in flight, then close.
  void drain();
  // Thread-safe. Closes the socket now.
  void force_close();
  // Thread-safe. The watchdog judges the deadline by the clock now (HttpServer::check_deadlines).
  void check_deadline();

 private:
  struct StreamState;
  struct Callbacks;  // nghttp2's callbacks, defined with the session
  // Times are the injected clock's (settings.clock). The watchdog's timer sleeps the
  // difference to the deadline in real time and judges by the clock when it wakes, as the
  // HTTP/1.1 session's deadline does (connection_deadline.hpp).
  using TimePoint = SteadyTime;
  using Self = std::shared_ptr<H2Session>;

  bool start_nghttp2();
  Task<void> read_loop(Self self);
  Task<void> write_loop();
  Task<void> watchdog(Self self);
  Task<void> serve(Self self, std::shared_ptr<StreamState> stream);
  // Feeds received bytes to nghttp2; a fatal error ends the connection (GOAWAY or close).
  void feed(const std::uint8_t* data, std::size_t size);

  // A request head is complete: answers it, refuses it or starts its handler call.
  void dispatch(const std::shared_ptr<StreamState>& stream, bool has_body);
  // `may_refuse`: a handler's answer, refused (REFUSED_STREAM) when it would cross the output
  // budget; the session's own answers (errors, a few hundred bytes) are always sent.
  void answer(StreamState& stream, Response response, bool may_refuse = false);
  // The stream's answer needs its body no more (all of it in DATA frames, the stream
  // closed, or the connection): what it kept alive goes, and its unsent bytes stop counting.
  void let_go(StreamState& stream);
  // The write that referred to their bodies is over: those answers' holds go.
  void release_write_holds();
  // unsent_ changed: the send-rate meter runs while it is above zero.
  void note_unsent();
  void refuse(StreamState& stream, Refusal why);  // the handler's words; the stream goes on
  void count_abuse();  // an early reset or a refused stream (rapid reset)
  // GOAWAY `error_code`; the connection closes once it is sent (or after the close grace).
  void terminate(std::uint32_t error_code, std::string_view reason);
  void start_drain();
  void close_now();

  TimePoint now() const { return settings_.clock->steady_now(); }
  // When the watchdog acts next, and why (for the log).
  TimePoint deadline(std::string_view* reason = nullptr) const;
  void rearm();  // the deadline may have moved earlier: wake the watchdog
  void wake_writer() { writer_wake_.cancel(); }
  // Handlers waiting for the connection's answers to go may look again.
  void wake_waiting_handlers() {
    if (waiting_handlers_ > 0) room_.cancel();
  }
  void notify_done() { done_.cancel(); }

  Stream stream_;
  RequestHandler& handler_;
  H2Settings settings_;
  boost::asio::ip::address peer_;
  std::string received_;
  nghttp2_session* session_ = nullptr;
  ConnectionOutput output_;  // what this connection's answers keep alive (before streams_)
  SendProgress progress_;    // runs while unsent_ > 0
  std::size_t unsent_ = 0;   // answer body bytes not yet in DATA frames
  // Streams nghttp2 has open with a request head begun; erased when nghttp2 closes them.
  std::unordered_map<std::int32_t, std::shared_ptr<StreamState>> streams_;

  // Timers used as wake-up signals (expiry "never", cancel() wakes the waiter).
  SteadyTimer writer_wake_;
  SteadyTimer reader_wake_;
  SteadyTimer watchdog_;
  SteadyTimer done_;
  SteadyTimer room_;  // handlers wait here for room in the connection's bound
  std::vector<std::uint8_t> read_buffer_;
  // The batch being written: the bytes nghttp2 serialised (and DATA frame heads), and each
  // DATA payload as a view of its body, inserted at an offset of write_buffer_. The bodies
  // stay alive through their streams' holds, or through write_holds_ once a stream let its
  // answer go while the batch still refers to it; they go when the write ends.
  std::string write_buffer_;
  std::vector<std::pair<std::size_t, std::string_view>> body_pieces_;
  std::vector<boost::asio::const_buffer> gather_;
  std::vector<OutputHold> write_holds_;
  std::size_t batch_body_bytes_ = 0;
  std::uint64_t batch_ = 0;  // numbers the batches, so a stream knows whether it is in this one
  bool writing_ = false;     // a batch is being assembled or written

  bool settings_received_ = false;  // the client's preface and first SETTINGS arrived
  bool closing_ = false;            // a GOAWAY that ends the connection is queued
  bool draining_ = false;
  bool closed_ = false;  // socket closed; nghttp2 is no longer driven
  bool reader_done_ = false;
  bool watchdog_done_ = false;
  std::int32_t drain_last_stream_ = 0;
  std::size_t running_handlers_ = 0;
  std::size_t answering_handlers_ = 0;  // started and not answered yet (output budget)
  std::size_t waiting_handlers_ = 0;    // waiting for room before they start

  // The header block being received (HEADERS and its CONTINUATIONs).
  bool in_header_block_ = false;
  TimePoint block_started_;
  std::size_t block_bytes_ = 0;  // decoded so far, name + value + 32 per field
  bool header_bomb_ = false;

  TimePoint started_;
  TimePoint idle_since_;     // when the last stream closed
  TimePoint last_progress_;  // last answer frame sent, request received, handler done
  TimePoint close_by_;       // hard close once closing_
  TimePoint abuse_window_start_;
  // A write under way since then (TimePoint::max(): none); stalled past idle_timeout, the
  // connection closes. The watchdog's one timer watches it, not a timer per write.
  TimePoint writing_since_ = TimePoint::max();
  TimePoint watchdog_at_ = TimePoint::max();  // what the watchdog's timer sleeps until
  unsigned abuse_in_window_ = 0;
};

}  // namespace wg::http
