// Fuzz target: the server-side HTTP/2 session (H2Session, nghttp2 underneath) fed a client's
// bytes through an in-memory stream: no socket, no timer firing, one io_context polled until
// nothing is ready. Input: one byte (bits 0-5: how many bytes each read delivers; bit 6 set:
// the input brings its own client preface, else the preface is put in front), then what the
// client sends. Once it is all read, the client closes.
// Invariants:
// - the session ends once the client has closed and every handler call has returned;
// - the handler is called only with what the session promises (a target within
//   max_target_bytes, a Host, at most max_concurrent_streams calls at once);
// - what the session wrote is valid HTTP/2 framing: the server's SETTINGS first, whole frames
//   no larger than the default maximum, frame types and stream ids where they belong, header
//   blocks (HEADERS then CONTINUATION, uninterrupted) that HPACK-decode in order to a response
//   starting with a valid :status and without connection-specific fields, DATA only inside
//   an open response and, when a response ends on DATA, exactly its content-length.
//
// The session is a template on its stream, instantiated in the library for the two real
// streams only; this file compiles its definition and instantiates it for the in-memory one.

#include "http/h2_session.cpp"  // NOLINT(bugprone-suspicious-include): see above

#include <nghttp2/nghttp2.h>

#include <boost/asio/append.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"

namespace {

namespace asio = boost::asio;
using boost::system::error_code;

constexpr std::string_view kClientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr std::size_t kMaxFrameSize = 16384;  // SETTINGS_MAX_FRAME_SIZE's initial value
constexpr std::size_t kMaxHandlerRuns = 200000;

// A read waiting for bytes, whatever its completion handler's type.
struct PendingRead {
  virtual ~PendingRead() = default;
  virtual void complete(error_code ec, std::size_t n) = 0;
  asio::mutable_buffer buffer;
};

// Completes an operation as a socket does: never inline, always through the executor.
template <class Handler>
void complete_later(const wg::http::Executor& executor, Handler handler, error_code ec,
                    std::size_t n) {
  asio::post(executor, asio::append(std::move(handler), ec, n));
}

// Both ends of one in-memory connection: the client's bytes still to be read, what the
// session wrote, and a read waiting for bytes. Shared by the harness and the stream.
struct Wire {
  explicit Wire(wg::http::Executor on) : executor(on) {}
  wg::http::Executor executor;
  std::string input;
  std::size_t read_offset = 0;
  std::size_t chunk = 1;
  bool client_closed = false;
  bool server_closed = false;
  std::string output;
  std::unique_ptr<PendingRead> pending;

  template <class Handler>
  void read(asio::mutable_buffer buffer, Handler handler) {
    WG_FUZZ_CHECK(!pending);  // one read at a time
    if (server_closed)
      return complete_later(executor, std::move(handler), asio::error::bad_descriptor, 0);
    if (read_offset < input.size()) {
      const std::size_t n = asio::buffer_copy(
          buffer,
          asio::buffer(input.data() + read_offset, std::min(chunk, input.size() - read_offset)));
      read_offset += n;
      return complete_later(executor, std::move(handler), {}, n);
    }
    if (client_closed) return complete_later(executor, std::move(handler), asio::error::eof, 0);
    struct Waiting final : PendingRead {
      Waiting(wg::http::Executor executor, Handler handler)
          : executor(std::move(executor)), handler(std::move(handler)) {}
      void complete(error_code ec, std::size_t n) override {
        complete_later(executor, std::move(handler), ec, n);
      }
      wg::http::Executor executor;
      Handler handler;
    };
    pending = std::make_unique<Waiting>(executor, std::move(handler));
    pending->buffer = buffer;
  }
  void end_pending(error_code ec) {
    if (!pending) return;
    std::unique_ptr<PendingRead> waiting = std::move(pending);
    waiting->complete(ec, 0);
  }
  void close_client() {
    client_closed = true;
    end_pending(asio::error::eof);
  }
  void close_server() {
    server_closed = true;
    end_pending(asio::error::operation_aborted);
  }
};

// What H2Session asks of its stream, over a Wire. It is its own lowest layer: the deadlines
// are the session's watchdog's business here (no timer fires while the harness polls).
class MemoryStream {
 public:
  using executor_type = wg::http::Executor;

  explicit MemoryStream(std::shared_ptr<Wire> wire) : wire_(std::move(wire)) {}

  executor_type get_executor() const { return wire_->executor; }

  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return asio::async_initiate<Token, void(error_code, std::size_t)>(
        [wire = wire_](auto handler, asio::mutable_buffer buffer) {
          wire->read(buffer, std::move(handler));
        },
        token, asio::mutable_buffer(*asio::buffer_sequence_begin(buffers)));
  }

  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return asio::async_initiate<Token, void(error_code, std::size_t)>(
        [wire = wire_](auto handler, const ConstBuffers& buffers) {
          if (wire->server_closed) {
            return complete_later(wire->executor, std::move(handler), asio::error::bad_descriptor,
                                  0);
          }
          std::size_t n = 0;
          for (auto it = asio::buffer_sequence_begin(buffers);
               it != asio::buffer_sequence_end(buffers); ++it) {
            wire->output.append(static_cast<const char*>(it->data()), it->size());
            n += it->size();
          }
          complete_later(wire->executor, std::move(handler), {}, n);
        },
        token, buffers);
  }

  // The lowest layer's part (beast::tcp_stream's names).
  template <class Duration>
  void expires_after(Duration) {}
  void expires_never() {}
  struct Socket {
    void shutdown(asio::socket_base::shutdown_type, error_code& ec) { ec = {}; }
  };
  Socket& socket() { return socket_; }
  void close() { wire_->close_server(); }

 private:
  std::shared_ptr<Wire> wire_;
  Socket socket_;
};

using Session = wg::http::H2Session<MemoryStream>;

constexpr wg::http::H2Settings kSettings{
    .max_concurrent_streams = 8,
    .max_header_bytes = 2048,
    .max_target_bytes = 256,
    .header_timeout = std::chrono::hours(1),
    .idle_timeout = std::chrono::hours(1),
    // Small, so that inputs reach the per-connection bound; no rate check within an input.
    .max_pending_output_bytes = 16 * 1024,
    .send_rate_interval = std::chrono::hours(1),
};

// Answers every request one turn later, with a body whose size the target picks (some larger
// than the initial flow-control window); checks what reaches it.
class FuzzHandler final : public wg::http::RequestHandler {
 public:
  std::size_t running = 0;

  wg::http::Task<wg::http::Response> handle(const wg::http::Request& request) override {
    WG_FUZZ_CHECK(!request.target.empty() && request.target.size() <= kSettings.max_target_bytes);
    WG_FUZZ_CHECK(!request.method_text.empty() && request.version == 11);
    WG_FUZZ_CHECK(request.headers.count("Host") == 1);
    WG_FUZZ_CHECK(++running <= kSettings.max_concurrent_streams);
    const auto executor = co_await asio::this_coro::executor;
    co_await asio::post(executor, wg::http::use_task);
    --running;
    static constexpr std::size_t kSizes[] = {0, 17, 1500, 70000};
    wg::http::Response response;
    response.add_header("Content-Type", "application/json");
    response.add_header("Connection", "keep-alive");  // HTTP/2 forbids it: never sent
    response.set_body(std::string(kSizes[request.target.size() % 4], 'x'));
    co_return response;
  }
  std::optional<wg::http::Response> answer_before_body(const wg::http::Request& request) override {
    if (request.method_text != "POST") return std::nullopt;
    wg::http::Response response;
    response.status = 405;
    response.set_body("{}");
    return response;
  }
  wg::http::Response refuse(wg::http::Refusal why) override {
    wg::http::Response response;
    response.status = why == wg::http::Refusal::target_too_long ? 414 : 400;
    response.set_body("{\"refused\":true}");
    return response;
  }
};

// Runs what is ready until nothing is; bounded, so that a session that never settles fails.
void run_until_idle(asio::io_context& ioc) {
  std::size_t runs = 0;
  for (;;) {
    ioc.restart();
    const std::size_t n = ioc.poll();
    if (n == 0) break;
    runs += n;
    WG_FUZZ_CHECK(runs < kMaxHandlerRuns);
  }
}

std::uint32_t read24(const unsigned char* p) {
  return (p[0] << 16) | (p[1] << 8) | p[2];
}
std::uint32_t read31(const unsigned char* p) {
  return ((p[0] & 0x7fu) << 24) | (p[1] << 16) | (p[2] << 8) | p[3];
}

struct StreamSeen {
  bool headers = false;
  bool ended = false;
  std::optional<std::size_t> content_length;
  std::size_t data = 0;
};

// Decodes one response header block in order, on the connection's one HPACK context.
void check_header_block(nghttp2_hd_inflater* inflater, const std::string& block, StreamSeen& stream,
                        bool end_stream) {
  const auto* in = reinterpret_cast<const std::uint8_t*>(block.data());
  std::size_t left = block.size();
  bool first = true;
  for (;;) {
    nghttp2_nv nv;
    int flags = 0;
    const ssize_t n = nghttp2_hd_inflate_hd2(inflater, &nv, &flags, in, left, 1);
    WG_FUZZ_CHECK(n >= 0);
    in += n;
    left -= static_cast<std::size_t>(n);
    if (flags & NGHTTP2_HD_INFLATE_EMIT) {
      const std::string_view name(reinterpret_cast<const char*>(nv.name), nv.namelen);
      const std::string_view value(reinterpret_cast<const char*>(nv.value), nv.valuelen);
      if (first) {
        WG_FUZZ_CHECK(name == ":status" && value.size() == 3 && value[0] >= '1' && value[0] <= '5');
      } else {
        WG_FUZZ_CHECK(!name.starts_with(':'));
      }
      first = false;
      for (char c : name) WG_FUZZ_CHECK(!(c >= 'A' && c <= 'Z'));
      WG_FUZZ_CHECK(name != "connection" && name != "keep-alive" && name != "transfer-encoding" &&
                    name != "upgrade" && name != "proxy-connection");
      if (name == "content-length") {
        WG_FUZZ_CHECK(!stream.content_length.has_value());
        stream.content_length = std::stoul(std::string(value));
      }
    }
    if (flags & NGHTTP2_HD_INFLATE_FINAL) {
      nghttp2_hd_inflate_end_headers(inflater);
      break;
    }
    if ((flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) break;
  }
  WG_FUZZ_CHECK(left == 0 && !first);
  WG_FUZZ_CHECK(!stream.headers);  // one response head per stream, no trailers
  stream.headers = true;
  stream.ended = end_stream;
}

void check_output(const std::string& output) {
  const auto* p = reinterpret_cast<const unsigned char*>(output.data());
  const std::size_t size = output.size();
  nghttp2_hd_inflater* inflater = nullptr;
  WG_FUZZ_CHECK(nghttp2_hd_inflate_new(&inflater) == 0);
  std::map<std::uint32_t, StreamSeen> streams;
  std::string block;  // the header block being assembled
  std::uint32_t block_stream = 0;
  bool block_end_stream = false;
  bool in_block = false;
  bool first = true;

  std::size_t at = 0;
  while (at < size) {
    WG_FUZZ_CHECK(size - at >= 9);  // whole frames only
    const std::uint32_t length = read24(p + at);
    const std::uint8_t type = p[at + 3];
    const std::uint8_t flags = p[at + 4];
    const std::uint32_t id = read31(p + at + 5);
    WG_FUZZ_CHECK(length <= kMaxFrameSize && size - at - 9 >= length);
    const unsigned char* payload = p + at + 9;
    at += 9 + length;

    if (first) WG_FUZZ_CHECK(type == NGHTTP2_SETTINGS && (flags & NGHTTP2_FLAG_ACK) == 0);
    first = false;
    WG_FUZZ_CHECK(in_block == (type == NGHTTP2_CONTINUATION));
    switch (type) {
      case NGHTTP2_SETTINGS:
      case NGHTTP2_PING:
      case NGHTTP2_GOAWAY:
        WG_FUZZ_CHECK(id == 0);
        break;
      case NGHTTP2_WINDOW_UPDATE:
        WG_FUZZ_CHECK(length == 4 && read31(payload) != 0);
        break;
      case NGHTTP2_RST_STREAM:
        WG_FUZZ_CHECK(id % 2 == 1 && length == 4);
        break;
      case NGHTTP2_HEADERS:
      case NGHTTP2_CONTINUATION: {
        WG_FUZZ_CHECK(id % 2 == 1);
        WG_FUZZ_CHECK((flags & (NGHTTP2_FLAG_PADDED | NGHTTP2_FLAG_PRIORITY)) == 0);
        if (type == NGHTTP2_HEADERS) {
          block.clear();
          block_stream = id;
          block_end_stream = (flags & NGHTTP2_FLAG_END_STREAM) != 0;
        } else {
          WG_FUZZ_CHECK(id == block_stream);
        }
        block.append(reinterpret_cast<const char*>(payload), length);
        in_block = (flags & NGHTTP2_FLAG_END_HEADERS) == 0;
        if (!in_block) {
          StreamSeen& stream = streams[block_stream];
          check_header_block(inflater, block, stream, block_end_stream);
        }
        break;
      }
      case NGHTTP2_DATA: {
        WG_FUZZ_CHECK(id % 2 == 1 && (flags & NGHTTP2_FLAG_PADDED) == 0);
        StreamSeen& stream = streams[id];
        WG_FUZZ_CHECK(stream.headers && !stream.ended);
        stream.data += length;
        if (flags & NGHTTP2_FLAG_END_STREAM) {
          stream.ended = true;
          WG_FUZZ_CHECK(stream.content_length && *stream.content_length == stream.data);
        }
        break;
      }
      default:
        WG_FUZZ_CHECK(!"a frame type the server never sends");
    }
  }
  nghttp2_hd_inflate_del(inflater);
}

}  // namespace

template class wg::http::H2Session<MemoryStream>;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool quiet = [] {
    wg::log::set_level(wg::log::Level::error);  // a GOAWAY's warning per input is noise here
    return true;
  }();
  (void)quiet;
  if (size == 0) return 0;
  asio::io_context ioc;
  auto wire = std::make_shared<Wire>(ioc.get_executor());
  wire->chunk = 1 + static_cast<std::size_t>(data[0] & 0x3f) * 67;
  if ((data[0] & 0x40) == 0) wire->input = kClientPreface;
  wire->input.append(reinterpret_cast<const char*>(data + 1), size - 1);

  FuzzHandler handler;
  bool finished = false;
  // A small output budget, so that inputs also reach the refusals and pauses it causes.
  wg::http::ServerStats stats;
  wg::http::OutputBudget output(64 * 1024, stats, wg::http::OutputBudget::Access::owner_thread);
  auto session = std::make_shared<Session>(MemoryStream(wire), handler, kSettings, output,
                                           asio::ip::make_address_v4("127.0.0.1"));
  asio::co_spawn(ioc, session->run(), [&finished](std::exception_ptr e) {
    WG_FUZZ_CHECK(!e);
    finished = true;
  });
  run_until_idle(ioc);
  WG_FUZZ_CHECK(wire->read_offset == wire->input.size() || wire->server_closed);
  wire->close_client();
  run_until_idle(ioc);
  WG_FUZZ_CHECK(finished);
  WG_FUZZ_CHECK(handler.running == 0 && !wire->pending);
  check_output(wire->output);
  return 0;
}
