#include <boost/test/unit_test.hpp>

#include <boost/asio/detached.hpp>

#include <atomic>
#include <memory>
#include <mutex>

#include "redis_test_util.hpp"
#include "support/process.hpp"
#include "widget_gateway/common/error.hpp"
#include "widget_gateway/redis/client.hpp"

using namespace wg::redis;
using namespace wg::redis::test;
using wg::errc;
using Type = Reply::Type;

namespace {

Settings settings_for(std::uint16_t port) {
  Settings s;
  s.endpoint = {"127.0.0.1", port, 0};
  s.reconnect_min = 50ms;
  s.reconnect_max = 500ms;
  return s;
}

// A redis-server and a started client connected to it.
struct Connected {
  wg::test::RedisServer server;
  asio::io_context ioc;
  std::unique_ptr<Client> client;

  explicit Connected(Settings settings) { make(std::move(settings)); }
  Connected() { make(settings_for(server.port())); }
  ~Connected() {
    client.reset();
    ioc.restart();
    ioc.run_for(200ms);  // lets the stop run
  }

  void make(Settings settings) {
    if (settings.endpoint.port == 0) settings.endpoint.port = server.port();
    client = std::make_unique<Client>(ioc.get_executor(), std::move(settings));
    client->start();
    BOOST_REQUIRE(run_until(ioc, [&] { return client->connected(); }));
  }
  std::pair<std::error_code, Reply> operator()(std::vector<std::string> args) {
    return exec(ioc, *client, std::move(args));
  }
};

// Built outside coroutine bodies: GCC 12 rejects braced lists of string literals there.
std::vector<std::string> sleep_command(std::string seconds) {
  return {"DEBUG", "SLEEP", std::move(seconds)};
}

Settings with_port0(Settings s) {
  s.endpoint.port = 0;
  return s;
}

// PINGs until one succeeds (a stalled server answers late): bounded, no timing assertion.
bool eventually_pong(Connected& c) {
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto [ec, pong] = c({"PING"});
    if (!ec && pong.str == "PONG") return true;
    run_until(
        c.ioc, [] { return false; }, 50ms);
  }
  return false;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(redis_client_test)

BOOST_AUTO_TEST_CASE(set_get_binary_round_trip) {
  Connected c;
  const std::string key("bin\0key", 7);
  const std::string value =
      std::string("a\0b\r\n", 5) + "Отзывы о виджете" + std::string(1, '\xff');
  auto [ec, set] = c({"SET", key, value});
  BOOST_TEST(!ec);
  BOOST_TEST((set.type == Type::status));
  BOOST_TEST(set.str == "OK");

  auto [ec2, got] = c({"GET", key});
  BOOST_TEST(!ec2);
  BOOST_TEST((got.type == Type::string));
  BOOST_TEST(got.str == value);
  BOOST_TEST(got.str.size() == value.size());

  auto [ec3, missing] = c({"GET", "missing"});
  BOOST_TEST(!ec3);
  BOOST_TEST(missing.is_nil());
}

BOOST_AUTO_TEST_CASE(replies_of_many_reads_come_whole_and_in_order) {
  // Larger than the connection's read buffer many times over, and more than one read wakeup
  // drains: the reads after an asynchronous one find bytes there, then none.
  Connected c;
  std::string big(3 << 20, 'x');
  for (std::size_t i = 0; i < big.size(); i += 4099) big[i] = static_cast<char>('a' + i % 26);
  auto [ec, set] = c({"SET", "big", big});
  BOOST_REQUIRE(!ec);
  auto [ec2, both] = c({"MGET", "big", "big"});
  BOOST_REQUIRE(!ec2);
  BOOST_REQUIRE_EQUAL(both.elements.size(), 2u);
  BOOST_TEST((both.elements[0].str == big));
  BOOST_TEST((both.elements[1].str == big));
  auto [ec3, pong] = c({"PING"});
  BOOST_TEST(!ec3);
  BOOST_TEST(pong.str == "PONG");
}

BOOST_AUTO_TEST_CASE(incr_from_many_coroutines_on_two_threads) {
  Settings s = with_port0(settings_for(0));
  s.command_timeout = 10s;  // the machine may be busy: this test is about counting
  Connected c(s);
  constexpr int workers = 100;
  constexpr int per_worker = 20;
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  std::atomic<int> done{0};
  auto worker = [&]() -> asio::awaitable<void> {
    for (int i = 0; i < per_worker; ++i) {
      std::vector<std::string> incr{std::string("INCR"), std::string("counter")};
      auto [ec, reply] = co_await c.client->command(std::move(incr));
      (ec || reply.type != Type::integer ? failed : ok)++;
    }
    if (++done == workers) c.ioc.stop();
  };
  for (int w = 0; w < workers; ++w) asio::co_spawn(c.ioc, worker(), asio::detached);
  c.ioc.restart();
  std::thread other([&] { c.ioc.run_for(60s); });
  c.ioc.run_for(60s);
  other.join();
  c.ioc.restart();
  BOOST_TEST(done.load() == workers);
  BOOST_TEST(failed.load() == 0);
  BOOST_TEST(ok.load() == workers * per_worker);
  auto [ec, total] = c({"GET", "counter"});
  BOOST_TEST(!ec);
  BOOST_TEST(total.str == std::to_string(workers * per_worker));
}

// A worker's connection (one_io_thread): a command goes out as it is issued and its waiter
// resumes inside the reply's handling, where it sends its next command at once. Replies must
// still reach the right waiters, in order, with nothing lost.
BOOST_AUTO_TEST_CASE(a_one_thread_client_serves_waiters_that_send_as_they_resume) {
  Settings s = with_port0(settings_for(0));
  s.command_timeout = 10s;  // the machine may be busy: this test is about order and counts
  s.one_io_thread = true;
  Connected c(s);
  constexpr int workers = 50;
  constexpr int per_worker = 40;
  int in_order = 0;
  int wrong = 0;
  int done = 0;
  auto worker = [&](int w) -> asio::awaitable<void> {
    const std::string key = "k" + std::to_string(w);
    for (int i = 0; i < per_worker; ++i) {
      std::vector<std::string> set{std::string("SET"), key, std::to_string(i)};
      auto [set_ec, set_reply] = co_await c.client->command(std::move(set));
      std::vector<std::string> get{std::string("GET"), key};
      auto [get_ec, got] = co_await c.client->command(std::move(get));
      (!set_ec && !get_ec && got.str == std::to_string(i) ? in_order : wrong)++;
    }
    ++done;
  };
  for (int w = 0; w < workers; ++w) asio::co_spawn(c.ioc, worker(w), asio::detached);
  BOOST_REQUIRE(run_until(
      c.ioc, [&] { return done == workers; }, 60s));
  BOOST_TEST(wrong == 0);
  BOOST_TEST(in_order == workers * per_worker);
}

// A waiter that resumes inside the reply's handling may drop the client there: the replies
// behind it and the commands still waiting complete all the same (shutting_down at worst).
BOOST_AUTO_TEST_CASE(a_waiter_may_drop_a_one_thread_client_as_it_resumes) {
  Settings s = with_port0(settings_for(0));
  s.command_timeout = 10s;
  s.one_io_thread = true;
  Connected c(s);
  constexpr int waiters = 20;
  int completed = 0;
  bool first_answered = false;
  for (int i = 0; i < waiters; ++i) {
    asio::co_spawn(
        c.ioc,
        [&]() -> asio::awaitable<void> {
          std::vector<std::string> ping{std::string("PING")};
          auto [ec, pong] = co_await c.client->command(std::move(ping));
          if (completed++ == 0) first_answered = !ec && pong.str == "PONG";
          c.client.reset();  // the first to resume drops it; the rest find it gone
        },
        asio::detached);
  }
  BOOST_REQUIRE(run_until(
      c.ioc, [&] { return completed == waiters; }, 10s));
  BOOST_TEST(!c.client);
  BOOST_TEST(first_answered);
}

BOOST_AUTO_TEST_CASE(every_reply_reports_its_queue_and_reply_times) {
  Connected c;
  std::vector<std::pair<std::chrono::nanoseconds, std::chrono::nanoseconds>> seen;
  c.client->on_round_trip([&](auto queued, auto answered) { seen.emplace_back(queued, answered); });
  for (int i = 0; i < 5; ++i) BOOST_TEST(c({"PING"}).second.str == "PONG");
  BOOST_TEST(c({"SET", "k", "v"}).second.str == "OK");
  BOOST_REQUIRE(seen.size() == 6u);  // one per reply
  for (const auto& [queued, answered] : seen) {
    BOOST_TEST(queued.count() >= 0);
    BOOST_TEST(answered.count() > 0);
  }
}

BOOST_AUTO_TEST_CASE(eval_lua_script) {
  Connected c;
  auto [ec, reply] = c({"EVAL", "return {KEYS[1], ARGV[1], redis.call('INCRBY', KEYS[1], ARGV[1])}",
                        "1", "quota:2024-05", "5"});
  BOOST_TEST(!ec);
  BOOST_REQUIRE((reply.type == Type::array));
  BOOST_REQUIRE(reply.elements.size() == 3u);
  BOOST_TEST(reply.elements[0].str == "quota:2024-05");
  BOOST_TEST(reply.elements[1].str == "5");
  BOOST_TEST((reply.elements[2].type == Type::integer));
  BOOST_TEST(reply.elements[2].integer == 5);
}

BOOST_AUTO_TEST_CASE(error_reply_is_a_reply_not_an_error_code) {
  Connected c;
  c({"SET", "text", "abc"});
  auto [ec, reply] = c({"INCR", "text"});
  BOOST_TEST(!ec);
  BOOST_TEST(reply.is_error());
  BOOST_TEST(reply.str.rfind("ERR", 0) == 0);
  auto [ec2, unknown] = c({"NO-SUCH-COMMAND"});
  BOOST_TEST(!ec2);
  BOOST_TEST(unknown.is_error());
  // The connection is fine afterwards.
  auto [ec3, pong] = c({"PING"});
  BOOST_TEST(!ec3);
  BOOST_TEST(pong.str == "PONG");
}

BOOST_AUTO_TEST_CASE(select_database) {
  wg::test::RedisServer server;
  asio::io_context ioc;
  Settings s3 = settings_for(server.port());
  s3.endpoint.db = 3;
  Client db3(ioc.get_executor(), s3);
  Client db0(ioc.get_executor(), settings_for(server.port()));
  db3.start();
  db0.start();
  BOOST_REQUIRE(run_until(ioc, [&] { return db3.connected() && db0.connected(); }));
  BOOST_TEST(!exec(ioc, db3, {"SET", "k", "in3"}).first);
  BOOST_TEST(exec(ioc, db0, {"GET", "k"}).second.is_nil());
  BOOST_TEST(exec(ioc, db3, {"GET", "k"}).second.str == "in3");
}

BOOST_AUTO_TEST_CASE(host_name_is_resolved_asynchronously) {
  wg::test::RedisServer server;
  asio::io_context ioc;
  Settings s = settings_for(server.port());
  s.endpoint.host = "localhost";  // may resolve to ::1 as well; the server is IPv4 only
  s.connect_timeout = 2s;
  Client client(ioc.get_executor(), s);
  client.start();
  BOOST_REQUIRE(run_until(ioc, [&] { return client.connected(); }));
  BOOST_TEST(exec(ioc, client, {"PING"}).second.str == "PONG");
}

BOOST_AUTO_TEST_CASE(down_server_fails_fast) {
  asio::io_context ioc;
  Client client(ioc.get_executor(), settings_for(wg::test::free_port()));
  // Before start.
  BOOST_TEST((exec(ioc, client, {"PING"}).first == errc::redis_down));
  client.start();
  run_until(
      ioc, [] { return false; }, 300ms);  // a few failed connect attempts
  BOOST_TEST(!client.connected());
  BOOST_TEST((exec(ioc, client, {"PING"}).first == errc::redis_down));
}

// A worker that starts serving the moment it starts its client must not see Redis as down
// just because the first connection is still being made.
BOOST_AUTO_TEST_CASE(a_command_issued_right_after_start_waits_for_the_first_connection) {
  wg::test::RedisServer server;
  asio::io_context ioc;
  Client client(ioc.get_executor(), settings_for(server.port()));
  client.start();
  BOOST_TEST(!client.connected());
  auto [ec, pong] = exec(ioc, client, {"PING"});
  BOOST_TEST(!ec);
  BOOST_TEST(pong.str == "PONG");
}

BOOST_AUTO_TEST_CASE(a_command_issued_right_after_start_fails_when_the_first_attempt_does) {
  asio::io_context ioc;
  Client client(ioc.get_executor(), settings_for(wg::test::free_port()));
  client.start();
  BOOST_TEST((exec(ioc, client, {"PING"}).first == errc::redis_down));
}

BOOST_AUTO_TEST_CASE(reconnects_after_server_restart) {
  Connected c;
  std::mutex m;
  std::vector<bool> events;
  c.client->on_state_change([&](bool up) {
    std::lock_guard lock(m);
    events.push_back(up);
  });
  BOOST_TEST(!c({"SET", "k", "v"}).first);

  c.server.stop();
  BOOST_REQUIRE(run_until(c.ioc, [&] { return !c.client->connected(); }));
  auto down = c({"GET", "k"}).first;
  BOOST_TEST((down == errc::redis_down));

  c.server.start();
  BOOST_REQUIRE(run_until(c.ioc, [&] { return c.client->connected(); }));
  // The data is gone with the restart, but the command goes through.
  auto [ec, reply] = c({"SET", "k", "again"});
  BOOST_TEST(!ec);
  BOOST_TEST(reply.str == "OK");
  std::lock_guard lock(m);
  BOOST_TEST(events == (std::vector<bool>{false, true}));
}

BOOST_AUTO_TEST_CASE(command_timeout_then_recovery) {
  Settings s = with_port0(settings_for(0));
  s.command_timeout = 100ms;
  Connected c(s);
  auto [ec, reply] = c({"DEBUG", "SLEEP", "1"});
  BOOST_TEST((ec == errc::redis_timeout));
  // Commands queued behind the sleep may time out too; the connection then works again,
  // whether the client kept it or replaced it.
  BOOST_TEST(eventually_pong(c));
}

BOOST_AUTO_TEST_CASE(consecutive_timeouts_replace_the_connection) {
  Settings s = with_port0(settings_for(0));
  s.command_timeout = 100ms;
  s.max_consecutive_timeouts = 3;
  Connected c(s);
  std::atomic<int> downs{0};
  c.client->on_state_change([&](bool up) {
    if (!up) downs++;
  });
  std::atomic<int> timeouts{0};
  std::atomic<int> dropped{0};  // still waiting when the connection was dropped
  std::atomic<int> finished{0};
  auto one = [&](std::vector<std::string> args) -> asio::awaitable<void> {
    auto [ec, r] = co_await c.client->command(std::move(args));
    if (ec == errc::redis_timeout) timeouts++;
    if (ec == errc::redis_down) dropped++;
    finished++;
  };
  asio::co_spawn(c.ioc, one({"DEBUG", "SLEEP", "2"}), asio::detached);
  for (int i = 0; i < 3; ++i) asio::co_spawn(c.ioc, one({"PING"}), asio::detached);
  BOOST_REQUIRE(run_until(c.ioc, [&] { return finished.load() == 4; }));
  BOOST_TEST(timeouts.load() >= 3);
  BOOST_TEST(timeouts.load() + dropped.load() == 4);
  BOOST_REQUIRE(run_until(c.ioc, [&] { return downs.load() >= 1 && c.client->connected(); }));
  // The new connection works once the server wakes up.
  BOOST_TEST(eventually_pong(c));
}

BOOST_AUTO_TEST_CASE(overload_is_reported) {
  Settings s = with_port0(settings_for(0));
  s.command_timeout = 10s;
  s.max_pending = 2;
  Connected c(s);
  std::vector<std::error_code> results;
  auto one = [&](std::vector<std::string> args) -> asio::awaitable<void> {
    auto [ec, r] = co_await c.client->command(std::move(args));
    results.push_back(ec);
  };
  // Submitted in this order on the client's strand; the sleep holds the first two in flight.
  asio::co_spawn(c.ioc, one({"DEBUG", "SLEEP", "0.3"}), asio::detached);
  asio::co_spawn(c.ioc, one({"PING"}), asio::detached);
  asio::co_spawn(c.ioc, one({"PING"}), asio::detached);
  BOOST_REQUIRE(run_until(c.ioc, [&] { return results.size() == 3; }));
  BOOST_TEST((results[0] == errc::redis_overloaded));
  BOOST_TEST(!results[1]);
  BOOST_TEST(!results[2]);
}

BOOST_AUTO_TEST_CASE(waiting_commands_complete_when_client_is_destroyed) {
  Settings s = with_port0(settings_for(0));
  s.command_timeout = 10s;
  Connected c(s);
  std::optional<std::error_code> result;
  asio::co_spawn(
      c.ioc,
      [&]() -> asio::awaitable<void> {
        auto [ec, r] = co_await c.client->command(sleep_command("2"));
        result = ec;
      },
      asio::detached);
  run_until(
      c.ioc, [] { return false; }, 100ms);  // sent, and waiting for the reply
  BOOST_TEST(!result.has_value());
  c.client.reset();
  BOOST_REQUIRE(run_until(
      c.ioc, [&] { return result.has_value(); }, 5s));
  BOOST_TEST((*result == errc::shutting_down));
}

BOOST_AUTO_TEST_CASE(stop_completes_waiting_commands_and_later_ones) {
  Settings s = with_port0(settings_for(0));
  s.command_timeout = 10s;
  Connected c(s);
  std::optional<std::error_code> result;
  asio::co_spawn(
      c.ioc,
      [&]() -> asio::awaitable<void> {
        auto [ec, r] = co_await c.client->command(sleep_command("2"));
        result = ec;
      },
      asio::detached);
  run_until(
      c.ioc, [] { return false; }, 100ms);
  c.client->stop();
  BOOST_REQUIRE(run_until(
      c.ioc, [&] { return result.has_value(); }, 5s));
  BOOST_TEST((*result == errc::shutting_down));
  BOOST_TEST(!c.client->connected());
  BOOST_TEST((c({"PING"}).first == errc::shutting_down));
}

BOOST_AUTO_TEST_SUITE_END()  // redis_client_test
