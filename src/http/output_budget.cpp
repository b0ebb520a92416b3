#include "output_budget.hpp"

#include <algorithm>

namespace wg::http {

std::size_t kept_alive_bytes(const Response& response) {
  if (!response.body_owner) return 0;
  return response.owner_bytes != 0 ? response.owner_bytes : response.body.size();
}

OutputBudget::OutputBudget(std::size_t max_bytes, ServerStats& stats, Access access)
    : max_(max_bytes), stats_(stats), shared_(access == Access::shared) {
  spare_nodes_.reserve(kSpareOwnerNodes);
}

std::optional<std::unique_lock<std::mutex>> OutputBudget::lock() const {
  if (!shared_) return std::nullopt;
  return std::optional<std::unique_lock<std::mutex>>(std::in_place, mutex_);
}

bool OutputBudget::has_room() const {
  auto guard = lock();
  return room();
}

bool OutputBudget::room() const {
  return pending_ == 0 || (pending_ < max_ && pending_ + recent_largest() <= max_);
}

bool OutputBudget::admits(const void* owner, std::size_t bytes) const {
  auto guard = lock();
  std::size_t added = bytes;
  if (auto it = owners_.find(owner); it != owners_.end()) {
    added = bytes > it->second.bytes ? bytes - it->second.bytes : 0;
  }
  return added == 0 || pending_ == 0 || pending_ + added <= max_;
}

void OutputBudget::hold(const void* owner, std::size_t bytes) {
  std::vector<std::function<void()>> wakers;
  {
    auto guard = lock();
    auto it = owners_.find(owner);
    if (it == owners_.end()) {
      if (spare_nodes_.empty()) {
        it = owners_.emplace(owner, Owner{}).first;
      } else {
        auto node = std::move(spare_nodes_.back());
        spare_nodes_.pop_back();
        node.key() = owner;
        node.mapped() = Owner{};
        it = owners_.insert(std::move(node)).position;
      }
    }
    Owner& held = it->second;
    ++held.answers;
    // A maximum that forgets by a sixteenth per answer held: one huge answer long ago does not
    // make every new connection expect another.
    const std::size_t recent = recent_largest_.load(std::memory_order_relaxed);
    recent_largest_.store(std::max(bytes, recent - recent / 16), std::memory_order_relaxed);
    if (bytes > held.bytes) {
      set_pending(pending_ + (bytes - held.bytes));
      held.bytes = bytes;
    }
    // A woken waiter has taken its turn: the next ones may go if there is still room.
    if (!waiters_.empty()) wakers = take_wakers();
  }
  wake(wakers);
}

void OutputBudget::release(const void* owner) {
  std::vector<std::function<void()>> wakers;
  {
    auto guard = lock();
    auto it = owners_.find(owner);
    if (it == owners_.end()) return;
    if (--it->second.answers > 0) return;
    set_pending(pending_ - it->second.bytes);
    auto node = owners_.extract(it);
    if (spare_nodes_.size() < kSpareOwnerNodes) spare_nodes_.push_back(std::move(node));
    if (!waiters_.empty()) wakers = take_wakers();
  }
  wake(wakers);
}

std::uint64_t OutputBudget::on_room(std::function<void()> wake_up, std::uint64_t ticket) {
  std::vector<std::function<void()>> wakers;
  {
    auto guard = lock();
    if (ticket == 0) ticket = next_ticket_++;
    waiters_.insert_or_assign(ticket, std::move(wake_up));
    wakers = take_wakers();
  }
  wake(wakers);
  return ticket;
}

void OutputBudget::forget(std::uint64_t ticket) {
  auto guard = lock();
  waiters_.erase(ticket);
}

std::vector<std::function<void()>> OutputBudget::take_wakers() {
  std::vector<std::function<void()>> wakers;
  if (waiters_.empty() || !room()) return wakers;
  // As many as answers of the recent largest size fit (one at least): waking every waiter for
  // each bit of room would make each of them look again, over and over, under a flood.
  const std::size_t expected = std::max<std::size_t>(recent_largest(), 1);
  const std::size_t free = max_ > pending_ ? max_ - pending_ : 0;
  std::size_t turns = std::clamp<std::size_t>(free / expected, 1, waiters_.size());
  while (turns-- > 0) {
    auto first = waiters_.begin();
    wakers.push_back(std::move(first->second));
    waiters_.erase(first);
  }
  return wakers;
}

void OutputBudget::wake(std::vector<std::function<void()>>& wakers) {
  for (auto& waker : wakers) waker();
}

void OutputBudget::set_pending(std::size_t bytes) {
  pending_ = bytes;
  stats_.output_pending_bytes.store(bytes, std::memory_order_relaxed);
}

void OutputBudget::bump(std::atomic<std::uint64_t>& counter) {
  if (shared_) {
    counter.fetch_add(1, std::memory_order_relaxed);
  } else {
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
}

void OutputBudget::count_refused() {
  bump(stats_.output_refused);
}

void OutputBudget::count_paused() {
  bump(stats_.output_paused);
}

void OutputBudget::count_slow_reader() {
  bump(stats_.slow_readers_closed);
}

OutputHold& OutputHold::operator=(OutputHold&& other) noexcept {
  if (this != &other) {
    release();
    connection_ = std::exchange(other.connection_, nullptr);
    owner_ = std::move(other.owner_);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void OutputHold::release() {
  if (connection_ == nullptr) return;
  // Counted off before the owner goes, so that its address is not reused while still counted.
  std::exchange(connection_, nullptr)->release(owner_.get(), std::exchange(bytes_, 0));
  owner_.reset();
}

bool ConnectionOutput::admits(const Response& response) const {
  const std::size_t bytes = kept_alive_bytes(response);
  if (bytes == 0) return true;
  if (held_ != 0 && held_ + bytes > max_) return false;
  return budget_.admits(response.body_owner.get(), bytes);
}

bool ConnectionOutput::room_for_handler(std::size_t answering) const {
  if (held_ == 0 && answering == 0) return true;
  std::size_t expected = largest_ != 0 ? largest_ : budget_.recent_largest();
  if (expected == 0) expected = max_ / 8;
  return held_ + (answering + 1) * expected <= max_;
}

OutputHold ConnectionOutput::hold(Response& response) {
  const std::size_t bytes = kept_alive_bytes(response);
  if (bytes == 0) return {};
  budget_.hold(response.body_owner.get(), bytes);
  held_ += bytes;
  largest_ = std::max(largest_, bytes);
  return OutputHold(this, std::move(response.body_owner), bytes);
}

void ConnectionOutput::release(const void* owner, std::size_t bytes) {
  held_ -= bytes;
  budget_.release(owner);
}

}  // namespace wg::http
