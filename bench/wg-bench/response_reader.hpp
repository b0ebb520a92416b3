#pragma once
// Incremental reader of one HTTP/1.1 response, fed whatever bytes the socket returned.
//
// The load generator has to be cheaper per request than the servers it measures, or it measures
// itself. Beast's parser with a dynamic buffer costs several small reads and copies per answer;
// this reader keeps only the head (a few hundred bytes), counts body bytes without copying
// them, and lets the caller read straight into one large buffer, so an answer usually costs one
// recv. It understands what the measured servers send: Content-Length, chunked bodies (with
// trailers), bodies delimited by the connection's close, interim 1xx answers, HEAD and
// 204/304 without a body, and Connection keep-alive/close on HTTP/1.0 and 1.1.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace wg::bench {

class ResponseReader {
 public:
  static constexpr std::size_t kMaxHeadBytes = 64 * 1024;
  static constexpr std::size_t kMaxChunkLineBytes = 1024;

  // Starts a new response. `head_request`: the request was HEAD, so no body follows.
  void reset(bool head_request);

  // Consumes bytes of the response; returns how many belong to it (fewer than given only once
  // the response is complete: the rest belongs to whatever follows). After an error nothing
  // more is consumed.
  std::size_t consume(std::string_view bytes);

  // The peer closed the connection. Completes a body delimited by the close; otherwise the
  // response stays incomplete.
  void finish_on_eof();

  bool done() const { return state_ == State::done; }
  bool failed() const { return state_ == State::error; }
  unsigned status() const { return status_; }
  bool keep_alive() const { return keep_alive_; }
  std::uint64_t bytes() const { return bytes_; }  // head and body, as received

 private:
  enum class State {
    head,
    body_length,
    body_until_close,
    chunk_size,
    chunk_data,
    chunk_data_end,
    trailer,
    done,
    error
  };

  std::size_t consume_head(std::string_view bytes);
  bool parse_head();
  std::size_t consume_line(std::string_view bytes, std::string& line, bool& complete);
  bool on_chunk_size_line();

  State state_ = State::head;
  bool head_request_ = false;
  unsigned status_ = 0;
  bool keep_alive_ = false;
  std::uint64_t bytes_ = 0;
  std::uint64_t remaining_ = 0;  // body_length / chunk_data: bytes still to skip
  std::string head_;             // the head so far (body_length.. states: unused)
  std::string line_;             // chunk-size or trailer line so far
};

}  // namespace wg::bench
