#include "widget_gateway/tracing/otlp_exporter.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/common/log.hpp"

namespace wg::tracing {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::uint32_t kMaxAnswerBytes = 64 * 1024;  // a collector's answer is small

}  // namespace

bool split_endpoint(std::string_view url, ExporterSettings& settings) {
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed || parsed->scheme_id() != boost::urls::scheme::http) return false;
  if (!parsed->has_authority() || parsed->encoded_host().empty()) return false;
  settings.host = parsed->host_address();
  const auto port = parsed->port();
  settings.port = parsed->has_port() ? std::string(port.data(), port.size()) : "80";
  const auto path = parsed->encoded_path();
  settings.target = path.empty() || path == "/" ? std::string("/v1/traces")
                                                : std::string(path.data(), path.size());
  return true;
}

OtlpExporter::OtlpExporter(asio::any_io_executor ex, ExporterSettings settings,
                           std::vector<SpanQueue*> queues)
    : ex_(ex), settings_(std::move(settings)), queues_(std::move(queues)), timer_(ex) {}

void OtlpExporter::start() {
  asio::co_spawn(ex_, run(), asio::detached);
}

asio::awaitable<void> OtlpExporter::stop() {
  stopping_ = true;
  timer_.cancel();
  co_await export_queued();
}

asio::awaitable<void> OtlpExporter::run() {
  while (!stopping_) {
    timer_.expires_after(settings_.interval);
    co_await timer_.async_wait(use_tuple);
    if (stopping_) break;
    co_await export_queued();
  }
}

asio::awaitable<void> OtlpExporter::export_queued() {
  // Batch after batch while the queues hold a full one; what fails waits for no retry. Locals,
  // not members: stop() may run one more of these while the loop's is still posting.
  std::vector<SpanData> batch;
  std::string body;
  for (;;) {
    batch.clear();
    for (SpanQueue* queue : queues_) {
      if (batch.size() >= settings_.max_batch) break;
      queue->drain(batch, settings_.max_batch - batch.size());
    }
    if (batch.empty()) co_return;
    body.clear();
    append_otlp_json(body, {settings_.service_name, settings_.service_version}, batch);
    const std::size_t spans = batch.size();
    batch.clear();
    const std::string error = co_await post(body);
    if (!error.empty()) {
      failed_.fetch_add(spans, std::memory_order_relaxed);
      if (!failing_) {
        log::warn("trace_export_failed", {{"collector", settings_.host + ":" + settings_.port},
                                          {"error", error},
                                          {"spans", static_cast<long long>(spans)}});
      }
      failing_ = true;
      co_return;
    }
    exported_.fetch_add(spans, std::memory_order_relaxed);
    failing_ = false;
    if (spans < settings_.max_batch) co_return;
  }
}

asio::awaitable<std::string> OtlpExporter::post(const std::string& body) {
  using namespace asio::experimental::awaitable_operators;
  const auto deadline = timer_now() + settings_.timeout;  // it arms timers (clock.hpp)
  tcp::resolver resolver(ex_);
  asio::steady_timer resolve_timer(ex_, deadline);
  // The resolver has no deadline of its own: raced against a timer, the loser is cancelled.
  auto resolved = co_await (resolver.async_resolve(settings_.host, settings_.port, use_tuple) ||
                            resolve_timer.async_wait(use_tuple));
  if (resolved.index() == 1) co_return "resolve timed out";
  auto [resolve_ec, endpoints] = std::get<0>(std::move(resolved));
  if (resolve_ec) co_return resolve_ec.message();

  beast::tcp_stream stream(ex_);
  stream.expires_at(deadline);
  auto [connect_ec, endpoint] = co_await stream.async_connect(endpoints, use_tuple);
  if (connect_ec) co_return connect_ec.message();

  http::request<http::string_body> request{http::verb::post, settings_.target, 11};
  request.set(http::field::host, settings_.host + ":" + settings_.port);
  request.set(http::field::content_type, "application/json");
  request.set(http::field::user_agent, "widget-gateway/" + settings_.service_version);
  request.keep_alive(false);
  request.body() = body;
  request.prepare_payload();
  auto [write_ec, written] = co_await http::async_write(stream, request, use_tuple);
  if (write_ec) co_return write_ec.message();

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxAnswerBytes);
  auto [read_ec, read] = co_await http::async_read(stream, buffer, parser, use_tuple);
  if (read_ec) co_return read_ec.message();
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  const unsigned status = parser.get().result_int();
  if (status < 200 || status >= 300) co_return "status " + std::to_string(status);
  co_return std::string();
}

}  // namespace wg::tracing
