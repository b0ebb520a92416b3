// The topologies other tests build on: a three-primary cluster serves every slot, and the
// sentinels fail the primary over to the replica on request.
#include <boost/test/unit_test.hpp>

#include <set>

#include "support/redis_topology.hpp"

using namespace wg::test;

BOOST_AUTO_TEST_SUITE(redis_topology_test)

BOOST_AUTO_TEST_CASE(a_cluster_of_three_primaries_serves_every_slot) {
  RedisCluster cluster(3);
  BOOST_TEST(cluster.seeds().size() == 3u);
  // Keys with one hash tag share a node; two keys without one usually do not.
  BOOST_TEST(cluster.command_for("{w1}:a", {"SET", "{w1}:a", "1"}) == "OK");
  BOOST_TEST(&cluster.node_for("{w1}:a") == &cluster.node_for("{w1}:b"));
  std::set<RedisNode*> owners;
  for (int i = 0; i < 30; ++i) owners.insert(&cluster.node_for("key" + std::to_string(i)));
  BOOST_TEST(owners.size() == 3u);
  BOOST_TEST(cluster.node(0).command({"CLUSTER", "INFO"}).find("cluster_slots_ok:16384") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(sentinels_fail_the_primary_over_to_the_replica) {
  RedisSentinels sentinels;
  const auto before = sentinels.primary_port();
  BOOST_TEST(sentinels.primary_command({"SET", "k", "v"}) == "OK");
  const auto after = sentinels.failover();
  BOOST_TEST(after != before);
  BOOST_TEST(sentinels.primary_command({"GET", "k"}) == "v");  // replicated before the switch
  BOOST_TEST(sentinels.node_on(before).command({"SET", "k", "w"}).find("READONLY") !=
             std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()  // redis_topology_test
