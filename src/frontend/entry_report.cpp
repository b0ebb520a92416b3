#include "entry_report.hpp"

#include "widget_gateway/accesslog/record.hpp"
#include "widget_gateway/api/percent.hpp"
#include "widget_gateway/api/validate.hpp"
#include "widget_gateway/common/json_writer.hpp"

namespace wg::frontend {

namespace {

// Every occurrence of one parameter of a query, names and values percent-decoded as the
// public listener decodes them.
struct Param {
  std::size_t count = 0;
  std::optional<std::string> value;  // the last one
  bool malformed = false;            // some value is not well percent-encoded
};

Param find_param(std::string_view query, std::string_view name) {
  Param found;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const auto eq = pair.find('=');
    const auto key = api::percent_decode(pair.substr(0, eq));
    if (!key || *key != name) continue;
    ++found.count;
    found.value = api::percent_decode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
    if (!found.value) found.malformed = true;
  }
  return found;
}

api::Rejection bad_request(std::string message) {
  return {api::ErrorCode::bad_request, std::move(message)};
}

// The page number as ASCII digits, nullopt when it is not one or exceeds `most`.
std::optional<std::uint64_t> page_number(std::string_view digits, std::uint64_t most) {
  if (digits.empty()) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
    if (value > most) return std::nullopt;
  }
  return value;
}

void append_time(std::string& out, WallTime t) {
  out.push_back('"');
  accesslog::append_time(out, t);
  out.push_back('"');
}

void append_entry(std::string& out, const cache::Entry* entry, WallTime now) {
  if (entry == nullptr) {
    out += "{\"cached\":false}";
    return;
  }
  auto seconds = [](WallTime::duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count());
  };
  out += "{\"cached\":true,\"status\":" + std::to_string(entry->status);
  out += ",\"stored_at\":";
  append_time(out, entry->stored_at);
  out += ",\"age_s\":" + seconds(now - entry->stored_at);
  out += ",\"fresh_until\":";
  append_time(out, entry->fresh_until);
  out += ",\"fresh_for_s\":" + seconds(entry->fresh_until - now);
  out += ",\"stale_until\":";
  append_time(out, entry->stale_until);
  out += ",\"stale_for_s\":" + seconds(entry->stale_until - now);
  // A copy that holds back an upstream answer (docs/freshness.md): pending since when, and
  // whether the copy is the adopted one kept or the answer itself, kept provisionally.
  if (entry->hold) {
    out += ",\"unconfirmed\":{\"since\":";
    append_time(out, entry->hold->since);
    out += ",\"confirm_at\":";
    append_time(out, entry->fresh_until);
    out += std::string(",\"kept\":\"") + (entry->hold->provisional ? "answer" : "adopted") + "\"}";
  }
  if (entry->early_at != WallTime{}) {
    out += ",\"early_refresh_from\":";
    append_time(out, entry->early_at);
  }
  if (entry->fetch_time.count() > 0) {
    out += ",\"fetch_ms\":" + std::to_string(entry->fetch_time.count());
  }
  if (entry->soft_purged) out += ",\"soft_purged\":true";
  out += ",\"etag\":";
  json::append_string(out, entry->etag);
  out += ",\"bytes\":" + std::to_string(entry->body.size()) + ",\"variants\":{";
  bool first = true;
  for (const auto& [coding, body] : entry->variants) {
    if (!first) out.push_back(',');
    first = false;
    json::append_string(out, coding);
    out += ":" + std::to_string(body.size());
  }
  out += "}}";
}

// "key", "redis_key", "l1" and "l2" of one key, without braces.
void append_look(std::string& out, const KeyLook& look, WallTime now) {
  out += "\"key\":";
  json::append_string(out, look.key);
  out += ",\"redis_key\":";
  if (look.redis_key) {
    json::append_string(out, *look.redis_key);
  } else {
    out += "null";
  }
  out += ",\"l1\":";
  append_entry(out, look.l1.get(), now);
  out += ",\"l2\":";
  if (!look.redis_key) {
    out += "null";
  } else if (look.l2_error) {
    out += "{\"error\":";
    json::append_string(out, look.l2_error.message());
    out += "}";
  } else {
    append_entry(out, look.l2.get(), now);
  }
}

}  // namespace

std::variant<api::ApiRequest, api::Rejection> entry_request(std::string_view raw_query) {
  const Param widget = find_param(raw_query, "widget");
  if (widget.count != 1 || widget.malformed || widget.value->empty()) {
    return bad_request("entry needs one widget parameter");
  }
  api::ApiRequest request{api::Endpoint::widget, *widget.value, {}};
  const Param page = find_param(raw_query, "page");
  if (find_param(raw_query, "limit").count == 0) {
    if (page.count > 0) return bad_request("page needs limit (page N is skip = N * limit)");
    return request;
  }
  auto parsed = api::parse_reviews_query(raw_query);
  if (auto* rejection = std::get_if<api::Rejection>(&parsed)) return std::move(*rejection);
  request.endpoint = api::Endpoint::reviews;
  request.query = std::get<api::ReviewsQuery>(parsed);
  if (page.count == 0) return request;

  if (page.count > 1) {
    return api::Rejection{api::ErrorCode::param_duplicate, "page must be given at most once"};
  }
  if (page.malformed) return bad_request("malformed percent-encoding in the request target");
  if (find_param(raw_query, "skip").count > 0) return bad_request("give skip or page, not both");
  const auto number = page_number(*page.value, api::kMaxSkip / request.query.limit);
  if (!number) {
    return api::Rejection{api::ErrorCode::skip_invalid,
                          "page must be an integer from 0 with page * limit at most 1000000000"};
  }
  request.query.skip = *number * request.query.limit;
  return request;
}

std::string entry_report(const KeyLook& asked, bool derived, const std::vector<WindowLook>& windows,
                         WallTime now) {
  std::string out = "{";
  append_look(out, asked, now);
  out += ",\"now\":";
  append_time(out, now);
  out += ",\"derived\":";
  out += derived ? "true" : "false";
  if (derived) {
    out += ",\"cut_from\":[";
    bool first = true;
    for (const WindowLook& window : windows) {
      if (!first) out.push_back(',');
      first = false;
      out += "{\"skip\":" + std::to_string(window.skip) +
             ",\"limit\":" + std::to_string(window.limit) + ",";
      append_look(out, window.look, now);
      out += "}";
    }
    out += "]";
  }
  out += "}";
  return out;
}

}  // namespace wg::frontend
