#pragma once
// The request mix: turns a scenario and a list of widget ids into a pool of ready-to-send
// HTTP/1.1 requests. Everything is decided here, ahead of the run, from a seeded generator, so
// the hot loop only copies bytes and the same seed gives the same sequence.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "wg-bench/scenario.hpp"

namespace wg::bench {

struct WidgetInfo {
  std::string id;
  std::uint64_t reviews = 0;  // totalReviewAmount
  bool reviews_known = false;
};

// Reads either the JSON array GET /__stub/widgets returns ([{"id":..,"totalReviewAmount":..}])
// or plain text with one id per line. Throws std::runtime_error on malformed JSON.
std::vector<WidgetInfo> parse_widget_list(std::string_view text);

// Ids that match the gateway's default widget pattern, for targets without a data set (the
// constant server); their review counts are unknown.
std::vector<WidgetInfo> synthetic_widgets(std::size_t count);

enum class RequestKind { widget, reviews, invalid, hostile };

// Who sends a request: the site's visitors, or the scenario's walker (scenario.hpp, WalkerSpec).
// Each role's answers are also recorded apart (RunStats::roles).
enum class Role : std::uint8_t { visitor, walker };
inline constexpr std::size_t kRoles = 2;
std::string_view to_string(Role role);

struct BenchRequest {
  std::string text;  // the complete request, head only (no body)
  bool head = false;
  // A 2xx (or 304) is the expected answer; for invalid and hostile requests any 4xx is fine and
  // only a 5xx counts as unexpected.
  bool expect_success = true;
  RequestKind kind = RequestKind::widget;
  Role role = Role::visitor;
};

// Builds scenario.pool requests (bursts of keys.repeat identical ones). `widgets` must not be
// empty; only its first keys.widgets entries are used. With a walker, each slot of the pool is
// the walker's next step with probability walker.share, drawn from a generator of its own: the
// visitors' requests are then the same sequence as without the walker, with the walker's
// interleaved.

std::vector<BenchRequest> build_requests(const Scenario& scenario,
                                         const std::vector<WidgetInfo>& widgets,
                                         std::string_view host_header);

// The warning for a list of `ids` shorter than the keys.widgets the scenario spreads over
// (the requests then fall on fewer widgets, each more often: more hits than the scenario
// means); empty when the list is long enough.
std::string short_id_list_warning(std::size_t ids, const Scenario& scenario);

// The walker's request target of step `step` (0, 1, ...): widgets innermost (step mod
// min(walker.widgets, widgets.size())), then the nine platform codes, then skip (0, skip_step,
// ... skip_max), so that even a short run walks every type and goes past the end of every list;
// after the last step it starts again.
std::string walker_target(const WalkerSpec& walker, const std::vector<WidgetInfo>& widgets,
                          std::uint64_t step);

// The request for one target path: "GET <target> HTTP/1.1" with Host and the bench's headers.
std::string format_request(std::string_view method, std::string_view target,
                           std::string_view host_header);

}  // namespace wg::bench
