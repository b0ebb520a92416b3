// Slots as Redis itself computes them (values from CLUSTER KEYSLOT), routing keys of the
// commands the gateway sends, redirections and slot maps.
#include <boost/test/unit_test.hpp>

#include "redis/cluster_slots.hpp"

using namespace wg::redis;
using namespace wg::redis::detail;

BOOST_AUTO_TEST_SUITE(cluster_slots_test)

BOOST_AUTO_TEST_CASE(slots_match_cluster_keyslot) {
  BOOST_TEST(key_slot("foo") == 12182);
  BOOST_TEST(key_slot("123456789") == 12739);
  BOOST_TEST(key_slot("{user1000}.following") == 3443);
  BOOST_TEST(key_slot("{user1000}.followers") == 3443);
  BOOST_TEST(key_slot("foo{}{bar}") == 8363);     // an empty tag: the whole key
  BOOST_TEST(key_slot("foo{{bar}}zap") == 4015);  // the tag is "{bar"
  BOOST_TEST(key_slot("foo{bar}{zap}") == 5061);  // the first tag only
  BOOST_TEST(key_slot("wg:quota:{2026-11}") == 446);
  BOOST_TEST(key_slot("wg:{abc}:w") == 7638);
  BOOST_TEST(key_slot("") == 0);
}

BOOST_AUTO_TEST_CASE(routing_keys_of_the_commands_the_gateway_sends) {
  using Args = std::vector<std::string>;
  BOOST_TEST(*routing_key(Args{"GET", "k"}) == "k");
  BOOST_TEST(*routing_key(Args{"mget", "a", "b"}) == "a");
  BOOST_TEST(*routing_key(Args{"EVAL", "return 1", "2", "k1", "k2", "arg"}) == "k1");
  BOOST_TEST(!routing_key(Args{"EVAL", "return 1", "0"}));
  BOOST_TEST(!routing_key(Args{"PUBLISH", "channel", "m"}));
  BOOST_TEST(!routing_key(Args{"PING"}));
  BOOST_TEST(!routing_key(Args{}));
}

BOOST_AUTO_TEST_CASE(redirections) {
  auto moved = parse_redirect("MOVED 3999 127.0.0.1:6381");
  BOOST_REQUIRE(moved);
  BOOST_TEST((moved->kind == Redirect::Kind::moved));
  BOOST_TEST(moved->slot == 3999);
  BOOST_TEST(moved->host == "127.0.0.1");
  BOOST_TEST(moved->port == 6381);
  auto ask = parse_redirect("ASK 1 ::1:7000");
  BOOST_REQUIRE(ask);
  BOOST_TEST((ask->kind == Redirect::Kind::ask));
  BOOST_TEST(ask->host == "::1");
  BOOST_TEST(!parse_redirect("MOVED 16384 127.0.0.1:1"));
  BOOST_TEST(!parse_redirect("MOVED x 127.0.0.1:1"));
  BOOST_TEST(!parse_redirect("ERR wrong number of arguments"));
}

BOOST_AUTO_TEST_CASE(slot_maps) {
  auto node = [](std::string host, long long port) {
    Reply r{Reply::Type::array, 0, {}, {}};
    r.elements.push_back(Reply{Reply::Type::string, 0, std::move(host), {}});
    r.elements.push_back(Reply{Reply::Type::integer, port, {}, {}});
    r.elements.push_back(Reply{Reply::Type::string, 0, "id", {}});
    return r;
  };
  auto range = [&](long long first, long long last, long long port) {
    Reply r{Reply::Type::array, 0, {}, {}};
    r.elements.push_back(Reply{Reply::Type::integer, first, {}, {}});
    r.elements.push_back(Reply{Reply::Type::integer, last, {}, {}});
    r.elements.push_back(node("127.0.0.1", port));
    r.elements.push_back(node("127.0.0.1", port + 100));  // a replica: ignored
    return r;
  };
  Reply slots{Reply::Type::array, 0, {}, {}};
  slots.elements = {range(0, 5460, 7000), range(5461, 10922, 7001), range(10923, 16383, 7002)};
  auto map = parse_cluster_slots(slots);
  BOOST_REQUIRE(map);
  BOOST_TEST(map->size() == 3u);
  BOOST_TEST((*map)[1].first == 5461);
  BOOST_TEST((*map)[1].port == 7001);
  BOOST_TEST(!parse_cluster_slots(Reply{Reply::Type::error, 0, "ERR", {}}));
  slots.elements.push_back(range(10, 20000, 7003));
  BOOST_TEST(!parse_cluster_slots(slots));
}

BOOST_AUTO_TEST_SUITE_END()  // cluster_slots_test
