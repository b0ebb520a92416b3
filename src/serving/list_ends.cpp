#include "list_ends.hpp"

#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/api/platform.hpp"

namespace wg::serving {

std::optional<ListEnds::Generation> ListEnds::generation_of(const std::string& escaped_id) const {
  const auto global = generations_.global();
  const auto widget = generations_.widget(escaped_id);
  if (!global || !widget) return std::nullopt;
  return Generation{*global, *widget};
}

std::string ListEnds::list_key(const std::string& escaped_id, const api::ApiRequest& request) {
  std::string key = escaped_id;
  key.push_back(':');
  key.append(request.query.type ? api::to_string(*request.query.type) : "*");
  return key;
}

void ListEnds::record(const api::ApiRequest& request, std::uint64_t start, std::size_t count,
                      WallTime stored_at, WallTime fresh_until, WallTime now) {
  if (now >= fresh_until) return;
  const std::string escaped = api::escape_key_id(request.widget_id);
  const auto generation = generation_of(escaped);
  if (!generation) return;
  const std::string key = list_key(escaped, request);
  std::lock_guard lock(mutex_);
  auto found = lists_.find(key);
  if (found != lists_.end() &&
      (found->second.global != generation->global || found->second.widget != generation->widget ||
       now >= found->second.fresh_until)) {
    lists_.erase(found);
    found = lists_.end();
  }
  if (found == lists_.end()) {
    // Bounded: forgetting costs at most a window fetch per list, never a wrong answer.
    if (lists_.size() >= max_lists_) lists_.clear();
    found =
        lists_
            .emplace(key, Known{{}, stored_at, fresh_until, generation->global, generation->widget})
            .first;
  }
  Known& known = found->second;
  known.facts = cache::with_window(known.facts, start, count);
  // The facts hold as long as the first window that showed one of them.
  known.fresh_until = std::min(known.fresh_until, fresh_until);
  known.stored_at = std::min(known.stored_at, stored_at);
}

std::optional<ListEnds::Seen> ListEnds::facts(const api::ApiRequest& request, WallTime now) const {
  const std::string escaped = api::escape_key_id(request.widget_id);
  const auto generation = generation_of(escaped);
  if (!generation) return std::nullopt;
  const std::string key = list_key(escaped, request);
  std::lock_guard lock(mutex_);
  const auto found = lists_.find(key);
  if (found == lists_.end()) return std::nullopt;
  const Known& known = found->second;
  if (known.global != generation->global || known.widget != generation->widget ||
      now >= known.fresh_until) {
    return std::nullopt;
  }
  return Seen{known.facts, known.stored_at, known.fresh_until};
}

std::size_t ListEnds::size() const {
  std::lock_guard lock(mutex_);
  return lists_.size();
}

}  // namespace wg::serving
