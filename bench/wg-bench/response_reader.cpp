#include "wg-bench/response_reader.hpp"

#include <algorithm>
#include <charconv>

namespace wg::bench {
namespace {

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == y; });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

// Calls f(token) for each comma-separated, trimmed, non-empty token of a list header.
template <class F>
void for_each_token(std::string_view list, F&& f) {
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view token = trim(list.substr(0, comma));
    if (!token.empty()) f(token);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace

void ResponseReader::reset(bool head_request) {
  state_ = State::head;
  head_request_ = head_request;
  status_ = 0;
  keep_alive_ = false;
  bytes_ = 0;
  remaining_ = 0;
  head_.clear();
  line_.clear();
}

std::size_t ResponseReader::consume(std::string_view bytes) {
  std::size_t used = 0;
  while (used < bytes.size()) {
    const std::string_view rest = bytes.substr(used);
    std::size_t n = 0;
    switch (state_) {
      case State::done:
      case State::error:
        bytes_ += used;
        return used;
      case State::head:
        n = consume_head(rest);
        break;
      case State::body_length:
      case State::chunk_data:
        n = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, rest.size()));
        remaining_ -= n;
        if (remaining_ == 0)
          state_ = state_ == State::body_length ? State::done : State::chunk_data_end;
        break;
      case State::body_until_close:
        n = rest.size();
        break;
      case State::chunk_size:
      case State::chunk_data_end:
      case State::trailer: {
        bool complete = false;
        n = consume_line(rest, line_, complete);
        if (!complete || state_ == State::error) break;
        const std::string_view line = trim(line_);
        if (state_ == State::chunk_size) {
          if (!on_chunk_size_line()) state_ = State::error;
        } else if (state_ == State::chunk_data_end) {
          state_ = line.empty() ? State::chunk_size : State::error;
        } else if (line.empty()) {
          state_ = State::done;  // the empty line that ends the trailer section
        }
        line_.clear();
        break;
      }
    }
    used += n;
  }
  bytes_ += used;
  return used;
}

void ResponseReader::finish_on_eof() {
  if (state_ == State::body_until_close) state_ = State::done;
}

std::size_t ResponseReader::consume_head(std::string_view bytes) {
  // The head ends at the first CRLFCRLF; it may straddle reads, so look back 3 bytes.
  const std::size_t before = head_.size();
  head_.append(bytes.data(), bytes.size());
  const std::size_t end = head_.find("\r\n\r\n", before >= 3 ? before - 3 : 0);
  if (end == std::string::npos) {
    if (head_.size() > kMaxHeadBytes) state_ = State::error;
    return bytes.size();
  }
  const std::size_t used = end + 4 - before;
  head_.resize(end + 4);
  if (!parse_head()) state_ = State::error;
  return used;
}

bool ResponseReader::parse_head() {
  std::string_view head(head_);
  head.remove_suffix(2);  // keep one CRLF after the last header line
  std::size_t eol = head.find("\r\n");
  const std::string_view status_line = head.substr(0, eol);
  // "HTTP/1.x SSS reason"
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[8] != ' ') {
    return false;
  }
  const bool http10 = status_line[7] == '0';
  unsigned status = 0;
  const auto [end, ec] = std::from_chars(status_line.data() + 9, status_line.data() + 12, status);
  if (ec != std::errc{} || end != status_line.data() + 12 || status < 100 || status > 599) {
    return false;
  }
  bool keep_alive = !http10;
  bool chunked = false;
  bool has_length = false;
  std::uint64_t length = 0;
  head.remove_prefix(eol + 2);
  while (!head.empty()) {
    eol = head.find("\r\n");
    const std::string_view line = head.substr(0, eol);
    head.remove_prefix(eol == std::string_view::npos ? head.size() : eol + 2);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "content-length")) {
      std::uint64_t parsed = 0;
      const auto [vend, vec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
      if (value.empty() || vec != std::errc{} || vend != value.data() + value.size()) return false;
      if (has_length && parsed != length) return false;
      has_length = true;
      length = parsed;
    } else if (iequals(name, "transfer-encoding")) {
      chunked = false;  // only the last coding decides
      for_each_token(value, [&](std::string_view coding) { chunked = iequals(coding, "chunked"); });
    } else if (iequals(name, "connection")) {
      for_each_token(value, [&](std::string_view option) {
        if (iequals(option, "close")) keep_alive = false;
        if (iequals(option, "keep-alive")) keep_alive = true;
      });
    }
  }

  if (status < 200) {
    if (status == 101) return false;  // nothing here upgrades
    head_.clear();                    // an interim answer; the real one follows
    return true;
  }
  status_ = status;
  keep_alive_ = keep_alive;
  if (head_request_ || status == 204 || status == 304) {
    state_ = State::done;
  } else if (chunked) {
    state_ = State::chunk_size;
  } else if (has_length) {
    remaining_ = length;
    state_ = length == 0 ? State::done : State::body_length;
  } else {
    keep_alive_ = false;  // the close is what ends the body
    state_ = State::body_until_close;
  }
  return true;
}

std::size_t ResponseReader::consume_line(std::string_view bytes, std::string& line,
                                         bool& complete) {
  const std::size_t lf = bytes.find('\n');
  const std::size_t n = lf == std::string_view::npos ? bytes.size() : lf + 1;
  line.append(bytes.data(), n);
  complete = lf != std::string_view::npos;
  if (line.size() > kMaxChunkLineBytes) state_ = State::error;
  return n;
}

bool ResponseReader::on_chunk_size_line() {
  std::string_view line = trim(line_);
  line = line.substr(0, line.find(';'));  // chunk extensions are ignored
  line = trim(line);
  std::uint64_t size = 0;
  const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
  if (line.empty() || ec != std::errc{} || end != line.data() + line.size()) return false;
  if (size == 0) {
    state_ = State::trailer;
  } else {
    remaining_ = size;
    state_ = State::chunk_data;
  }
  return true;
}

}  // namespace wg::bench
