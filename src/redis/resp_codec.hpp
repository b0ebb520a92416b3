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

// Appends `args` as one RESP command (an array of bulk strings) to `out`. False, with nothing
// appended, for an empty command.
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

  // Array elements one reply may announce, nested arrays included. hiredis allocates an
  // array's element pointers as soon as its header arrives, so without a bound 14 bytes
  // ("*2147483647\r\n") ask for 16 GiB. The largest reply the client asks for, CLUSTER SLOTS
  // of a cluster cut into many ranges, announces far fewer.
  static constexpr long long kMaxReplyElements = 1 << 20;

 private:
  struct Bounds;

  redisReader* reader_;
  std::string error_;
  long long announced_ = 0;  // elements announced by the reply being read
  bool too_large_ = false;
};

}  // namespace wg::redis::detail
