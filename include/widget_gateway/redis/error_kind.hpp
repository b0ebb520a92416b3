#pragma once
// Why a Redis command failed, in a small fixed set (a metric label): what the client saw
// (timeout, down, overloaded) or what an error reply's first word says.

#include <cstdint>
#include <string_view>

namespace wg::redis {

enum class ErrorKind : std::uint8_t {
  timeout,      // no reply within the command timeout
  down,         // not connected, or the connection dropped with the command in flight
  overloaded,   // max_pending commands already in flight
  auth,         // NOAUTH, WRONGPASS, NOPERM: credentials or ACL permissions
  readonly,     // READONLY: connected to a replica
  oom,          // OOM: maxmemory reached and nothing to evict
  unavailable,  // LOADING, BUSY, MISCONF, MASTERDOWN, CLUSTERDOWN, TRYAGAIN: cannot serve now
  moved,        // MOVED, ASK: the key lives on another cluster node
  crossslot,    // CROSSSLOT: keys of one command in different cluster slots
  other,        // any other error reply (ERR, WRONGTYPE, ...)
};
inline constexpr std::size_t kErrorKinds = 10;

// The label value: "timeout", "down", ..., "other" (wg_redis_errors_total{kind}).
constexpr std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::timeout:
      return "timeout";
    case ErrorKind::down:
      return "down";
    case ErrorKind::overloaded:
      return "overloaded";
    case ErrorKind::auth:
      return "auth";
    case ErrorKind::readonly:
      return "readonly";
    case ErrorKind::oom:
      return "oom";
    case ErrorKind::unavailable:
      return "unavailable";
    case ErrorKind::moved:
      return "moved";
    case ErrorKind::crossslot:
      return "crossslot";
    case ErrorKind::other:
      break;
  }
  return "other";
}

// The kind of an error reply, from its first word ("NOPERM this user has no permissions ...").
ErrorKind classify_error_reply(std::string_view message);

// Whether an error reply of this kind says the server cannot serve this client as configured
// (as opposed to one command being wrong): such replies mark a client unhealthy for a while.
bool is_server_condition(ErrorKind kind);

}  // namespace wg::redis
