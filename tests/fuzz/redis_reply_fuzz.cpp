// Fuzz target: what the Redis client makes of a server's bytes. The RESP reply parser (hiredis'
// reader behind ReplyParser), and on each reply what the cluster client reads from it: MOVED/ASK
// redirections in error replies and the slot map of a CLUSTER SLOTS reply. Input: one byte
// choosing how the stream is split into reads, then the bytes a server sends.
// Invariants: the replies do not depend on how the stream was split; a reply written back as
// RESP parses to itself; a command formatted from a reply's strings parses back to them; a
// redirection names a slot below 16384 and a port, and formats back to itself; a slot map has
// ordered ranges within the slots and real ports.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "redis/cluster_slots.hpp"
#include "redis/resp_codec.hpp"

namespace {

using wg::redis::Reply;
using namespace wg::redis::detail;

// Replies read from a stream: at most this many per input (a few KiB hold no more), and the
// parser's verdict at the end.
constexpr std::size_t kMaxReplies = 512;

struct Parsed {
  std::vector<Reply> replies;
  bool malformed = false;
};

Parsed parse(std::string_view bytes, std::size_t chunk) {
  ReplyParser parser;
  Parsed out;
  while (true) {
    const std::size_t n = std::min(chunk, bytes.size());
    parser.feed(bytes.data(), n);
    bytes.remove_prefix(n);
    while (out.replies.size() < kMaxReplies) {
      std::optional<Reply> reply = parser.next();
      if (!reply) break;
      out.replies.push_back(std::move(*reply));
    }
    if (bytes.empty() || !parser.error().empty() || out.replies.size() == kMaxReplies) break;
  }
  out.malformed = !parser.error().empty();
  return out;
}

bool same(const Reply& a, const Reply& b) {
  if (a.type != b.type || a.integer != b.integer || a.str != b.str ||
      a.elements.size() != b.elements.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.elements.size(); ++i) {
    if (!same(a.elements[i], b.elements[i])) return false;
  }
  return true;
}

// RESP2, as a server writes it.
void write_resp(const Reply& reply, std::string& out) {
  switch (reply.type) {
    case Reply::Type::nil:
      out += "$-1\r\n";
      break;
    case Reply::Type::status:
      out += "+" + reply.str + "\r\n";
      break;
    case Reply::Type::error:
      out += "-" + reply.str + "\r\n";
      break;
    case Reply::Type::integer:
      out += ":" + std::to_string(reply.integer) + "\r\n";
      break;
    case Reply::Type::string:
      out += "$" + std::to_string(reply.str.size()) + "\r\n" + reply.str + "\r\n";
      break;
    case Reply::Type::array:
      out += "*" + std::to_string(reply.elements.size()) + "\r\n";
      for (const Reply& element : reply.elements) write_resp(element, out);
      break;
  }
}

void check_round_trip(const Reply& reply) {
  std::string resp;
  write_resp(reply, resp);
  const Parsed again = parse(resp, resp.size());
  WG_FUZZ_CHECK(!again.malformed && again.replies.size() == 1);
  WG_FUZZ_CHECK(same(again.replies[0], reply));
}

// A command made of a reply's strings (as the client sends keys and values it was given).
void check_command(const Reply& reply) {
  std::vector<std::string> args;
  for (const Reply& element : reply.elements) {
    if (element.type != Reply::Type::string) return;
    args.push_back(element.str);
  }
  std::string command;
  const bool formatted = append_command(args, command);
  WG_FUZZ_CHECK(formatted == !args.empty());
  if (!formatted) return;
  const Parsed again = parse(command, command.size());
  WG_FUZZ_CHECK(!again.malformed && again.replies.size() == 1);
  const Reply& parsed = again.replies[0];
  WG_FUZZ_CHECK(parsed.type == Reply::Type::array && parsed.elements.size() == args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    WG_FUZZ_CHECK(parsed.elements[i].type == Reply::Type::string);
    WG_FUZZ_CHECK(parsed.elements[i].str == args[i]);
  }
  if (auto key = routing_key(args)) WG_FUZZ_CHECK(key_slot(*key) < kClusterSlots);
}

void check_redirect(const std::string& error) {
  const std::optional<Redirect> redirect = parse_redirect(error);
  if (!redirect) return;
  WG_FUZZ_CHECK(redirect->slot < kClusterSlots && redirect->port != 0);
  WG_FUZZ_CHECK(error.starts_with(redirect->kind == Redirect::Kind::moved ? "MOVED " : "ASK "));
  const std::string again = (redirect->kind == Redirect::Kind::moved ? "MOVED " : "ASK ") +
                            std::to_string(redirect->slot) + " " + redirect->host + ":" +
                            std::to_string(redirect->port);
  const std::optional<Redirect> reparsed = parse_redirect(again);
  WG_FUZZ_CHECK(reparsed.has_value());
  WG_FUZZ_CHECK(reparsed->kind == redirect->kind && reparsed->slot == redirect->slot &&
                reparsed->host == redirect->host && reparsed->port == redirect->port);
}

void check_slots(const Reply& reply) {
  const auto ranges = parse_cluster_slots(reply);
  if (!ranges) return;
  WG_FUZZ_CHECK(ranges->size() == reply.elements.size());
  for (const SlotRange& range : *ranges) {
    WG_FUZZ_CHECK(range.first <= range.last && range.last < kClusterSlots);
    WG_FUZZ_CHECK(range.port != 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t chunk = 1 + data[0] % 32;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);

  const Parsed whole = parse(bytes, bytes.size() + 1);
  const Parsed split = parse(bytes, chunk);
  WG_FUZZ_CHECK(whole.replies.size() == split.replies.size());
  for (std::size_t i = 0; i < whole.replies.size(); ++i) {
    WG_FUZZ_CHECK(same(whole.replies[i], split.replies[i]));
  }
  if (whole.replies.size() < kMaxReplies) WG_FUZZ_CHECK(whole.malformed == split.malformed);

  for (const Reply& reply : whole.replies) {
    check_round_trip(reply);
    if (reply.type == Reply::Type::error) check_redirect(reply.str);
    if (reply.type == Reply::Type::array) {
      check_command(reply);
      check_slots(reply);
    }
  }
  return 0;
}
