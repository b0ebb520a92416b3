#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "../cache/cluster_slot.hpp"
#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/common/key_space.hpp"

using namespace wg;
using namespace wg::cache;
using wg::cache::test::cluster_slot;

namespace {

// Every name a KeySpace builds, for one widget and one month.
std::vector<std::string> every_name(const KeySpace& keys, std::string_view escaped_id,
                                    std::string_view month) {
  const std::string logical = "wg:{" + std::string(escaped_id) + "}:w";
  return {keys.entry(*split_key(logical), 3, 7),
          keys.widget_generation(escaped_id),
          keys.unversioned(logical + ":lock"),
          keys.global_generation(),
          keys.purge_channel(),
          keys.known_widgets(),
          keys.quota(month),
          keys.quota_leases(month),
          keys.quota_unknown(month)};
}

api::ApiRequest reviews(std::string id, std::uint32_t limit, std::uint64_t skip) {
  return {api::Endpoint::reviews, std::move(id), {limit, skip, std::nullopt}};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(key_space_test)

BOOST_AUTO_TEST_CASE(the_slot_helper_computes_what_redis_computes) {
  // Values from CLUSTER KEYSLOT and from Redis' own CRC16 test vector.
  BOOST_TEST(test::crc16("123456789") == 0x31C3);
  BOOST_TEST(cluster_slot("foo") == 12182);
  BOOST_TEST(cluster_slot("{user1000}.following") == 3443);
  BOOST_TEST(cluster_slot("{user1000}.following") == cluster_slot("{user1000}.followers"));
  BOOST_TEST(cluster_slot("foo{}{bar}") == 8363);     // an empty tag: the whole key
  BOOST_TEST(cluster_slot("foo{{bar}}zap") == 4015);  // the tag is "{bar"
  BOOST_TEST(cluster_slot("foo{bar}{zap}") == cluster_slot("bar"));
  BOOST_TEST(cluster_slot("wg:gen") == 4315);
  BOOST_TEST(cluster_slot("wg:{abc}:gen") == 7638);
  BOOST_TEST(cluster_slot("wg:quota:{2026-11}") == 446);
}

BOOST_AUTO_TEST_CASE(hash_tag_reads_a_key_as_redis_cluster_does) {
  BOOST_TEST(hash_tag("wg:{abc}:w") == "abc");
  BOOST_TEST(hash_tag("wg:gen") == "wg:gen");
  BOOST_TEST(hash_tag("foo{}{bar}") == "foo{}{bar}");
  BOOST_TEST(hash_tag("foo{{bar}}zap") == "{bar");
  BOOST_TEST(hash_tag("foo{bar}{zap}") == "bar");
  BOOST_TEST(hash_tag("foo{bar") == "foo{bar");
  for (std::string_view key : {"wg:{abc}:w", "foo{}{bar}", "foo{{bar}}zap", "x{y}z", "plain"}) {
    BOOST_TEST(cluster_slot(key) == test::crc16(hash_tag(key)) % 16384, key);
  }
}

BOOST_AUTO_TEST_CASE(the_default_prefix_names_keys_as_before) {
  const KeySpace keys;
  BOOST_TEST(keys.prefix() == "wg:");
  BOOST_TEST(keys.entry(*split_key("wg:{abc}:r:*:20:0"), 2, 5) == "wg:{abc}:g2.5:r:*:20:0");
  BOOST_TEST(keys.widget_generation("abc") == "wg:{abc}:gen");
  BOOST_TEST(keys.unversioned("wg:{abc}:w:lock") == "wg:{abc}:w:lock");
  BOOST_TEST(keys.global_generation() == "wg:gen");
  BOOST_TEST(keys.purge_channel() == "wg:purge");
  BOOST_TEST(keys.known_widgets() == "wg:known-widgets");
  // What operators' dashboards read.
  BOOST_TEST(keys.quota("2026-11") == "wg:quota:{2026-11}");
  BOOST_TEST(keys.quota_leases("2026-11") == "wg:quota:{2026-11}:leases");
  BOOST_TEST(keys.quota_unknown("2026-11") == "wg:quota:{2026-11}:unknown");
}

BOOST_AUTO_TEST_CASE(a_prefix_starts_every_key_and_the_channel) {
  for (std::string prefix : {"fleet-b:", "", "tenant.7/", "wg:"}) {
    const KeySpace keys(prefix);
    BOOST_TEST(keys.prefix() == prefix);
    for (const std::string& name : every_name(keys, "abc", "2026-11")) {
      BOOST_TEST(name.starts_with(prefix), name);
      // The prefix opens no tag: the first brace, if any, is the key's own.
      BOOST_TEST(name.find('{') >= prefix.size(), name);
    }
  }
  const KeySpace b("fleet-b:");
  BOOST_TEST(b.entry(*split_key("wg:{abc}:w"), 0, 1) == "fleet-b:{abc}:g0.1:w");
  BOOST_TEST(b.unversioned("wg:{abc}:w:lock") == "fleet-b:{abc}:w:lock");
  BOOST_TEST(b.unversioned("other") == "fleet-b:other");
  BOOST_TEST(b.purge_channel() == "fleet-b:purge");
  BOOST_TEST(b.quota("2026-11") == "fleet-b:quota:{2026-11}");
  // Two fleets never share a name.
  const auto a_names = every_name(KeySpace("fleet-a:"), "abc", "2026-11");
  const auto b_names = every_name(b, "abc", "2026-11");
  for (const std::string& name : a_names) {
    BOOST_TEST((std::find(b_names.begin(), b_names.end(), name) == b_names.end()), name);
  }
}

BOOST_AUTO_TEST_CASE(a_prefix_with_braces_is_refused) {
  BOOST_CHECK_THROW(KeySpace("wg:{x}:"), std::invalid_argument);
  BOOST_CHECK_THROW(KeySpace("wg}"), std::invalid_argument);
}

// The keys one command or script touches together: a widget's entries (a page miss reads the
// widget data and a page in one MGET), and a month's three quota keys (one script). Their
// slots are equal whatever the prefix, the id or the month.
BOOST_AUTO_TEST_CASE(keys_used_together_share_one_slot) {
  // Not "": an empty tag does not count, and Redis hashes the whole key. No request or admin
  // call carries an empty id, and RedisStore::get_pair reads keys of unequal tags apart.
  const std::vector<std::string> ids{"abc",    "A-z_09", "x}:w", "{",
                                     "ab{c}d", "%",      "w1",   std::string(64, 'z')};
  for (std::string prefix : {"wg:", "fleet-b:", ""}) {
    const KeySpace keys(prefix);
    for (const std::string& id : ids) {
      const api::ApiRequest widget{api::Endpoint::widget, id, {}};
      const std::string widget_key = api::cache_key(widget);
      const auto parts = split_key(widget_key);
      BOOST_REQUIRE(parts.has_value());
      const auto slot = cluster_slot(keys.entry(*parts, 0, 0));
      for (const auto& page : {reviews(id, 20, 0), reviews(id, 300, 1000000000)}) {
        const std::string page_key = api::cache_key(page);
        BOOST_TEST(cluster_slot(keys.entry(*split_key(page_key), 9, 4)) == slot, page_key);
        BOOST_TEST(cluster_slot(keys.unversioned(page_key + ":lock")) == slot, page_key);
      }
      // Not in one command with the entries today, but kept in the widget's slot.
      BOOST_TEST(cluster_slot(keys.widget_generation(parts->escaped_id)) == slot, id);
      BOOST_TEST(cluster_slot(keys.unversioned(widget_key + ":lock")) == slot, id);
      // The prefix never moves a key to another slot.
      BOOST_TEST(cluster_slot(KeySpace("other:").entry(*parts, 1, 1)) == slot, id);
    }
    for (std::string month : {"2026-11", "2027-01", "1999-12"}) {
      const auto slot = cluster_slot(keys.quota(month));
      BOOST_TEST(cluster_slot(keys.quota_leases(month)) == slot, month);
      BOOST_TEST(cluster_slot(keys.quota_unknown(month)) == slot, month);
    }
  }
}

BOOST_AUTO_TEST_CASE(logical_keys_split_into_id_and_rest) {
  auto parts = split_key("wg:{x%7D%3Aw}:r:*:20:0");
  BOOST_REQUIRE(parts.has_value());
  BOOST_TEST(parts->escaped_id == "x%7D%3Aw");
  BOOST_TEST(parts->rest == "r:*:20:0");
  BOOST_TEST(logical_widget_prefix("x%7D%3Aw") == api::widget_key_prefix("x}:w"));
  BOOST_TEST(api::cache_key({api::Endpoint::widget, "x}:w", {}})
                 .starts_with(logical_widget_prefix(parts->escaped_id)));
  // One head for the logical keys api builds and the ones the cache reads.
  BOOST_TEST(api::widget_key_prefix("abc").starts_with(kLogicalWidgetHead));
  BOOST_TEST(kLogicalWidgetHead.starts_with(kLogicalHead));
  BOOST_TEST(!split_key("xx:{a}:w").has_value());
  BOOST_TEST(!split_key("wg:a:w").has_value());
  BOOST_TEST(!split_key("wg:{a}w").has_value());
  BOOST_TEST(!split_key("wg:{a").has_value());
}

BOOST_AUTO_TEST_SUITE_END()  // key_space_test
