#pragma once
// A worker's hit heads for one cached entry, kept beside it in the worker's L1
// (docs/listener.md, "Answer heads"): one template per coding, written on the first hit that
// answers in it, shared by the answers after it. What varies per answer (Date, Age, the TTL
// figures, CORS per origin, Content-Length, 304) is not in it.

#include <array>
#include <memory>

#include "serving/serve_policy.hpp"
#include "widget_gateway/cache/l1_cache.hpp"
#include "widget_gateway/client_policy/coding.hpp"
#include "widget_gateway/http/head_template.hpp"

namespace wg::frontend {

class AnswerHeads final : public cache::L1Annex {
 public:
  // What a head depends on besides the entry and the coding: settings a reload may change,
  // and Cache-Status' detail (a derived page's hits say so).
  struct Shape {
    long long stale_while_revalidate = 0;
    long long stale_if_error = 0;
    bool vary_on_origin = false;
    serving::Outcome::Detail detail = serving::Outcome::Detail::none;
    bool operator==(const Shape&) const = default;
  };
  using HeadPtr = std::shared_ptr<const http::HeadTemplate>;

  explicit AnswerHeads(const Shape& shape) : shape_(shape) {}

  // The head kept for `coding` when it was written under `shape`; null otherwise.
  HeadPtr find(client_policy::Coding coding, const Shape& shape) const;
  // A copy holding `head` for `coding` too: a kept set never changes, since the cache charges
  // what it holds when it is attached. Under another shape the copy holds `head` alone.
  std::unique_ptr<const AnswerHeads> with(client_policy::Coding coding, HeadPtr head,
                                          const Shape& shape) const;
  std::size_t bytes() const override;

 private:
  Shape shape_;
  std::array<HeadPtr, 3> heads_;  // by coding: identity, gzip, br
};

}  // namespace wg::frontend
