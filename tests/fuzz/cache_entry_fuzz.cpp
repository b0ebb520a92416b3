// Fuzz target: the cache-entry decoder. Entries come back from Redis, which other instances
// (possibly of another version) write and which an operator can edit, so the decoder must
// survive any bytes. A decoded entry must survive an encode/decode round trip unchanged.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.hpp"
#include "widget_gateway/cache/entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace wg::cache;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto entry = decode_entry(bytes);
  if (!entry) return 0;
  WG_FUZZ_CHECK(entry->status >= 100 && entry->status <= 599);
  WG_FUZZ_CHECK(entry->stored_at <= entry->fresh_until && entry->fresh_until <= entry->stale_until);
  WG_FUZZ_CHECK(entry->body.size() + entry->etag.size() <= size);

  const std::string encoded = encode_entry(*entry);
  const auto again = decode_entry(encoded);
  WG_FUZZ_CHECK(again.has_value());
  WG_FUZZ_CHECK(*again == *entry);
  WG_FUZZ_CHECK(encode_entry(*again) == encoded);
  // Unknown sections are skipped, so the re-encoding is never longer than the input.
  WG_FUZZ_CHECK(encoded.size() <= size);
  return 0;
}
