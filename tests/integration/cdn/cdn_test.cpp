// nginx as a caching CDN in front of the gateway, configured as a CDN typically is: proxy_cache
// with no proxy_cache_valid, so the gateway's own headers alone decide how long nginx keeps a
// copy, plus stale copies on errors and background updates. It shows that:
//  - nginx keeps a copy at most cache.max_age_cap, even when the gateway's entry is old: nginx
//    ignores Age, so it must follow X-Accel-Expires (counted from the moment it receives the
//    answer), not max-age (which counts Age in, as RFC 9111 caches expect);
//  - nginx keeps answering from its expired copy while the gateway is down, also where nginx
//    has no stale rules of its own and only the gateway's stale-if-error allows it;
//  - widget_not_found answers are kept downstream only when cache.negative_max_age is set.
// nginx (Debian's nginx-light) runs as a child process with its configuration, cache, logs and
// pid file in a temporary directory, on a free loopback port.

#include <boost/test/unit_test.hpp>

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "integration/stack.hpp"

using namespace wg::test;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kNginx = "/usr/sbin/nginx";

// Lookups of unknown ids all come from nginx's one address; the per-IP budget is not under test.
constexpr std::string_view kAccess = "[access]\nunknown_per_ip_rate = 0\n";

// nginx with a proxy_cache in front of one gateway, stopped (with its workers) on destruction.
class Nginx {
 public:
  explicit Nginx(std::uint16_t gateway_port) : port_(free_port()) {
    if (::access(kNginx, X_OK) != 0) {
      throw std::runtime_error(std::string(kNginx) + " not found: install nginx-light");
    }
    std::filesystem::create_directories(dir_.file("cache"));
    std::filesystem::create_directories(dir_.file("tmp"));
    const std::string conf = dir_.write("nginx.conf", config(gateway_port));
    process_.emplace(std::vector<std::string>{kNginx, "-p", dir_.path() + "/", "-c", conf, "-e",
                                              dir_.file("error.log"), "-g", "daemon off;"});
    const auto deadline = Clock::now() + 10s;
    while (!wait_for_port(port_, 100ms)) {
      if (!process_->running() || Clock::now() > deadline) {
        throw std::runtime_error("nginx did not start: " + process_->output() + error_log());
      }
    }
  }

  std::uint16_t port() const { return port_; }
  HttpResponse get(const std::string& target) { return http_get(port_, target); }
  std::string error_log() const { return read("error.log"); }
  // One line per request: target, status, cache status, the gateway's status.
  std::string access_log() const { return read("access.log"); }

 private:
  std::string read(std::string_view name) const {
    std::ifstream in(dir_.file(name));
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }

  std::string config(std::uint16_t gateway_port) const {
    std::string text = R"(worker_processes 1;
pid @DIR@/nginx.pid;
error_log @DIR@/error.log info;
events { worker_connections 64; }
http {
  log_format cdn '$request_uri $status $upstream_cache_status $upstream_status';
  access_log @DIR@/access.log cdn;
  client_body_temp_path @DIR@/tmp/body;
  proxy_temp_path @DIR@/tmp/proxy;
  fastcgi_temp_path @DIR@/tmp/fastcgi;
  uwsgi_temp_path @DIR@/tmp/uwsgi;
  scgi_temp_path @DIR@/tmp/scgi;
  proxy_cache_path @DIR@/cache levels=1:2 keys_zone=cdn:1m inactive=1h use_temp_path=off;
  upstream gateway {
    server 127.0.0.1:@GATEWAY@ max_fails=0;
    keepalive 4;
  }
  proxy_http_version 1.1;
  proxy_set_header Connection "";
  # The visitor's address, as CDNs pass it on (the gateway trusts it only from
  # access.trusted_proxies).
  proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
  proxy_connect_timeout 2s;
  proxy_read_timeout 10s;
  # No proxy_cache_valid: how long a copy lives is the gateway's call.
  proxy_cache cdn;
  proxy_cache_key $request_uri;
  add_header X-Cache-Status $upstream_cache_status always;
  server {
    listen 127.0.0.1:@PORT@;
    # As a CDN typically is.
    location / {
      proxy_pass http://gateway;
      proxy_cache_lock on;
      proxy_cache_use_stale error timeout updating http_500 http_502 http_503 http_504;
      proxy_cache_background_update on;
    }
    # No stale rules of nginx's own: only the gateway's stale-while-revalidate and
    # stale-if-error allow answering from an expired copy.
    location /headers-only/ {
      proxy_pass http://gateway/;
    }
  }
}
)";
    replace_all(text, "@DIR@", dir_.path());
    replace_all(text, "@GATEWAY@", std::to_string(gateway_port));
    replace_all(text, "@PORT@", std::to_string(port_));
    // As root, the worker would switch to an account that cannot write the cache here.
    if (::geteuid() == 0) {
      const passwd* pw = ::getpwuid(::geteuid());
      const group* gr = ::getgrgid(::getegid());
      if (pw != nullptr && gr != nullptr) {
        text = std::string("user ") + pw->pw_name + " " + gr->gr_name + ";\n" + text;
      }
    }
    return text;
  }

  static void replace_all(std::string& text, std::string_view from, const std::string& to) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }

  TempDir dir_;  // declared before process_, so that it outlives nginx
  std::uint16_t port_;
  std::optional<ChildProcess> process_;
};

// The whole chain: Redis and the stub behind one gateway, nginx in front of it.
struct CdnStack {
  RedisServer redis;
  Stub stub{{}, 5};
  Gateway gateway;
  Nginx nginx;
  explicit CdnStack(const std::string& config_toml)
      : gateway(stub.base_url(), redis.url(), {}, config_toml), nginx(gateway.port()) {}
};

std::optional<long> parse_long(std::string_view text) {
  long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The numeric argument of a Cache-Control directive ("max-age"), nullopt when absent.
std::optional<long> cc_directive(std::string_view cache_control, std::string_view name) {
  const std::string key = std::string(name) + "=";
  for (std::size_t pos = 0; pos < cache_control.size();) {
    std::size_t end = cache_control.find(',', pos);
    if (end == std::string_view::npos) end = cache_control.size();
    std::string_view item = cache_control.substr(pos, end - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.starts_with(key)) return parse_long(item.substr(key.size()));
    pos = end + 1;
  }
  return std::nullopt;
}

// The head of a GET straight from the gateway, bytes as sent (header order included).
std::string raw_head(std::uint16_t port, const std::string& target) {
  std::string reply = raw_exchange(
      port, "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  return reply.substr(0, reply.find("\r\n\r\n") + 2);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cdn_test)

BOOST_AUTO_TEST_CASE(nginx_keeps_a_copy_at_most_max_age_cap_even_when_age_is_large) {
  CdnStack stack("[cache]\nmax_age_cap = \"2s\"\n" + std::string(kAccess));
  const std::string target = widget_path(stack.stub.widgets(1).at(0).id);

  // Fill the gateway's cache, then let its entry grow older than the cap (the gateway itself
  // keeps it fresh for hours).
  const HttpResponse filled = stack.gateway.get(target);
  BOOST_REQUIRE_EQUAL(filled.status, 200);
  std::this_thread::sleep_for(8s);

  // What the gateway tells caches about the old entry: R = 2 s left after subtracting Age
  // (RFC 9111), and X-Accel-Expires, which counts no Age, at most the cap.
  const HttpResponse direct = stack.gateway.get(target);
  BOOST_REQUIRE_EQUAL(direct.status, 200);
  const auto age = parse_long(direct.header("age"));
  const auto max_age = cc_directive(direct.header("cache-control"), "max-age");
  const auto accel = parse_long(direct.header("x-accel-expires"));
  BOOST_REQUIRE(age && max_age);
  // Older than the cap, which is what this case needs. Not ">= 8": Age counts the fleet's clock
  // (Redis's TIME plus a measured offset, docs/clocks.md), whose estimate may move by a fraction
  // of a second between the store and now; under ASan on a busy machine it gave 7.
  BOOST_TEST(*age > 2);
  BOOST_TEST(*max_age - *age <= 2);
  BOOST_TEST(*max_age - *age >= 1);
  BOOST_TEST_REQUIRE(accel.has_value(), "no X-Accel-Expires: " << direct.header("cache-control"));
  BOOST_TEST(*accel >= 1);
  BOOST_TEST(*accel <= 2);
  BOOST_TEST(direct.header("accept-ranges") == "none");
  // Order matters to nginx 1.22: a Cache-Control line after X-Accel-Expires is skipped whole
  // (stale-while-revalidate and stale-if-error with it); before it, only max-age is overridden.
  const std::string head = raw_head(stack.gateway.port(), target);
  const auto cache_control_at = head.find("\r\nCache-Control:");
  const auto accel_at = head.find("\r\nX-Accel-Expires:");
  BOOST_TEST_REQUIRE(accel_at != std::string::npos, head);
  BOOST_TEST(cache_control_at < accel_at, head);

  // nginx fetches the old entry, then answers from its copy.
  const auto asked_at = Clock::now();
  const HttpResponse miss = stack.nginx.get(target);
  BOOST_REQUIRE_EQUAL(miss.status, 200);
  BOOST_TEST(miss.header("x-cache-status") == "MISS");
  BOOST_TEST(miss.body == filled.body);
  BOOST_TEST(miss.header("x-accel-expires").empty());  // hidden from nginx's clients
  const auto miss_max_age = cc_directive(miss.header("cache-control"), "max-age");
  BOOST_REQUIRE(miss_max_age);
  // The entry must be old enough for max-age and X-Accel-Expires to disagree clearly.
  BOOST_TEST_REQUIRE(*miss_max_age >= 2 + 6, miss.header("cache-control"));
  const HttpResponse hit = stack.nginx.get(target);
  BOOST_REQUIRE_EQUAL(hit.status, 200);
  BOOST_TEST(hit.header("x-cache-status") == "HIT");

  // Had nginx followed max-age (it ignores Age), its copy would stay fresh until
  // asked_at + max-age: the deadline below is that counterfactual (less 1 s for nginx's
  // whole-second clock), not a claim about speed. Following X-Accel-Expires, it expires ~2 s
  // after asked_at.
  const auto counterfactual = asked_at + std::chrono::seconds(*miss_max_age - 1);
  std::string status = "HIT";
  while (status == "HIT" && Clock::now() < counterfactual) {
    std::this_thread::sleep_for(200ms);
    const HttpResponse r = stack.nginx.get(target);
    BOOST_REQUIRE_EQUAL(r.status, 200);
    status = r.header("x-cache-status");
  }
  BOOST_TEST(status != "HIT",
             "nginx kept its copy for max-age (Age + cap) instead of X-Accel-Expires (the cap)\n"
                 << stack.nginx.access_log());
  BOOST_TEST_MESSAGE("copy no longer fresh in nginx: " << status);

  // nginx refreshes its copy from the gateway, which answers from its own cache: upstream was
  // asked once in all.
  BOOST_TEST(eventually(
      [&] {
        std::this_thread::sleep_for(200ms);
        return stack.nginx.get(target).header("x-cache-status") == "HIT";
      },
      15s));
  BOOST_TEST(stack.stub.stats().widget == 1u);
}

BOOST_AUTO_TEST_CASE(nginx_serves_stale_when_the_gateway_is_down) {
  CdnStack stack("[cache]\nmax_age_cap = \"2s\"\n" + std::string(kAccess));
  const std::string target = widget_path(stack.stub.widgets(1).at(0).id);
  // The same widget where only the gateway's stale-if-error lets nginx use an expired copy.
  const std::string headers_only = "/headers-only" + target;

  std::string body;
  for (const std::string& t : {target, headers_only}) {
    const HttpResponse miss = stack.nginx.get(t);
    BOOST_REQUIRE_EQUAL(miss.status, 200);
    BOOST_TEST(miss.header("x-cache-status") == "MISS");
    body = miss.body;
  }

  // The gateway goes away while nginx still holds fresh copies.
  stack.gateway.process().stop();
  BOOST_REQUIRE_EQUAL(stack.gateway.get(target).status, 0);

  for (const std::string& t : {target, headers_only}) {
    BOOST_TEST_CONTEXT(t) {
      // Every answer is the copy: fresh first, then, once expired (X-Accel-Expires), stale.
      std::string status = "HIT";
      const auto deadline = Clock::now() + 15s;
      while (status != "STALE" && Clock::now() < deadline) {
        std::this_thread::sleep_for(200ms);
        const HttpResponse r = stack.nginx.get(t);
        BOOST_TEST_REQUIRE(r.status == 200, stack.nginx.access_log());
        BOOST_TEST(r.body == body);
        status = r.header("x-cache-status");
      }
      BOOST_TEST(status == "STALE", stack.nginx.access_log());
    }
  }

  // nginx did try the gateway; the failed refreshes neither dropped nor renewed the copies.
  BOOST_TEST(eventually([&] {
               return stack.nginx.error_log().find("Connection refused") != std::string::npos;
             }),
             stack.nginx.error_log());
  for (const std::string& t : {target, headers_only, target}) {
    const HttpResponse r = stack.nginx.get(t);
    BOOST_TEST(r.status == 200, t);
    BOOST_TEST(r.header("x-cache-status") == "STALE", t);
    BOOST_TEST(r.body == body, t);
  }
}

BOOST_AUTO_TEST_CASE(widget_not_found_is_cacheable_downstream_only_when_configured) {
  // Any id of the allowed shape that the stub does not know: upstream answers 404.
  const std::string target = widget_path("no-such-widget");

  {
    // Default: no-store, so every request reaches the gateway (which answers from its own
    // negative cache: one upstream lookup).
    CdnStack stack{std::string(kAccess)};
    for (const char* round : {"first", "second"}) {
      BOOST_TEST_CONTEXT(round) {
        const HttpResponse r = stack.nginx.get(target);
        BOOST_TEST(r.status == 404);
        BOOST_TEST(r.header("x-cache-status") == "MISS");
        BOOST_TEST(r.header("cache-control") == "no-store");
      }
    }
    BOOST_TEST(stack.stub.stats().widget == 1u);
    const HttpResponse direct = stack.gateway.get(target);
    BOOST_TEST(direct.status == 404);
    BOOST_TEST(direct.header("x-accel-expires").empty());
  }
  {
    // negative_max_age: nginx absorbs repeats of the bad id.
    CdnStack stack("[cache]\nnegative_max_age = \"30s\"\n" + std::string(kAccess));
    const HttpResponse first = stack.nginx.get(target);
    BOOST_TEST(first.status == 404);
    BOOST_TEST(first.header("x-cache-status") == "MISS");
    BOOST_TEST(first.header("cache-control") == "public, max-age=30");
    BOOST_TEST(first.header("x-accel-expires").empty());
    const HttpResponse second = stack.nginx.get(target);
    BOOST_TEST(second.status == 404);
    BOOST_TEST(second.header("x-cache-status") == "HIT");
    BOOST_TEST(second.body == first.body);
    BOOST_TEST(stack.stub.stats().widget == 1u);

    const HttpResponse direct = stack.gateway.get(target);
    BOOST_TEST(direct.status == 404);
    BOOST_TEST(direct.header("cache-control") == "public, max-age=30");
    BOOST_TEST(direct.header("x-accel-expires") == "30");
  }
}

BOOST_AUTO_TEST_CASE(the_recommended_per_client_limit_holds_back_one_visitor_not_the_others) {
  // The README's setting behind a CDN: the CDN's addresses trusted, so each visitor is a client
  // of its own, and a limit on the requests one visitor makes reach upstream.
  CdnStack s("[access]\ntrusted_proxies = [\"127.0.0.1/32\"]\nper_ip_rate = 0.01\nper_ip_burst = 3\n");
  const auto widgets = s.stub.widgets(5);
  BOOST_REQUIRE_EQUAL(widgets.size(), 5u);
  // Visitors reach nginx from their own addresses; here all come from loopback, so each
  // states the address a real CDN would have seen (nginx appends its own peer's).
  auto visit = [&](const std::string& visitor, const std::string& target) {
    return http_get(s.nginx.port(), target, {{"X-Forwarded-For", visitor}});
  };
  // A walker on widget data: each id a miss; past the burst it is refused, saying why.
  int refused = 0;
  for (const auto& w : widgets) {
    auto answer = visit("203.0.113.7", widget_path(w.id));
    if (answer.status == 429) {
      ++refused;
      BOOST_TEST(answer.body.find("access.per_ip_rate") != std::string::npos, answer.body);
      BOOST_TEST(!answer.header("retry-after").empty());
    } else {
      BOOST_TEST(answer.status == 200);
    }
  }
  BOOST_TEST(refused == 2);
  BOOST_TEST(s.stub.stats().widget == 3u);
  // Another visitor is not held back by the walker, and what the CDN or the gateway holds is
  // served to the walker too.
  BOOST_TEST(visit("198.51.100.20", widget_path(widgets[4].id)).status == 200);
  BOOST_TEST(visit("203.0.113.7", widget_path(widgets[0].id)).status == 200);
  BOOST_TEST(s.stub.stats().widget == 4u);
}

BOOST_AUTO_TEST_SUITE_END()  // cdn_test
