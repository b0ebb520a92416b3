#include "what_if.hpp"

#include <simdjson.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <memory>
#include <ostream>
#include <queue>

#include "widget_gateway/accesslog/record.hpp"
#include "widget_gateway/api/platform.hpp"

namespace wg::whatif {

namespace {

std::optional<std::uint64_t> uint_member(simdjson::dom::element object, std::string_view name) {
  std::uint64_t value = 0;
  if (object[name].get_uint64().get(value) != simdjson::SUCCESS) return std::nullopt;
  return value;
}

std::optional<std::string_view> string_member(simdjson::dom::element object,
                                              std::string_view name) {
  std::string_view value;
  if (object[name].get_string().get(value) != simdjson::SUCCESS) return std::nullopt;
  return value;
}

// The counts member accesslog::counts_json wrote.
std::optional<api::WidgetSummary> read_counts(simdjson::dom::element counts) {
  api::WidgetSummary widget;
  const auto total = uint_member(counts, "total");
  simdjson::dom::object amounts;
  simdjson::dom::array sources;
  bool consistent = true;
  if (!total || counts["reviewAmount"].get_object().get(amounts) != simdjson::SUCCESS ||
      counts["sources"].get_array().get(sources) != simdjson::SUCCESS ||
      counts["consistent"].get_bool().get(consistent) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  widget.total_review_amount = *total;
  widget.consistent = consistent;
  for (auto [platform, count] : amounts) {
    std::uint64_t n = 0;
    if (count.get_uint64().get(n) != simdjson::SUCCESS) return std::nullopt;
    widget.review_amount.emplace_back(std::string(platform), n);
  }
  for (simdjson::dom::element source : sources) {
    std::string_view type;
    if (source.get_string().get(type) != simdjson::SUCCESS) return std::nullopt;
    widget.source_types.emplace_back(type);
  }
  return widget;
}

std::string share(std::uint64_t part, std::uint64_t whole) {
  char buf[32];
  const double value = whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
  std::snprintf(buf, sizeof buf, "%.4f", value);
  return buf;
}

std::string fixed(double value, int decimals) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

// One file, read a line ahead.
struct Source {
  std::unique_ptr<std::ifstream> in;
  LogLine next;
  bool done = false;
};

}  // namespace

std::optional<WallTime> parse_log_time(std::string_view text) {
  // 2024-05-01T12:34:56.789Z: fixed width, UTC.
  if (text.size() != 24 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' ||
      text[16] != ':' || text[19] != '.' || text[23] != 'Z') {
    return std::nullopt;
  }
  auto number = [&](std::size_t at, std::size_t width) -> std::optional<int> {
    int value = 0;
    const auto [end, error] = std::from_chars(text.data() + at, text.data() + at + width, value);
    if (error != std::errc() || end != text.data() + at + width) return std::nullopt;
    return value;
  };
  const auto y = number(0, 4), mo = number(5, 2), d = number(8, 2), h = number(11, 2),
             mi = number(14, 2), s = number(17, 2), ms = number(20, 3);
  if (!y || !mo || !d || !h || !mi || !s || !ms) return std::nullopt;
  using namespace std::chrono;
  const year_month_day date{year(*y), month(static_cast<unsigned>(*mo)),
                            day(static_cast<unsigned>(*d))};
  if (!date.ok() || *h > 23 || *mi > 59 || *s > 60) return std::nullopt;
  return WallTime(sys_days(date)) + hours(*h) + minutes(*mi) + seconds(*s) + milliseconds(*ms);
}

LogLine read_line(std::string_view text) {
  LogLine line;
  thread_local simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  simdjson::dom::element record;
  if (parser.parse(padded).get(record) != simdjson::SUCCESS) return line;
  const auto time_text = string_member(record, "time");
  const auto route = string_member(record, "route");
  const auto status = uint_member(record, "status");
  const auto cache = string_member(record, "cache");
  const std::optional<WallTime> time = time_text ? parse_log_time(*time_text) : std::nullopt;
  if (!time || !route || !status || !cache) return line;
  double sample = 1.0;
  if (record["sample"].get_double().get(sample) == simdjson::SUCCESS) line.sample = sample;
  line.kind = LogLine::Kind::skipped;
  if (*route != "widget" && *route != "reviews") return line;
  const auto widget = string_member(record, "widget");
  if (!widget) return line;
  // Upstream's data (200), or its answer for an unknown widget, cached as such (a 404 or 400
  // the gateway answered from upstream, not a refusal of its own: those have no cache).
  const bool unknown = (*status == 404 || *status == 400) && *cache != "none";
  if (*status != 200 && !unknown) return line;

  LoggedRequest& logged = line.request;
  logged.time = *time;
  logged.request.widget_id = std::string(*widget);
  logged.unknown_widget = unknown;
  if (*route == "widget") {
    logged.request.endpoint = api::Endpoint::widget;
    simdjson::dom::element counts;
    if (*status == 200 && record["counts"].get(counts) == simdjson::SUCCESS) {
      logged.counts = read_counts(counts);
    }
  } else {
    logged.request.endpoint = api::Endpoint::reviews;
    const auto limit = uint_member(record, "limit");
    const auto skip = uint_member(record, "skip");
    if (!limit || !skip || *limit == 0 || *limit > 300) {
      line.kind = LogLine::Kind::unreadable;  // a log from before the query was written
      return line;
    }
    logged.request.query.limit = static_cast<std::uint32_t>(*limit);
    logged.request.query.skip = *skip;
    if (const auto type = string_member(record, "type")) {
      logged.request.query.type = api::parse_platform(*type);
      if (!logged.request.query.type) {
        line.kind = LogLine::Kind::unreadable;
        return line;
      }
    }
  }
  line.kind = LogLine::Kind::api;
  return line;
}

std::string figures_json(const Figures& f, std::uint64_t skipped, std::uint64_t unreadable,
                         std::size_t files) {
  // Per day over the span the log covers, at least an hour of it.
  const double span_s = std::max(3600.0, std::chrono::duration<double>(f.last - f.first).count());
  const double per_day = static_cast<double>(f.upstream_requests) * 86400.0 / span_s;
  std::string out =
      "{\"requests\":" + std::to_string(f.requests) +
      ",\"upstream_requests\":" + std::to_string(f.upstream_requests) +
      ",\"upstream_per_day\":" + fixed(per_day, 1) +
      ",\"fresh_share\":" + share(f.fresh, f.requests) +
      ",\"stale_share\":" + share(f.stale, f.requests) +
      ",\"miss_share\":" + share(f.miss, f.requests) +
      ",\"paced_share\":" + share(f.paced, f.requests) +
      ",\"oldest_served_s\":" + fixed(f.oldest_served_s, 0) +
      ",\"prefetch_keys\":" + std::to_string(f.prefetch_keys) + ",\"prefetch_keys_per_day\":" +
      fixed(static_cast<double>(f.prefetch_keys) * 86400.0 / span_s, 1) + ",\"from\":\"";
  accesslog::append_time(out, f.first);
  out += "\",\"to\":\"";
  accesslog::append_time(out, f.last);
  out += "\",\"lines_skipped\":" + std::to_string(skipped) +
         ",\"lines_unreadable\":" + std::to_string(unreadable) +
         ",\"files\":" + std::to_string(files) + "}\n";
  return out;
}

int run_what_if(const std::vector<std::string>& files, const config::Config& config,
                std::ostream& out, std::ostream& err) {
  std::uint64_t skipped = 0;
  std::uint64_t unreadable = 0;
  std::optional<double> sampled;
  std::vector<Source> sources(files.size());
  // The next API line of a file, counting what is passed over.
  auto advance = [&](Source& source) {
    std::string text;
    while (std::getline(*source.in, text)) {
      if (text.empty()) continue;
      LogLine line = read_line(text);
      if (line.sample && *line.sample < 1.0) sampled = *line.sample;
      if (line.kind == LogLine::Kind::api) {
        source.next = std::move(line);
        return;
      }
      ++(line.kind == LogLine::Kind::skipped ? skipped : unreadable);
    }
    source.done = true;
  };
  for (std::size_t i = 0; i < files.size(); ++i) {
    sources[i].in = std::make_unique<std::ifstream>(files[i]);
    if (!*sources[i].in) {
      err << "widget-gateway: --what-if: cannot read " << files[i] << "\n";
      return 1;
    }
    advance(sources[i]);
  }
  // The files merged by time: each is in its instance's order.
  auto later = [&](std::size_t a, std::size_t b) {
    return sources[a].next.request.time > sources[b].next.request.time;
  };
  std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(later)> next(later);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (!sources[i].done) next.push(i);
  }
  Replay replay(config);
  while (!next.empty()) {
    const std::size_t i = next.top();
    next.pop();
    replay.replay(sources[i].next.request);
    advance(sources[i]);
    if (!sources[i].done) next.push(i);
  }
  if (sampled) {
    err << "widget-gateway: --what-if: the log is sampled (log.sample " << *sampled
        << "): a sample under-counts the hits that keep copies fresh, so its upstream calls "
           "cannot be scaled back; refused. Replay a log written with log.sample = 1.\n";
    return 2;
  }
  if (replay.figures().requests == 0) {
    err << "widget-gateway: --what-if: no API request to replay (" << skipped << " lines skipped, "
        << unreadable
        << " unreadable: access logs of this version carry the query and counts a replay "
           "needs)\n";
    return 1;
  }
  out << figures_json(replay.figures(), skipped, unreadable, files.size());
  return 0;
}

}  // namespace wg::whatif
