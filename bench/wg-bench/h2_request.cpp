#include "wg-bench/h2_request.hpp"

#include <stdexcept>

namespace wg::bench {
namespace {

constexpr std::uint8_t kNoCopy = NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE;

nghttp2_nv make_nv(std::string_view name, std::string_view value) {
  return nghttp2_nv{reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), kNoCopy};
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool hop_by_hop(std::string_view name, std::string_view value) {
  if (name == "te") return value != "trailers";
  return name == "connection" || name == "keep-alive" || name == "proxy-connection" ||
         name == "transfer-encoding" || name == "upgrade";
}

[[noreturn]] void bad_head(std::string_view why) {
  throw std::invalid_argument("HTTP/2: cannot convert a pool request: " + std::string(why));
}

}  // namespace

H2RequestTable::H2RequestTable(const std::vector<BenchRequest>& requests, bool tls,
                               std::string_view default_authority)
    : base_(requests.data()) {
  const std::string_view scheme = tls ? "https" : "http";
  begin_.reserve(requests.size() + 1);
  nv_.reserve(requests.size() * 6);
  for (const BenchRequest& request : requests) {
    begin_.push_back(static_cast<std::uint32_t>(nv_.size()));
    const std::string_view text = request.text;
    const auto line_end = text.find("\r\n");
    if (line_end == std::string_view::npos) bad_head("no request line");
    const std::string_view line = text.substr(0, line_end);
    const auto sp1 = line.find(' ');
    const auto sp2 = line.rfind(' ');
    if (sp1 == std::string_view::npos || sp2 <= sp1 + 1) bad_head(line);
    const std::string_view method = line.substr(0, sp1);
    const std::string_view path = line.substr(sp1 + 1, sp2 - sp1 - 1);

    std::string_view authority = default_authority;
    const std::size_t pseudo_at = nv_.size();
    nv_.push_back(make_nv(":method", method));
    nv_.push_back(make_nv(":scheme", scheme));
    nv_.push_back(make_nv(":authority", authority));
    nv_.push_back(make_nv(":path", path));
    std::size_t pos = line_end + 2;
    while (true) {
      const auto end = text.find("\r\n", pos);
      if (end == std::string_view::npos) bad_head("unterminated head");
      const std::string_view field = text.substr(pos, end - pos);
      pos = end + 2;
      if (field.empty()) break;
      const auto colon = field.find(':');
      if (colon == std::string_view::npos || colon == 0) bad_head(field);
      const std::string name = lower(trim(field.substr(0, colon)));
      const std::string_view value = trim(field.substr(colon + 1));
      if (name == "host") {
        authority = value;
        continue;
      }
      if (hop_by_hop(name, value)) continue;
      auto it = names_.find(name);
      if (it == names_.end()) it = names_.insert(name).first;
      nv_.push_back(make_nv(*it, value));
    }
    nv_[pseudo_at + 2] = make_nv(":authority", authority);
  }
  begin_.push_back(static_cast<std::uint32_t>(nv_.size()));
}

std::span<const nghttp2_nv> H2RequestTable::headers(const BenchRequest& request) const {
  const auto i = static_cast<std::size_t>(&request - base_);
  return {nv_.data() + begin_[i], nv_.data() + begin_[i + 1]};
}

}  // namespace wg::bench
