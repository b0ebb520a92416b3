#include "widget_gateway/cache/generations.hpp"

#include <algorithm>

namespace wg::cache {

namespace {

// Stamps are kept as Unix milliseconds made here from WallTimes: they always convert back.
WallTime from_ms(std::int64_t ms) {
  return wall_from_unix_millis(ms).value_or(WallTime{});
}

void raise_to(std::atomic<std::int64_t>& value, std::int64_t wanted) {
  auto current = value.load();
  while (current < wanted && !value.compare_exchange_weak(current, wanted)) {
  }
}

}  // namespace

Generations::Widget& Generations::record(std::string_view escaped_id) {
  // A full map is dropped whole: generations are re-read lazily, one command per widget.
  if (widgets_.size() >= max_widgets_ && !widgets_.contains(std::string(escaped_id))) {
    widgets_.clear();
  }
  return widgets_[std::string(escaped_id)];
}

std::optional<std::uint64_t> Generations::widget(std::string_view escaped_id) const {
  std::lock_guard lock(mutex_);
  auto it = widgets_.find(std::string(escaped_id));
  if (it == widgets_.end()) return std::nullopt;
  return it->second.generation;
}

void Generations::set_widget(std::string_view escaped_id, std::uint64_t generation) {
  std::lock_guard lock(mutex_);
  Widget& known = record(escaped_id);
  if (!known.generation || *known.generation < generation) known.generation = generation;
}

std::optional<std::uint64_t> Generations::global() const {
  auto value = global_.load();
  if (value < 0) return std::nullopt;
  return static_cast<std::uint64_t>(value);
}

void Generations::set_global(std::uint64_t generation) {
  raise_to(global_, static_cast<std::int64_t>(generation));
}

std::optional<WallTime> Generations::widget_soft(std::string_view escaped_id) const {
  std::lock_guard lock(mutex_);
  auto it = widgets_.find(std::string(escaped_id));
  if (it == widgets_.end() || !it->second.soft_ms) return std::nullopt;
  return from_ms(*it->second.soft_ms);
}

void Generations::set_widget_soft(std::string_view escaped_id, WallTime stamp) {
  std::lock_guard lock(mutex_);
  Widget& known = record(escaped_id);
  known.soft_ms = std::max(known.soft_ms.value_or(0), unix_millis(stamp));
}

std::optional<WallTime> Generations::global_soft() const {
  const auto value = global_soft_.load();
  if (value < 0) return std::nullopt;
  return from_ms(value);
}

void Generations::set_global_soft(WallTime stamp) {
  raise_to(global_soft_, std::max<std::int64_t>(0, unix_millis(stamp)));
}

WallTime Generations::soft_stamp(std::string_view escaped_id) const {
  const WallTime global = global_soft().value_or(WallTime{});
  return std::max(global, widget_soft(escaped_id).value_or(WallTime{}));
}

void Generations::clear() {
  std::lock_guard lock(mutex_);
  widgets_.clear();
  global_.store(-1);
  global_soft_.store(-1);
}

}  // namespace wg::cache
