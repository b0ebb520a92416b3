#pragma once
// The Redis protocol without I/O: commands are formatted by hiredis' redisFormatCommandArgv
// (binary-safe) and replies parsed by hiredis' redisReader (RESP2). The connection only moves
// the bytes, so this part is tested without a socket.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "widget_gateway/redis/client.hpp"

struct redisReader;

namespace wg::redis::detail {

// Appends `args` as one RESP command to `out`. False, with nothing appended, for an empty
// command (or if hiredis cannot allocate).
bool append_command(const std::vector<std::string>& args, std::string& out);

// Splits a byte stream into replies, in order.
class ReplyParser {
 public:
  ReplyParser();
  ~ReplyParser();
  ReplyParser(const ReplyParser&) = delete;
  ReplyParser& operator=(const ReplyParser&) = delete;

  // Adds received bytes (copied).
  void feed(const char* data, std::size_t size);
  // The next complete reply; nullopt when more bytes are needed or the stream is malformed.
  std::optional<Reply> next();
  // Why the stream is malformed; empty while it is well-formed. A malformed stream stays so.
  const std::string& error() const { return error_; }

 private:
  redisReader* reader_;
  std::string error_;
};

}  // namespace wg::redis::detail
