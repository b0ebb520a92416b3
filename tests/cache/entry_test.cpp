#include <boost/test/unit_test.hpp>

#include <cstring>
#include <random>
#include <set>
#include <string>

#include "widget_gateway/cache/entry.hpp"

using namespace std::chrono;
using wg::WallTime;
using wg::cache::decode_entry;
using wg::cache::encode_entry;
using wg::cache::Entry;

namespace {

WallTime at_ms(std::int64_t ms) {
  return WallTime{milliseconds(ms)};
}

// Binary bytes, NUL included (the literal is split so "\x00" cannot swallow the next letter).
constexpr char kGzipLike[] =
    "\x1f\x8b\x08\x00\x00"
    "binary\0bytes";

Entry sample() {
  Entry e;
  e.status = 200;
  e.stored_at = at_ms(1'790'000'000'123);
  e.fresh_until = at_ms(1'790'003'600'456);
  e.stale_until = at_ms(1'790'090'000'789);
  e.body = R"([{"_id":"r1","name":"A","type":"googleMap"}])";
  e.etag = wg::cache::strong_etag(e.body);
  e.variants = {{"gzip", std::string(kGzipLike, sizeof kGzipLike - 1)}, {"br", "brotli-bytes"}};
  return e;
}

void put_u32(std::string& s, std::size_t offset, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) s[offset + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

// Offsets of the fixed layout: magic 4, status 2, three times 8.
constexpr std::size_t kEtagLenAt = 4 + 2 + 24;

}  // namespace

BOOST_AUTO_TEST_SUITE(entry_test)

BOOST_AUTO_TEST_CASE(round_trip) {
  Entry e = sample();
  std::string bytes = encode_entry(e);
  BOOST_TEST(bytes.substr(0, 4) == "WGE1");
  auto d = decode_entry(bytes);
  BOOST_TEST_REQUIRE(d.has_value());
  BOOST_TEST((*d == e));
  BOOST_TEST(encode_entry(*d) == bytes);
}

BOOST_AUTO_TEST_CASE(round_trip_variations) {
  Entry empty;  // all defaults, empty body, no variants
  BOOST_TEST((decode_entry(encode_entry(empty)) == empty));

  Entry negative = sample();
  negative.status = 404;
  negative.body = R"({"message":"not found"})";
  negative.variants.clear();
  negative.stale_until = negative.fresh_until;
  BOOST_TEST((decode_entry(encode_entry(negative)) == negative));

  Entry big = sample();
  big.body.assign(1 << 20, 'x');
  big.body[12345] = '\0';
  big.variants.assign(3, {"gzip", std::string(70000, '\xff')});
  BOOST_TEST((decode_entry(encode_entry(big)) == big));

  Entry before_epoch = sample();
  before_epoch.stored_at = at_ms(-5000);
  before_epoch.fresh_until = at_ms(-1);
  before_epoch.stale_until = at_ms(0);
  BOOST_TEST((decode_entry(encode_entry(before_epoch)) == before_epoch));
}

BOOST_AUTO_TEST_CASE(times_are_stored_with_millisecond_precision) {
  Entry e = sample();
  e.stored_at += nanoseconds(999'999);
  e.fresh_until += microseconds(1500);
  auto d = decode_entry(encode_entry(e));
  BOOST_TEST_REQUIRE(d.has_value());
  BOOST_TEST((d->stored_at == sample().stored_at));
  BOOST_TEST((d->fresh_until == sample().fresh_until + milliseconds(1)));
}

BOOST_AUTO_TEST_CASE(every_truncation_is_rejected) {
  std::string bytes = encode_entry(sample());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    BOOST_TEST_CONTEXT("prefix of " << n << " bytes") {
      // A copy into an exact-size buffer lets sanitizers catch any read past the end.
      std::unique_ptr<char[]> exact(new char[n == 0 ? 1 : n]);
      std::memcpy(exact.get(), bytes.data(), n);
      BOOST_TEST(!decode_entry(std::string_view(exact.get(), n)).has_value());
    }
  }
}

BOOST_AUTO_TEST_CASE(trailing_bytes_are_rejected) {
  std::string bytes = encode_entry(sample());
  BOOST_TEST(!decode_entry(bytes + '\0').has_value());
  BOOST_TEST(!decode_entry(bytes + "x").has_value());
}

BOOST_AUTO_TEST_CASE(wrong_magic_is_rejected) {
  std::string bytes = encode_entry(sample());
  for (std::size_t i = 0; i < 4; ++i) {
    std::string copy = bytes;
    copy[i] ^= 0x20;
    BOOST_TEST(!decode_entry(copy).has_value());
  }
  BOOST_TEST(!decode_entry("WGE2").has_value());
  BOOST_TEST(!decode_entry("").has_value());
}

BOOST_AUTO_TEST_CASE(corrupted_lengths_are_rejected) {
  const Entry e = sample();
  const std::string bytes = encode_entry(e);
  const std::size_t body_len_at = kEtagLenAt + 4 + e.etag.size();
  const std::size_t count_at = body_len_at + 4 + e.body.size();
  const std::size_t first_section_len_at = count_at + 4 + 1;
  for (std::size_t at : {kEtagLenAt, body_len_at, count_at, first_section_len_at}) {
    for (std::uint32_t v : {0xFFFFFFFFu, 0x7FFFFFFFu, static_cast<std::uint32_t>(bytes.size()),
                            static_cast<std::uint32_t>(bytes.size() - at)}) {
      BOOST_TEST_CONTEXT("length at " << at << " set to " << v) {
        std::string copy = bytes;
        put_u32(copy, at, v);
        BOOST_TEST(!decode_entry(copy).has_value());
      }
    }
  }
  // Off by one either way, for every length field.
  for (std::size_t at : {kEtagLenAt, body_len_at, count_at, first_section_len_at}) {
    std::uint32_t original = 0;
    for (int i = 0; i < 4; ++i)
      original |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
    for (std::uint32_t v : {original + 1, original - 1}) {
      std::string copy = bytes;
      put_u32(copy, at, v);
      BOOST_TEST_CONTEXT("length at " << at << " set to " << v) {
        BOOST_TEST(!decode_entry(copy).has_value());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(invalid_fields_are_rejected) {
  Entry e = sample();
  e.status = 99;
  BOOST_TEST(!decode_entry(encode_entry(e)).has_value());
  e.status = 600;
  BOOST_TEST(!decode_entry(encode_entry(e)).has_value());

  Entry unordered = sample();
  unordered.fresh_until = unordered.stored_at - milliseconds(1);
  BOOST_TEST(!decode_entry(encode_entry(unordered)).has_value());
  unordered = sample();
  unordered.stale_until = unordered.fresh_until - milliseconds(1);
  BOOST_TEST(!decode_entry(encode_entry(unordered)).has_value());

  // A time beyond WallTime's range (nanoseconds in 64 bits) must not overflow.
  std::string bytes = encode_entry(sample());
  std::string copy = bytes;
  for (int i = 0; i < 8; ++i) copy[4 + 2 + 16 + i] = i == 7 ? '\x7f' : '\xff';
  BOOST_TEST(!decode_entry(copy).has_value());

  Entry empty_coding = sample();
  empty_coding.variants = {{"", "x"}};
  BOOST_TEST(!decode_entry(encode_entry(empty_coding)).has_value());
}

BOOST_AUTO_TEST_CASE(unknown_sections_are_skipped) {
  // A newer writer appends a section with tag 9; this reader must keep the rest.
  Entry e = sample();
  std::string bytes = encode_entry(e);
  const std::size_t count_at = kEtagLenAt + 4 + e.etag.size() + 4 + e.body.size();
  put_u32(bytes, count_at, static_cast<std::uint32_t>(e.variants.size() + 1));
  bytes.push_back('\x09');
  std::string payload = "future field";
  std::string len(4, '\0');
  put_u32(len, 0, static_cast<std::uint32_t>(payload.size()));
  bytes += len + payload;
  auto d = decode_entry(bytes);
  BOOST_TEST_REQUIRE(d.has_value());
  BOOST_TEST((*d == e));
}

BOOST_AUTO_TEST_CASE(holds_and_fetch_facts_round_trip) {
  Entry e = sample();
  e.hold = wg::cache::Hold{at_ms(1'790'000'500'000), false};
  e.fetch_time = milliseconds(1234);
  e.early_at = at_ms(1'790'003'500'000);
  auto d = decode_entry(encode_entry(e));
  BOOST_TEST_REQUIRE(d.has_value());
  BOOST_TEST((*d == e));
  BOOST_TEST(!d->hold->provisional);

  e.hold->provisional = true;
  e.fetch_time = milliseconds(0);  // an early moment alone is kept too
  d = decode_entry(encode_entry(e));
  BOOST_TEST_REQUIRE(d.has_value());
  BOOST_TEST(d->hold->provisional);
  BOOST_TEST((d->early_at == e.early_at));

  // Neither: no section, as an earlier version wrote it (each section: tag, length, payload).
  Entry plain = sample();
  BOOST_TEST(encode_entry(plain).size() + (1 + 4 + 9) + (1 + 4 + 12) == encode_entry(e).size());
  BOOST_TEST(!decode_entry(encode_entry(plain))->hold.has_value());

  // A hold section of the wrong size, or with a flag other than 0 or 1, is malformed.
  std::string bytes = encode_entry(e);
  const std::size_t flag_at = bytes.size() - (1 + 4 + 12) - 1;
  bytes[flag_at] = '\x02';
  BOOST_TEST(!decode_entry(bytes).has_value());
}

BOOST_AUTO_TEST_CASE(the_header_sits_at_fixed_offsets) {
  // What the fetch lock's script reads with GETRANGE 0 29.
  const Entry e = sample();
  const std::string bytes = encode_entry(e);
  BOOST_TEST_REQUIRE(bytes.size() >= wg::cache::kHeaderBytes);
  auto le64 = [&](std::size_t at) {
    std::int64_t v = 0;
    for (int i = 7; i >= 0; --i) v = v * 256 + static_cast<unsigned char>(bytes[at + i]);
    return v;
  };
  BOOST_TEST(le64(wg::cache::kStoredAtOffset) == 1'790'000'000'123);
  BOOST_TEST(le64(wg::cache::kFreshUntilOffset) == 1'790'003'600'456);
  BOOST_TEST(bytes.substr(0, 4) == "WGE1");
}

BOOST_AUTO_TEST_CASE(newer_copies) {
  const Entry e = sample();
  using wg::cache::newer_than;
  BOOST_TEST(newer_than(e.stored_at + milliseconds(1), e.fresh_until - hours(1), e));
  BOOST_TEST(newer_than(e.stored_at, e.fresh_until + milliseconds(1), e));  // a hold written back
  BOOST_TEST(!newer_than(e.stored_at, e.fresh_until, e));
  BOOST_TEST(!newer_than(e.stored_at - milliseconds(1), e.fresh_until + hours(9), e));
  // Compared in milliseconds: a copy fetched here holds finer times than the same copy read
  // back from Redis or announced, and a hold written back is newer than either.
  Entry fetched = e;
  fetched.stored_at += nanoseconds(123456);
  fetched.fresh_until += nanoseconds(654321);
  BOOST_TEST(!newer_than(e.stored_at, e.fresh_until, fetched));
  BOOST_TEST(newer_than(e.stored_at, e.fresh_until + minutes(10), fetched));
  BOOST_TEST(!newer_than(fetched.stored_at, fetched.fresh_until, e));
}

BOOST_AUTO_TEST_CASE(random_corruption_never_crashes) {
  // Single-byte corruptions anywhere: decoding either fails or yields an entry whose
  // strings fit in the input (no allocation beyond the input size).
  const std::string bytes = encode_entry(sample());
  std::mt19937 rng(42);
  for (int round = 0; round < 20000; ++round) {
    std::string copy = bytes;
    int flips = 1 + round % 3;
    for (int f = 0; f < flips; ++f) {
      std::size_t at = std::uniform_int_distribution<std::size_t>(0, copy.size() - 1)(rng);
      copy[at] = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
    }
    auto d = decode_entry(copy);
    if (d) {
      std::size_t total = d->etag.size() + d->body.size();
      for (const auto& [coding, body] : d->variants) total += coding.size() + body.size();
      BOOST_TEST(total <= copy.size());
    }
  }
}

BOOST_AUTO_TEST_CASE(strong_etags) {
  std::string a = wg::cache::strong_etag("[]");
  BOOST_TEST(a.size() == 18u);
  BOOST_TEST(a.front() == '"');
  BOOST_TEST(a.back() == '"');
  BOOST_TEST(a.substr(1, 16).find_first_not_of("0123456789abcdef") == std::string::npos);
  // SHA-256("") starts with e3b0c44298fc1c14.
  BOOST_TEST(wg::cache::strong_etag("") == "\"e3b0c44298fc1c14\"");
  BOOST_TEST(wg::cache::strong_etag("[]") == a);
  std::set<std::string> tags;
  for (int i = 0; i < 1000; ++i) tags.insert(wg::cache::strong_etag(std::to_string(i)));
  BOOST_TEST(tags.size() == 1000u);
}

BOOST_AUTO_TEST_CASE(random_inputs_never_crash) {
  // Random bytes behind a valid magic, in exact-size buffers (sanitizer builds catch any
  // out-of-bounds read).
  std::mt19937 rng(7);
  for (int round = 0; round < 20000; ++round) {
    std::size_t n = std::uniform_int_distribution<std::size_t>(0, 120)(rng);
    std::unique_ptr<char[]> buffer(new char[n + 4]);
    std::memcpy(buffer.get(), "WGE1", 4);
    for (std::size_t i = 0; i < n; ++i) {
      // Mostly small values so that lengths and counts are often plausible.
      int v = std::uniform_int_distribution<int>(0, 3)(rng) == 0
                  ? std::uniform_int_distribution<int>(0, 255)(rng)
                  : std::uniform_int_distribution<int>(0, 8)(rng);
      buffer[4 + i] = static_cast<char>(v);
    }
    auto d = decode_entry(std::string_view(buffer.get(), n + 4));
    if (d) BOOST_TEST(d->etag.size() + d->body.size() <= n);
  }
}

BOOST_AUTO_TEST_CASE(element_spans_are_derived_data) {
  // Spans are not stored (an entry read back has none) and do not change equality.
  Entry e = sample();
  e.element_spans = std::vector<std::pair<std::uint32_t, std::uint32_t>>{{1, 43}};
  auto d = decode_entry(encode_entry(e));
  BOOST_TEST_REQUIRE(d.has_value());
  BOOST_TEST(!d->element_spans.has_value());
  BOOST_TEST((*d == e));
}

BOOST_AUTO_TEST_CASE(elements_from_spans_slices_the_body_and_refuses_foreign_spans) {
  const std::string body = R"([{"a":1},{"b":22}])";
  auto elements = wg::cache::elements_from_spans(body, {{1, 7}, {9, 8}});
  BOOST_TEST_REQUIRE(elements.has_value());
  BOOST_TEST_REQUIRE(elements->size() == 2u);
  BOOST_TEST((*elements)[0] == R"({"a":1})");
  BOOST_TEST((*elements)[1] == R"({"b":22})");
  BOOST_TEST(wg::cache::elements_from_spans(body, {})->empty());
  BOOST_TEST(!wg::cache::elements_from_spans(body, {{9, 10}}).has_value());
  BOOST_TEST(!wg::cache::elements_from_spans(body, {{100, 1}}).has_value());
}

BOOST_AUTO_TEST_SUITE_END()  // entry_test
