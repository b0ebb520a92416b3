#pragma once
// The request pool as HTTP/2 header lists, built once at run start so that sending a request
// costs no parsing or formatting. Each pool entry's pre-built HTTP/1.1 head ("GET /x HTTP/1.1",
// Host, other fields) becomes :method, :scheme, :authority (from Host), :path and its other
// fields with lower-cased names; hop-by-hop fields that HTTP/2 forbids (Connection,
// Keep-Alive, Proxy-Connection, Transfer-Encoding, Upgrade, TE other than "trailers") are
// dropped. Values point into the pool's own text and names into this table (nghttp2's
// NO_COPY flags), so both must outlive every session that uses them.

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "wg-bench/request_mix.hpp"

namespace wg::bench {

class H2RequestTable {
 public:
  // `requests` must stay alive and unchanged while the table is used. `tls` picks :scheme;
  // `default_authority` is used when a head has no Host. Throws std::invalid_argument on a
  // head that does not parse.
  H2RequestTable(const std::vector<BenchRequest>& requests, bool tls,
                 std::string_view default_authority);

  // The header list of a request of that pool.
  std::span<const nghttp2_nv> headers(const BenchRequest& request) const;
  std::size_t size() const { return begin_.empty() ? 0 : begin_.size() - 1; }

 private:
  const BenchRequest* base_;
  std::set<std::string, std::less<>> names_;  // lower-cased field names; stable addresses
  std::vector<nghttp2_nv> nv_;
  std::vector<std::uint32_t> begin_;  // request i: nv_[begin_[i], begin_[i + 1])
};

}  // namespace wg::bench
