#pragma once
// One io worker's tracing: its id generator, its sampling decisions and its span queue. A
// request's trace is continued from a valid `traceparent` or started here; its ids reach
// upstream (`traceparent`), the access log (`trace_id`) and, when sampled and an OTLP endpoint
// is set, the exporter (docs/tracing.md).
//
// Threads: one Tracer per worker, used on that worker's thread only (the queue is the one
// part another thread, the exporter's, touches). Nothing here allocates or draws a random
// number on a request that needs no id: ids are made when first asked for.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/tracing/span.hpp"
#include "widget_gateway/tracing/span_queue.hpp"
#include "widget_gateway/tracing/trace_context.hpp"

namespace wg::tracing {

// xoshiro256** seeded once (through splitmix64): fast, and good enough for ids that must be
// unique, not secret. Not thread-safe: one per worker.
class IdGenerator {
 public:
  explicit IdGenerator(std::uint64_t seed);
  std::uint64_t next();
  TraceId trace_id();  // never all zero
  SpanId span_id();    // never all zero
  double uniform01();

 private:
  std::array<std::uint64_t, 4> state_{};
};

struct TracerSettings {
  bool exporting = false;               // tracing.otlp_endpoint is set: sampled spans are recorded
  double sample = 0.1;                  // head sampling of traces started here (0..1)
  std::size_t max_queued_spans = 1024;  // this worker's queue
};

class Tracer;

// What a span's children need: the trace, the span they hang under, the flags sent upstream,
// and whether they are recorded. Default: no tracing at all (no ids, nothing sent).
struct SpanContext {
  Tracer* tracer = nullptr;
  TraceId trace_id;
  SpanId span_id;  // the parent of children; none when nothing is recorded
  std::uint8_t flags = 0;
  bool recording = false;
  std::string trace_state;  // the request's `tracestate`, carried upstream as it came
};

// A span being timed. Recorded (handed to the worker's queue) by end() when its trace is
// sampled; otherwise it only holds the id a caller may need (an upstream fetch's, which goes
// upstream in `traceparent` whether or not it is recorded).
class Span {
 public:
  Span() = default;
  Span(Span&&) noexcept = default;
  Span& operator=(Span&&) noexcept = default;

  // A child of `parent`. `with_id`: give it an id even when it is not recorded.
  static Span child(const SpanContext& parent, std::string_view name, SpanKind kind,
                    bool with_id = false);

  bool recording() const { return data_ != nullptr; }
  const SpanId& id() const { return id_; }
  const TraceId& trace_id() const { return trace_id_; }

  void set(std::string_view key, std::string value);
  void set(std::string_view key, const char* value) { set(key, std::string(value)); }
  void set(std::string_view key, std::int64_t value);
  void set(std::string_view key, bool value);
  void link(const TraceId& trace_id, const SpanId& span_id);
  void fail();  // the span's status: error
  // What its children take.
  SpanContext context() const;
  // Records it once (when recording); a span never ended is never recorded.
  void end();

 private:
  friend class Tracer;
  friend class RequestTrace;
  Tracer* tracer_ = nullptr;
  TraceId trace_id_;
  SpanId id_;
  std::uint8_t flags_ = 0;
  std::unique_ptr<SpanData> data_;
};

// One request's trace on the public listener: the server span and what the request's
// children, its access-log line and upstream need of it.
class RequestTrace {
 public:
  RequestTrace() = default;  // no tracer: no ids anywhere

  // The trace id: the incoming one, or one made now.
  const TraceId& trace_id();
  // Its 32 hex characters, for the access log; valid while this object lives.
  std::string_view trace_id_hex();
  // What the request's children (lookups, the fetch) take; makes the trace id if needed.
  SpanContext context();
  bool recording() const { return server_.recording(); }
  // The server span, for its attributes (not recorded: setting them does nothing).
  Span& span() { return server_; }
  void end() { server_.end(); }

 private:
  friend class Tracer;
  Tracer* tracer_ = nullptr;
  std::string trace_state_;
  Span server_;
  std::array<char, 32> hex_{};
  bool hex_written_ = false;
};

class Tracer {
 public:
  Tracer(TracerSettings settings, Clock& clock, std::uint64_t seed);

  // Sampled traces a caller outside access.trusted_proxies may force (a `traceparent` with the
  // sampled flag) per second on this worker, and at once: past them its decision is carried on
  // (the flag goes upstream as it came) but nothing is recorded, so that a flood of forced
  // samples cannot fill the span queue and push out the spans the sample draw chose.
  static constexpr double kForcedPerSecond = 10;
  static constexpr double kForcedBurst = 20;

  // A request's trace from its `traceparent` and `tracestate` values (empty: absent;
  // `repeated`: the request had more than one traceparent, which makes it invalid). Recorded
  // when exporting and: the incoming parent is sampled (for an untrusted `caller`, within the
  // forced-sample budget above), or (no valid parent) the sample draw says so. The server span
  // is named `name`. `trusted_caller`: the peer is one of access.trusted_proxies.
  RequestTrace begin(std::string_view traceparent, std::string_view tracestate, bool repeated,
                     std::string_view name, bool trusted_caller = false);
  // Forced samples declined past the budget (wg_trace_forced_samples_declined_total). Any
  // thread.
  std::uint64_t forced_declined() const { return forced_declined_.load(std::memory_order_relaxed); }
  // A trace of its own for work no request carries (a background refresh), sampled by the
  // draw alone.
  Span start_root(std::string_view name, SpanKind kind);

  bool exporting() const { return settings_.exporting; }
  SpanQueue& queue() { return queue_; }
  const SpanQueue& queue() const { return queue_; }

 private:
  friend class Span;
  friend class RequestTrace;
  Span open(const TraceId& trace_id, const SpanId& parent, std::uint8_t flags,
            std::string_view name, SpanKind kind, bool record, bool with_id);
  void finish(SpanData&& span);
  bool draw();
  bool take_forced();  // one forced sample from the budget

  TracerSettings settings_;
  Clock& clock_;
  IdGenerator ids_;
  SpanQueue queue_;
  double forced_tokens_ = kForcedBurst;
  SteadyTime forced_at_{};
  std::atomic<std::uint64_t> forced_declined_{0};
};

}  // namespace wg::tracing
