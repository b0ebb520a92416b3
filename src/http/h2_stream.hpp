#pragma once
// H2Session's side of nghttp2: a request stream's state, and the callbacks through which
// nghttp2 hands the session what it decoded (header fields, with their limits and the HPACK
// bomb's, stream closes, frames sent) and asks for answer bodies (the data provider, which
// sends payloads without copying them). Template definitions of H2Session's nested types,
// included by h2_session.cpp only, which instantiates them.

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "h2_session.hpp"
#include "head_checks.hpp"
#include "header_limits.hpp"

namespace wg::http::h2 {

// A header block decoding to more than this many times max_header_bytes is an attack (HPACK
// bomb: a few bytes of indexed references to one large table entry), not an oversight: the
// connection ends instead of the stream getting 431.
inline constexpr std::size_t kHeaderBombFactor = 4;
inline constexpr std::size_t kFrameHeadBytes = 9;

}  // namespace wg::http::h2

namespace wg::http {

// One request stream, from its first HEADERS frame until nghttp2 closes it; its handler call
// (which holds a reference) may outlive that.
template <class Stream>
struct H2Session<Stream>::StreamState {
  std::int32_t id = 0;
  std::string method;
  std::string path;
  std::string authority;
  std::string host;  // a "host" field, when the client sent one
  unsigned hosts = 0;
  std::string cookie;  // crumbs joined with "; "
  std::string content_length;
  std::size_t field_count = 0;  // regular fields, cookie crumbs counted one by one
  RequestFields fields;
  std::vector<HeaderLine> lines;  // the handler's view of `fields`
  bool path_too_long = false;
  bool too_large = false;    // over max_header_bytes or kMaxHeaderFields: fields not stored
  bool waiting_end = false;  // content-length: 0 but no END_STREAM yet
  bool dispatched = false;
  bool answered = false;            // the answer was submitted
  bool complete = false;            // its last frame was sent
  bool closed = false;              // nghttp2 closed the stream
  bool reset_after_answer = false;  // a body follows the head: reset the stream once answered
  bool unsent_counted = false;      // its body counts in the session's unsent_
  Response response;                // body read from here by the data provider
  OutputHold hold;                  // what the answer keeps alive (the body's owner)
  std::size_t sent = 0;             // body bytes handed over in DATA frames
  std::uint64_t batch = 0;          // the last write batch that refers to its body

  bool is_head() const { return method == "HEAD"; }
};

template <class Stream>
struct H2Session<Stream>::Callbacks {
  static H2Session& session(void* user_data) { return *static_cast<H2Session*>(user_data); }

  static std::shared_ptr<StreamState> find(H2Session& s, std::int32_t id) {
    auto it = s.streams_.find(id);
    return it == s.streams_.end() ? nullptr : it->second;
  }

  static int on_begin_frame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user_data) {
    H2Session& s = session(user_data);
    if (hd->type == NGHTTP2_HEADERS || hd->type == NGHTTP2_CONTINUATION) {
      if (hd->type == NGHTTP2_HEADERS) s.block_started_ = s.now();
      s.in_header_block_ = (hd->flags & NGHTTP2_FLAG_END_HEADERS) == 0;
    }
    return 0;
  }

  static int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    H2Session& s = session(user_data);
    s.block_bytes_ = 0;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    auto stream = std::make_shared<StreamState>();
    stream->id = frame->hd.stream_id;
    s.streams_[stream->id] = std::move(stream);
    return 0;
  }

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t name_length, const std::uint8_t* value, std::size_t value_length,
                       std::uint8_t, void* user_data) {
    H2Session& s = session(user_data);
    // Every header block counts, trailers included: HPACK makes a huge list cheap to send.
    s.block_bytes_ += name_length + value_length + 32;
    if (s.block_bytes_ > h2::kHeaderBombFactor * s.settings_.max_header_bytes) {
      s.header_bomb_ = true;
      return NGHTTP2_ERR_CALLBACK_FAILURE;  // mem_recv fails; the session sends GOAWAY
    }
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    auto it = s.streams_.find(frame->hd.stream_id);
    if (it == s.streams_.end()) return 0;
    StreamState& st = *it->second;
    const std::string_view n(reinterpret_cast<const char*>(name), name_length);
    const std::string_view v(reinterpret_cast<const char*>(value), value_length);
    const bool pseudo = n.starts_with(':');
    if (!pseudo) ++st.field_count;
    if (s.block_bytes_ > s.settings_.max_header_bytes || st.field_count > kMaxHeaderFields) {
      st.too_large = true;
    }
    // nghttp2 has checked names, values and pseudo-header order (HTTP messaging is on).
    if (pseudo) {
      if (n == ":method") {
        st.method = v;
      } else if (n == ":path") {
        st.path_too_long = v.size() > s.settings_.max_target_bytes;
        if (!st.path_too_long) st.path = v;
      } else if (n == ":authority" && !st.too_large) {
        st.authority = v;
      }
      return 0;
    }
    if (st.too_large || st.path_too_long) return 0;
    if (n == "cookie") {
      if (!st.cookie.empty()) st.cookie.append("; ");
      st.cookie.append(v);
    } else if (n == "host") {
      ++st.hosts;
      st.host = v;
    } else {
      if (n == "content-length") st.content_length = v;
      st.fields.insert(n, v);
    }
    return 0;
  }

  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    H2Session& s = session(user_data);
    const std::int32_t id = frame->hd.stream_id;
    const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    switch (frame->hd.type) {
      case NGHTTP2_SETTINGS:
        if ((frame->hd.flags & NGHTTP2_FLAG_ACK) == 0 && !s.settings_received_) {
          s.settings_received_ = true;
          s.idle_since_ = s.now();
        }
        break;
      case NGHTTP2_HEADERS: {
        auto stream = find(s, id);
        if (!stream) break;
        if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
          s.last_progress_ = s.now();
          if (end_stream) {
            s.dispatch(stream, false);
          } else if (stream->content_length == "0" && !stream->too_large &&
                     !stream->path_too_long) {
            stream->waiting_end = true;  // served once the (empty) body has ended
          } else {
            s.dispatch(stream, true);
          }
        } else if (end_stream && stream->waiting_end) {
          stream->waiting_end = false;
          s.dispatch(stream, false);
        }
        break;
      }
      case NGHTTP2_DATA: {
        auto stream = end_stream ? find(s, id) : nullptr;
        if (stream && stream->waiting_end) {
          stream->waiting_end = false;
          s.dispatch(stream, false);
        }
        break;
      }
      case NGHTTP2_RST_STREAM: {
        // Called before nghttp2 closes the stream. Reset before its answer went out: the
        // handler's work (if any) was for nothing.
        auto stream = find(s, id);
        if (stream && !stream->complete) s.count_abuse();
        break;
      }
      default:
        break;
    }
    return 0;
  }

  static int on_frame_send(nghttp2_session* ng, const nghttp2_frame* frame, void* user_data) {
    H2Session& s = session(user_data);
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    s.last_progress_ = s.now();
    // Bytes, not frames, are progress for the send rate.
    if (frame->hd.type == NGHTTP2_DATA) s.progress_.sent(frame->hd.length, s.last_progress_);
    if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) return 0;
    auto stream = find(s, frame->hd.stream_id);
    if (!stream) return 0;
    stream->complete = true;
    s.let_go(*stream);
    // The answer to a head whose body was never read: stop the client sending it
    // (RFC 9113 8.1).
    if (stream->reset_after_answer && !nghttp2_session_get_stream_remote_close(ng, stream->id)) {
      nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, stream->id, NGHTTP2_NO_ERROR);
    }
    return 0;
  }

  static int on_stream_close(nghttp2_session*, std::int32_t id, std::uint32_t, void* user_data) {
    H2Session& s = session(user_data);
    auto it = s.streams_.find(id);
    if (it == s.streams_.end()) return 0;
    it->second->closed = true;
    s.let_go(*it->second);
    s.wake_waiting_handlers();  // one of them may be this stream's: it need not wait any more
    s.streams_.erase(it);
    if (s.streams_.empty()) s.idle_since_ = s.now();
    return 0;
  }

  // How much of the body the next DATA frame carries; the bytes themselves go in send_data
  // (NO_COPY), without passing through nghttp2's buffers.
  static ssize_t read_body(nghttp2_session*, std::int32_t, std::uint8_t*, std::size_t length,
                           std::uint32_t* data_flags, nghttp2_data_source* source, void*) {
    auto* stream = static_cast<StreamState*>(source->ptr);
    const std::size_t n = std::min(length, stream->response.body.size() - stream->sent);
    *data_flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    if (stream->sent + n == stream->response.body.size()) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }

  // A DATA frame of `length` body bytes goes out now: its 9-byte head into the write buffer,
  // its payload as a view of the body, written from where it lies (docs/listener.md).
  static int send_data(nghttp2_session*, nghttp2_frame* frame, const std::uint8_t* framehd,
                       std::size_t length, nghttp2_data_source* source, void* user_data) {
    H2Session& s = session(user_data);
    auto* stream = static_cast<StreamState*>(source->ptr);
    const std::string_view body = stream->response.body;
    // No padding: the session never asks nghttp2 for any.
    if (frame->data.padlen != 0 || stream->sent + length > body.size()) {
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    s.write_buffer_.append(reinterpret_cast<const char*>(framehd), h2::kFrameHeadBytes);
    s.body_pieces_.emplace_back(s.write_buffer_.size(), body.substr(stream->sent, length));
    s.batch_body_bytes_ += length;
    stream->batch = s.batch_;
    stream->sent += length;
    if (stream->unsent_counted) s.unsent_ -= length;
    // All handed over: the hold goes with the batch that sends its last bytes (let_go).
    if (stream->sent == body.size()) s.let_go(*stream);
    return 0;
  }
};

}  // namespace wg::http
