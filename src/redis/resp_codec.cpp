#include "redis/resp_codec.hpp"

#include <hiredis/hiredis.h>

#include <new>
#include <string>

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

// hiredis' own reply functions, with array creation checked against the parser's bound first.
struct ReplyParser::Bounds {
  static const redisReplyObjectFunctions& functions(const redisReplyObjectFunctions& defaults) {
    static const redisReplyObjectFunctions bounded = [&defaults] {
      default_create_array = defaults.createArray;
      redisReplyObjectFunctions f = defaults;
      f.createArray = &create_array;
      return f;
    }();
    return bounded;
  }

  static void* create_array(const redisReadTask* task, int elements) {
    auto* parser = static_cast<ReplyParser*>(task->privdata);
    // hiredis itself refuses a negative count (-1, nil, never comes here).
    if (elements > kMaxReplyElements - parser->announced_) {
      parser->too_large_ = true;
      return nullptr;  // hiredis stops with an error
    }
    parser->announced_ += elements;
    return default_create_array(task, elements);
  }

  static inline void* (*default_create_array)(const redisReadTask*, int) = nullptr;
};

ReplyParser::ReplyParser() : reader_(redisReaderCreate()) {
  if (reader_ == nullptr) throw std::bad_alloc();
  // hiredis only reads through `fn`, whatever its constness.
  reader_->fn = const_cast<redisReplyObjectFunctions*>(&Bounds::functions(*reader_->fn));
  reader_->privdata = this;
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
    if (too_large_) {
      error_ = "reply announces more than " + std::to_string(kMaxReplyElements) + " elements";
    } else {
      error_ = reader_->errstr[0] != '\0' ? reader_->errstr : "protocol error";
    }
    return std::nullopt;
  }
  if (raw == nullptr) return std::nullopt;
  announced_ = 0;  // the next reply has its own bound
  auto* reply = static_cast<redisReply*>(raw);
  Reply out = to_reply(*reply);
  freeReplyObject(reply);
  return out;
}

}  // namespace wg::redis::detail
