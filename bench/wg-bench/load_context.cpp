#include "wg-bench/load_context.hpp"

#include <algorithm>

namespace wg::bench {
namespace {

constexpr auto kSweepInterval = std::chrono::milliseconds(20);

SteadyTime at_seconds(SteadyTime start, double seconds) {
  return start +
         std::chrono::duration_cast<SteadyTime::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

bool status_expected(const BenchRequest& request, unsigned status) {
  if (request.expect_success) return (status >= 200 && status < 300) || status == 304;
  return status < 500;
}

Pacing::Pacing(RunShared& shared, std::size_t connection_index)
    : shared_(shared), index_(connection_index) {
  if (shared.open_loop) {
    schedule_.emplace(shared.start, shared.profile, shared.total_connections, connection_index);
  }
}

Turn Pacing::next(SteadyTime now) {
  Turn turn;
  if (schedule_) {
    const SteadyTime intended = schedule_->intended(j_);
    if (intended >= shared_.end) return turn;
    turn.measured = intended >= shared_.warmup_end;
    if (turn.measured && shared_.count_mode && shared_.budget.fetch_sub(1) <= 0) return turn;
    ++j_;
    turn.kind = Turn::Kind::send;
    turn.at = intended;
    return turn;
  }
  if (now >= shared_.end) return turn;
  if (shared_.profile.ramped()) {
    // Closed loop: connection i sends while the ramp allows more than i connections.
    const double t = std::chrono::duration<double>(now - shared_.start).count();
    const auto index = static_cast<double>(index_);
    if (!(shared_.profile.level_at(t) > index)) {
      const double when = shared_.profile.first_time_above(index, t);
      if (when == LoadProfile::kNever) return turn;
      turn.at = at_seconds(shared_.start, when);
      if (turn.at >= shared_.end) return turn;
      turn.kind = Turn::Kind::retry;
      return turn;
    }
  }
  turn.measured = now >= shared_.warmup_end;
  if (turn.measured && shared_.count_mode && shared_.budget.fetch_sub(1) <= 0) return turn;
  turn.kind = Turn::Kind::send;
  turn.at = now;
  return turn;
}

std::uint64_t Pacing::unsent_on_leave() const {
  if (!schedule_ || shared_.count_mode) return 0;
  const std::uint64_t from = std::max(j_, schedule_->first_at_or_after(shared_.warmup_end));
  const std::uint64_t to = schedule_->first_at_or_after(shared_.end);
  return to > from ? to - from : 0;
}

Worker::Worker(RunShared& s, std::size_t first_request) : shared(s), cursor_(first_request) {
  stats.series = TimeSeries(s.start);
}

const BenchRequest& Worker::next_request() {
  const auto& requests = *shared.options.requests;
  const BenchRequest& request = requests[cursor_];
  cursor_ = cursor_ + 1 == requests.size() ? 0 : cursor_ + 1;
  return request;
}

void Worker::note_sent(const Attempt& attempt, SteadyTime sent) {
  SecondStats* second = stats.series.at(sent);
  if (second) ++second->sent;
  if (!shared.open_loop) {
    if (attempt.measured) ++stats.sends;
    return;
  }
  const auto lateness = sent - attempt.started;
  const bool late = lateness > kLateThreshold;
  if (late && second) ++second->late;
  if (!attempt.measured) return;
  ++stats.sends;
  if (late) ++stats.late_sends;
  const auto late_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(lateness).count();
  stats.max_lateness_ns =
      std::max<std::uint64_t>(stats.max_lateness_ns, std::max<std::int64_t>(0, late_ns));
}

void Worker::record_answer(const Attempt& attempt, SteadyTime done, unsigned status,
                           std::uint64_t bytes_received) {
  ++stats.all_requests;
  ++stats.all_responses;
  shared.progress_responses.fetch_add(1, std::memory_order_relaxed);
  const auto latency = static_cast<std::uint64_t>(std::max<std::int64_t>(
      0, std::chrono::duration_cast<std::chrono::nanoseconds>(done - attempt.started).count()));
  if (SecondStats* second = stats.series.at(done)) {
    const auto slow_above = std::chrono::nanoseconds(shared.options.load.slow_above).count();
    second->record_answer(latency, static_cast<std::uint64_t>(slow_above));
  }
  if (!attempt.measured) return;
  stats.bytes_sent += attempt.request->text.size();
  ++stats.requests;
  ++stats.responses;
  stats.bytes_received += bytes_received;
  const std::size_t code = std::min<std::size_t>(status, stats.status.size() - 1);
  ++stats.status[code];
  const bool expected = status_expected(*attempt.request, status);
  if (!expected) {
    ++stats.unexpected_status;
    ++stats.unexpected_by_status[code];
  }
  stats.latency.record(latency);
  RoleStats& role = stats.roles[static_cast<std::size_t>(attempt.request->role)];
  ++role.requests;
  ++role.responses;
  if (!expected) ++role.unexpected_status;
  role.latency.record(latency);
  last_measured_completion = std::max(last_measured_completion, done);
}

void Worker::record_failure(const Attempt& attempt, ErrorKind kind, SteadyTime now) {
  if (attempt.measured && kind != ErrorKind::connect && attempt.request) {
    stats.bytes_sent += attempt.request->text.size();
  }
  stats.record_error(kind, attempt.measured);
  if (attempt.measured && attempt.request) {
    RoleStats& role = stats.roles[static_cast<std::size_t>(attempt.request->role)];
    ++role.requests;
    ++role.errors;
  }
  shared.progress_errors.fetch_add(1, std::memory_order_relaxed);
  if (SecondStats* second = stats.series.at(now)) ++second->errors;
}

void Worker::leave() {
  if (--active == 0) sweep_timer_.cancel();
}

void Worker::start_sweeping() {
  sweep_timer_.expires_after(kSweepInterval);
  sweep_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || active == 0) return;
    sweep();
    start_sweeping();
  });
}

void Worker::sweep() {
  const SteadyTime now = shared.clock.steady_now();
  publish(now);
  if (!hard_stopped && now >= hard_stop_at) {
    hard_stopped = true;
    for (auto& connection : connections) connection->stop();
    return;
  }
  for (auto& connection : connections) connection->expire_if_late(now);
}

void Worker::publish(SteadyTime now) {
  const std::size_t current = stats.series.index_of(now);
  if (current == 0 || current <= published_.second || current > TimeSeries::kMaxSeconds) return;
  const std::size_t complete = current - 1;
  std::lock_guard lock(published_mutex_);
  published_.second = current;
  published_.stats = complete < stats.series.size() ? stats.series.second(complete) : SecondStats{};
}

Worker::Published Worker::published() const {
  std::lock_guard lock(published_mutex_);
  return published_;
}

}  // namespace wg::bench
