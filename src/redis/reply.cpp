#include "redis/reply.hpp"

namespace wg::redis::detail {

Reply to_reply(const redisReply& r) {
  Reply out;
  switch (r.type) {
    case REDIS_REPLY_STRING:
      out.type = Reply::Type::string;
      out.str.assign(r.str, r.len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = Reply::Type::status;
      out.str.assign(r.str, r.len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = Reply::Type::error;
      out.str.assign(r.str, r.len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = Reply::Type::integer;
      out.integer = r.integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = Reply::Type::array;
      out.elements.reserve(r.elements);
      for (std::size_t i = 0; i < r.elements; ++i) out.elements.push_back(to_reply(*r.element[i]));
      break;
    default:
      out.type = Reply::Type::nil;
      break;
  }
  return out;
}

}  // namespace wg::redis::detail
