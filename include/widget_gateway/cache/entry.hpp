#pragma once
// One cached answer and its storage format (the same bytes in L1 and in Redis).
//
// Format "WGE1", all integers little-endian:
//   magic        4 bytes  "WGE1"
//   status       u16
//   stored_at    i64      milliseconds since the Unix epoch
//   fresh_until  i64      ms
//   stale_until  i64      ms
//   etag         u32 length + bytes
//   body         u32 length + bytes
//   sections     u32 count, then per section: u8 tag, u32 length, payload
//     tag 1 (variant): u32 coding length + coding bytes, then the encoded body (the rest)
//     tag 2 (hold):    i64 since (ms), u8 provisional (0 or 1)
//     tag 3 (fetch):   u32 fetch time (ms), i64 early refresh from (ms)
//     unknown tags are skipped, so later fields can be added as new sections without
//     breaking readers of this version.
// Nothing may follow the last section: every truncation or extension is detected.
//
// The fixed header (magic to stale_until, kHeaderBytes) is what the fetch lock's script reads
// of an entry (GETRANGE) to tell whether Redis holds a newer copy than a worker's
// (docs/freshness.md).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "widget_gateway/cache/body_file.hpp"
#include "widget_gateway/common/clock.hpp"

namespace wg::cache {

// The bytes of the fixed header, and where stored_at and fresh_until sit in it.
inline constexpr std::size_t kHeaderBytes = 30;
inline constexpr std::size_t kStoredAtOffset = 6;
inline constexpr std::size_t kFreshUntilOffset = 14;

// An upstream answer held back because it took more than half of the data away
// (docs/freshness.md): the copy carrying it is served with detail=unconfirmed until
// `since` + cache.confirm_after.
struct Hold {
  WallTime since{};  // the first held-back answer (millisecond precision once encoded)
  // True: there was no adopted copy to keep, and this copy is the held-back answer itself:
  // served, but never a proof (list ends, local answers, the guard's bound).
  bool provisional = false;
  friend bool operator==(const Hold&, const Hold&) = default;
};

// An entry is immutable once shared (held by L1, or by an answer under way): what a worker
// derives from one later (a coding made on demand, the elements' offsets, a body file) goes
// into a copy that replaces it in that worker's L1 (with_* below), while answers under way keep
// sending the bytes of the one they hold.
struct Entry {
  std::uint16_t status = 200;  // 200, or 404/400 for a cached unknown widget (negative entry)
  WallTime stored_at{};        // millisecond precision once encoded
  WallTime fresh_until{};
  WallTime stale_until{};
  std::string etag;  // strong, with quotes
  std::string body;  // upstream bytes, unchanged
  // content-coding -> encoded body: stored ones (an earlier version's), or made on demand
  // (compress_on_demand; see codings_on_demand), each into a copy (with_variant).
  std::vector<std::pair<std::string, std::string>> variants;
  bool compress_on_demand = false;
  // An answer proven by the widget data or by windows (an empty page, an unknown widget's
  // reviews), kept in L1 only: served again as what it is (detail=local).
  bool proven = false;
  std::optional<Hold> hold;  // a held-back answer's mark (see Hold)
  // How long the upstream exchange that produced this copy took (0: not known), and from when
  // a request starts its one early refresh (XFetch, drawn once when it was fetched:
  // cache::early_refresh_at); WallTime{} for never.
  std::chrono::milliseconds fetch_time{0};
  WallTime early_at{};
  // Read from Redis after a soft purge of its widget (or of everything) that it predates: its
  // fresh_until is the purge, and it may be served while revalidating until stale_until. Set
  // when it is read, never stored.
  bool soft_purged = false;
  // Where each element of a reviews array body lies in `body` (offset, length), when known:
  // set when the body is validated at fetch time, or in a copy made by the worker that first
  // parses a window read from Redis (with_element_spans), so pages derived from this window do
  // not parse 150 KB again. Derived data: not stored in Redis (an entry read from there has
  // none) and not part of equality.
  std::optional<std::vector<std::pair<std::uint32_t, std::uint32_t>>> element_spans;
  // `body` in a file, for sendfile (see body_file.hpp), in a copy made by the worker that
  // holds the entry (with_body_file). Derived data, like element_spans.
  std::shared_ptr<const BodyFile> body_file;

  friend bool operator==(const Entry& a, const Entry& b) {
    return a.status == b.status && a.stored_at == b.stored_at && a.fresh_until == b.fresh_until &&
           a.stale_until == b.stale_until && a.etag == b.etag && a.body == b.body &&
           a.variants == b.variants && a.hold == b.hold && a.fetch_time == b.fetch_time &&
           a.early_at == b.early_at;
  }
};

// The codings a body can have (br, gzip).
inline constexpr std::size_t kMaxVariants = 2;

// Copies of `entry` with one thing more. The body is copied with the rest: cheaper by far than
// the compression, parse or file that made the copy worth having, and each happens at most a
// few times per copy a worker holds.
std::shared_ptr<const Entry> with_variant(const Entry& entry, std::string coding,
                                          std::string encoded);
std::shared_ptr<const Entry> with_element_spans(
    const Entry& entry, std::vector<std::pair<std::uint32_t, std::uint32_t>> spans);
std::shared_ptr<const Entry> with_body_file(const Entry& entry,
                                            std::shared_ptr<const BodyFile> file);

// Whether a coding can still be made on demand for `entry`.
inline bool lacks_codings(const Entry& entry) {
  return entry.compress_on_demand && entry.variants.size() < kMaxVariants;
}

// Marks `entry` to be compressed when a client first accepts a coding for it, not before:
// most entries fetched or cut on a miss of a long-tail site are asked for a few times, often by
// clients that take identity, and compressing a small body costs about as much as the rest of
// its miss (brotli's and zlib's set-up). An entry that already has codings (stored by an
// earlier version) keeps them.
void codings_on_demand(Entry& entry);

// The elements of a reviews array `body` from spans recorded for it; nullopt when a span lies
// outside `body` (the spans do not belong to it).
std::optional<std::vector<std::string_view>> elements_from_spans(
    std::string_view body, const std::vector<std::pair<std::uint32_t, std::uint32_t>>& spans);

// Whether a copy stored at `stored_at` and fresh until `fresh_until` is newer than `than`: it
// was stored later, or it is the same copy with a later freshness (a hold written back). In
// milliseconds, the precision of the encoded format: a copy this process fetched holds finer
// times than the same copy read back from Redis or announced. The claim script of the fetch
// lock compares the header fields in Redis the same way.
inline bool newer_than(WallTime stored_at, WallTime fresh_until, const Entry& than) {
  using std::chrono::floor;
  using Ms = std::chrono::milliseconds;
  const auto stored = floor<Ms>(stored_at);
  const auto than_stored = floor<Ms>(than.stored_at);
  return stored > than_stored ||
         (stored == than_stored && floor<Ms>(fresh_until) > floor<Ms>(than.fresh_until));
}

std::string encode_entry(const Entry& entry);

// nullopt for anything malformed: wrong magic, truncation, trailing bytes, lengths past the
// end, a status outside 100..599, times out of order (stored_at <= fresh_until <=
// stale_until) or out of WallTime's range. Reads only inside `bytes` and never allocates more
// than its size.
std::optional<Entry> decode_entry(std::string_view bytes);

// "\"" + 16 lower-case hex digits + "\"": the first 64 bits of SHA-256(body). A real hash
// rather than FNV keeps ETags of different bodies of one resource from colliding in practice.
std::string strong_etag(std::string_view body);

}  // namespace wg::cache
