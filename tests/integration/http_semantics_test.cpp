#include <boost/test/unit_test.hpp>

#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "stack.hpp"
#include "widget_gateway/compress/compress.hpp"
#include "support/paths.hpp"

// The client-facing HTTP features over real sockets: ETag and 304, content coding, caching
// headers as a real client-side cache library (npm's http-cache-semantics, run by Node.js)
// judges them, CORS, the widget allowlist and the per-IP limit. Assertions are on headers,
// bytes and upstream call counts, never on timings.

using namespace wg::test;

namespace {

using Headers = std::map<std::string, std::string>;

// A redis-server, the stub and one gateway started with `config_toml`, whose text may name
// widget ids: "{id0}".."{id9}" are replaced by the stub's first widgets before it starts.
struct SemanticsStack {
  RedisServer redis;
  Stub stub;
  std::vector<std::string> ids;
  std::unique_ptr<Gateway> gateway;

  explicit SemanticsStack(std::string config_toml = "") {
    for (const auto& w : stub.widgets(10)) ids.push_back(w.id);
    BOOST_REQUIRE_EQUAL(ids.size(), 10u);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const std::string name = "{id" + std::to_string(i) + "}";
      for (auto at = config_toml.find(name); at != std::string::npos; at = config_toml.find(name))
        config_toml.replace(at, name.size(), ids[i]);
    }
    gateway = std::make_unique<Gateway>(stub.base_url(), redis.url(), std::vector<std::string>{},
                                        config_toml);
    stub.reset();
  }
  std::uint16_t port() const { return gateway->port(); }
  HttpResponse get(const std::string& target, const Headers& headers = {}) {
    return http_request(port(), "GET", target, headers);
  }
};

// One response read byte for byte (Connection: close), to see exactly what follows the head:
// the test client's parser would hide stray body bytes after a HEAD or a 304.
struct RawResponse {
  int status = 0;
  Headers headers;   // names lower-cased; repeated ones joined ", "
  std::string body;  // every byte after the blank line
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

RawResponse raw_request(std::uint16_t port, const std::string& method, const std::string& target,
                        const Headers& headers = {}) {
  std::string request = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  request += "Connection: close\r\n\r\n";
  const std::string bytes = raw_exchange(port, request, std::chrono::seconds(15));
  RawResponse out;
  const auto end = bytes.find("\r\n\r\n");
  BOOST_REQUIRE_MESSAGE(end != std::string::npos, "no complete response head: " << bytes);
  std::istringstream head(bytes.substr(0, end));
  std::string line;
  std::getline(head, line);
  BOOST_REQUIRE_MESSAGE(line.rfind("HTTP/1.1 ", 0) == 0, line);
  out.status = std::stoi(line.substr(9, 3));
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = lower(line.substr(0, colon));
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    auto [it, inserted] = out.headers.emplace(name, value);
    if (!inserted) it->second += ", " + value;
  }
  out.body = bytes.substr(end + 4);
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The number after `name=` in a header value ("max-age=60", "ttl=-3"); nullopt when absent.
std::optional<long long> directive(const std::string& value, const std::string& name) {
  std::size_t at = 0;
  while ((at = value.find(name + "=", at)) != std::string::npos) {
    const bool starts =
        at == 0 || value[at - 1] == ' ' || value[at - 1] == ',' || value[at - 1] == ';';
    at += name.size() + 1;
    if (!starts) continue;
    std::size_t end = at;
    if (end < value.size() && value[end] == '-') ++end;
    while (end < value.size() && value[end] >= '0' && value[end] <= '9') ++end;
    if (end == at) return std::nullopt;
    return std::stoll(value.substr(at, end - at));
  }
  return std::nullopt;
}

bool strong_etag(const std::string& etag) {
  return etag.size() >= 3 && etag.front() == '"' && etag.back() == '"' &&
         etag.find('"', 1) == etag.size() - 1;
}

// An IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
bool imf_fixdate(const std::string& date) {
  return date.size() == 29 && date.substr(3, 2) == ", " && date.substr(25) == " GMT";
}

// ---- http-cache-semantics, run by node on captured exchanges ----

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_headers(const Headers& headers) {
  std::string out = "{";
  for (const auto& [name, value] : headers) {
    if (out.size() > 1) out += ",";
    out += json_string(lower(name)) + ":" + json_string(value);
  }
  return out + "}";
}

struct CapturedRequest {
  std::string method = "GET";
  std::string url;
  Headers headers;
  std::string json() const {
    return "{\"method\":" + json_string(method) + ",\"url\":" + json_string(url) +
           ",\"headers\":" + json_headers(headers) + "}";
  }
};

std::string json_response(int status, const Headers& headers) {
  return "{\"status\":" + std::to_string(status) + ",\"headers\":" + json_headers(headers) + "}";
}

struct Verdict {
  bool storable = false;
  bool private_storable = false;
  double ttl_ms = 0;
  double private_ttl_ms = 0;
  double fresh_s = 0;
  std::string revalidation_if_none_match;
  std::vector<bool> probes;
  bool has_revalidation = false;
  bool matches = false, modified = true, revalidated_storable = false;
  double revalidated_fresh_s = 0;
};

// Collects {request, response} pairs as the gateway really answered them, then asks
// http-cache-semantics (in a shared-cache and a private-cache role) what it makes of them.
class CacheJudge {
 public:
  std::size_t add(
      const CapturedRequest& request, int status, const Headers& response_headers,
      const std::vector<CapturedRequest>& probes = {},
      const std::optional<std::pair<CapturedRequest, HttpResponse>>& revalidation = std::nullopt) {
    std::string c = "{\"name\":" + json_string(std::to_string(cases_.size())) +
                    ",\"request\":" + request.json() +
                    ",\"response\":" + json_response(status, response_headers) + ",\"probes\":[";
    for (std::size_t i = 0; i < probes.size(); ++i) c += (i ? "," : "") + probes[i].json();
    c += "]";
    if (revalidation) {
      c += ",\"revalidation\":{\"request\":" + revalidation->first.json() + ",\"response\":" +
           json_response(revalidation->second.status, revalidation->second.headers) + "}";
    }
    cases_.push_back(c + "}");
    return cases_.size() - 1;
  }

  std::vector<Verdict> run() {
    TempDir dir;
    std::string input = "[";
    for (std::size_t i = 0; i < cases_.size(); ++i) input += (i ? "," : "") + cases_[i];
    const std::string cases_file = dir.write("cases.json", input + "]");
    const std::string errors_file = dir.file("stderr.txt");
    const std::string script = cache_semantics_dir() + "/check.js";

    if (std::system("node --version >/dev/null 2>&1") != 0) {
      BOOST_FAIL(
          "`node` (Node.js) is not on PATH: it is needed to run http-cache-semantics "
          "(deploy/install-deps.sh --test-tools installs it)");
    }
    if (!std::ifstream(cache_semantics_dir() + "/node_modules/http-cache-semantics/package.json")) {
      BOOST_FAIL("http-cache-semantics is not installed in "
                 << cache_semantics_dir()
                 << ": run the ctest fixture integration_http_semantics_npm_setup (npm ci)");
    }
    const std::string command =
        "node '" + script + "' '" + cases_file + "' 2>'" + errors_file + "'";
    std::string output;
    FILE* pipe = popen(command.c_str(), "r");
    BOOST_REQUIRE_MESSAGE(pipe != nullptr, "popen failed: " << command);
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) output.append(buf, n);
    const int status = pclose(pipe);
    std::ifstream errors(errors_file);
    std::string error_text((std::istreambuf_iterator<char>(errors)), {});
    BOOST_REQUIRE_MESSAGE(status == 0, "check.js failed: " << error_text << output);

    std::vector<Verdict> verdicts;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    BOOST_REQUIRE_MESSAGE(parser.parse(output).get(doc) == simdjson::SUCCESS, output);
    for (simdjson::dom::element item : doc.get_array()) {
      Verdict v;
      v.storable = bool(item["storable"]);
      v.private_storable = bool(item["private_storable"]);
      v.ttl_ms = number(item["ttl_ms"]);
      v.private_ttl_ms = number(item["private_ttl_ms"]);
      v.fresh_s = number(item["fresh_s"]);
      std::string_view inm;
      if (item["revalidation_headers"]["if-none-match"].get(inm) == simdjson::SUCCESS) {
        v.revalidation_if_none_match = std::string(inm);
      }
      for (simdjson::dom::element probe : item["probes"].get_array())
        v.probes.push_back(bool(probe));
      simdjson::dom::element revalidation;
      if (item["revalidation"].get(revalidation) == simdjson::SUCCESS) {
        v.has_revalidation = true;
        v.matches = bool(revalidation["matches"]);
        v.modified = bool(revalidation["modified"]);
        v.revalidated_storable = bool(revalidation["storable"]);
        v.revalidated_fresh_s = number(revalidation["fresh_s"]);
      }
      verdicts.push_back(std::move(v));
    }
    BOOST_REQUIRE_EQUAL(verdicts.size(), cases_.size());
    return verdicts;
  }

 private:
  static double number(simdjson::dom::element e) {
    double d = 0;
    if (e.get(d) == simdjson::SUCCESS) return d;
    std::int64_t i = 0;
    if (e.get(i) == simdjson::SUCCESS) return static_cast<double>(i);
    return 0;
  }
  std::vector<std::string> cases_;
};

// The freshness the gateway intends for a 200: what remains of its own (Cache-Status ttl),
// capped. Checks that both kinds of downstream cache are told so (Cache-Control max-age =
// Age + that, for caches that subtract Age; X-Accel-Expires = that, for nginx, which does
// not), that ranges are refused up front, and returns it.
long long intended_freshness(const HttpResponse& r, long long cap) {
  const auto max_age = directive(r.header("cache-control"), "max-age");
  const auto ttl = directive(r.header("cache-status"), "ttl");
  BOOST_REQUIRE(max_age.has_value());
  BOOST_REQUIRE(ttl.has_value());
  BOOST_REQUIRE(all_digits(r.header("age")));
  const long long age = std::stoll(r.header("age"));
  const long long intended = std::min(std::max(0LL, *ttl), cap);
  BOOST_TEST(*max_age - age == intended,
             r.header("cache-control") << " / Age " << age << " / " << r.header("cache-status"));
  BOOST_TEST(r.header("x-accel-expires") == std::to_string(intended));
  BOOST_TEST(r.header("accept-ranges") == "none");
  return intended;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(http_semantics_test)

BOOST_AUTO_TEST_CASE(etag_per_coding_and_if_none_match_give_304_without_upstream_calls) {
  SemanticsStack s;
  const std::string target = reviews_path(s.ids[0], "limit=50");
  auto identity = s.get(target);
  auto gzip = s.get(target, {{"Accept-Encoding", "gzip"}});
  auto br = s.get(target, {{"Accept-Encoding", "br"}});
  BOOST_REQUIRE(identity.status == 200);
  BOOST_REQUIRE(gzip.status == 200);
  BOOST_REQUIRE(br.status == 200);
  BOOST_TEST(identity.header("content-encoding").empty());
  BOOST_TEST(gzip.header("content-encoding") == "gzip");
  BOOST_TEST(br.header("content-encoding") == "br");
  // Compressed once, at store time: one upstream fetch serves every coding.
  BOOST_TEST(s.stub.stats().reviews == 1u);

  const std::string e_id = identity.header("etag");
  const std::string e_gz = gzip.header("etag");
  const std::string e_br = br.header("etag");
  for (const auto& etag : {e_id, e_gz, e_br}) BOOST_TEST(strong_etag(etag), etag);
  BOOST_TEST(e_id != e_gz);
  BOOST_TEST(e_id != e_br);
  BOOST_TEST(e_gz != e_br);
  // Another body has another ETag.
  const std::string other_etag = s.get(reviews_path(s.ids[0], "limit=49")).header("etag");
  BOOST_TEST(strong_etag(other_etag));
  BOOST_TEST(other_etag != e_id);

  struct Case {
    std::string name, accept_encoding, if_none_match;
    int status;
    std::string etag;  // expected ETag of the answer
  };
  auto weak = [](const std::string& tag) { return "W/" + tag; };
  const std::vector<Case> cases{
      {"same identity", "", e_id, 304, e_id},
      {"same gzip", "gzip", e_gz, 304, e_gz},
      {"same br", "br", e_br, 304, e_br},
      {"gzip tag, identity request", "", e_gz, 304, e_gz},
      {"identity tag, br request", "br", e_id, 304, e_id},
      {"br tag, gzip request", "gzip", e_br, 304, e_br},
      {"weak form", "", weak(e_id), 304, e_id},
      {"weak form of another coding", "gzip", weak(e_br), 304, e_br},
      {"star", "br", "*", 304, e_br},
      {"list", "gzip", "\"nope\", " + other_etag + ", " + e_gz, 304, e_gz},
      {"list without spaces", "", "\"a\"," + weak(e_br) + ",\"b\"", 304, e_br},
      // A cache revalidating the two codings it stored, for a client that prefers br: the 304
      // names the stored one this client accepts best, so the cache can select it.
      {"a cache's stored codings", "gzip, br", e_id + ", " + e_gz, 304, e_gz},
      {"no match", "", "\"nope\", " + other_etag, 200, e_id},
      {"lower-case w/ is not weak", "", "w/" + e_id, 200, e_id},
      {"unquoted", "", e_id.substr(1, e_id.size() - 2), 200, e_id},
  };
  const auto before = s.stub.stats().total;
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.name << ": If-None-Match " << c.if_none_match) {
      for (const std::string method : {"GET", "HEAD"}) {
        BOOST_TEST_CONTEXT(method) {
          Headers headers{{"If-None-Match", c.if_none_match}};
          if (!c.accept_encoding.empty()) headers["Accept-Encoding"] = c.accept_encoding;
          auto r = raw_request(s.port(), method, target, headers);
          BOOST_TEST(r.status == c.status);
          const std::string etag = r.header("etag");
          BOOST_TEST(strong_etag(etag), etag);
          BOOST_TEST(etag == c.etag);
          // Content-Encoding goes with the ETag: they name the same representation.
          const std::string coding = etag == e_gz ? "gzip" : etag == e_br ? "br" : "";
          BOOST_TEST(r.header("content-encoding") == coding);
          BOOST_TEST(!r.header("cache-control").empty());
          BOOST_TEST(!r.header("date").empty());
          BOOST_TEST(r.header("vary") == "Accept-Encoding");
          if (c.status == 304) {
            BOOST_TEST(r.body.empty());
            BOOST_TEST(r.header("content-length").empty());
            BOOST_TEST(contains(r.header("cache-status"), "widget-gateway; hit"));
          } else if (method == "GET") {
            BOOST_TEST(r.body == identity.body);
          } else {
            BOOST_TEST(r.body.empty());
            BOOST_TEST(r.header("content-length") == std::to_string(identity.body.size()));
          }
        }
      }
    }
  }
  BOOST_TEST(s.stub.stats().total == before);

  // If-None-Match on a miss: the entry is fetched (and stored) first, then compared.
  const std::string cold = reviews_path(s.ids[1], "limit=50");
  auto miss = raw_request(s.port(), "GET", cold, {{"If-None-Match", "*"}});
  BOOST_TEST(miss.status == 304);
  BOOST_TEST(miss.body.empty());
  BOOST_TEST(s.stub.stats().total == before + 1);
}

BOOST_AUTO_TEST_CASE(codings_follow_accept_encoding_and_decode_to_the_upstream_bytes) {
  SemanticsStack s;
  const std::string target = reviews_path(s.ids[0], "limit=100");
  const std::string upstream = stub_get(s.stub, target).body;
  BOOST_REQUIRE_GT(upstream.size(), 1024u);
  s.stub.reset();

  struct Case {
    std::string accept_encoding;  // "-" = no header at all
    std::string coding;           // "" = identity
  };
  const std::vector<Case> cases{
      {"-", ""},
      {"", ""},
      {"gzip", "gzip"},
      {"br", "br"},
      {"gzip, deflate, br", "br"},
      {"gzip;q=1, br;q=0.5", "gzip"},
      {"br;q=0.2, gzip;q=0.8, identity;q=0.5", "gzip"},
      {"GZIP", "gzip"},
      {"x-gzip", "gzip"},
      {"br;q=0, gzip", "gzip"},
      {"gzip;q=0, br;q=0", ""},
      {"identity;q=0", ""},
      {"identity;q=0, *;q=0", ""},
      {"*", "br"},
      {"*;q=0.5, br;q=0", "gzip"},
      {"identity", ""},
      {"deflate", ""},
      {"gzip;q=0.5, identity", ""},
  };
  std::map<std::string, std::string> etag_of;  // coding -> ETag; the same for every request
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT("Accept-Encoding: " << c.accept_encoding) {
      Headers headers;
      if (c.accept_encoding != "-") headers["Accept-Encoding"] = c.accept_encoding;
      auto r = s.get(target, headers);
      BOOST_REQUIRE(r.status == 200);
      BOOST_TEST(r.header("content-encoding") == c.coding);
      BOOST_TEST(r.header("vary") == "Accept-Encoding");
      BOOST_TEST(r.header("content-length") == std::to_string(r.body.size()));
      std::optional<std::string> decoded = r.body;
      if (c.coding == "gzip") decoded = wg::compress::gzip_decompress(r.body);
      if (c.coding == "br") decoded = wg::compress::brotli_decompress(r.body);
      BOOST_REQUIRE(decoded.has_value());
      BOOST_TEST((*decoded == upstream), "decoded body differs from upstream's bytes");
      if (!c.coding.empty()) BOOST_TEST(r.body.size() < upstream.size());
      auto [it, inserted] = etag_of.emplace(c.coding, r.header("etag"));
      BOOST_TEST(it->second == r.header("etag"));
    }
  }
  BOOST_TEST(etag_of.size() == 3u);
  BOOST_TEST(s.stub.stats().total == 1u);

  // Small bodies are never compressed, whatever the client accepts.
  for (const std::string& small :
       {reviews_path(s.ids[0], "limit=1"), reviews_path(s.ids[0], "limit=5&skip=1000000000")}) {
    BOOST_TEST_CONTEXT(small) {
      auto r = s.get(small, {{"Accept-Encoding", "br, gzip"}});
      BOOST_REQUIRE(r.status == 200);
      BOOST_TEST(r.body.size() < 1024u);
      BOOST_TEST(r.header("content-encoding").empty());
      BOOST_TEST(r.body == stub_get(s.stub, small).body);
      BOOST_TEST(r.header("vary") == "Accept-Encoding");
      BOOST_TEST(strong_etag(r.header("etag")));
    }
  }
  BOOST_TEST(s.get(reviews_path(s.ids[0], "limit=5&skip=1000000000")).body == "[]");

  // HEAD of a hit: the GET's headers and Content-Length, no body bytes.
  for (const std::string coding : {"", "gzip", "br"}) {
    BOOST_TEST_CONTEXT("HEAD, coding " << coding) {
      Headers headers;
      if (!coding.empty()) headers["Accept-Encoding"] = coding;
      auto get = s.get(target, headers);
      auto head = raw_request(s.port(), "HEAD", target, headers);
      BOOST_TEST(head.status == 200);
      BOOST_TEST(head.body.empty());
      BOOST_TEST(head.header("content-length") == std::to_string(get.body.size()));
      BOOST_TEST(head.header("content-encoding") == coding);
      BOOST_TEST(head.header("etag") == get.header("etag"));
      BOOST_TEST(head.header("content-type") == "application/json; charset=utf-8");
      BOOST_TEST(contains(head.header("cache-status"), "hit"));
    }
  }
  // A HEAD miss fills the cache: the GET after it is a hit.
  const auto before = s.stub.stats().total;
  const std::string cold = widget_path(s.ids[3]);
  auto head = raw_request(s.port(), "HEAD", cold);
  BOOST_TEST(head.status == 200);
  BOOST_TEST(head.body.empty());
  auto get = s.get(cold);
  BOOST_TEST(get.status == 200);
  BOOST_TEST(head.header("content-length") == std::to_string(get.body.size()));
  BOOST_TEST(contains(get.header("cache-status"), "hit"));
  BOOST_TEST(s.stub.stats().total == before + 1);
}

BOOST_AUTO_TEST_CASE(a_client_side_cache_library_stores_hits_for_the_intended_time) {
  // The cap binds here (entries live until upstream's next daily refresh, hours away, or at
  // least min_ttl); stale-* are advertised.
  SemanticsStack s(
      "[cache]\nmax_age_cap = \"10m\"\nstale_while_revalidate = \"30s\"\n"
      "stale_if_error = \"1h\"\n[upstream]\ntimeout = \"2s\"\n");
  const long long cap = 600;
  const std::string widget = widget_path(s.ids[0]);
  const std::string reviews = reviews_path(s.ids[0], "limit=100");
  BOOST_REQUIRE(s.get(widget).status == 200);
  BOOST_REQUIRE(s.get(reviews).status == 200);
  // Let the entries age past a second boundary, so that Age is not 0 and a cache that ignored
  // it (or the gateway that forgot to add it to max-age) would be seen.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));

  CacheJudge judge;
  struct Hit {
    std::size_t index;
    long long intended;
    std::string what;
  };
  std::vector<Hit> hits;
  for (const std::string& target : {widget, reviews}) {
    for (const std::string coding : {"", "gzip", "br"}) {
      CapturedRequest request{"GET", target, {}};
      if (!coding.empty()) request.headers["accept-encoding"] = coding;
      auto r = s.get(target, request.headers);
      BOOST_TEST_CONTEXT(target << " " << coding) {
        BOOST_REQUIRE(r.status == 200);
        BOOST_TEST(contains(r.header("cache-status"), "widget-gateway; hit; ttl="));
        const std::string cc = r.header("cache-control");
        BOOST_TEST(cc.rfind("public, max-age=", 0) == 0, cc);
        BOOST_TEST(contains(cc, ", stale-while-revalidate=30"), cc);
        BOOST_TEST(contains(cc, ", stale-if-error=3600"), cc);
        BOOST_TEST(std::stoll(r.header("age")) >= 1);
        BOOST_TEST(imf_fixdate(r.header("date")), r.header("date"));
        const long long intended = intended_freshness(r, cap);
        // Another coding must not satisfy it (Vary), the same request must.
        CapturedRequest same = request;
        CapturedRequest other = request;
        other.headers["accept-encoding"] = coding == "br" ? "gzip" : "br";
        // The revalidation a cache would make, as the gateway answers it.
        CapturedRequest conditional = request;
        conditional.headers["if-none-match"] = r.header("etag");
        auto not_modified = s.get(target, conditional.headers);
        BOOST_TEST(not_modified.status == 304);
        BOOST_TEST(not_modified.body.empty());
        hits.push_back({judge.add(request, r.status, r.headers, {same, other},
                                  std::make_pair(conditional, not_modified)),
                        intended, target + " " + coding});
      }
    }
  }
  // A cache holding the identity answer revalidates for a client that accepts br: the 304
  // must select the stored response (same strong ETag), or the cache has nothing to serve.
  {
    CapturedRequest stored{"GET", widget, {}};
    auto r = s.get(widget);
    CapturedRequest conditional{
        "GET", widget, {{"accept-encoding", "gzip, br"}, {"if-none-match", r.header("etag")}}};
    auto not_modified = s.get(widget, conditional.headers);
    BOOST_TEST(not_modified.status == 304);
    BOOST_TEST(not_modified.header("etag") == r.header("etag"));
    BOOST_TEST(not_modified.header("content-encoding").empty());
    hits.push_back({judge.add(stored, r.status, r.headers, {stored},
                              std::make_pair(conditional, not_modified)),
                    intended_freshness(r, cap), "identity revalidated by a br client"});
  }
  // HEAD of a hit: a cache may store it too.
  {
    CapturedRequest request{"HEAD", widget, {}};
    auto r = http_request(s.port(), "HEAD", widget);
    BOOST_REQUIRE(r.status == 200);
    hits.push_back({judge.add(request, r.status, r.headers), intended_freshness(r, cap), "HEAD"});
  }

  // Errors must never be stored.
  std::vector<std::pair<std::size_t, std::string>> errors;
  auto add_error = [&](const std::string& target, int status, const std::string& code) {
    CapturedRequest request{"GET", target, {{"accept-encoding", "gzip, br"}}};
    auto r = s.get(target, request.headers);
    BOOST_TEST_CONTEXT(target) {
      BOOST_TEST(r.status == status);
      BOOST_TEST(contains(r.body, "\"code\":\"" + code + "\""), r.body);
      BOOST_TEST(r.header("cache-control") == "no-store");
    }
    errors.emplace_back(judge.add(request, r.status, r.headers), target);
  };
  add_error(reviews_path(s.ids[0], "limit=0"), 400, "limit_invalid");
  add_error(reviews_path(s.ids[0], "limit=301"), 400, "limit_too_large");
  add_error(widget_path("0123456789abcdef01234567"), 404, "widget_not_found");
  // The cached "unknown widget" answered locally: still an error, still not storable.
  add_error(widget_path("0123456789abcdef01234567"), 404, "widget_not_found");
  add_error(reviews_path("0123456789abcdef01234567", "limit=5"), 400, "widget_not_found");
  add_error("/api/v1/nothing", 404, "not_found");
  s.stub.fault("status500", 1);
  add_error(widget_path(s.ids[5]), 502, "upstream_error");

  const auto verdicts = judge.run();
  for (const Hit& hit : hits) {
    BOOST_TEST_CONTEXT(hit.what) {
      const Verdict& v = verdicts[hit.index];
      BOOST_TEST(v.storable);
      BOOST_TEST(v.private_storable);
      // Arithmetic on headers: the library subtracts Age from max-age, as the gateway intends.
      BOOST_TEST(std::abs(v.fresh_s - double(hit.intended)) <= 2.0,
                 "fresh " << v.fresh_s << " intended " << hit.intended);
      // timeToLive() adds the longest stale allowance (stale-if-error, 1h).
      BOOST_TEST(std::abs(v.ttl_ms / 1000.0 - double(hit.intended + 3600)) <= 2.0,
                 "ttl_ms " << v.ttl_ms << " intended " << hit.intended);
      if (hit.what != "HEAD") {
        BOOST_REQUIRE_GE(v.probes.size(), 1u);
        BOOST_TEST(v.probes[0], "the same request is not served from cache");
        if (v.probes.size() > 1) {
          BOOST_TEST(!v.probes[1], "another Accept-Encoding was served from cache");
        }
        BOOST_TEST(!v.revalidation_if_none_match.empty());
        // The 304 revalidates the stored response: same validator, body reused, fresh again.
        BOOST_TEST(v.has_revalidation);
        BOOST_TEST(v.matches);
        BOOST_TEST(!v.modified);
        BOOST_TEST(v.revalidated_storable);
        BOOST_TEST(std::abs(v.revalidated_fresh_s - double(hit.intended)) <= 2.0,
                   "revalidated fresh " << v.revalidated_fresh_s);
      }
    }
  }
  for (const auto& [index, target] : errors) {
    BOOST_TEST_CONTEXT(target) {
      BOOST_TEST(!verdicts[index].storable);
      BOOST_TEST(!verdicts[index].private_storable);
      BOOST_TEST(verdicts[index].ttl_ms == 0.0);
    }
  }
}

BOOST_AUTO_TEST_CASE(freshness_shorter_than_the_cap_ends_with_the_gateways_own) {
  // max_ttl (2m) is below the cap (1h): downstream freshness is what the gateway has left, and
  // with no stale-* configured the Cache-Control line is bare.
  SemanticsStack s(
      "[cache]\nmax_ttl = \"2m\"\nmin_ttl = \"1m\"\nmax_age_cap = \"1h\"\n"
      "stale_while_revalidate = \"0s\"\nstale_if_error = \"0s\"\n");
  const std::string target = reviews_path(s.ids[1], "limit=100");
  auto miss = s.get(target, {{"Accept-Encoding", "gzip"}});
  BOOST_REQUIRE(miss.status == 200);
  BOOST_TEST(contains(miss.header("cache-status"), "widget-gateway; fwd=uri-miss; stored; ttl="),
             miss.header("cache-status"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  auto hit = s.get(target, {{"Accept-Encoding", "gzip"}});
  BOOST_REQUIRE(hit.status == 200);

  CacheJudge judge;
  struct Entry {
    std::size_t index;
    long long intended;
  };
  std::vector<Entry> entries;
  for (const HttpResponse* r : {&miss, &hit}) {
    const std::string cc = r->header("cache-control");
    BOOST_TEST(cc.rfind("public, max-age=", 0) == 0, cc);
    BOOST_TEST(!contains(cc, "stale-"), cc);
    const long long intended = intended_freshness(*r, 3600);
    BOOST_TEST(intended <= 120);
    entries.push_back(
        {judge.add({"GET", target, {{"accept-encoding", "gzip"}}}, r->status, r->headers),
         intended});
  }
  BOOST_TEST(std::stoll(hit.header("age")) >= 1);
  const auto verdicts = judge.run();
  for (const Entry& e : entries) {
    BOOST_TEST(verdicts[e.index].storable);
    BOOST_TEST(std::abs(verdicts[e.index].fresh_s - double(e.intended)) <= 2.0);
    BOOST_TEST(std::abs(verdicts[e.index].ttl_ms / 1000.0 - double(e.intended)) <= 2.0);
  }
}

BOOST_AUTO_TEST_CASE(unknown_widgets_are_no_store_unless_negative_max_age_is_set) {
  const std::string unknown = widget_path("0123456789abcdef01234567");  // the stub: 404
  const std::string invalid = widget_path("not*valid");                 // refused locally
  {
    SemanticsStack s;
    for (const std::string& target : {unknown, invalid}) {
      auto r = s.get(target);
      BOOST_TEST(r.status == 404);
      BOOST_TEST(r.header("cache-control") == "no-store");
      BOOST_TEST(r.header("x-accel-expires").empty());
    }
  }
  {
    // Capped like every answer: 2m asked, 1m cap.
    SemanticsStack s("[cache]\nnegative_max_age = \"2m\"\nmax_age_cap = \"1m\"\n");
    for (const std::string& target : {unknown, unknown, invalid}) {
      auto r = s.get(target);
      BOOST_TEST(r.status == 404);
      BOOST_TEST(contains(r.body, "\"code\":\"widget_not_found\""));
      BOOST_TEST(r.header("cache-control") == "public, max-age=60");
      BOOST_TEST(r.header("x-accel-expires") == "60");
    }
    BOOST_TEST(s.stub.stats().total == 1u);  // the gateway's own negative entry served the rest
    // Other errors stay no-store.
    BOOST_TEST(s.get(reviews_path(s.ids[0], "limit=0")).header("cache-control") == "no-store");
  }
}

BOOST_AUTO_TEST_CASE(success_answers_refuse_ranges_and_ignore_range_requests) {
  SemanticsStack s;
  auto full = s.get(widget_path(s.ids[0]));
  auto ranged = s.get(widget_path(s.ids[0]), {{"Range", "bytes=0-9"}});
  BOOST_TEST(ranged.status == 200);
  BOOST_TEST(ranged.body == full.body);
  BOOST_TEST(ranged.header("accept-ranges") == "none");
  BOOST_TEST(ranged.header("content-range").empty());
  auto revalidated = s.get(widget_path(s.ids[0]), {{"If-None-Match", full.header("etag")}});
  BOOST_TEST(revalidated.status == 304);
  BOOST_TEST(revalidated.header("accept-ranges") == "none");
}

BOOST_AUTO_TEST_CASE(cors_allowlist_echoes_allowed_origins_and_varies_on_origin) {
  SemanticsStack s("[cors]\nallowed_origins = [\"https://shop.example\", \"http://localhost:3000\"]\n");
  const std::string target = widget_path(s.ids[0]);
  const std::string allowed = "https://shop.example";
  const std::string disallowed = "https://evil.example";

  auto a = s.get(target, {{"Origin", allowed}});
  BOOST_REQUIRE(a.status == 200);
  BOOST_TEST(a.header("access-control-allow-origin") == allowed);
  BOOST_TEST(contains(a.header("access-control-expose-headers"), "ETag"));
  BOOST_TEST(a.header("access-control-allow-credentials").empty());
  BOOST_TEST(a.header("vary") == "Accept-Encoding, Origin");

  auto local = s.get(target, {{"Origin", "http://localhost:3000"}, {"Accept-Encoding", "br"}});
  BOOST_TEST(local.header("access-control-allow-origin") == "http://localhost:3000");

  auto d = s.get(target, {{"Origin", disallowed}});
  BOOST_TEST(d.status == 200);
  BOOST_TEST(d.header("access-control-allow-origin").empty());
  BOOST_TEST(d.header("access-control-expose-headers").empty());
  BOOST_TEST(d.header("vary") == "Accept-Encoding, Origin");
  BOOST_TEST(d.body == a.body);

  auto none = s.get(target);
  BOOST_TEST(none.header("access-control-allow-origin").empty());
  BOOST_TEST(none.header("vary") == "Accept-Encoding, Origin");

  // Errors carry CORS headers too, so pages can read the code.
  auto error = s.get(reviews_path(s.ids[0], "limit=0"), {{"Origin", allowed}});
  BOOST_TEST(error.status == 400);
  BOOST_TEST(error.header("access-control-allow-origin") == allowed);
  BOOST_TEST(contains(error.header("vary"), "Origin"));
  BOOST_TEST(error.header("cache-control") == "no-store");

  // 304 keeps them.
  auto revalidated = raw_request(s.port(), "GET", target,
                                 {{"Origin", allowed}, {"If-None-Match", a.header("etag")}});
  BOOST_TEST(revalidated.status == 304);
  BOOST_TEST(revalidated.header("access-control-allow-origin") == allowed);
  BOOST_TEST(revalidated.header("vary") == "Accept-Encoding, Origin");

  // Preflights are answered locally, for any widget, cached or not.
  const auto before = s.stub.stats().total;
  for (const std::string& path : {target, reviews_path(s.ids[7], "limit=5")}) {
    BOOST_TEST_CONTEXT(path) {
      auto ok = raw_request(s.port(), "OPTIONS", path,
                            {{"Origin", allowed},
                             {"Access-Control-Request-Method", "GET"},
                             {"Access-Control-Request-Headers", "If-None-Match"}});
      BOOST_TEST(ok.status == 204);
      BOOST_TEST(ok.body.empty());
      BOOST_TEST(ok.header("allow") == "GET, HEAD, OPTIONS");
      BOOST_TEST(ok.header("access-control-allow-origin") == allowed);
      BOOST_TEST(ok.header("access-control-allow-methods") == "GET, HEAD");
      BOOST_TEST(ok.header("access-control-allow-headers") == "if-none-match");
      BOOST_TEST(ok.header("access-control-max-age") == "600");
      BOOST_TEST(ok.header("vary") ==
                 "Origin, Access-Control-Request-Method, Access-Control-Request-Headers");

      auto refused =
          raw_request(s.port(), "OPTIONS", path,
                      {{"Origin", disallowed}, {"Access-Control-Request-Method", "GET"}});
      BOOST_TEST(refused.status == 204);
      BOOST_TEST(refused.body.empty());
      BOOST_TEST(refused.header("allow") == "GET, HEAD, OPTIONS");
      BOOST_TEST(refused.header("access-control-allow-origin").empty());
      BOOST_TEST(refused.header("access-control-allow-methods").empty());
      BOOST_TEST(refused.header("vary") ==
                 "Origin, Access-Control-Request-Method, Access-Control-Request-Headers");

      // A method the API does not allow is not granted.
      auto post = raw_request(s.port(), "OPTIONS", path,
                              {{"Origin", allowed}, {"Access-Control-Request-Method", "POST"}});
      BOOST_TEST(post.status == 204);
      BOOST_TEST(post.header("access-control-allow-methods").empty());
    }
  }
  BOOST_TEST(s.stub.stats().total == before);

  // A shared cache must not hand one origin's answer to another.
  CacheJudge judge;
  CapturedRequest request{"GET", target, {{"origin", allowed}}};
  CapturedRequest same_origin = request;
  CapturedRequest other_origin{"GET", target, {{"origin", disallowed}}};
  CapturedRequest no_origin{"GET", target, {}};
  judge.add(request, a.status, a.headers, {same_origin, other_origin, no_origin});
  auto verdicts = judge.run();
  BOOST_TEST(verdicts[0].storable);
  BOOST_REQUIRE_EQUAL(verdicts[0].probes.size(), 3u);
  BOOST_TEST(verdicts[0].probes[0]);
  BOOST_TEST(!verdicts[0].probes[1]);
  BOOST_TEST(!verdicts[0].probes[2]);
}

BOOST_AUTO_TEST_CASE(cors_star_allows_every_origin_without_varying_on_it) {
  SemanticsStack s("[cors]\nallowed_origins = [\"*\"]\n");
  const std::string target = widget_path(s.ids[0]);
  for (const std::string origin : {"https://shop.example", "https://other.example", ""}) {
    BOOST_TEST_CONTEXT("Origin: " << origin) {
      Headers headers;
      if (!origin.empty()) headers["Origin"] = origin;
      auto r = s.get(target, headers);
      BOOST_TEST(r.status == 200);
      BOOST_TEST(r.header("access-control-allow-origin") == "*");
      BOOST_TEST(r.header("vary") == "Accept-Encoding");
      auto error = s.get(reviews_path(s.ids[0], "limit=0"), headers);
      BOOST_TEST(error.header("access-control-allow-origin") == "*");
      BOOST_TEST(!contains(error.header("vary"), "Origin"));
    }
  }
  auto preflight =
      raw_request(s.port(), "OPTIONS", target,
                  {{"Origin", "https://any.example"}, {"Access-Control-Request-Method", "GET"}});
  BOOST_TEST(preflight.status == 204);
  BOOST_TEST(preflight.header("allow") == "GET, HEAD, OPTIONS");
  BOOST_TEST(preflight.header("access-control-allow-origin") == "*");
  BOOST_TEST(preflight.header("access-control-allow-methods") == "GET, HEAD");
  BOOST_TEST(preflight.header("access-control-max-age") == "600");
  // "*" does not depend on Origin, but a preflight's answer does on its request fields.
  BOOST_TEST(preflight.header("vary") ==
             "Access-Control-Request-Method, Access-Control-Request-Headers");
  BOOST_TEST(s.stub.stats().total == 1u);
}

BOOST_AUTO_TEST_CASE(no_cors_config_sends_no_cors_headers) {
  SemanticsStack s;
  auto r = s.get(widget_path(s.ids[0]), {{"Origin", "https://shop.example"}});
  BOOST_TEST(r.status == 200);
  BOOST_TEST(r.header("access-control-allow-origin").empty());
  BOOST_TEST(r.header("vary") == "Accept-Encoding");
  auto preflight =
      raw_request(s.port(), "OPTIONS", widget_path(s.ids[0]),
                  {{"Origin", "https://shop.example"}, {"Access-Control-Request-Method", "GET"}});
  BOOST_TEST(preflight.status == 204);
  BOOST_TEST(preflight.header("allow") == "GET, HEAD, OPTIONS");
  BOOST_TEST(preflight.header("access-control-allow-origin").empty());
}

BOOST_AUTO_TEST_CASE(widget_allowlist_answers_other_ids_as_unknown_without_upstream_calls) {
  SemanticsStack s("[access]\nwidgets = [\"{id0}\", \"{id1}\"]\n");
  for (const std::string& id : {s.ids[2], s.ids[3], std::string("0123456789abcdef01234567")}) {
    BOOST_TEST_CONTEXT(id) {
      auto widget = s.get(widget_path(id));
      BOOST_TEST(widget.status == 404);
      BOOST_TEST(contains(widget.body, "\"code\":\"widget_not_found\""));
      BOOST_TEST(widget.header("cache-control") == "no-store");
      auto reviews = s.get(reviews_path(id, "limit=5"));
      BOOST_TEST(reviews.status == 400);
      BOOST_TEST(contains(reviews.body, "\"code\":\"widget_not_found\""));
      auto head = raw_request(s.port(), "HEAD", widget_path(id));
      BOOST_TEST(head.status == 404);
      BOOST_TEST(head.body.empty());
    }
  }
  BOOST_TEST(s.stub.stats().total == 0u);
  BOOST_TEST(s.get(widget_path(s.ids[0])).status == 200);
  BOOST_TEST(s.get(reviews_path(s.ids[1], "limit=5")).status == 200);
  BOOST_TEST(s.stub.stats().total == 2u);
}

BOOST_AUTO_TEST_CASE(per_ip_limit_refuses_misses_after_the_burst_but_never_hits) {
  // A slow refill (one token per 100 s) so that no token comes back while the test runs,
  // however slow the machine: the outcome never depends on timing.
  SemanticsStack s("[access]\nper_ip_rate = 0.01\nper_ip_burst = 2\n");
  BOOST_TEST(s.get(widget_path(s.ids[0])).status == 200);
  BOOST_TEST(s.get(widget_path(s.ids[1])).status == 200);
  BOOST_TEST(s.stub.stats().total == 2u);

  CacheJudge judge;
  CapturedRequest request{"GET", widget_path(s.ids[2]), {}};
  auto limited = s.get(request.url);
  BOOST_TEST(limited.status == 429);
  BOOST_TEST(contains(limited.body, "\"code\":\"rate_limited\""), limited.body);
  BOOST_TEST(all_digits(limited.header("retry-after")), limited.header("retry-after"));
  BOOST_TEST(std::stoll("0" + limited.header("retry-after")) >= 1);
  BOOST_TEST(limited.header("cache-control") == "no-store");
  judge.add(request, limited.status, limited.headers);
  // X-Forwarded-For from a peer that is not a trusted proxy changes nothing.
  auto spoofed = s.get(widget_path(s.ids[3]), {{"X-Forwarded-For", "10.1.2.3"}});
  BOOST_TEST(spoofed.status == 429);
  BOOST_TEST(s.stub.stats().total == 2u);

  // Hits are never limited.
  for (int i = 0; i < 5; ++i) {
    auto hit = s.get(widget_path(s.ids[i % 2]));
    BOOST_TEST(hit.status == 200);
    BOOST_TEST(contains(hit.header("cache-status"), "hit"));
  }
  auto head = raw_request(s.port(), "HEAD", widget_path(s.ids[0]));
  BOOST_TEST(head.status == 200);
  // Neither are local answers (a preflight) nor requests rejected before the cache.
  BOOST_TEST(raw_request(s.port(), "OPTIONS", widget_path(s.ids[4])).status == 204);
  BOOST_TEST(s.get(reviews_path(s.ids[4], "limit=0")).status == 400);
  BOOST_TEST(s.stub.stats().total == 2u);

  auto verdicts = judge.run();
  BOOST_TEST(!verdicts[0].storable);
  BOOST_TEST(!verdicts[0].private_storable);
}

BOOST_AUTO_TEST_CASE(per_ip_limit_buckets_forwarded_clients_behind_trusted_proxies) {
  SemanticsStack s("[access]\nper_ip_rate = 0.01\nper_ip_burst = 2\ntrusted_proxies = [\"127.0.0.1/32\"]\n");
  auto as = [&](const std::string& client, int i) {
    return s.get(widget_path(s.ids[i]), {{"X-Forwarded-For", client}}).status;
  };
  BOOST_TEST(as("10.0.0.1", 0) == 200);
  BOOST_TEST(as("10.0.0.1", 1) == 200);
  BOOST_TEST(as("10.0.0.1", 2) == 429);
  // Another client behind the same proxy has its own bucket.
  BOOST_TEST(as("10.0.0.2", 2) == 200);
  BOOST_TEST(as("10.0.0.2", 3) == 200);
  BOOST_TEST(as("10.0.0.2", 4) == 429);
  // Only the right end of the list is believed: a forged left entry changes nothing.
  BOOST_TEST(as("203.0.113.9, 10.0.0.1", 5) == 429);
  // The proxy itself (no X-Forwarded-For) is a client like any other.
  BOOST_TEST(s.get(widget_path(s.ids[5])).status == 200);
  // Hits stay unlimited for everyone.
  BOOST_TEST(as("10.0.0.1", 3) == 200);
  BOOST_TEST(as("10.0.0.2", 0) == 200);
  BOOST_TEST(s.stub.stats().widget == 5u);
}

BOOST_AUTO_TEST_SUITE_END()  // http_semantics_test
