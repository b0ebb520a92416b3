#include "status_report.hpp"

#include <cmath>
#include <cstdio>

#include "widget_gateway/accesslog/record.hpp"
#include "widget_gateway/common/json_writer.hpp"
#include "widget_gateway/common/redact.hpp"
#include "widget_gateway/quota/quota_period.hpp"

namespace wg::frontend {

namespace {

// Times of this process (not of the quota's month) in UTC with a Z, as in the access log and
// /admin/entry, so that they read against log lines.
std::string utc(WallTime t) {
  std::string out;
  accesslog::append_time(out, t);
  return out;
}

std::string number(double value) {
  if (!std::isfinite(value)) return "null";
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

std::string optional_number(const std::optional<std::uint64_t>& value) {
  return value ? std::to_string(*value) : std::string("null");
}

void append_strings(std::string& out, const std::vector<std::string>& items) {
  out.push_back('[');
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out.push_back(',');
    json::append_string(out, items[i]);
  }
  out.push_back(']');
}

}  // namespace

std::string status_json(const StatusFacts& f) {
  const quota::Snapshot& q = f.quota;
  std::string out = "{\"now\":\"" + utc(f.now) + "\",\"started_at\":\"" + utc(f.started_at) + "\"";

  out += ",\"traffic\":{\"requests_total\":" + std::to_string(f.api_requests);
  out += ",\"hit_ratio_since_start\":" +
         (f.api_requests > 0
              ? number(static_cast<double>(f.from_cache) / static_cast<double>(f.api_requests))
              : std::string("null"));
  if (f.traffic) {
    out += ",\"window_s\":" + number(f.traffic->seconds) +
           ",\"requests_per_second\":" + number(f.traffic->requests_per_second) +
           ",\"hit_ratio\":" + (f.traffic->hit_ratio ? number(*f.traffic->hit_ratio) : "null");
  } else {
    out += ",\"window_s\":0,\"requests_per_second\":null,\"hit_ratio\":null";
  }
  out += "}";

  const FreshnessFacts& fr = f.freshness;
  out += ",\"answers\":{\"fresh\":" + std::to_string(fr.fresh) +
         ",\"stale\":{\"total\":" + std::to_string(fr.stale);
  for (std::size_t r = 1; r < fr.stale_by_reason.size(); ++r) {  // none is not a reason
    out += ",\"" + std::string(to_string(static_cast<cache::StaleReason>(r))) +
           "\":" + std::to_string(fr.stale_by_reason[r]);
  }
  out += "},\"unconfirmed\":" + std::to_string(fr.unconfirmed) +
         ",\"empty_on_error\":" + std::to_string(fr.empty) +
         ",\"miss\":" + std::to_string(fr.miss) + "}";
  out += ",\"freshness\":{\"oldest_served_age_s\":" +
         std::to_string(static_cast<long long>(fr.oldest_served_age_s)) + ",\"next_refresh\":\"" +
         utc(fr.next_refresh) + "\",\"refreshes\":{";
  for (std::size_t k = 0; k < fr.refreshes.size(); ++k) {
    if (k > 0) out.push_back(',');
    out += "\"" + std::string(metrics::to_string(static_cast<metrics::RefreshKind>(k))) + "\":{";
    for (std::size_t r = 0; r < fr.refreshes[k].size(); ++r) {
      if (r > 0) out.push_back(',');
      out += "\"" + std::string(metrics::to_string(static_cast<metrics::RefreshResult>(r))) +
             "\":" + std::to_string(fr.refreshes[k][r]);
    }
    out += "}";
  }
  out += "},\"held_back\":" + std::to_string(fr.held_back) +
         ",\"unconfirmed\":{\"total\":" + std::to_string(fr.pending_total) + ",\"keys\":[";
  for (std::size_t i = 0; i < fr.pending.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += "{\"key\":";
    json::append_string(out, fr.pending[i].key);
    out += ",\"since\":\"" + utc(fr.pending[i].since) + "\",\"confirm_at\":\"" +
           utc(fr.pending[i].confirm_at) + "\"}";
  }
  out += "]},\"prefetch\":{\"leading\":";
  out += fr.prefetching ? "true" : "false";
  out += ",\"last\":";
  if (fr.last_prefetch) {
    const prefetch::PrefetchReport& p = *fr.last_prefetch;
    out += "{\"boundary\":\"" + utc(p.boundary) + "\",\"keys\":" + std::to_string(p.planned) +
           ",\"budget\":" + optional_number(p.budget) +
           ",\"upstream_requests\":" + std::to_string(p.upstream_requests) + ",\"results\":{";
    for (std::size_t r = 0; r < p.results.size(); ++r) {
      if (r > 0) out.push_back(',');
      out += "\"" + std::string(metrics::to_string(static_cast<metrics::PrefetchResult>(r))) +
             "\":" + std::to_string(p.results[r]);
    }
    out += "},\"duration_ms\":" + std::to_string(p.took.count()) +
           ",\"finished\":" + (p.finished ? "true" : "false") + ",\"paused\":";
    json::append_string(out, p.paused);
    out +=
        ",\"previous_fetched\":" + std::to_string(p.previous_fetched) +
        ",\"previous_wasted\":" + optional_number(p.wasted) +
        ",\"unchanged_share\":" + (p.unchanged_share ? number(*p.unchanged_share) : "null") +
        ",\"baseline_unchanged_share\":" + (p.baseline_share ? number(*p.baseline_share) : "null") +
        ",\"baseline_days\":" + std::to_string(p.baseline_days) + "}";
  } else {
    out += "null";
  }
  out += "}}";

  out += ",\"upstream_today\":";
  if (f.today) {
    out += "{\"calls\":" + std::to_string(f.today->calls) + ",\"since\":\"" + utc(f.today->since) +
           "\",\"bound\":" + optional_number(f.today->bound) + "}";
  } else {
    out += "null";
  }

  out += ",\"quota\":{\"month\":\"" + q.month + "\",\"used\":" + std::to_string(q.used) +
         ",\"limit\":" + std::to_string(q.limit) + ",\"mode\":\"" +
         std::string(quota::to_string(q.mode)) + "\",\"month_starts_at\":\"" +
         quota::format_rfc3339(f.month_starts_at, q.utc_offset) + "\",\"resets_at\":\"" +
         quota::format_rfc3339(q.resets_at, q.utc_offset) + "\",\"history\":[";
  for (std::size_t i = 0; i < f.history.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += "[\"" + utc(f.history[i].at) + "\"," + std::to_string(f.history[i].used) + "]";
  }
  out += "]}";

  out += ",\"redis\":{\"mode\":";
  json::append_string(out, f.redis.mode);
  out += ",\"nodes\":";
  append_strings(out, f.redis.nodes);
  if (!f.redis.sentinel_master.empty()) {
    out += ",\"sentinel_master\":";
    json::append_string(out, f.redis.sentinel_master);
  }
  out += std::string(",\"state\":\"") + (f.redis_up ? "up" : "down") + "\"}";

  out += ",\"circuit\":\"" + f.circuit + "\",\"workers\":[";
  for (std::size_t i = 0; i < f.workers.size(); ++i) {
    const WorkerLoad& w = f.workers[i];
    if (i > 0) out.push_back(',');
    out += "{\"worker\":" + std::to_string(i) + ",\"requests\":" + std::to_string(w.requests) +
           ",\"connections\":" + std::to_string(w.connections) +
           ",\"l1_entries\":" + std::to_string(w.l1_entries) +
           ",\"l1_bytes\":" + std::to_string(w.l1_bytes) + ",\"redis\":\"" +
           (w.redis_up ? "up" : "down") + "\"}";
  }
  out += "]}";
  return out;
}

std::string top_widgets_json(const std::vector<serving::WidgetCost>& top, WallTime since) {
  std::string out = "{\"since\":\"" + utc(since) + "\",\"widgets\":[";
  for (std::size_t i = 0; i < top.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += "{\"id\":";
    json::append_string(out, top[i].widget);
    out += ",\"upstream_calls\":" + std::to_string(top[i].calls) +
           ",\"error\":" + std::to_string(top[i].error) + "}";
  }
  out += "]}";
  return out;
}

RedisTopology redis_topology(const std::string& mode, const std::string& url,
                             const std::vector<std::string>& nodes,
                             const std::string& sentinel_master) {
  RedisTopology topology;
  topology.mode = mode;
  if (mode == "standalone") {
    topology.nodes = {redact_url(url)};
  } else {
    topology.nodes = nodes;
    if (mode == "sentinel") topology.sentinel_master = sentinel_master;
  }
  return topology;
}

}  // namespace wg::frontend
