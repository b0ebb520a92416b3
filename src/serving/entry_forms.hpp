#pragma once
// What a worker makes of an entry it holds when an answer first needs it (docs/threading.md):
// the coding a client accepts, compressed on demand within the worker's byte budget, and for a
// big body that goes whole to a client that takes files, a body file (docs/listener.md). Each
// goes into a copy of the entry (entries do not change once shared) that replaces it in the
// worker's L1, which charges it; the answer that asked is built from the copy. The coding a
// client accepts is negotiated by client_policy; this is where it is made and kept.
// Threads: one worker's; no lock.

#include <memory>
#include <string>
#include <string_view>

#include "cache_tier.hpp"
#include "repeat_asks.hpp"
#include "widget_gateway/cache/body_file.hpp"
#include "widget_gateway/cache/entry.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/compress/compress.hpp"

namespace wg::serving {

class EntryForms {
 public:
  EntryForms(CacheTier& cache, Clock& clock);

  // For an entry compressed on demand (cache::codings_on_demand) that lacks `coding` ("br" or
  // "gzip"): a copy with it, within the budget, in place of the entry in L1 (unless L1 holds a
  // newer copy); otherwise `entry` itself (the answer then goes out in a coding it has, or
  // identity).
  std::shared_ptr<const cache::Entry> with_coding(const std::string& key,
                                                  std::shared_ptr<const cache::Entry> entry,
                                                  std::string_view coding);

  // For an entry whose identity body is about to go whole to a client that takes files
  // (http::Request::sends_files): the second time it is asked for so, a copy with its body
  // file, in place of the entry in L1; otherwise `entry` itself (a small body, a first ask, a
  // copy L1 no longer holds, no descriptor to spare).
  std::shared_ptr<const cache::Entry> with_body_file(const std::string& key,
                                                     std::shared_ptr<const cache::Entry> entry);

 private:
  CacheTier& cache_;
  Clock& clock_;
  compress::CompressionBudget budget_;
  std::shared_ptr<cache::BodyFiles> files_;  // the process's
  RepeatAsks file_asks_;                     // a body asked for once pays for no file
};

}  // namespace wg::serving
