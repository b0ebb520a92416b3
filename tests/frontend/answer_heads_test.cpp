// A hit's head from its template: the bytes every hit has always carried, the template kept
// beside the entry serving the hits after the first, a 304 and CORS around it, and a reload
// (another shape) writing it again.

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "frontend/answer_heads.hpp"
#include "frontend/response_builder.hpp"
#include "http/response_head.hpp"

using namespace std::chrono_literals;
using wg::WallTime;
using wg::frontend::AnswerHeads;
using wg::frontend::KeptHeads;
using wg::frontend::RequestView;
using wg::frontend::ResponseOptions;
using wg::serving::Outcome;
using wg::serving::Served;

namespace {

constexpr std::string_view kDate = "Wed, 02 Dec 2026 18:00:00 GMT";
const WallTime kStored = WallTime{} + std::chrono::hours(24 * 20000);

Served hit_at(std::chrono::seconds after_store, Outcome::Detail detail = Outcome::Detail::none) {
  auto entry = std::make_shared<wg::cache::Entry>();
  entry->stored_at = kStored;
  entry->fresh_until = kStored + 1000s;
  entry->stale_until = kStored + 2000s;
  entry->etag = "\"e1\"";
  entry->body = R"({"a":1})";
  entry->variants.emplace_back("gzip", std::string(5, 'z'));
  Served served;
  served.entry = entry;
  served.outcome = {Outcome::Source::cache, false, detail};
  served.now = kStored + after_store;
  return served;
}

ResponseOptions options(std::chrono::seconds stale_while_revalidate = 0s) {
  ResponseOptions o;
  o.max_age_cap = 600s;
  o.stale_while_revalidate = stale_while_revalidate;
  o.stale_if_error = 86400s;
  return o;
}

std::string http1(const wg::http::Response& response) {
  std::string head;
  wg::http::write_http1_head(head, response, kDate, false);
  return head;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(answer_heads_test)

BOOST_AUTO_TEST_CASE(a_hit_carries_the_fields_hits_always_carried) {
  const wg::client_policy::CorsPolicy cors;
  const auto response = wg::frontend::build_response(hit_at(10s), wg::api::Endpoint::widget,
                                                     options(), RequestView{}, cors);
  BOOST_TEST(http1(response) ==
             "HTTP/1.1 200 OK\r\n"
             "Date: Wed, 02 Dec 2026 18:00:00 GMT\r\n"
             "Content-Type: application/json; charset=utf-8\r\n"
             "ETag: \"e1\"\r\n"
             "Cache-Control: public, max-age=610, stale-if-error=86400\r\n"
             "X-Accel-Expires: 600\r\n"
             "Age: 10\r\n"
             "Accept-Ranges: none\r\n"
             "Vary: Accept-Encoding\r\n"
             "Cache-Status: widget-gateway; hit; ttl=990\r\n"
             "Content-Length: 7\r\n"
             "\r\n");
}

BOOST_AUTO_TEST_CASE(the_kept_head_serves_the_hits_after_the_first) {
  const wg::client_policy::CorsPolicy cors;
  const RequestView gzip{"gzip", "", ""};
  KeptHeads heads;
  const auto first = wg::frontend::build_response(hit_at(10s), wg::api::Endpoint::widget, options(),
                                                  gzip, cors, &heads);
  BOOST_REQUIRE(heads.made != nullptr);  // written for this coding: to be kept
  const auto kept = std::move(heads.made);
  heads.kept = kept.get();
  const auto later = wg::frontend::build_response(hit_at(70s), wg::api::Endpoint::widget, options(),
                                                  gzip, cors, &heads);
  BOOST_TEST(heads.made == nullptr);  // nothing new to keep
  BOOST_TEST(later.head_template == first.head_template);
  BOOST_TEST(http1(later) ==
             "HTTP/1.1 200 OK\r\n"
             "Date: Wed, 02 Dec 2026 18:00:00 GMT\r\n"
             "Content-Type: application/json; charset=utf-8\r\n"
             "Content-Encoding: gzip\r\n"
             "ETag: \"e1-gz\"\r\n"
             "Cache-Control: public, max-age=670, stale-if-error=86400\r\n"
             "X-Accel-Expires: 600\r\n"
             "Age: 70\r\n"
             "Accept-Ranges: none\r\n"
             "Vary: Accept-Encoding\r\n"
             "Cache-Status: widget-gateway; hit; ttl=930\r\n"
             "Content-Length: 5\r\n"
             "\r\n");

  // Another coding: a set with both heads, to keep in place of the first.
  const auto plain = wg::frontend::build_response(hit_at(70s), wg::api::Endpoint::widget, options(),
                                                  RequestView{}, cors, &heads);
  BOOST_REQUIRE(heads.made != nullptr);
  const auto* both = static_cast<const AnswerHeads*>(heads.made.get());
  const AnswerHeads::Shape shape{0, 86400, false, Outcome::Detail::none};
  BOOST_TEST(both->find(wg::client_policy::Coding::gzip, shape) == first.head_template);
  BOOST_TEST(both->find(wg::client_policy::Coding::identity, shape) == plain.head_template);
  BOOST_TEST(both->bytes() > static_cast<const AnswerHeads*>(kept.get())->bytes());
}

BOOST_AUTO_TEST_CASE(a_304_leaves_out_content_type_and_length) {
  const wg::client_policy::CorsPolicy cors;
  KeptHeads heads;
  const RequestView revalidation{"", "\"e1\"", ""};
  const auto response = wg::frontend::build_response(hit_at(10s), wg::api::Endpoint::widget,
                                                     options(), revalidation, cors, &heads);
  BOOST_TEST(response.status == 304u);
  BOOST_TEST(http1(response) ==
             "HTTP/1.1 304 Not Modified\r\n"
             "Date: Wed, 02 Dec 2026 18:00:00 GMT\r\n"
             "ETag: \"e1\"\r\n"
             "Cache-Control: public, max-age=610, stale-if-error=86400\r\n"
             "X-Accel-Expires: 600\r\n"
             "Age: 10\r\n"
             "Accept-Ranges: none\r\n"
             "Vary: Accept-Encoding\r\n"
             "Cache-Status: widget-gateway; hit; ttl=990\r\n"
             "\r\n");
  // The 200 of the same coding uses the head the 304 wrote.
  const auto kept = std::move(heads.made);
  heads.kept = kept.get();
  const auto full = wg::frontend::build_response(hit_at(10s), wg::api::Endpoint::widget, options(),
                                                 RequestView{}, cors, &heads);
  BOOST_TEST(full.head_template == response.head_template);
  BOOST_TEST(http1(full).find("Content-Type: application/json") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(cors_is_written_per_origin_after_the_template) {
  const wg::client_policy::CorsPolicy cors({"https://shop.example"});
  const RequestView from_shop{"", "", "https://shop.example"};
  const auto response = wg::frontend::build_response(hit_at(10s), wg::api::Endpoint::widget,
                                                     options(), from_shop, cors);
  const std::string head = http1(response);
  BOOST_TEST(head.find("Vary: Accept-Encoding, Origin\r\n") != std::string::npos);
  const auto status = head.find("Cache-Status: ");
  const auto allow = head.find("Access-Control-Allow-Origin: https://shop.example\r\n");
  const auto length = head.find("Content-Length: 7\r\n");
  BOOST_TEST(status < allow);
  BOOST_TEST(allow < length);
  // Another origin gets no CORS fields from the same template.
  const RequestView elsewhere{"", "", "https://other.example"};
  const auto other = wg::frontend::build_response(hit_at(10s), wg::api::Endpoint::widget, options(),
                                                  elsewhere, cors);
  BOOST_TEST(http1(other).find("Access-Control") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_reload_or_another_detail_writes_the_head_again) {
  const wg::client_policy::CorsPolicy cors;
  KeptHeads heads;
  const auto before = wg::frontend::build_response(hit_at(10s), wg::api::Endpoint::widget,
                                                   options(), RequestView{}, cors, &heads);
  const auto kept = std::move(heads.made);
  heads.kept = kept.get();
  const auto after = wg::frontend::build_response(hit_at(10s), wg::api::Endpoint::widget,
                                                  options(30s), RequestView{}, cors, &heads);
  BOOST_TEST(after.head_template != before.head_template);
  BOOST_TEST(heads.made != nullptr);
  BOOST_TEST(http1(after).find("Cache-Control: public, max-age=610, stale-while-revalidate=30, "
                               "stale-if-error=86400\r\n") != std::string::npos);

  heads.made.reset();
  const auto derived =
      wg::frontend::build_response(hit_at(10s, Outcome::Detail::derived), wg::api::Endpoint::widget,
                                   options(), RequestView{}, cors, &heads);
  BOOST_TEST(
      http1(derived).find("Cache-Status: widget-gateway; hit; ttl=990; detail=derived\r\n") !=
      std::string::npos);
  BOOST_TEST(heads.made != nullptr);
}

BOOST_AUTO_TEST_CASE(answers_from_upstream_are_not_kept) {
  const wg::client_policy::CorsPolicy cors;
  KeptHeads heads;
  Served fetched = hit_at(0s);
  fetched.outcome = {Outcome::Source::upstream, true, Outcome::Detail::none};
  const auto response = wg::frontend::build_response(fetched, wg::api::Endpoint::widget, options(),
                                                     RequestView{}, cors, &heads);
  BOOST_TEST(heads.made == nullptr);
  BOOST_TEST(http1(response).find("Cache-Status: widget-gateway; fwd=uri-miss; stored; "
                                  "ttl=1000\r\n") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()  // answer_heads_test
