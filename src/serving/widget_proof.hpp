#pragma once
// What the cached widget data (fresh or stale), and what windows showed of the list
// (ListEnds), prove about a reviews page without an upstream call: an empty page past the end
// of its list or of a platform the widget does not name, or a 400 for every page of a widget
// upstream does not know. The rules themselves are cache::provably_empty; this reads the
// facts and builds the answer.

#include <boost/asio/awaitable.hpp>
#include <memory>
#include <optional>
#include <string>

#include "cache_tier.hpp"
#include "list_ends.hpp"
#include "widget_gateway/api/request.hpp"
#include "widget_gateway/cache/entry.hpp"
#include "widget_gateway/common/clock.hpp"

namespace wg::serving {

struct LocalProof {
  // The answer, sharing its basis' freshness (a stale proof is as old as its data); null when
  // nothing is proven.
  std::shared_ptr<const cache::Entry> answer;
  // What it comes from: the widget data, or (from list ends alone) a stand-in carrying the
  // windows' times.
  std::shared_ptr<const cache::Entry> widget;
  bool widget_cached = false;       // widget data was found (fresh or stale), whatever it proves
  bool widget_unavailable = false;  // none in L1, and Redis did not answer (not a miss)
  // `also`, when it was read from Redis along with the widget data (also_read).
  Found also;
  bool also_read = false;
  // Nothing is proven, and the page's list has to be walked up from this window start before
  // the page can be judged (cache::walk_from).
  std::optional<std::uint64_t> walk_from;
};

// Threads: one per worker, on its thread (CacheTier is the worker's).
class ProofLookup {
 public:
  ProofLookup(CacheTier& cache, ListEnds* list_ends, Clock& clock)
      : cache_(cache), list_ends_(list_ends), clock_(clock) {}

  // `widget_key` is the request's widget data key. `also`: a key of the same widget to read in
  // the same Redis command when the widget data is not in L1 ("" for none).
  boost::asio::awaitable<LocalProof> look(const api::ApiRequest& request,
                                          const std::string& widget_key,
                                          const std::string& also = {});

 private:
  CacheTier& cache_;
  ListEnds* list_ends_;
  Clock& clock_;
};

}  // namespace wg::serving
