#include "redis/resp_codec.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>
#include <new>
#include <string>

#include "redis/reply.hpp"

namespace wg::redis::detail {

namespace {

void append_header(char type, std::size_t count, std::string& out) {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, count);
  out.push_back(type);
  out.append(digits, end);
  out.append("\r\n");
}

}  // namespace

bool append_command(const std::vector<std::string>& args, std::string& out) {
  if (args.empty()) return false;
  // Written straight into the connection's buffer: hiredis' formatter allocated a copy of every
  // command (a 150 KB window's SET included) only for it to be copied again here.
  std::size_t need = out.size() + 16;
  for (const auto& arg : args) need += arg.size() + 24;
  if (need > out.capacity()) out.reserve(std::max(need, 2 * out.capacity()));  // geometric
  append_header('*', args.size(), out);
  for (const auto& arg : args) {
    append_header('$', arg.size(), out);
    out.append(arg);
    out.append("\r\n");
  }
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
