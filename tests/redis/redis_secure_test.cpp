// The client and subscriber against redis-servers that want a password, ACL users, TLS, and
// client certificates. Every server is stopped by its destructor, also when a check fails.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "redis_test_util.hpp"
#include "support/process.hpp"
#include "test_pki.hpp"
#include "widget_gateway/common/error.hpp"
#include "widget_gateway/redis/client.hpp"
#include "widget_gateway/redis/subscriber.hpp"

using namespace wg::redis;
using namespace wg::redis::test;
using wg::test::RedisOptions;
using wg::test::RedisServer;

namespace {

Settings secure_settings(const RedisServer& server) {
  Settings s;
  s.endpoint = {"127.0.0.1", server.port()};
  s.endpoint.tls = server.url().rfind("rediss", 0) == 0;
  s.reconnect_min = 20ms;
  s.reconnect_max = 100ms;
  s.connect_timeout = 5s;  // a busy machine may be slow to handshake; nothing here waits for it
  s.command_timeout = 5s;
  return s;
}

Settings with_password(Settings s, std::string user, std::string password) {
  s.endpoint.user = std::move(user);
  s.endpoint.password = std::move(password);
  return s;
}

// A started client that records the kinds of its failed commands.
struct Observed {
  asio::io_context& ioc;
  Client client;
  std::mutex m;
  std::vector<ErrorKind> errors;
  std::atomic<bool> ever_up{false};

  Observed(asio::io_context& ioc, Settings s, wg::Clock& clock = wg::SystemClock::instance())
      : ioc(ioc), client(ioc.get_executor(), std::move(s), wg::DefaultRandom::instance(), clock) {
    client.on_error([this](ErrorKind kind) {
      std::lock_guard lock(m);
      errors.push_back(kind);
    });
    client.on_state_change([this](bool up) {
      if (up) ever_up = true;
    });
    client.start();
  }
  ~Observed() {
    client.stop();
    ioc.restart();
    ioc.run_for(100ms);  // lets the stop run
  }
  std::size_t count(ErrorKind kind) {
    std::lock_guard lock(m);
    return static_cast<std::size_t>(std::count(errors.begin(), errors.end(), kind));
  }
  bool up() {
    return run_until(ioc, [&] { return client.connected(); });
  }
  std::pair<std::error_code, Reply> operator()(std::vector<std::string> args) {
    return exec(ioc, client, std::move(args));
  }
};

// Refused connects (an error reply to AUTH or PING) are counted, so a test waits for a few of
// them instead of for a time; the client must never have been up meanwhile.
bool refused_repeatedly(Observed& c, ErrorKind kind) {
  bool refused = run_until(c.ioc, [&] { return c.count(kind) >= 3; });
  return refused && !c.ever_up && !c.client.connected();
}

// For failures without an error reply (TLS): many reconnect periods pass, never up.
bool stays_down(Observed& c) {
  run_until(
      c.ioc, [] { return false; }, 1s);
  return !c.ever_up && !c.client.connected();
}

RedisOptions tls_options(const TestPki& pki, std::string auth_clients = "no") {
  RedisOptions options;
  options.tls = RedisOptions::Tls{pki.server_cert,         pki.server_key,  pki.ca_cert,
                                  std::move(auth_clients), pki.client_cert, pki.client_key};
  return options;
}

TestPki& pki() {
  static TestPki shared;  // made once: key generation is the slow part
  return shared;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(redis_secure_test)

BOOST_AUTO_TEST_CASE(password_right_wrong_and_none) {
  RedisOptions options;
  options.requirepass = "s3cret:/@";
  RedisServer server(options);
  asio::io_context ioc;

  Observed right(ioc, with_password(secure_settings(server), "", "s3cret:/@"));
  BOOST_REQUIRE(right.up());
  BOOST_TEST(right({"SET", "k", "v"}).second.str == "OK");
  BOOST_TEST(right({"GET", "k"}).second.str == "v");
  BOOST_TEST(right.client.healthy());

  Observed wrong(ioc, with_password(secure_settings(server), "", "nope"));
  BOOST_TEST(refused_repeatedly(wrong, ErrorKind::auth));
  BOOST_TEST((wrong({"PING"}).first == wg::errc::redis_down));

  // No password: the PING probe meets NOAUTH, so the connection never counts as up.
  Observed none(ioc, secure_settings(server));
  BOOST_TEST(refused_repeatedly(none, ErrorKind::auth));

  // The authenticated client still works, and a database is selected after AUTH.
  Settings db2 = with_password(secure_settings(server), "", "s3cret:/@");
  db2.endpoint.db = 2;
  Observed second(ioc, db2);
  BOOST_REQUIRE(second.up());
  BOOST_TEST(second({"GET", "k"}).second.is_nil());
  BOOST_TEST(right({"GET", "k"}).second.str == "v");
}

BOOST_AUTO_TEST_CASE(acl_user_with_and_without_permission) {
  RedisOptions options;
  options.users = {{"app", "on", ">app-pw", "~*", "+@all", "-flushdb"}};
  RedisServer server(options);
  asio::io_context ioc;

  Settings s = with_password(secure_settings(server), "app", "app-pw");
  s.unhealthy_hold = 0ms;
  Observed app(ioc, s);
  BOOST_REQUIRE(app.up());
  BOOST_TEST(app({"SET", "k", "v"}).second.str == "OK");
  BOOST_TEST(app.client.healthy());

  // A permission error is an error reply, not a transport error, and marks the client unhealthy.
  auto [ec, denied] = app({"FLUSHDB"});
  BOOST_TEST(!ec);
  BOOST_TEST(denied.is_error());
  BOOST_TEST(denied.str.rfind("NOPERM", 0) == 0);
  BOOST_TEST(!app.client.healthy());
  BOOST_TEST(app.client.connected());
  BOOST_TEST(app.count(ErrorKind::auth) == 1u);
  // With no hold, the next success makes it healthy again.
  BOOST_TEST(app({"GET", "k"}).second.str == "v");
  BOOST_TEST(app.client.healthy());

  // With a hold, a success right after does not, nor one just before the hold is over; the
  // first success after it does (the hold is timed by the client's clock, moved here).
  Settings held = s;
  held.unhealthy_hold = std::chrono::hours(1);
  wg::ManualClock clock;
  Observed careful(ioc, held, clock);
  BOOST_REQUIRE(careful.up());
  BOOST_TEST(careful({"FLUSHDB"}).second.is_error());
  BOOST_TEST(careful({"GET", "k"}).second.str == "v");
  BOOST_TEST(!careful.client.healthy());
  clock.advance(held.unhealthy_hold - 1ms);
  BOOST_TEST(careful({"GET", "k"}).second.str == "v");
  BOOST_TEST(!careful.client.healthy());
  clock.advance(1ms);
  BOOST_TEST(careful({"GET", "k"}).second.str == "v");
  BOOST_TEST(careful.client.healthy());

  // Any other error reply marks it unhealthy only until the next success.
  BOOST_TEST(app({"INCR", "k"}).second.is_error());
  BOOST_TEST(!app.client.healthy());
  BOOST_TEST(app.count(ErrorKind::other) == 1u);
  BOOST_TEST(app({"PING"}).second.str == "PONG");
  BOOST_TEST(app.client.healthy());

  // An unknown user or a wrong password: WRONGPASS, never up.
  Observed stranger(ioc, with_password(secure_settings(server), "nobody", "app-pw"));
  BOOST_TEST(refused_repeatedly(stranger, ErrorKind::auth));
  Observed mistyped(ioc, with_password(secure_settings(server), "app", "wrong"));
  BOOST_TEST(refused_repeatedly(mistyped, ErrorKind::auth));
}

BOOST_AUTO_TEST_CASE(tls_with_the_test_ca_pipelines_and_reconnects) {
  RedisOptions options = tls_options(pki());
  options.requirepass = "tls-pw";
  RedisServer server(options);
  asio::io_context ioc;
  Settings s = with_password(secure_settings(server), "", "tls-pw");
  BOOST_REQUIRE(s.endpoint.tls);
  s.tls.ca_file = pki().ca_cert;
  s.endpoint.db = 1;
  Observed c(ioc, s);
  BOOST_REQUIRE(c.up());
  const std::string value = std::string("bin\0ary", 7) + std::string(100000, 'x');
  BOOST_TEST(c({"SET", "big", value}).second.str == "OK");
  BOOST_TEST(c({"GET", "big"}).second.str == value);

  // Many commands in flight on the one connection.
  constexpr int workers = 50, per_worker = 20;
  std::atomic<int> ok{0}, done{0};
  auto worker = [&]() -> asio::awaitable<void> {
    for (int i = 0; i < per_worker; ++i) {
      std::vector<std::string> incr{std::string("INCR"), std::string("n")};
      auto [ec, reply] = co_await c.client.command(std::move(incr));
      if (!ec && reply.type == Reply::Type::integer) ok++;
    }
    done++;
  };
  for (int w = 0; w < workers; ++w) asio::co_spawn(ioc, worker(), asio::detached);
  BOOST_REQUIRE(run_until(
      ioc, [&] { return done.load() == workers; }, 60s));
  BOOST_TEST(ok.load() == workers * per_worker);
  BOOST_TEST(c({"GET", "n"}).second.str == std::to_string(workers * per_worker));

  server.stop();
  BOOST_REQUIRE(run_until(ioc, [&] { return !c.client.connected(); }));
  server.start();
  BOOST_REQUIRE(c.up());
  BOOST_TEST(c({"SET", "k", "again"}).second.str == "OK");
}

BOOST_AUTO_TEST_CASE(tls_with_another_ca_is_never_up) {
  RedisServer server(tls_options(pki()));
  asio::io_context ioc;
  Settings s = secure_settings(server);
  s.tls.ca_file = pki().other_ca_cert;
  Observed c(ioc, s);
  BOOST_TEST(stays_down(c));
  // No CA at all: the system store does not know the test CA either.
  Observed system_only(ioc, secure_settings(server));
  BOOST_TEST(stays_down(system_only));
}

BOOST_AUTO_TEST_CASE(tls_server_name_is_verified) {
  RedisServer server(tls_options(pki()));
  asio::io_context ioc;
  Settings s = secure_settings(server);
  s.tls.ca_file = pki().ca_cert;
  s.tls.server_name = "localhost";  // in the certificate, though the address is 127.0.0.1
  Observed named(ioc, s);
  BOOST_REQUIRE(named.up());
  BOOST_TEST(named({"PING"}).second.str == "PONG");

  s.tls.server_name = "redis.example";
  Observed mismatch(ioc, s);
  BOOST_TEST(stays_down(mismatch));
}

BOOST_AUTO_TEST_CASE(tls_client_certificate_required) {
  RedisServer server(tls_options(pki(), "yes"));
  asio::io_context ioc;
  Settings s = secure_settings(server);
  s.tls.ca_file = pki().ca_cert;
  Observed anonymous(ioc, s);
  BOOST_TEST(stays_down(anonymous));

  s.tls.cert_file = pki().client_cert;
  s.tls.key_file = pki().client_key;
  Observed known(ioc, s);
  BOOST_REQUIRE(known.up());
  BOOST_TEST(known({"PING"}).second.str == "PONG");
}

BOOST_AUTO_TEST_CASE(unusable_tls_files_fail_construction) {
  asio::io_context ioc;
  Settings s;
  s.endpoint = {"127.0.0.1", 6379};
  s.endpoint.tls = true;
  s.tls.ca_file = pki().dir.file("missing.pem");
  BOOST_CHECK_THROW(Client(ioc.get_executor(), s), std::invalid_argument);
  s.tls.ca_file = pki().ca_cert;
  s.tls.cert_file = pki().client_cert;
  s.tls.key_file = pki().server_key;  // not the certificate's key
  BOOST_CHECK_THROW(Client(ioc.get_executor(), s), std::invalid_argument);
  // Without TLS the files are not looked at.
  s.endpoint.tls = false;
  BOOST_CHECK_NO_THROW(Client(ioc.get_executor(), s));
}

BOOST_AUTO_TEST_CASE(subscriber_over_tls_with_an_acl_user) {
  RedisOptions options = tls_options(pki());
  options.users = {{"sub", "on", ">sub-pw", "~*", "&*", "+@all"}};
  RedisServer server(options);
  asio::io_context ioc;
  Settings s = with_password(secure_settings(server), "sub", "sub-pw");
  s.tls.ca_file = pki().ca_cert;
  std::mutex m;
  std::vector<std::string> received;
  std::atomic<int> downs{0};
  {
    Subscriber sub(ioc.get_executor(), s, {"invalidate"},
                   [&](std::string_view, std::string_view message) {
                     std::lock_guard lock(m);
                     received.emplace_back(message);
                   });
    sub.on_state_change([&](bool up) {
      if (!up) downs++;
    });
    sub.start();
    BOOST_REQUIRE(run_until(ioc, [&] { return sub.connected(); }));
    BOOST_TEST(server.command({"PUBLISH", "invalidate", "w1"}) == "1");
    BOOST_REQUIRE(run_until(ioc, [&] {
      std::lock_guard lock(m);
      return received.size() == 1;
    }));

    // Resubscribed, with AUTH again, after a restart.
    server.stop();
    BOOST_REQUIRE(run_until(ioc, [&] { return !sub.connected(); }));
    server.start();
    BOOST_REQUIRE(run_until(ioc, [&] { return sub.connected(); }));
    BOOST_TEST(server.command({"PUBLISH", "invalidate", "w2"}) == "1");
    BOOST_REQUIRE(run_until(ioc, [&] {
      std::lock_guard lock(m);
      return received.size() == 2;
    }));
    BOOST_TEST(downs.load() == 1);
  }
  ioc.restart();
  ioc.run_for(100ms);
  std::lock_guard lock(m);
  BOOST_TEST(received == (std::vector<std::string>{"w1", "w2"}));
}

BOOST_AUTO_TEST_SUITE_END()  // redis_secure_test
