#include "widget_gateway/tracing/tracer.hpp"

#include <bit>
#include <cstring>
#include <optional>

namespace wg::tracing {
namespace {

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

template <std::size_t N>
void fill(IdGenerator& ids, std::array<std::uint8_t, N>& bytes) {
  do {
    for (std::size_t i = 0; i < N; i += 8) {
      const std::uint64_t word = ids.next();
      std::memcpy(bytes.data() + i, &word, 8);
    }
  } while (bytes == std::array<std::uint8_t, N>{});
}

}  // namespace

IdGenerator::IdGenerator(std::uint64_t seed) {
  for (auto& word : state_) word = splitmix64(seed);
}

std::uint64_t IdGenerator::next() {
  auto& s = state_;
  const std::uint64_t result = std::rotl(s[1] * 5, 7) * 9;
  const std::uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = std::rotl(s[3], 45);
  return result;
}

TraceId IdGenerator::trace_id() {
  TraceId id;
  fill(*this, id.bytes);
  return id;
}

SpanId IdGenerator::span_id() {
  SpanId id;
  fill(*this, id.bytes);
  return id;
}

double IdGenerator::uniform01() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

Span Span::child(const SpanContext& parent, std::string_view name, SpanKind kind, bool with_id) {
  if (parent.tracer == nullptr) return {};
  return parent.tracer->open(parent.trace_id, parent.span_id, parent.flags, name, kind,
                             parent.recording, with_id);
}

void Span::set(std::string_view key, std::string value) {
  if (data_) data_->attributes.push_back({key, std::move(value)});
}
void Span::set(std::string_view key, std::int64_t value) {
  if (data_) data_->attributes.push_back({key, value});
}
void Span::set(std::string_view key, bool value) {
  if (data_) data_->attributes.push_back({key, value});
}

void Span::link(const TraceId& trace_id, const SpanId& span_id) {
  if (data_ && trace_id.valid() && span_id.valid()) data_->links.push_back({trace_id, span_id});
}

void Span::fail() {
  if (data_) data_->error = true;
}

SpanContext Span::context() const {
  return {tracer_, trace_id_, id_, flags_, recording(), {}};
}

void Span::end() {
  if (!data_) return;
  tracer_->finish(std::move(*data_));
  data_.reset();
}

const TraceId& RequestTrace::trace_id() {
  if (!server_.trace_id_.valid() && tracer_ != nullptr) {
    server_.trace_id_ = tracer_->ids_.trace_id();
  }
  return server_.trace_id_;
}

std::string_view RequestTrace::trace_id_hex() {
  if (tracer_ == nullptr) return {};
  if (!hex_written_) {
    write_hex(trace_id(), hex_.data());
    hex_written_ = true;
  }
  return {hex_.data(), hex_.size()};
}

SpanContext RequestTrace::context() {
  if (tracer_ == nullptr) return {};
  trace_id();
  return {tracer_, server_.trace_id_, server_.id_, server_.flags_, recording(), trace_state_};
}

Tracer::Tracer(TracerSettings settings, Clock& clock, std::uint64_t seed)
    : settings_(settings),
      clock_(clock),
      ids_(seed),
      queue_(settings.max_queued_spans),
      forced_at_(clock.steady_now()) {}

RequestTrace Tracer::begin(std::string_view traceparent, std::string_view tracestate, bool repeated,
                           std::string_view name, bool trusted_caller) {
  RequestTrace trace;
  trace.tracer_ = this;
  std::optional<TraceParent> incoming;
  if (!traceparent.empty() && !repeated) incoming = parse_traceparent(traceparent);
  // The spec: a tracestate is only as good as the traceparent beside it.
  if (incoming && carries_tracestate(tracestate)) trace.trace_state_ = std::string(tracestate);
  // An incoming decision is respected (parent-based), a client's within its budget; a trace
  // started here is drawn.
  bool record = false;
  if (settings_.exporting) {
    if (!incoming) {
      record = draw();
    } else if (incoming->sampled()) {
      record = trusted_caller || take_forced();
    }
  }
  std::uint8_t flags = 0;
  if (incoming) {
    flags = incoming->flags & kSampled;
  } else if (record) {
    flags = kSampled;
  }
  const TraceId trace_id = incoming ? incoming->trace_id : record ? ids_.trace_id() : TraceId{};
  const SpanId parent = incoming ? incoming->parent_id : SpanId{};
  trace.server_ = open(trace_id, parent, flags, name, SpanKind::server, record, false);
  if (record) trace.server_.data_->trace_state = trace.trace_state_;
  return trace;
}

Span Tracer::start_root(std::string_view name, SpanKind kind) {
  const bool record = settings_.exporting && draw();
  return open(ids_.trace_id(), SpanId{}, record ? kSampled : 0, name, kind, record, true);
}

Span Tracer::open(const TraceId& trace_id, const SpanId& parent, std::uint8_t flags,
                  std::string_view name, SpanKind kind, bool record, bool with_id) {
  Span span;
  span.tracer_ = this;
  span.trace_id_ = trace_id;
  span.flags_ = flags;
  if (record || with_id) span.id_ = ids_.span_id();
  if (record) {
    span.data_ = std::make_unique<SpanData>();
    span.data_->trace_id = trace_id;
    span.data_->span_id = span.id_;
    span.data_->parent_id = parent;
    span.data_->name = name;
    span.data_->kind = kind;
    span.data_->start = clock_.wall_now();
  }
  return span;
}

void Tracer::finish(SpanData&& span) {
  span.end = clock_.wall_now();
  queue_.push(std::move(span));
}

bool Tracer::take_forced() {
  const SteadyTime now = clock_.steady_now();
  const double seconds = std::chrono::duration<double>(now - forced_at_).count();
  forced_tokens_ =
      std::min(kForcedBurst, forced_tokens_ + std::max(0.0, seconds) * kForcedPerSecond);
  forced_at_ = now;
  if (forced_tokens_ >= 1) {
    forced_tokens_ -= 1;
    return true;
  }
  forced_declined_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

bool Tracer::draw() {
  if (settings_.sample >= 1.0) return true;
  if (settings_.sample <= 0.0) return false;
  return ids_.uniform01() < settings_.sample;
}

}  // namespace wg::tracing
