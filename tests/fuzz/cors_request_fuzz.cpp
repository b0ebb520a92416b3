// Fuzz target: CORS on the request side, i.e. what a browser's Origin,
// Access-Control-Request-Method and Access-Control-Request-Headers make the gateway answer.
// Input: four lines, the [cors] allowed_origins entries (comma-separated), then those three
// request fields.
// Invariants: an origin that is not in the allowlist (compared as RFC 6454 serializations:
// case-insensitive scheme and host, default port dropped) never gets Access-Control-Allow-Origin;
// an allowed one gets exactly its own value back, or "*" when any origin is allowed, and then
// the answer does not depend on Origin at all; credentials are never allowed; a preflight is
// approved only for GET or HEAD, naming only headers both requested and configured; nothing the
// request carried puts a control character into the header block. And from the same bytes, an
// allowlist and an origin built here from known origins get exactly the answer their
// equivalence says.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "fuzz_check.hpp"
#include "fuzz_input.hpp"
#include "widget_gateway/client_policy/cors_policy.hpp"

namespace {

using wg::client_policy::CorsPolicy;
using wg::http::Fields;

constexpr std::string_view kAllowOrigin = "Access-Control-Allow-Origin";

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool iequal(std::string_view a, std::string_view b) {
  return lower(a) == lower(b);
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> split_list(std::string_view list) {
  std::vector<std::string_view> items;
  while (true) {
    const std::size_t comma = list.find(',');
    if (const auto item = trim(list.substr(0, comma)); !item.empty()) items.push_back(item);
    if (comma == std::string_view::npos) return items;
    list.remove_prefix(comma + 1);
  }
}

// An origin as RFC 6454 compares it, spelled here without validating anything: lower case,
// the port without leading zeros, the scheme's default port dropped.
std::string same_origin_key(std::string_view origin) {
  std::string key = lower(origin);
  const std::size_t sep = key.find("://");
  if (sep == std::string::npos) return key;
  const std::size_t colon = key.rfind(':');
  const std::size_t bracket = key.rfind(']');
  if (colon <= sep || (bracket != std::string::npos && colon < bracket)) return key;
  std::string port = key.substr(colon + 1);
  if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos) return key;
  while (port.size() > 1 && port.front() == '0') port.erase(0, 1);
  const std::string scheme = key.substr(0, sep);
  key.resize(colon);
  if (!((scheme == "http" && port == "80") || (scheme == "https" && port == "443"))) {
    key += ":" + port;
  }
  return key;
}

bool listed(const std::vector<std::string>& allowlist, std::string_view origin) {
  for (const auto& entry : allowlist) {
    if (entry == origin || same_origin_key(entry) == same_origin_key(origin)) return true;
  }
  return false;
}

std::string serialize(const Fields& fields) {
  std::string out;
  for (const auto field : fields)
    out.append(field.name).append(": ").append(field.value).append("\n");
  return out;
}

// What holds of every answer, preflight or not.
void check_common(const Fields& fields, const CorsPolicy& policy,
                  const std::vector<std::string>& allowlist, std::string_view origin) {
  int allow_origins = 0;
  for (const auto field : fields) {
    WG_FUZZ_CHECK(!iequal(field.name, "Access-Control-Allow-Credentials"));
    for (const char c : field.value) WG_FUZZ_CHECK(c >= 0x20 && c < 0x7F);
    if (!iequal(field.name, kAllowOrigin)) continue;
    ++allow_origins;
    if (policy.allows_any()) {
      WG_FUZZ_CHECK(field.value == "*");
    } else {
      WG_FUZZ_CHECK(field.value == origin);
      WG_FUZZ_CHECK(listed(allowlist, origin));
    }
  }
  WG_FUZZ_CHECK(allow_origins <= 1);
  if (!policy.enabled()) WG_FUZZ_CHECK(fields.empty());
}

void check_preflight(const Fields& fields, const CorsPolicy& policy, std::string_view method,
                     std::string_view request_headers) {
  if (!policy.enabled() || trim(method).empty()) return;
  const std::string_view vary = fields.find("Vary");
  WG_FUZZ_CHECK(vary.find("Access-Control-Request-Method") != std::string_view::npos);
  WG_FUZZ_CHECK((vary.find("Origin,") != std::string_view::npos) == policy.vary_on_origin());
  if (fields.find(kAllowOrigin).empty()) {
    WG_FUZZ_CHECK(fields.find("Access-Control-Allow-Methods").empty());
    WG_FUZZ_CHECK(fields.find("Access-Control-Allow-Headers").empty());
    return;
  }
  WG_FUZZ_CHECK(trim(method) == "GET" || trim(method) == "HEAD");
  WG_FUZZ_CHECK(fields.find("Access-Control-Allow-Methods") == "GET, HEAD");
  const wg::client_policy::CorsOptions defaults;
  for (const std::string_view name : split_list(fields.find("Access-Control-Allow-Headers"))) {
    bool configured = false;
    for (const auto& allowed : defaults.allowed_headers)
      configured = configured || iequal(allowed, name);
    WG_FUZZ_CHECK(configured);
    bool requested = false;
    for (const auto asked : split_list(request_headers))
      requested = requested || iequal(asked, name);
    WG_FUZZ_CHECK(requested);
  }
}

void check_request(const std::vector<std::string>& allowlist, std::string_view origin,
                   std::string_view method, std::string_view request_headers) {
  const CorsPolicy policy(allowlist);
  Fields answer;
  policy.add_response_headers(origin, answer);
  check_common(answer, policy, allowlist, origin);
  WG_FUZZ_CHECK(answer.find(kAllowOrigin).empty() == !policy.allows(origin));

  Fields preflight;
  policy.add_preflight_headers(origin, method, request_headers, preflight);
  check_common(preflight, policy, allowlist, origin);
  check_preflight(preflight, policy, method, request_headers);

  if (policy.allows_any()) {
    // No Vary: Origin in this mode, so the answer must be the same for any Origin, or none.
    Fields other;
    policy.add_preflight_headers("https://elsewhere.example", method, request_headers, other);
    WG_FUZZ_CHECK(serialize(other) == serialize(preflight));
    Fields none;
    policy.add_response_headers({}, none);
    WG_FUZZ_CHECK(serialize(none) == serialize(answer));
  }
}

// ---- an allowlist and an origin built from known origins -----------------------------------

struct Origin {
  int scheme;  // 0 http, 1 https
  int host;    // index into kHosts
  int port;    // 0 = the scheme's default
  auto key() const { return std::tuple(scheme, host, port); }
};

constexpr std::array<std::string_view, 6> kHosts = {"example.com", "app.example.com", "example.org",
                                                    "127.0.0.1",   "[2001:db8::a]",   "localhost"};
constexpr std::array<int, 4> kPorts = {0, 8080, 8443, 3000};

std::string mixed_case(std::string_view text, wg::fuzz::Bytes& bytes) {
  std::string out(text);
  if (bytes.flag()) {
    for (char& c : out) {
      if (c >= 'a' && c <= 'z' && bytes.flag()) c = static_cast<char>(c - 'a' + 'A');
    }
  }
  return out;
}

Origin pick_origin(wg::fuzz::Bytes& bytes) {
  const int scheme = static_cast<int>(bytes.pick(2));
  const int host = static_cast<int>(bytes.pick(kHosts.size()));
  // Half the time the default port; then and also the other port numbers as a port.
  const int port = bytes.flag() ? 0 : kPorts[bytes.pick(kPorts.size())];
  return {scheme, host, port};
}

std::string render(const Origin& origin, wg::fuzz::Bytes& bytes) {
  std::string out = mixed_case(origin.scheme == 0 ? "http" : "https", bytes) + "://" +
                    mixed_case(kHosts[static_cast<std::size_t>(origin.host)], bytes);
  if (origin.port != 0) {
    out += ":" + std::to_string(origin.port);
  } else if (bytes.flag()) {
    out += origin.scheme == 0 ? ":80" : ":443";  // the default port, spelled out
  }
  return out;
}

void check_built(wg::fuzz::Bytes& bytes) {
  std::vector<std::string> allowlist;
  std::set<std::tuple<int, int, int>> allowed;
  bool any = false;
  bool null_listed = false;
  switch (bytes.pick(8)) {
    case 0:
      allowlist.push_back("*");
      any = true;
      break;
    case 1:
      allowlist.push_back("null");
      null_listed = true;
      [[fallthrough]];
    default:
      for (std::size_t n = 1 + bytes.pick(4); n > 0; --n) {
        const Origin origin = pick_origin(bytes);
        allowed.insert(origin.key());
        allowlist.push_back(render(origin, bytes));
      }
  }
  std::string origin_text;
  bool expected = any;
  switch (bytes.pick(6)) {
    case 0:
      origin_text = "null";
      expected = any || null_listed;
      break;
    case 1:
      break;  // no Origin: only "*" answers
    default: {
      const Origin origin = pick_origin(bytes);
      origin_text = render(origin, bytes);
      expected = any || allowed.count(origin.key()) > 0;
    }
  }
  const CorsPolicy policy(allowlist);
  Fields answer;
  policy.add_response_headers(origin_text, answer);
  const std::string_view allow = answer.find(kAllowOrigin);
  if (allow.empty() == expected) {
    std::string list;
    for (const auto& entry : allowlist) list += entry + " ";
    std::fprintf(stderr, "built allowlist: [%s] origin: [%s]\n", list.c_str(), origin_text.c_str());
    WG_FUZZ_CHECK(allow.empty() != expected);
  }
  if (expected)
    WG_FUZZ_CHECK(allow == (any ? std::string_view("*") : std::string_view(origin_text)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = wg::fuzz::as_text(data, size);
  const auto [origins, origin, method, request_headers] = wg::fuzz::split_lines<4>(input);
  std::vector<std::string> allowlist;
  for (const auto entry : split_list(origins)) {
    // Config validation refuses entries with controls or spaces; anything else is kept, so
    // entries that are not origins reach the policy as literals.
    bool printable = true;
    for (const char c : entry) printable = printable && c > 0x20 && c < 0x7F;
    if (printable) allowlist.emplace_back(entry);
  }
  check_request(allowlist, origin, method, request_headers);

  wg::fuzz::Bytes bytes(input);
  check_built(bytes);
  return 0;
}
