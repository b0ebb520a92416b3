#pragma once
// Conversion of hiredis replies into the owning, hiredis-free Reply type.

#include <hiredis/hiredis.h>

#include "widget_gateway/redis/client.hpp"

namespace wg::redis::detail {

Reply to_reply(const redisReply& reply);

}  // namespace wg::redis::detail
