// quota.state_file on a real file system: the text round-trips, a save replaces the file with
// a new 0600 one through a temporary created with O_EXCL, and nothing an attacker placed at the
// temporary or the target name is written through.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "support/process.hpp"
#include "widget_gateway/quota/lease_file.hpp"

using namespace wg::quota;
using wg::test::read_file;
using wg::test::TempDir;
namespace fs = std::filesystem;

namespace {

const LeaseState kState{"host-1a2b", {{"2026-11", {40, 13, 2}}, {"2026-12", {5, 0, 0}}}, {}};

mode_t permissions_of(const std::string& path) {
  struct stat st {};
  BOOST_REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(lease_file_test)

BOOST_AUTO_TEST_CASE(lease_files_round_trip_and_bad_ones_are_refused) {
  BOOST_TEST((parse_lease_state(format_lease_state(kState)) == kState));
  BOOST_TEST(!parse_lease_state("").has_value());
  BOOST_TEST(!parse_lease_state("instance=x\n2026-13 granted=1 spent=0 returned=0\n"));
  BOOST_TEST(!parse_lease_state("instance=x\n2026-11 granted=-1 spent=0 returned=0\n"));
  BOOST_TEST(!parse_lease_state("instance=x\n2026-11 granted=1 spent=0\n"));
}

BOOST_AUTO_TEST_CASE(unsent_charges_and_high_water_marks_round_trip_and_old_files_still_load) {
  const LeaseState state{"host-1a2b",
                         {{"2026-11", {40, 13, 2, 3}}, {"2026-12", {0, 0, 0}}},
                         {{"2026-11", 5000}, {"2026-12", 7}}};
  BOOST_TEST((parse_lease_state(format_lease_state(state)) == state));
  BOOST_TEST(format_lease_state(state).find("2026-11 granted=40 spent=13 returned=2 unsent=3 "
                                            "seen=5000\n") != std::string::npos);
  // A file an earlier version wrote: no unsent, no seen.
  const auto old = parse_lease_state("instance=x\n2026-11 granted=4 spent=1 returned=0\n");
  BOOST_REQUIRE(old.has_value());
  BOOST_TEST((old->ledgers.at("2026-11") == Ledger{4, 1, 0, 0}));
  BOOST_TEST(old->seen.empty());
  // Either may come first; neither twice, nothing unknown, no more given back than charged.
  BOOST_TEST(parse_lease_state("instance=x\n2026-11 granted=4 spent=1 returned=0 seen=9 unsent=1\n")
                 .has_value());
  BOOST_TEST(
      !parse_lease_state("instance=x\n2026-11 granted=4 spent=1 returned=0 seen=9 seen=9\n"));
  BOOST_TEST(!parse_lease_state("instance=x\n2026-11 granted=4 spent=1 returned=0 other=1\n"));
  BOOST_TEST(!parse_lease_state("instance=x\n2026-11 granted=4 spent=1 returned=0 unsent=2\n"));
}

BOOST_AUTO_TEST_CASE(every_count_the_writer_writes_reads_back) {
  const LeaseState largest{"host-1a2b", {{"2026-11", {UINT64_MAX, UINT64_MAX, 0}}}, {}};
  BOOST_TEST((parse_lease_state(format_lease_state(largest)) == largest));
  BOOST_TEST(
      !parse_lease_state("instance=x\n2026-11 granted=18446744073709551616 spent=0 "
                         "returned=0\n"));
}

BOOST_AUTO_TEST_CASE(what_is_left_never_wraps) {
  // A state file may hold any counts; a lease is never larger than granted.
  const auto state = parse_lease_state(
      "instance=x\n2026-11 granted=9999999999999999999 spent=9999999999999999999 "
      "returned=9999999999999999999\n");
  BOOST_REQUIRE(state.has_value());
  BOOST_TEST(state->ledgers.at("2026-11").left() == 0u);
  BOOST_TEST((Ledger{10, UINT64_MAX, 1}.left() == 0u));
  BOOST_TEST((Ledger{10, 3, 2}.left() == 5u));
  BOOST_TEST((Ledger{10, 0, 10}.left() == 0u));
}

BOOST_AUTO_TEST_CASE(a_save_replaces_the_file_with_a_new_owner_only_one) {
  TempDir dir;
  const std::string path = dir.write("quota.state", "old content\n");
  BOOST_REQUIRE(::chmod(path.c_str(), 0644) == 0);
  struct stat before {};
  BOOST_REQUIRE(::stat(path.c_str(), &before) == 0);

  // Even a permissive umask leaves the file to its owner.
  const mode_t old_umask = ::umask(0);
  const bool saved = save_lease_state(path, kState);
  ::umask(old_umask);
  BOOST_REQUIRE(saved);

  BOOST_TEST(read_file(path) == format_lease_state(kState));
  BOOST_TEST(permissions_of(path) == 0600u);
  struct stat after {};
  BOOST_REQUIRE(::stat(path.c_str(), &after) == 0);
  BOOST_TEST(after.st_ino != before.st_ino);  // renamed over, not rewritten in place
  BOOST_TEST(!fs::exists(path + ".tmp"));
  BOOST_TEST((take_lease_state(path) == kState));
}

BOOST_AUTO_TEST_CASE(a_symlink_at_the_temporary_name_is_not_written_through) {
  TempDir dir;
  const std::string victim = dir.write("victim", "precious\n");
  const std::string path = dir.file("quota.state");
  BOOST_REQUIRE(::symlink(victim.c_str(), (path + ".tmp").c_str()) == 0);

  BOOST_REQUIRE(save_lease_state(path, kState));

  BOOST_TEST(read_file(victim) == "precious\n");
  BOOST_TEST(is_regular_file(path));
  BOOST_TEST(read_file(path) == format_lease_state(kState));
  BOOST_TEST(permissions_of(path) == 0600u);
  BOOST_TEST(!fs::exists(fs::symlink_status(path + ".tmp")));
}

BOOST_AUTO_TEST_CASE(a_file_or_hard_link_at_the_temporary_name_is_not_written_through) {
  TempDir dir;
  const std::string victim = dir.write("victim", "precious\n");
  const std::string path = dir.file("quota.state");
  const mode_t victim_mode = permissions_of(victim);
  BOOST_REQUIRE(::link(victim.c_str(), (path + ".tmp").c_str()) == 0);

  BOOST_REQUIRE(save_lease_state(path, kState));

  BOOST_TEST(read_file(victim) == "precious\n");
  BOOST_TEST(permissions_of(victim) == victim_mode);
  BOOST_TEST(read_file(path) == format_lease_state(kState));
  BOOST_TEST(permissions_of(path) == 0600u);

  // A leftover of an interrupted save is replaced the same way.
  dir.write("quota.state.tmp", "half a ledger");
  const LeaseState next{"host-1a2b", {{"2026-12", {6, 1, 0}}}, {}};
  BOOST_REQUIRE(save_lease_state(path, next));
  BOOST_TEST((take_lease_state(path) == next));
}

BOOST_AUTO_TEST_CASE(a_symlink_or_directory_at_the_target_is_refused) {
  TempDir dir;
  const std::string victim = dir.write("victim", "precious\n");
  const std::string path = dir.file("quota.state");
  BOOST_REQUIRE(::symlink(victim.c_str(), path.c_str()) == 0);

  BOOST_TEST(!save_lease_state(path, kState));

  BOOST_TEST(read_file(victim) == "precious\n");
  BOOST_TEST(fs::is_symlink(path));
  BOOST_TEST(!fs::exists(fs::symlink_status(path + ".tmp")));

  const std::string subdirectory = dir.file("state");
  fs::create_directory(subdirectory);
  BOOST_TEST(!save_lease_state(subdirectory, kState));
  BOOST_TEST(fs::is_directory(subdirectory));
}

BOOST_AUTO_TEST_CASE(a_symlink_at_the_state_file_is_not_read_through) {
  TempDir dir;
  const std::string elsewhere = dir.write("elsewhere", format_lease_state(kState));
  const std::string path = dir.file("quota.state");
  BOOST_REQUIRE(::symlink(elsewhere.c_str(), path.c_str()) == 0);

  BOOST_TEST(!take_lease_state(path).has_value());

  BOOST_TEST(read_file(elsewhere) == format_lease_state(kState));
  BOOST_TEST(fs::is_symlink(path + ".bad"));
  BOOST_TEST(!fs::exists(fs::symlink_status(path)));
}

BOOST_AUTO_TEST_CASE(a_missing_directory_is_a_failed_save) {
  TempDir dir;
  BOOST_TEST(!save_lease_state(dir.file("missing/quota.state"), kState));
  BOOST_TEST(!fs::exists(dir.file("missing")));
}

BOOST_AUTO_TEST_SUITE_END()  // lease_file_test
