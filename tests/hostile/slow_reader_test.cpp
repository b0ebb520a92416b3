// Clients that ask for answers and do not read them, against a real gateway (redis-server, the
// stub, the gateway; docs/listener.md, "Output budget"): over HTTP/2, 40 connections x 100
// streams of distinct derived pages with a zero window opened one byte at a time; over
// HTTP/1.1, hundreds of connections that send a request and never read. The gateway's resident
// memory less what L1 holds stays within the output budget (plus a fixed allowance), a normal
// client is served meanwhile, and the slow readers are closed within a send-rate interval. Big
// pages sent from a file (sendfile) are checked the same way, and against upstream's bytes.
//
// The attackers are raw sockets driven by one poll loop in this process (HTTP/2 frames built
// by hand, answers' header blocks decoded with nghttp2's HPACK inflater), so that the window
// updates are exactly one byte. Nothing is timed: every wait polls for a condition with a
// generous deadline.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "integration/stack.hpp"
#include "support/binaries.hpp"

using namespace wg::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kMiB = 1024 * 1024;

// Under AddressSanitizer freed memory sits in quarantine and resident memory follows allocation
// churn, not live memory: for a sanitized gateway only its own count of what answers hold
// (wg_output_pending_bytes) is checked against the budget.
bool rss_means_live_memory() { return !binaries_sanitized(); }

// Resident memory of a process, in bytes (VmRSS).
std::size_t rss_bytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
  }
  return 0;
}

// What the gateway's memory holds beyond its L1: RSS less wg_cache_bytes{tier="l1"}.
std::size_t beyond_cache(Gateway& gateway) {
  const auto cache =
      static_cast<std::size_t>(metric_sum(gateway.admin_port(), "wg_cache_bytes", "tier=\"l1\""));
  const std::size_t rss = rss_bytes(gateway.process().pid());
  return rss > cache ? rss - cache : 0;
}

// `slow`: a small receive buffer and small segments, so that the server's kernel buffers take
// only some 100 KB of what the client does not read (on loopback, with 64 KB segments, they
// would grow to megabytes and hide the answers waiting in the gateway).
int connect_to(std::uint16_t port, bool slow = false) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  if (slow) {
    const int receive_buffer = 4096, segment = 536;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    ::setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &segment, sizeof segment);
  }
  timeval send_timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// --- HTTP/2 frames ---------------------------------------------------------------------------

constexpr std::uint8_t kData = 0x0, kHeaders = 0x1, kRstStream = 0x3, kSettings = 0x4,
                       kGoaway = 0x7, kWindowUpdate = 0x8;
constexpr std::uint8_t kEndStream = 0x1, kEndHeaders = 0x4, kAck = 0x1;
constexpr std::uint32_t kRefusedStream = 0x7;

std::string be32(std::uint32_t value) {
  std::string out;
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(value >> shift));
  return out;
}

std::uint32_t read_be32(std::string_view bytes) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<std::uint8_t>(bytes[i]);
  return v;
}

std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                  std::string_view payload) {
  const std::size_t n = payload.size();
  std::string f{static_cast<char>(n >> 16), static_cast<char>(n >> 8), static_cast<char>(n),
                static_cast<char>(type), static_cast<char>(flags)};
  return f + be32(stream) + std::string(payload);
}

// HPACK: an integer with an N-bit prefix, and a literal field without indexing whose name is
// a static-table entry (1 :authority, 4 :path).
std::string hpack_int(int prefix_bits, std::size_t value) {
  std::string out;
  const std::size_t max = (1u << prefix_bits) - 1;
  if (value < max) return std::string(1, static_cast<char>(value));
  out.push_back(static_cast<char>(max));
  for (value -= max; value >= 128; value /= 128) {
    out.push_back(static_cast<char>((value % 128) | 0x80));
  }
  out.push_back(static_cast<char>(value));
  return out;
}
std::string literal(std::size_t name_index, std::string_view value) {
  return hpack_int(4, name_index) + hpack_int(7, value.size()) + std::string(value);
}

std::string get_request(std::uint32_t stream, std::string_view path) {
  std::string block;
  block.push_back(static_cast<char>(0x82));  // :method GET
  block.push_back(static_cast<char>(0x86));  // :scheme http
  block += literal(4, path);
  block += literal(1, "gw.test");
  return frame(kHeaders, kEndStream | kEndHeaders, stream, block);
}

// The client preface, with every stream's window at 0: no DATA flows until it is opened.
std::string preface_with_zero_window() {
  std::string settings("\x00\x04", 2);  // SETTINGS_INITIAL_WINDOW_SIZE
  settings += be32(0);
  return std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + frame(kSettings, 0, 0, settings);
}

// One HTTP/2 connection that asks for many answers and opens each stream's window one byte at
// a time.
class TrickleClient {
 public:
  explicit TrickleClient(std::uint16_t port) : fd_(connect_to(port)) {
    nghttp2_hd_inflate_new(&inflater_);
  }
  ~TrickleClient() {
    nghttp2_hd_inflate_del(inflater_);
    if (fd_ >= 0) ::close(fd_);
  }
  TrickleClient(const TrickleClient&) = delete;
  TrickleClient& operator=(const TrickleClient&) = delete;

  int fd() const { return closed ? -1 : fd_; }

  bool ask(const std::vector<std::string>& paths) {
    std::string bytes = preface_with_zero_window();
    std::uint32_t id = 1;
    for (const auto& path : paths) {
      bytes += get_request(id, path);
      id += 2;
    }
    return send_all(fd_, bytes);
  }

  // One byte more for every stream answered and not finished.
  void trickle() {
    if (closed) return;
    std::string bytes;
    for (std::uint32_t id : answered) {
      if (ended.count(id) == 0) bytes += frame(kWindowUpdate, 0, id, be32(1));
    }
    if (!bytes.empty() && !send_all(fd_, bytes)) closed = true;
  }

  // Reads what is there (the socket is readable).
  void read_some() {
    char buffer[16384];
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
      closed = true;
      return;
    }
    if (n < 0) return;
    pending_.append(buffer, static_cast<std::size_t>(n));
    parse();
  }

  std::set<std::uint32_t> answered;  // a 200 head arrived
  std::set<std::uint32_t> ended;     // END_STREAM seen
  std::set<std::uint32_t> refused;   // RST_STREAM REFUSED_STREAM
  std::size_t other_statuses = 0;
  std::size_t data_bytes = 0;
  bool goaway = false;
  bool closed = false;

 private:
  void parse() {
    while (pending_.size() >= 9) {
      const std::size_t length = (static_cast<std::uint8_t>(pending_[0]) << 16) |
                                 (static_cast<std::uint8_t>(pending_[1]) << 8) |
                                 static_cast<std::uint8_t>(pending_[2]);
      if (pending_.size() < 9 + length) return;
      const auto type = static_cast<std::uint8_t>(pending_[3]);
      const auto flags = static_cast<std::uint8_t>(pending_[4]);
      const std::uint32_t stream = read_be32(std::string_view(pending_).substr(5)) & 0x7fffffffu;
      const std::string payload = pending_.substr(9, length);
      pending_.erase(0, 9 + length);
      if (type == kHeaders) on_headers(stream, payload);
      if (type == kData) data_bytes += payload.size();
      if ((type == kHeaders || type == kData) && (flags & kEndStream)) ended.insert(stream);
      if (type == kRstStream && payload.size() == 4 && read_be32(payload) == kRefusedStream) {
        refused.insert(stream);
      }
      if (type == kSettings && (flags & kAck) == 0) send_all(fd_, frame(kSettings, kAck, 0, ""));
      if (type == kGoaway) goaway = true;
    }
  }
  void on_headers(std::uint32_t stream, const std::string& block) {
    auto* in = reinterpret_cast<const std::uint8_t*>(block.data());
    std::size_t left = block.size();
    for (;;) {
      nghttp2_nv nv;
      int flags = 0;
      const ssize_t n = nghttp2_hd_inflate_hd2(inflater_, &nv, &flags, in, left, 1);
      if (n < 0) return;
      in += n;
      left -= static_cast<std::size_t>(n);
      if ((flags & NGHTTP2_HD_INFLATE_EMIT) != 0 &&
          std::string_view(reinterpret_cast<const char*>(nv.name), nv.namelen) == ":status") {
        if (std::string_view(reinterpret_cast<const char*>(nv.value), nv.valuelen) == "200") {
          answered.insert(stream);
        } else {
          ++other_statuses;
        }
      }
      if (flags & NGHTTP2_HD_INFLATE_FINAL) {
        nghttp2_hd_inflate_end_headers(inflater_);
        return;
      }
      if ((flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) return;
    }
  }

  int fd_ = -1;
  nghttp2_hd_inflater* inflater_ = nullptr;
  std::string pending_;
};

// Reads every client's bytes for `period`, opening one byte per answered stream every 200 ms.
void pump(std::vector<std::unique_ptr<TrickleClient>>& clients, std::chrono::milliseconds period) {
  const auto end = Clock::now() + period;
  auto next_trickle = Clock::now();
  while (Clock::now() < end) {
    if (Clock::now() >= next_trickle) {
      for (auto& client : clients) client->trickle();
      next_trickle = Clock::now() + 200ms;
    }
    std::vector<pollfd> fds;
    std::vector<TrickleClient*> owners;
    for (auto& client : clients) {
      if (client->fd() < 0) continue;
      fds.push_back({client->fd(), POLLIN, 0});
      owners.push_back(client.get());
    }
    if (fds.empty()) return;
    if (::poll(fds.data(), fds.size(), 50) <= 0) continue;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents != 0) owners[i]->read_some();
    }
  }
}

template <class F>
std::size_t total(const std::vector<std::unique_ptr<TrickleClient>>& clients, F of) {
  std::size_t sum = 0;
  for (const auto& client : clients) sum += of(*client);
  return sum;
}

// The widget with 700 reviews (the stub's widget 0), its windows cached, so that every page
// asked for below is cut from them: distinct pages, no upstream request each.
struct SlowWorld {
  RedisServer redis;
  Stub stub;
  std::string widget;
  SlowWorld() {
    auto widgets = stub.widgets(1);
    if (widgets.empty() || widgets[0].total_review_amount != 700) {
      throw std::runtime_error("the stub's widget 0 should have 700 reviews");
    }
    widget = widgets[0].id;
  }
  void warm(Gateway& gateway) {
    for (const char* window : {"limit=300&skip=0", "limit=300&skip=300", "limit=300&skip=600"}) {
      auto response = gateway.get(reviews_path(widget, window));
      if (response.status != 200) throw std::runtime_error("could not warm the windows");
    }
  }
  // The n-th distinct page: 250..299 reviews from skip 1..400, across two windows.
  std::string page(std::size_t n) const {
    const std::size_t skip = 1 + n / 50, limit = 250 + n % 50;
    return reviews_path(widget, "limit=" + std::to_string(limit) + "&skip=" + std::to_string(skip));
  }
};

// curl over h2c with prior knowledge: "<status>" of one GET, or "" when it failed.
std::string curl_h2_status(std::uint16_t port, const std::string& target) {
  ChildProcess process({"curl", "-sS", "--max-time", "20", "--http2-prior-knowledge", "-o",
                        "/dev/null", "-w", "%{http_code}",
                        "http://127.0.0.1:" + std::to_string(port) + target});
  const int status = process.wait_exit(30s);
  if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return "";
  return process.output();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(slow_reader_test)

// 40 connections x 100 streams of distinct derived pages, each stream's window at 0 and opened
// one byte every 200 ms: the memory the answers pin stays within the budget, a normal client
// is served meanwhile over HTTP/1.1 and HTTP/2, and every attacker is closed as a slow reader
// within one send-rate interval.
BOOST_AUTO_TEST_CASE(http2_zero_window_trickle_is_bounded_and_closed) {
  constexpr std::size_t kConnections = 40, kStreams = 100;
  constexpr std::size_t kBudget = 64 * kMiB;
  // Beyond the budget: 4,000 open streams' request heads and their waiting handlers (a few KiB
  // each), 40 HTTP/2 sessions with their buffers, and what the allocator keeps of two worker
  // threads' churn.
  constexpr std::size_t kAllowance = 32 * kMiB;
  SlowWorld world;
  Gateway gateway(world.stub.base_url(), world.redis.url(), {},
                  "[server]\n"
                  "max_pending_output_bytes = \"64MiB\"\n"
                  "max_pending_output_bytes_per_connection = \"512KiB\"\n"
                  "send_rate_interval = \"10s\"\n"
                  "[cache]\n"
                  "l1_max_bytes = \"8MiB\"\n");
  world.warm(gateway);
  const std::size_t before = beyond_cache(gateway);

  std::vector<std::unique_ptr<TrickleClient>> clients;
  for (std::size_t c = 0; c < kConnections; ++c) {
    std::vector<std::string> paths;
    for (std::size_t s = 0; s < kStreams; ++s) paths.push_back(world.page(c * kStreams + s));
    clients.push_back(std::make_unique<TrickleClient>(gateway.port()));
    BOOST_REQUIRE(clients.back()->ask(paths));
  }
  // Until the answers stop coming (every connection holds what it may).
  std::size_t answered = 0;
  for (int round = 0; round < 40; ++round) {
    pump(clients, 500ms);
    const std::size_t now = total(clients, [](auto& c) { return c.answered.size(); });
    if (now == answered && now >= kConnections) break;
    answered = now;
  }
  const std::size_t held = beyond_cache(gateway);
  const double pending = metric_sum(gateway.admin_port(), "wg_output_pending_bytes");
  BOOST_TEST_MESSAGE("answered " << answered << ", refused "
                                 << total(clients, [](auto& c) { return c.refused.size(); })
                                 << "; RSS less L1: before " << before / kMiB << " MiB, during "
                                 << held / kMiB << " MiB; wg_output_pending_bytes "
                                 << pending / kMiB << " MiB");
  BOOST_TEST(answered >= kConnections);  // the attack did pin answers
  BOOST_TEST(total(clients, [](auto& c) { return c.other_statuses; }) == 0u);
  if (rss_means_live_memory()) BOOST_TEST(held < before + kBudget + kAllowance);
  BOOST_TEST(pending <= static_cast<double>(kBudget));

  // A normal client is served meanwhile, over both protocols.
  auto h1 = gateway.get(reviews_path(world.widget, "limit=20&skip=5"));
  BOOST_TEST(h1.status == 200);
  BOOST_TEST(curl_h2_status(gateway.port(), reviews_path(world.widget, "limit=21&skip=5")) ==
             "200");

  // Within one interval (10 s) every attacker is closed, and what it held is let go.
  const auto deadline = Clock::now() + 40s;
  while (Clock::now() < deadline &&
         total(clients, [](auto& c) { return c.closed ? 1 : 0; }) < kConnections) {
    pump(clients, 500ms);
  }
  BOOST_TEST(total(clients, [](auto& c) { return c.closed ? 1 : 0; }) == kConnections);
  BOOST_TEST(total(clients, [](auto& c) { return c.goaway ? 1 : 0; }) >= 1u);
  BOOST_TEST(metric_sum(gateway.admin_port(), "wg_connections_closed_total",
                        "reason=\"slow_reader\"") >= static_cast<double>(kConnections));
  BOOST_TEST(eventually(
      [&] { return metric_sum(gateway.admin_port(), "wg_output_pending_bytes") == 0; }, 10s));
  BOOST_TEST(gateway.process().running());
}

// HTTP/1.1: 400 connections each ask for a distinct page and never read. Past the budget a
// request waits before its handler until answers go (first come, first served); answers that
// raced past it get 503 (Retry-After). Memory stays within the budget, the slow readers are
// closed within an interval, and a normal client is served once those ahead of it are
// (retrying on 503 as asked).
BOOST_AUTO_TEST_CASE(http1_clients_that_never_read_are_bounded_and_closed) {
  constexpr std::size_t kConnections = 400;
  constexpr std::size_t kBudget = 8 * kMiB;
  // Beyond the budget: 400 connections' buffers, parsers and coroutine frames (a few KiB
  // each), and what the allocator keeps of two worker threads' churn.
  constexpr std::size_t kAllowance = 16 * kMiB;
  SlowWorld world;
  Gateway gateway(world.stub.base_url(), world.redis.url(), {},
                  "[server]\n"
                  "max_pending_output_bytes = \"8MiB\"\n"
                  "send_rate_interval = \"2s\"\n"
                  "[cache]\n"
                  "l1_max_bytes = \"8MiB\"\n");
  world.warm(gateway);
  const std::size_t before = beyond_cache(gateway);

  std::vector<int> fds;
  for (std::size_t c = 0; c < kConnections; ++c) {
    const int fd = connect_to(gateway.port(), true);
    BOOST_REQUIRE(fd >= 0);
    BOOST_REQUIRE(send_all(fd, "GET " + world.page(c) + " HTTP/1.1\r\nHost: gw.test\r\n\r\n"));
    fds.push_back(fd);
  }
  // Until the gateway holds what it may (its pending bytes stop growing).
  double pending = 0;
  for (int round = 0; round < 20; ++round) {
    std::this_thread::sleep_for(250ms);
    const double now = metric_sum(gateway.admin_port(), "wg_output_pending_bytes");
    if (now > 0 && now == pending) break;
    pending = now;
  }
  const std::size_t held = beyond_cache(gateway);
  const double paused = metric_sum(gateway.admin_port(), "wg_output_paused_total");
  const double refused = metric_sum(gateway.admin_port(), "wg_output_refused_total");
  BOOST_TEST_MESSAGE("RSS less L1: before " << before / kMiB << " MiB, during " << held / kMiB
                                            << " MiB; wg_output_pending_bytes " << pending / kMiB
                                            << " MiB; connections paused " << paused
                                            << ", answers refused " << refused);
  BOOST_TEST(pending > 0);
  if (rss_means_live_memory()) BOOST_TEST(held < before + kBudget + kAllowance);
  BOOST_TEST(pending <= static_cast<double>(kBudget));

  BOOST_TEST(eventually(
      [&] {
        return metric_sum(gateway.admin_port(), "wg_connections_closed_total",
                          "reason=\"slow_reader\"") > 0;
      },
      30s));
  // The normal client came last: it waits its turn behind the slow readers that came before
  // it, each turn an interval (2 s) at most.
  bool served = false;
  const auto deadline = Clock::now() + 60s;
  while (!served && Clock::now() < deadline) {
    auto response =
        http_request(gateway.port(), "GET", reviews_path(world.widget, "limit=20&skip=5"), {}, 45s);
    served = response.status == 200;
    if (!served) {
      BOOST_TEST(response.status == 503);
      std::this_thread::sleep_for(1s);
    }
  }
  BOOST_TEST(served);
  for (int fd : fds) ::close(fd);
  BOOST_TEST(eventually(
      [&] { return metric_sum(gateway.admin_port(), "wg_output_pending_bytes") == 0; }, 20s));
  BOOST_TEST(gateway.process().running());
}

namespace {

// Anonymous memory files the gateway holds open (/proc/PID/fd links to "/memfd:wg-body").
std::size_t body_files_open(pid_t pid) {
  std::size_t n = 0;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  for (int fd = 0; fd < 4096; ++fd) {
    char target[256];
    const std::string link = dir + "/" + std::to_string(fd);
    const ssize_t len = ::readlink(link.c_str(), target, sizeof target - 1);
    if (len <= 0) continue;
    if (std::string_view(target, static_cast<std::size_t>(len)).starts_with("/memfd:wg-body")) ++n;
  }
  return n;
}

}  // namespace

// A 155 KB page asked for again goes out of a sealed memory file with sendfile: the bytes are
// upstream's on every answer, clients that stop reading such an answer are closed as slow
// readers as the in-memory path closes them, and clients that hang up mid-answer cost nothing.
BOOST_AUTO_TEST_CASE(big_pages_sent_from_a_file_are_upstreams_bytes_and_slow_readers_end) {
  SlowWorld world;
  Gateway gateway(world.stub.base_url(), world.redis.url(), {},
                  "[server]\n"
                  "send_rate_interval = \"2s\"\n");
  const std::string page = reviews_path(world.widget, "limit=300&skip=0");
  const HttpResponse upstream = stub_get(world.stub, page);
  BOOST_REQUIRE_EQUAL(upstream.status, 200);
  BOOST_REQUIRE_GT(upstream.body.size(), 100'000u);
  // Each of the two workers makes its file on its second answer; new connections spread over
  // both.
  for (int i = 0; i < 12; ++i) {
    const HttpResponse response = gateway.get(page);
    BOOST_TEST(response.status == 200);
    BOOST_TEST((response.body == upstream.body), "answer " << i << " differs from upstream's");
  }
  BOOST_TEST(body_files_open(gateway.process().pid()) >= 1u);

  // Hung up after the first bytes, a few answers queued behind on each connection.
  for (int c = 0; c < 50; ++c) {
    const int fd = connect_to(gateway.port());
    BOOST_REQUIRE(fd >= 0);
    std::string requests;
    for (int r = 0; r < 3; ++r) requests += "GET " + page + " HTTP/1.1\r\nHost: gw.test\r\n\r\n";
    BOOST_REQUIRE(send_all(fd, requests));
    char some[1000];
    (void)::recv(fd, some, sizeof some, 0);
    const linger reset{1, 0};  // RST, not FIN: the gateway's next send fails at once
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    ::close(fd);
  }

  // Never read: three answers (460 KB) are more than the kernel's buffers take, so one stalls
  // with most of its body unsent.
  std::vector<int> fds;
  for (int c = 0; c < 20; ++c) {
    const int fd = connect_to(gateway.port(), true);
    BOOST_REQUIRE(fd >= 0);
    std::string requests;
    for (int r = 0; r < 3; ++r) requests += "GET " + page + " HTTP/1.1\r\nHost: gw.test\r\n\r\n";
    BOOST_REQUIRE(send_all(fd, requests));
    fds.push_back(fd);
  }
  BOOST_TEST(eventually(
      [&] {
        return metric_sum(gateway.admin_port(), "wg_connections_closed_total",
                          "reason=\"slow_reader\"") >= 20;
      },
      30s));
  for (int fd : fds) ::close(fd);

  const HttpResponse after = gateway.get(page);
  BOOST_TEST(after.status == 200);
  BOOST_TEST((after.body == upstream.body));
  BOOST_TEST(gateway.process().running());
}

BOOST_AUTO_TEST_SUITE_END()  // slow_reader_test
