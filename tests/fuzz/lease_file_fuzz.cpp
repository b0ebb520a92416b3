// Fuzz target: quota.state_file, the lease ledgers a stopped instance left behind for the next
// start. Input: the file's text.
// Invariants: a file that loads round-trips through the writer (written again, it loads as the
// same state, and is written the same); what is left of a loaded ledger is never more than was
// granted less what was spent and returned (counted here in 128 bits). And from the same bytes,
// any state the writer can be given (any instance name an instance can have, any counts) loads
// back from what it writes.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "fuzz_input.hpp"
#include "widget_gateway/quota/lease_file.hpp"

namespace {

using wg::quota::LeaseState;
using wg::quota::Ledger;

void check_left(const Ledger& ledger) {
  const unsigned __int128 used = static_cast<unsigned __int128>(ledger.spent) +
                                 static_cast<unsigned __int128>(ledger.returned);
  const std::uint64_t expected =
      ledger.granted > used ? static_cast<std::uint64_t>(ledger.granted - used) : 0;
  WG_FUZZ_CHECK(ledger.left() == expected);
}

void check_loaded(std::string_view text) {
  const auto state = wg::quota::parse_lease_state(text);
  if (!state) return;
  WG_FUZZ_CHECK(!state->instance.empty());
  for (const auto& [month, ledger] : state->ledgers) check_left(ledger);

  const std::string written = wg::quota::format_lease_state(*state);
  const auto again = wg::quota::parse_lease_state(written);
  WG_FUZZ_CHECK(again.has_value());
  WG_FUZZ_CHECK(*again == *state);
  WG_FUZZ_CHECK(wg::quota::format_lease_state(*again) == written);
}

// An instance name as the gateway makes one: a host name (any bytes but NUL, with ' ' and ':'
// replaced) and a random suffix.
std::string instance_name(wg::fuzz::Bytes& bytes) {
  std::string host;
  for (std::size_t n = 1 + bytes.pick(16); n > 0; --n) {
    char c = static_cast<char>(bytes.byte());
    if (c == ' ' || c == ':') c = '-';
    if (c == '\0') c = 'h';
    host.push_back(c);
  }
  return host + "-0a1b2c3d";
}

std::uint64_t count(wg::fuzz::Bytes& bytes) {
  constexpr std::array<std::uint64_t, 4> kEdges = {0, 1, 9'999'999'999'999'999'999u, UINT64_MAX};
  return bytes.flag() ? kEdges[bytes.pick(kEdges.size())] : bytes.u64() >> bytes.pick(64);
}

void check_written(wg::fuzz::Bytes& bytes) {
  LeaseState state;
  state.instance = instance_name(bytes);
  for (std::size_t n = bytes.pick(4); n > 0; --n) {
    const unsigned year = 1970 + static_cast<unsigned>(bytes.pick(200));
    const unsigned month = 1 + static_cast<unsigned>(bytes.pick(12));
    char name[16];
    std::snprintf(name, sizeof name, "%04u-%02u", year, month);
    Ledger& ledger = state.ledgers[name];
    ledger.granted = count(bytes);
    ledger.spent = count(bytes);
    ledger.returned = count(bytes);
    check_left(ledger);
  }
  const std::string written = wg::quota::format_lease_state(state);
  const auto loaded = wg::quota::parse_lease_state(written);
  // A host name with a tab or a line break in it cannot be told from the format's separators
  // (and no resolver would give one).
  if (state.instance.find_first_of("\t\r\n") == std::string::npos) {
    if (!loaded || *loaded != state) {
      std::fprintf(stderr, "written:\n%s\n", written.c_str());
      WG_FUZZ_CHECK(loaded.has_value() && *loaded == state);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = wg::fuzz::as_text(data, size);
  check_loaded(text);
  wg::fuzz::Bytes bytes(text);
  check_written(bytes);
  return 0;
}
