#include "widget_counts.hpp"

#include "widget_gateway/accesslog/record.hpp"
#include "widget_gateway/upstream/body_inspector.hpp"

namespace wg::frontend {

std::string_view WidgetCounts::of(const std::shared_ptr<const cache::Entry>& entry) {
  if (!entry || entry->status != 200) return {};
  if (auto it = known_.find(entry.get()); it != known_.end()) {
    const std::weak_ptr<const cache::Entry>& seen = it->second.entry;
    // The same entry, not another one at a freed one's address: the weak reference keeps the
    // old control block, so a new entry cannot share it.
    if (!seen.owner_before(entry) && !entry.owner_before(seen)) return it->second.counts;
  }
  if (known_.size() >= kMaxEntries) known_.clear();
  std::optional<api::WidgetSummary> widget = upstream::inspect_widget_body(entry->body);
  Known& known = known_[entry.get()];
  known.entry = entry;
  known.counts = widget ? accesslog::counts_json(*widget) : std::string();
  return known.counts;
}

}  // namespace wg::frontend
