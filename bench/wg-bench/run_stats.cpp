#include "wg-bench/run_stats.hpp"

#include <algorithm>

namespace wg::bench {

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::connect:
      return "connect";
    case ErrorKind::write:
      return "write";
    case ErrorKind::timeout:
      return "timeout";
    case ErrorKind::closed:
      return "closed";
    case ErrorKind::parse:
      return "parse";
    case ErrorKind::read:
      return "read";
    case ErrorKind::unsent:
      return "unsent";
    case ErrorKind::count_:
      break;
  }
  return "?";
}

std::uint64_t RunStats::error_total() const {
  std::uint64_t total = 0;
  for (auto n : errors) total += n;
  return total;
}

void RoleStats::merge(const RoleStats& o) {
  latency.merge(o.latency);
  requests += o.requests;
  responses += o.responses;
  errors += o.errors;
  unexpected_status += o.unexpected_status;
}

void RunStats::merge(const RunStats& o) {
  latency.merge(o.latency);
  requests += o.requests;
  responses += o.responses;
  for (std::size_t i = 0; i < status.size(); ++i) status[i] += o.status[i];
  for (std::size_t i = 0; i < errors.size(); ++i) errors[i] += o.errors[i];
  unexpected_status += o.unexpected_status;
  for (std::size_t i = 0; i < unexpected_by_status.size(); ++i) {
    unexpected_by_status[i] += o.unexpected_by_status[i];
  }
  bytes_sent += o.bytes_sent;
  bytes_received += o.bytes_received;
  all_requests += o.all_requests;
  all_responses += o.all_responses;
  connections_opened += o.connections_opened;
  server_closes += o.server_closes;
  sends += o.sends;
  late_sends += o.late_sends;
  max_lateness_ns = std::max(max_lateness_ns, o.max_lateness_ns);
  series.merge(o.series);
  for (std::size_t i = 0; i < roles.size(); ++i) roles[i].merge(o.roles[i]);
}

}  // namespace wg::bench
