#include "process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace wg::test {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

namespace {

using Steady = std::chrono::steady_clock;

// A loopback socket closed on scope exit.
class Socket {
 public:
  Socket() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    if (fd_ < 0) throw std::runtime_error("socket() failed");
  }
  ~Socket() { ::close(fd_); }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

  bool connect(std::uint16_t port) {
    sockaddr_in addr = loopback(port);
    return ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  void set_timeouts(std::chrono::milliseconds timeout) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
  bool send_all(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  static sockaddr_in loopback(std::uint16_t port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return addr;
  }

 private:
  int fd_;
};

// Finds the first complete line of `text` containing every needle.
std::optional<std::string> find_line(const std::string& text,
                                     std::initializer_list<std::string_view> needles) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) break;  // an incomplete line may still be written to
    std::string_view line(text.data() + start, end - start);
    bool all = true;
    for (std::string_view needle : needles) all = all && line.find(needle) != line.npos;
    if (all) return std::string(line);
    start = end + 1;
  }
  return std::nullopt;
}

// Reads one RESP reply from a blocking byte source, formatting it as text.
class RespReader {
 public:
  // `receive` reads like recv(): bytes read, 0 when closed, negative on error.
  explicit RespReader(std::function<ssize_t(char*, std::size_t)> receive)
      : receive_(std::move(receive)) {}

  std::string reply() {
    std::string line = read_line();
    if (line.empty()) throw std::runtime_error("empty RESP line");
    char type = line[0];
    std::string rest = line.substr(1);
    switch (type) {
      case '+':
        return rest;
      case '-':
        return "(error) " + rest;
      case ':':
        return rest;
      case '$': {
        long long len = std::stoll(rest);
        if (len < 0) return "(nil)";
        std::string data = read_exact(static_cast<std::size_t>(len) + 2);
        data.resize(static_cast<std::size_t>(len));
        return data;
      }
      case '*': {
        long long count = std::stoll(rest);
        if (count < 0) return "(nil)";
        std::string out;
        for (long long i = 0; i < count; ++i) {
          if (i > 0) out += '\n';
          out += reply();
        }
        return out;
      }
      default:
        throw std::runtime_error("bad RESP type: " + line);
    }
  }

 private:
  std::string read_line() {
    for (;;) {
      std::size_t pos = buffer_.find("\r\n");
      if (pos != std::string::npos) {
        std::string line = buffer_.substr(0, pos);
        buffer_.erase(0, pos + 2);
        return line;
      }
      fill();
    }
  }
  std::string read_exact(std::size_t n) {
    while (buffer_.size() < n) fill();
    std::string out = buffer_.substr(0, n);
    buffer_.erase(0, n);
    return out;
  }
  void fill() {
    char chunk[4096];
    ssize_t n = receive_(chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) return;
    if (n <= 0) throw std::runtime_error("redis connection closed or timed out");
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }

  std::function<ssize_t(char*, std::size_t)> receive_;
  std::string buffer_;
};

// A blocking TLS client session over a connected socket (its timeouts apply), for command().
class TlsSession {
 public:
  TlsSession(int fd, const RedisOptions::Tls& tls)
      : context_(SSL_CTX_new(TLS_client_method())), ssl_(nullptr) {
    if (context_ == nullptr) throw std::runtime_error("SSL_CTX_new failed");
    SSL_CTX_set_verify(context_, SSL_VERIFY_PEER, nullptr);
    if (SSL_CTX_load_verify_locations(context_, tls.ca_file.c_str(), nullptr) != 1) {
      throw std::runtime_error("cannot load " + tls.ca_file);
    }
    if (!tls.client_cert_file.empty() &&
        (SSL_CTX_use_certificate_chain_file(context_, tls.client_cert_file.c_str()) != 1 ||
         SSL_CTX_use_PrivateKey_file(context_, tls.client_key_file.c_str(), SSL_FILETYPE_PEM) !=
             1)) {
      throw std::runtime_error("cannot load the client certificate " + tls.client_cert_file);
    }
    ssl_ = SSL_new(context_);
    if (ssl_ == nullptr || SSL_set_fd(ssl_, fd) != 1 || SSL_connect(ssl_) != 1) {
      throw std::runtime_error("TLS handshake with redis-server failed");
    }
  }
  ~TlsSession() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    SSL_CTX_free(context_);
  }
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  bool send_all(std::string_view bytes) {
    return SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size())) ==
           static_cast<int>(bytes.size());
  }
  ssize_t receive(char* data, std::size_t size) {
    int n = SSL_read(ssl_, data, static_cast<int>(size));
    return n > 0 ? n : -1;
  }

 private:
  SSL_CTX* context_;
  SSL* ssl_;
};

std::string resp_command(const std::vector<std::string>& args) {
  std::string request = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) {
    request += "$" + std::to_string(a.size()) + "\r\n";
    request += a;
    request += "\r\n";
  }
  return request;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::uint16_t free_port() {
  Socket s;
  sockaddr_in addr = Socket::loopback(0);
  if (::bind(s.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    throw std::runtime_error("bind(127.0.0.1:0) failed");
  }
  socklen_t len = sizeof addr;
  ::getsockname(s.fd(), reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

bool wait_for_port(std::uint16_t port, std::chrono::milliseconds timeout) {
  auto deadline = Steady::now() + timeout;
  for (;;) {
    {
      Socket s;
      if (s.connect(port)) return true;
    }
    if (Steady::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
}

// ---------------------------------------------------------------------------------------------
// TempDir

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/wg-test-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::write(std::string_view name, std::string_view content) const {
  std::string p = file(name);
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!out) throw std::runtime_error("cannot write " + p);
  return p;
}

// ---------------------------------------------------------------------------------------------
// ChildProcess

ChildProcess::ChildProcess(std::vector<std::string> argv,
                           std::map<std::string, std::string> env_overrides) {
  if (argv.empty()) throw std::invalid_argument("ChildProcess: empty argv");
  log_path_ = dir_.file("output.log");

  // Everything the child needs is prepared before fork(): after it, in a multi-threaded parent,
  // only async-signal-safe calls are allowed.
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);

  std::vector<std::string> env_storage;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    std::string key(entry.substr(0, eq));
    if (env_overrides.count(key) == 0) env_storage.emplace_back(entry);
  }
  for (auto& [key, value] : env_overrides) env_storage.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);

  int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) throw std::runtime_error("cannot create " + log_path_);
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    ::close(null_fd);
    throw std::runtime_error("fork failed");
  }
  if (pid == 0) {
    // The death signal is tied to the forking thread; tests fork from their main thread.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
    // Its own process group, so that stop() also reaches grandchildren (e.g. under /bin/sh -c).
    ::setpgid(0, 0);
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execvpe(args[0], args.data(), envp.data());
    static const char msg[] = "exec failed\n";
    ssize_t ignored = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: whichever runs first wins the race with stop()
  ::close(log_fd);
  ::close(null_fd);
  pid_ = pid;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) stop(SIGTERM, 5s);
}

bool ChildProcess::running() {
  if (status_ || pid_ <= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    status_ = status;
    return false;
  }
  return r == 0;
}

std::string ChildProcess::output() const {
  return read_file(log_path_);
}

std::optional<std::string> ChildProcess::wait_for_line(std::string_view needle,
                                                       std::chrono::milliseconds timeout) {
  auto deadline = Steady::now() + timeout;
  for (;;) {
    bool alive = running();
    if (auto line = find_line(output(), {needle})) return line;
    if (!alive || Steady::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(20ms);
  }
}

void ChildProcess::signal(int sig) {
  if (pid_ > 0 && running()) ::kill(pid_, sig);
}

int ChildProcess::stop(int sig, std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  int result = status_.value_or(-1);
  if (!status_) {
    ::kill(-pid_, sig);
    result = wait_exit(timeout);
  }
  // Whatever the process left behind in its group goes too.
  ::kill(-pid_, SIGKILL);
  return result;
}

int ChildProcess::wait_exit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  auto deadline = Steady::now() + timeout;
  while (running()) {
    if (Steady::now() >= deadline) {
      ::kill(-pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      status_ = status;
      return -1;
    }
    std::this_thread::sleep_for(10ms);
  }
  return status_.value_or(-1);
}

std::optional<std::uint16_t> listening_port(ChildProcess& process, std::string_view listener,
                                            std::chrono::milliseconds timeout) {
  std::string listener_field = "\"listener\":\"" + std::string(listener) + "\"";
  auto deadline = Steady::now() + timeout;
  for (;;) {
    bool alive = process.running();
    if (auto line = find_line(process.output(), {"\"event\":\"listening\"", listener_field})) {
      static constexpr std::string_view key = "\"address\":\"";
      auto start = line->find(key);
      if (start == std::string::npos) return std::nullopt;
      start += key.size();
      auto end = line->find('"', start);
      if (end == std::string::npos) return std::nullopt;
      std::string address = line->substr(start, end - start);
      auto colon = address.rfind(':');
      if (colon == std::string::npos) return std::nullopt;
      try {
        unsigned long port = std::stoul(address.substr(colon + 1));
        if (port == 0 || port > 65535) return std::nullopt;
        return static_cast<std::uint16_t>(port);
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
    if (!alive || Steady::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(20ms);
  }
}

// ---------------------------------------------------------------------------------------------
// RedisServer

RedisServer::RedisServer(std::uint16_t port) : RedisServer(RedisOptions{}, port) {}

RedisServer::RedisServer(RedisOptions options, std::uint16_t port)
    : options_(std::move(options)), port_(port) {
  // A port picked by free_port() can be taken by someone else before redis binds it: retry
  // with another one a few times.
  const int attempts = port == 0 ? 3 : 1;
  for (int i = 0; i < attempts; ++i) {
    if (port == 0) port_ = free_port();
    try {
      start();
      return;
    } catch (const std::exception&) {
      if (i + 1 == attempts) throw;
    }
  }
}

RedisServer::~RedisServer() {
  stop();
}

std::string RedisServer::url() const {
  return std::string(options_.tls ? "rediss" : "redis") + "://127.0.0.1:" + std::to_string(port_) +
         "/0";
}

std::vector<std::string> RedisServer::argv() const {
  std::vector<std::string> argv{"redis-server", "--bind", "127.0.0.1", "--save", "", "--appendonly",
                                "no", "--daemonize", "no", "--dir", dir_.path(),
                                // DEBUG SLEEP simulates a stalled server.
                                "--enable-debug-command", "local"};
  auto add = [&argv](std::initializer_list<std::string> words) {
    argv.insert(argv.end(), words.begin(), words.end());
  };
  if (options_.tls) {
    add({"--port", "0", "--tls-port", std::to_string(port_), "--tls-cert-file",
         options_.tls->cert_file, "--tls-key-file", options_.tls->key_file, "--tls-ca-cert-file",
         options_.tls->ca_file, "--tls-auth-clients", options_.tls->auth_clients});
  } else {
    add({"--port", std::to_string(port_)});
  }
  if (!options_.requirepass.empty()) add({"--requirepass", options_.requirepass});
  for (const auto& user : options_.users) {
    // Each word its own argument: redis-server joins them into one `user` directive.
    argv.push_back("--user");
    argv.insert(argv.end(), user.begin(), user.end());
  }
  return argv;
}

void RedisServer::stop() {
  if (!process_) return;
  // SIGTERM makes redis close its clients and exit cleanly (nothing to save: --save "").
  process_->stop(SIGTERM, 10s);
  process_.reset();
}

void RedisServer::start() {
  if (running()) return;
  process_.reset();
  process_.emplace(argv());
  auto deadline = Steady::now() + 10s;
  while (Steady::now() < deadline) {
    if (!process_->running()) break;
    // The log line proves that this process, not another one on the port, is accepting.
    if (process_->output().find("Ready to accept connections") != std::string::npos &&
        wait_for_port(port_, 1s)) {
      return;
    }
    std::this_thread::sleep_for(20ms);
  }
  std::string output = process_->output();
  process_->stop(SIGKILL, 5s);
  process_.reset();
  throw std::runtime_error("redis-server did not start on port " + std::to_string(port_) + ": " +
                           output);
}

bool RedisServer::running() const {
  return process_.has_value() && const_cast<ChildProcess&>(*process_).running();
}

std::string RedisServer::command(const std::vector<std::string>& args) const {
  std::string request;
  const bool auth = !options_.requirepass.empty();
  if (auth) request = resp_command({"AUTH", options_.requirepass});
  request += resp_command(args);
  Socket s;
  s.set_timeouts(5s);
  if (!s.connect(port_)) throw std::runtime_error("cannot connect to redis-server");
  std::optional<TlsSession> tls;
  if (options_.tls) tls.emplace(s.fd(), *options_.tls);
  const bool sent = tls ? tls->send_all(request) : s.send_all(request);
  if (!sent) throw std::runtime_error("cannot send to redis-server");
  RespReader reader([&](char* data, std::size_t size) -> ssize_t {
    return tls ? tls->receive(data, size) : ::recv(s.fd(), data, size, 0);
  });
  if (auth) {
    std::string ok = reader.reply();
    if (ok != "OK") throw std::runtime_error("AUTH failed: " + ok);
  }
  return reader.reply();
}

long long RedisServer::integer(const std::vector<std::string>& args) const {
  const std::string text = command(args);
  return text == "(nil)" ? 0 : std::stoll(text);
}

// ---------------------------------------------------------------------------------------------
// HTTP

std::string HttpResponse::header(std::string_view name) const {
  auto it = headers.find(lower(name));
  return it == headers.end() ? std::string() : it->second;
}

HttpResponse http_request(std::uint16_t port, std::string_view method, std::string_view target,
                          const std::map<std::string, std::string>& headers,
                          std::chrono::milliseconds timeout) {
  namespace asio = boost::asio;
  namespace beast = boost::beast;
  namespace http = beast::http;

  // Asynchronous operations on a private io_context: the only way to get Beast's per-operation
  // deadlines, and run() makes the whole exchange blocking for the caller.
  asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  beast::flat_buffer buffer;
  http::request<http::string_body> request;
  http::response_parser<http::string_body> parser;
  parser.body_limit(256 * 1024 * 1024);
  // A response to HEAD announces a Content-Length but carries no body.
  if (method == "HEAD") parser.skip(true);
  HttpResponse result;
  boost::system::error_code failure;

  http::verb verb = http::string_to_verb(method);
  if (verb == http::verb::unknown) {
    request.method_string(method);
  } else {
    request.method(verb);
  }
  request.target(target);
  request.version(11);
  request.set(http::field::host, "127.0.0.1:" + std::to_string(port));
  request.set(http::field::connection, "close");
  for (const auto& [name, value] : headers) request.set(name, value);
  request.prepare_payload();

  asio::ip::tcp::endpoint endpoint(asio::ip::address_v4::loopback(), port);
  stream.expires_after(timeout);
  stream.async_connect(endpoint, [&](boost::system::error_code ec) {
    if (ec) {
      failure = ec;
      return;
    }
    http::async_write(stream, request, [&](boost::system::error_code ec, std::size_t) {
      if (ec) {
        failure = ec;
        return;
      }
      http::async_read(stream, buffer, parser,
                       [&](boost::system::error_code ec, std::size_t) { failure = ec; });
    });
  });
  ioc.run();

  if (failure) {
    result.status = 0;
    result.body = failure.message();
    return result;
  }
  auto& response = parser.get();
  result.status = static_cast<int>(response.result_int());
  for (const auto& field : response) {
    std::string name = lower(field.name_string());
    auto [it, inserted] = result.headers.emplace(name, std::string(field.value()));
    if (!inserted) {
      it->second += ", ";
      it->second += std::string(field.value());
    }
  }
  result.body = std::move(response.body());
  boost::system::error_code ignored;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  return result;
}

std::string raw_exchange(std::uint16_t port, std::string_view bytes,
                         std::chrono::milliseconds timeout) {
  Socket s;
  if (!s.connect(port)) return {};
  s.set_timeouts(timeout);
  auto deadline = Steady::now() + timeout;
  std::string out;
  if (!s.send_all(bytes)) return out;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now());
    if (left.count() <= 0) break;
    pollfd p{s.fd(), POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    char chunk[4096];
    ssize_t n = ::recv(s.fd(), chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // closed or reset: return what arrived
    out.append(chunk, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace wg::test
