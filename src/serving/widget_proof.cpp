#include "widget_proof.hpp"

#include "widget_gateway/cache/page_window.hpp"
#include "widget_gateway/upstream/body_inspector.hpp"

namespace wg::serving {
namespace asio = boost::asio;

namespace {

std::shared_ptr<const cache::Entry> make_local_entry(std::string body, const cache::Entry& basis,
                                                     std::uint16_t status, WallTime stored_at) {
  auto entry = std::make_shared<cache::Entry>();
  entry->status = status;
  entry->stored_at = stored_at;
  entry->fresh_until = basis.fresh_until;
  entry->stale_until = basis.fresh_until;  // a proof from fresh data only; no stale window
  if (status == 200) entry->etag = cache::strong_etag(body);
  entry->proven = true;
  entry->hold = basis.hold;  // proven by a copy that holds back an answer: as unconfirmed as it
  entry->body = std::move(body);
  return entry;
}

}  // namespace

asio::awaitable<LocalProof> ProofLookup::look(const api::ApiRequest& request,
                                              const std::string& widget_key,
                                              const std::string& also) {
  Found widget;
  LocalProof proof;
  if (also.empty()) {
    widget = co_await cache_.find(widget_key);
  } else {
    std::pair<Found, Found> both = co_await cache_.find_pair(widget_key, also);
    widget = std::move(both.first);
    // Read along only when the widget data itself came from (or was missing in) Redis.
    proof.also_read = both.first.tier != Tier::l1;
    proof.also = std::move(both.second);
  }
  const WallTime now = clock_.wall_now();
  std::optional<ListEnds::Seen> seen;
  if (list_ends_ != nullptr) seen = list_ends_->facts(request, now);
  const cache::ListFacts list = seen ? seen->facts : cache::ListFacts{};
  if (!widget.entry) {
    proof.widget_unavailable = widget.shared_unavailable;
    // No widget data: the windows alone may still prove the page empty, for as long as they
    // are fresh, and the answer is as old as they are.
    if (seen && cache::provably_empty(request.query, nullptr, list)) {
      auto basis = std::make_shared<cache::Entry>();
      basis->status = 200;
      basis->stored_at = seen->stored_at;
      basis->fresh_until = seen->fresh_until;
      basis->stale_until = seen->fresh_until;
      proof.answer = make_local_entry("[]", *basis, 200, seen->stored_at);
      proof.widget = std::move(basis);
    }
    co_return proof;
  }
  proof.widget_cached = true;
  // Only adopted data proves anything: a provisional copy (a held-back answer kept for lack
  // of an adopted one) is served as what it is, and proves no page.
  if (widget.entry->hold && widget.entry->hold->provisional) co_return proof;
  const WallTime stored_at = now < widget.entry->fresh_until ? now : widget.entry->stored_at;
  if (widget.entry->status != 200) {
    // Upstream said this widget does not exist: so do its reviews (400, as upstream answers).
    proof.answer = make_local_entry({}, *widget.entry, 400, stored_at);
    proof.widget = std::move(widget.entry);
    co_return proof;
  }
  auto summary = upstream::inspect_widget_body(widget.entry->body);
  if (!summary) co_return proof;
  if (!cache::provably_empty(request.query, &*summary, list)) {
    proof.walk_from = cache::walk_from(request.query, *summary, list);
    co_return proof;
  }
  proof.answer = make_local_entry("[]", *widget.entry, 200, stored_at);
  proof.widget = std::move(widget.entry);
  co_return proof;
}

}  // namespace wg::serving
