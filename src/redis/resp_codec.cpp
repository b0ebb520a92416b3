#include "redis/resp_codec.hpp"

#include <hiredis/hiredis.h>

#include <new>

#include "redis/reply.hpp"

namespace wg::redis::detail {

bool append_command(const std::vector<std::string>& args, std::string& out) {
  if (args.empty()) return false;
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  argv.reserve(args.size());
  lengths.reserve(args.size());
  for (const auto& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  char* command = nullptr;
  int size =
      redisFormatCommandArgv(&command, static_cast<int>(args.size()), argv.data(), lengths.data());
  if (size < 0 || command == nullptr) return false;
  out.append(command, static_cast<std::size_t>(size));
  redisFreeCommand(command);
  return true;
}

ReplyParser::ReplyParser() : reader_(redisReaderCreate()) {
  if (reader_ == nullptr) throw std::bad_alloc();
}

ReplyParser::~ReplyParser() {
  redisReaderFree(reader_);
}

void ReplyParser::feed(const char* data, std::size_t size) {
  if (!error_.empty()) return;
  if (redisReaderFeed(reader_, data, size) != REDIS_OK) error_ = reader_->errstr;
}

std::optional<Reply> ReplyParser::next() {
  if (!error_.empty()) return std::nullopt;
  void* raw = nullptr;
  if (redisReaderGetReply(reader_, &raw) != REDIS_OK) {
    error_ = reader_->errstr[0] != '\0' ? reader_->errstr : "protocol error";
    return std::nullopt;
  }
  if (raw == nullptr) return std::nullopt;
  auto* reply = static_cast<redisReply*>(raw);
  Reply out = to_reply(*reply);
  freeReplyObject(reply);
  return out;
}

}  // namespace wg::redis::detail
