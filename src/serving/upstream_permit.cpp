#include "upstream_permit.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "widget_gateway/common/error.hpp"
#include "widget_gateway/redis/client.hpp"

namespace wg::serving {
namespace asio = boost::asio;

asio::awaitable<UpstreamPermit::Taken> UpstreamPermit::take(Sources sources,
                                                            std::chrono::milliseconds queue_wait,
                                                            bool widget_known,
                                                            std::optional<GuardReservation> guard) {
  // Named: GCC 12 rejects a braced list inside a co_await expression (docs/ci.md).
  const Kept kNothingKept;
  UpstreamPermit permit(sources, std::move(guard));
  std::optional<InFlightLimit::Slot> slot = co_await sources.slots.acquire(queue_wait);
  if (!slot) {
    co_await permit.settle(kNothingKept);
    co_return PermitRefusal{make_error_code(errc::upstream_busy), std::chrono::seconds(1),
                            metrics::Withheld::busy};
  }
  permit.slot_.emplace(std::move(*slot));
  if (!widget_known) {
    const auto reserved = co_await sources.quota.acquire_unknown(sources.redis);
    if (reserved.verdict == quota::QuotaCounter::Verdict::exhausted) {
      co_await permit.settle(kNothingKept);
      co_return PermitRefusal{make_error_code(errc::unknown_budget_exhausted),
                              quota::seconds_until_reset(sources.clock.wall_now(), reserved.period),
                              metrics::Withheld::unknown_budget};
    }
    if (!reserved.allowed()) {
      co_await permit.settle(kNothingKept);
      co_return PermitRefusal{make_error_code(errc::quota_unavailable), std::chrono::seconds(1),
                              metrics::Withheld::quota_unavailable};
    }
    permit.unknown_ = reserved.period;
  }
  const auto grant = co_await sources.quota.acquire(sources.redis);
  if (!grant.allowed()) {
    // Given back before the refusal is answered, as after an answer.
    co_await permit.settle(kNothingKept);
    if (grant.verdict == quota::QuotaCounter::Verdict::exhausted) {
      co_return PermitRefusal{make_error_code(errc::quota_exhausted),
                              quota::seconds_until_reset(sources.clock.wall_now(), grant.period),
                              std::nullopt, true};
    }
    co_return PermitRefusal{make_error_code(errc::quota_unavailable), std::chrono::seconds(1),
                            metrics::Withheld::quota_unavailable, true};
  }
  permit.grant_ = grant;
  co_return permit;
}

UpstreamPermit::UpstreamPermit(UpstreamPermit&& other) noexcept
    : sources_(other.sources_),
      guard_(std::move(other.guard_)),
      slot_(std::move(other.slot_)),
      unknown_(std::exchange(other.unknown_, std::nullopt)),
      grant_(std::exchange(other.grant_, std::nullopt)) {
  other.guard_.reset();
  other.slot_.reset();
}

UpstreamPermit::~UpstreamPermit() {
  if (grant_) sources_.quota.give_back(*grant_);
  if (unknown_) {
    // Only an exit that skipped settle() gets here (an exception): the refund still
    // happens, on the worker's executor, once this coroutine has unwound.
    auto refund = [quota = &sources_.quota, redis = &sources_.redis,
                   period = *unknown_]() -> asio::awaitable<void> {
      co_await quota->refund_unknown(*redis, period);
    };
    asio::co_spawn(sources_.executor, refund, asio::detached);
  }
}

void UpstreamPermit::finished(bool nothing_sent) {
  slot_.reset();
  if (nothing_sent && grant_) sources_.quota.give_back(*grant_);
  grant_.reset();
}

asio::awaitable<void> UpstreamPermit::settle(Kept kept) {
  co_await settle_unknown(kept.unknown_id);
  std::optional<GuardReservation> guard = std::exchange(guard_, std::nullopt);
  if (guard && kept.guard_count) {
    guard->keep();
  } else if (guard) {
    co_await guard->give_back();
  }
}

asio::awaitable<void> UpstreamPermit::settle_unknown(bool keep) {
  const std::optional<quota::QuotaPeriod> period = std::exchange(unknown_, std::nullopt);
  if (period && !keep) co_await sources_.quota.refund_unknown(sources_.redis, *period);
}

}  // namespace wg::serving
