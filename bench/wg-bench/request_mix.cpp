#include "wg-bench/request_mix.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <stdexcept>

#include <simdjson.h>

#include "wg-bench/zipf.hpp"

namespace wg::bench {
namespace {

constexpr std::string_view kPlatforms[] = {"doubleGis", "yaSprav",   "avito",
                                           "zoon",      "vkontakte", "prodoctorov",
                                           "otzovik",   "googleMap", "yaBusiness"};

std::string widget_path(std::string_view id) {
  return "/api/v1/widgets/widget/" + std::string(id) + "/remote";
}
std::string reviews_path(std::string_view id) {
  return "/api/v1/widgets/widget/" + std::string(id) + "/reviews/remote";
}

std::string random_token(Rng& rng, std::size_t length) {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string out(length, 'a');
  for (auto& c : out) c = kChars[rng.below(sizeof(kChars) - 1)];
  return out;
}

// Requests the gateway must answer with a 4xx without going upstream (or, for an unknown but
// well-formed id, with one upstream call that is then negatively cached).
std::string invalid_target(Rng& rng, std::string_view id) {
  switch (rng.below(8)) {
    case 0:
      return reviews_path(id);  // limit missing
    case 1:
      return reviews_path(id) + "?limit=0";  // limit_invalid
    case 2:
      return reviews_path(id) + "?limit=301";  // limit_too_large
    case 3:
      return reviews_path(id) + "?limit=abc";  // not a number
    case 4:
      return reviews_path(id) + "?limit=10&type=myspace";
    case 5:
      return widget_path("000000000000000000000000");  // unknown widget
    case 6:
      return reviews_path(id) + "?limit=-1";
    default:
      return "/api/v1/widgets/nothing/here";  // unknown route
  }
}

struct Hostile {
  std::string method;
  std::string target;
};

Hostile hostile_request(Rng& rng, std::string_view id) {
  switch (rng.below(9)) {
    case 0:
      return {"GET", "/api/v1/widgets/widget/../../../etc/passwd/remote"};
    case 1:
      return {"GET", "/api/v1/widgets/widget/a%2Fb/remote"};
    case 2:
      return {"GET", "/api/v1/widgets/widget/%2e%2e/remote"};
    case 3:
      return {"GET", reviews_path(id) + "?limit=10&limit=20"};
    case 4:
      return {"GET", reviews_path(id) + "?limit=10&skip=99999999999999999999"};
    case 5:
      return {"GET", reviews_path(id) + "?limit=10&bad=%zz"};
    case 6:
      return {"GET", "/api/v1/widgets/widget/" + std::string(id) + "%00/remote"};
    case 7:
      return {"DELETE", widget_path(id)};
    // Longer than the gateway's 8 KiB target limit: 414, and the connection is closed.
    default:
      return {"GET", reviews_path(id) + "?limit=10&x=" + std::string(9000, 'a')};
  }
}

}  // namespace

std::string format_request(std::string_view method, std::string_view target,
                           std::string_view host_header) {
  std::string out;
  out.reserve(method.size() + target.size() + host_header.size() + 64);
  out.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: ");
  out.append(host_header).append("\r\nUser-Agent: wg-bench\r\nAccept: application/json\r\n\r\n");
  return out;
}

std::vector<WidgetInfo> parse_widget_list(std::string_view text) {
  std::vector<WidgetInfo> out;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '[') {
    simdjson::dom::parser parser;
    simdjson::padded_string padded(text);
    simdjson::dom::array array;
    if (parser.parse(padded).get_array().get(array) != simdjson::SUCCESS) {
      throw std::runtime_error("widget list: not a JSON array");
    }
    for (simdjson::dom::element item : array) {
      WidgetInfo info;
      std::string_view id;
      if (item["id"].get_string().get(id) != simdjson::SUCCESS) {
        throw std::runtime_error("widget list: an element has no string \"id\"");
      }
      info.id = std::string(id);
      std::uint64_t reviews = 0;
      if (item["totalReviewAmount"].get_uint64().get(reviews) == simdjson::SUCCESS) {
        info.reviews = reviews;
        info.reviews_known = true;
      }
      out.push_back(std::move(info));
    }
    return out;
  }
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (!line.empty() && line.front() != '#') out.push_back({std::string(line), 0, false});
    pos = end + 1;
  }
  return out;
}

std::vector<WidgetInfo> synthetic_widgets(std::size_t count) {
  std::vector<WidgetInfo> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i)
    out.push_back({"bench-widget-" + std::to_string(i), 0, false});
  return out;
}

std::string_view to_string(Role role) {
  return role == Role::walker ? "walker" : "visitors";
}

std::string walker_target(const WalkerSpec& walker, const std::vector<WidgetInfo>& widgets,
                          std::uint64_t step) {
  const std::uint64_t walked = std::max<std::uint64_t>(std::min(walker.widgets, widgets.size()), 1);
  const std::uint64_t types = std::size(kPlatforms);
  const std::uint64_t skips = walker.skip_max / walker.skip_step + 1;
  const std::string_view type = kPlatforms[step / walked % types];
  const std::uint64_t skip = (step / walked / types % skips) * walker.skip_step;
  return reviews_path(widgets[step % walked].id) + "?limit=" + std::to_string(walker.limit) +
         "&skip=" + std::to_string(skip) + "&type=" + std::string(type);
}

std::vector<BenchRequest> build_requests(const Scenario& scenario,
                                         const std::vector<WidgetInfo>& widgets,
                                         std::string_view host_header) {
  if (widgets.empty()) throw std::invalid_argument("build_requests: no widget ids");
  const auto& keys = scenario.keys;
  const auto& mix = scenario.mix;
  const auto& reviews = scenario.reviews;
  const std::size_t key_count = std::min(keys.widgets, widgets.size());

  Rng rng(scenario.seed);
  const ZipfDistribution key_zipf(
      key_count, keys.distribution == KeyDistribution::zipf ? keys.zipf_exponent : 0.0);
  // One page distribution per page count, built on first use.
  std::map<std::size_t, std::unique_ptr<ZipfDistribution>> page_zipf;
  auto pick_page = [&](std::size_t pages) {
    auto& dist = page_zipf[pages];
    if (!dist) dist = std::make_unique<ZipfDistribution>(pages, reviews.page_exponent);
    return dist->sample(rng);
  };

  const double widget_share = mix.widget / (mix.widget + mix.reviews);
  // A fresh run starts at a seed-dependent key so that repeated runs touch different keys.
  std::size_t fresh_next = key_count > 1 ? rng.below(key_count) : 0;

  // One visitor request, drawn from `rng` only.
  auto visitor_request = [&] {
    std::size_t index = 0;
    if (keys.distribution == KeyDistribution::fresh) {
      index = fresh_next;
      fresh_next = (fresh_next + 1) % key_count;
    } else {
      index = key_zipf.sample(rng);
    }
    const WidgetInfo& widget = widgets[index];

    BenchRequest request;
    std::string method = "GET";
    std::string target;
    const double u = rng.uniform01();
    if (u < mix.invalid) {
      request.kind = RequestKind::invalid;
      request.expect_success = false;
      target = invalid_target(rng, widget.id);
    } else if (u < mix.invalid + mix.hostile) {
      request.kind = RequestKind::hostile;
      request.expect_success = false;
      auto hostile = hostile_request(rng, widget.id);
      method = std::move(hostile.method);
      target = std::move(hostile.target);
    } else if (rng.chance(widget_share)) {
      request.kind = RequestKind::widget;
      target = widget_path(widget.id);
    } else {
      request.kind = RequestKind::reviews;
      const unsigned limit = reviews.limits[rng.below(reviews.limits.size())];
      std::size_t pages = reviews.max_pages;
      if (widget.reviews_known) {
        pages = std::clamp<std::size_t>((widget.reviews + limit - 1) / limit, 1, reviews.max_pages);
      }
      std::uint64_t skip = static_cast<std::uint64_t>(pick_page(pages)) * limit;
      if (rng.chance(reviews.odd_skip)) {
        skip = rng.below(std::max<std::uint64_t>(widget.reviews_known ? widget.reviews : 1000, 1));
      }
      target = reviews_path(widget.id) + "?limit=" + std::to_string(limit);
      if (skip > 0) target += "&skip=" + std::to_string(skip);
      if (rng.chance(reviews.typed)) target += "&type=" + std::string(kPlatforms[rng.below(9)]);
    }
    if (request.expect_success) {
      if (rng.chance(mix.unknown_params)) {
        target += target.find('?') == std::string::npos ? '?' : '&';
        target += "utm_" + random_token(rng, 4) + "=" + random_token(rng, 12);
      }
      if (rng.chance(mix.head)) {
        method = "HEAD";
        request.head = true;
      }
    }
    request.text = format_request(method, target, host_header);
    return request;
  };

  // The walker decides with a generator of its own, so the visitors' draws stay as they are.
  Rng walker_rng(scenario.seed ^ 0x77616c6b6572ULL);
  std::uint64_t walker_step = 0;

  std::vector<BenchRequest> out;
  out.reserve(scenario.pool);
  while (out.size() < scenario.pool) {
    if (scenario.walker.share > 0 && walker_rng.chance(scenario.walker.share)) {
      BenchRequest request;
      request.kind = RequestKind::reviews;
      request.role = Role::walker;
      request.text = format_request("GET", walker_target(scenario.walker, widgets, walker_step++),
                                    host_header);
      out.push_back(std::move(request));
      continue;
    }
    const BenchRequest request = visitor_request();
    for (unsigned r = 0; r < keys.repeat && out.size() < scenario.pool; ++r) out.push_back(request);
  }
  return out;
}

std::string short_id_list_warning(std::size_t ids, const Scenario& scenario) {
  if (ids >= scenario.keys.widgets) return {};
  return "--ids holds " + std::to_string(ids) + " widget ids and the scenario spreads over " +
         std::to_string(scenario.keys.widgets) + " (keys.widgets): every request goes to those " +
         std::to_string(ids) + ", more often each, so more of them hit than the scenario means";
}

}  // namespace wg::bench
