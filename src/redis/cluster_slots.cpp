#include "redis/cluster_slots.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

#include "widget_gateway/common/ascii.hpp"

namespace wg::redis::detail {

namespace {

// CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), the variant Redis Cluster uses.
constexpr std::array<std::uint16_t, 256> make_crc_table() {
  std::array<std::uint16_t, 256> table{};
  for (int i = 0; i < 256; ++i) {
    std::uint16_t crc = static_cast<std::uint16_t>(i << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<std::uint16_t>(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    table[static_cast<std::size_t>(i)] = crc;
  }
  return table;
}
constexpr auto kCrcTable = make_crc_table();

std::uint16_t crc16(std::string_view data) {
  std::uint16_t crc = 0;
  for (unsigned char c : data) {
    crc = static_cast<std::uint16_t>((crc << 8) ^ kCrcTable[((crc >> 8) ^ c) & 0xff]);
  }
  return crc;
}

using ascii::iequals;

template <class T>
std::optional<T> number(std::string_view text) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::uint16_t key_slot(std::string_view key) {
  if (auto open = key.find('{'); open != std::string_view::npos) {
    if (auto close = key.find('}', open + 1); close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return crc16(key) % kClusterSlots;
}

std::optional<std::string_view> routing_key(const std::vector<std::string>& args) {
  if (args.empty()) return std::nullopt;
  const std::string_view command = args[0];
  for (std::string_view keyless :
       {"PING",    "INFO",     "PUBLISH", "SUBSCRIBE", "UNSUBSCRIBE", "PSUBSCRIBE",
        "CLUSTER", "AUTH",     "SELECT",  "HELLO",     "CLIENT",      "SCRIPT",
        "ROLE",    "SENTINEL", "DBSIZE",  "FLUSHALL",  "FLUSHDB",     "DEBUG",
        "CONFIG",  "ACL",      "ASKING",  "READONLY",  "TIME"}) {
    if (iequals(command, keyless)) return std::nullopt;
  }
  if (iequals(command, "EVAL") || iequals(command, "EVALSHA") || iequals(command, "EVAL_RO") ||
      iequals(command, "EVALSHA_RO") || iequals(command, "FCALL")) {
    if (args.size() < 4) return std::nullopt;
    auto keys = number<long>(args[2]);
    if (!keys || *keys <= 0) return std::nullopt;
    return std::string_view(args[3]);
  }
  if (args.size() < 2) return std::nullopt;
  return std::string_view(args[1]);
}

std::optional<Redirect> parse_redirect(std::string_view error) {
  Redirect redirect;
  if (error.starts_with("MOVED ")) {
    redirect.kind = Redirect::Kind::moved;
    error.remove_prefix(6);
  } else if (error.starts_with("ASK ")) {
    redirect.kind = Redirect::Kind::ask;
    error.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  const auto space = error.find(' ');
  const auto colon = error.rfind(':');
  if (space == std::string_view::npos || colon == std::string_view::npos || colon < space) {
    return std::nullopt;
  }
  auto slot = number<std::uint16_t>(error.substr(0, space));
  auto port = number<std::uint16_t>(error.substr(colon + 1));
  if (!slot || *slot >= kClusterSlots || !port || *port == 0) return std::nullopt;
  redirect.slot = *slot;
  redirect.port = *port;
  redirect.host = std::string(error.substr(space + 1, colon - space - 1));
  // An IPv6 address comes without brackets ("MOVED 1 ::1:6379"): the port is after the last
  // colon either way.
  return redirect;
}

std::optional<std::vector<SlotRange>> parse_cluster_slots(const Reply& reply) {
  if (reply.type != Reply::Type::array) return std::nullopt;
  std::vector<SlotRange> ranges;
  for (const Reply& entry : reply.elements) {
    // [first, last, [host, port, id, ...] (primary), [replica]...]
    if (entry.type != Reply::Type::array || entry.elements.size() < 3) return std::nullopt;
    const Reply& first = entry.elements[0];
    const Reply& last = entry.elements[1];
    const Reply& primary = entry.elements[2];
    if (first.type != Reply::Type::integer || last.type != Reply::Type::integer ||
        primary.type != Reply::Type::array || primary.elements.size() < 2 ||
        primary.elements[1].type != Reply::Type::integer || first.integer < 0 ||
        last.integer >= kClusterSlots || first.integer > last.integer) {
      return std::nullopt;
    }
    const Reply& host = primary.elements[0];
    if (host.type != Reply::Type::string && host.type != Reply::Type::nil) return std::nullopt;
    const long long port = primary.elements[1].integer;
    if (port <= 0 || port > 65535) return std::nullopt;
    ranges.push_back({static_cast<std::uint16_t>(first.integer),
                      static_cast<std::uint16_t>(last.integer), host.str,
                      static_cast<std::uint16_t>(port)});
  }
  return ranges;
}

}  // namespace wg::redis::detail
