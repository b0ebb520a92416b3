#include "widget_gateway/cache/generations.hpp"

namespace wg::cache {

std::optional<std::uint64_t> Generations::widget(std::string_view escaped_id) const {
  std::lock_guard lock(mutex_);
  auto it = widgets_.find(std::string(escaped_id));
  if (it == widgets_.end()) return std::nullopt;
  return it->second;
}

void Generations::set_widget(std::string_view escaped_id, std::uint64_t generation) {
  std::lock_guard lock(mutex_);
  // A full map is dropped whole: generations are re-read lazily, one GET per widget.
  if (widgets_.size() >= max_widgets_) widgets_.clear();
  auto [it, inserted] = widgets_.try_emplace(std::string(escaped_id), generation);
  if (!inserted && it->second < generation) it->second = generation;
}

std::optional<std::uint64_t> Generations::global() const {
  auto value = global_.load();
  if (value < 0) return std::nullopt;
  return static_cast<std::uint64_t>(value);
}

void Generations::set_global(std::uint64_t generation) {
  auto wanted = static_cast<std::int64_t>(generation);
  auto current = global_.load();
  while (current < wanted && !global_.compare_exchange_weak(current, wanted)) {
  }
}

void Generations::clear() {
  std::lock_guard lock(mutex_);
  widgets_.clear();
  global_.store(-1);
}

}  // namespace wg::cache
