#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <random>
#include <string>

#include "widget_gateway/compress/compress.hpp"

using namespace wg::compress;

namespace {

// A reviews-like JSON array: Cyrillic names and texts, URLs, dates; about `bytes` long.
std::string reviews_json(std::size_t bytes) {
  static const char* const kNames[] = {"Анна Смирнова", "Иван Петров", "Ольга Кузнецова",
                                       "Дмитрий Соколов"};
  static const char* const kTexts[] = {
      "Отличное место, всем рекомендую!", "Записались онлайн, приняли точно по времени.",
      "Цены выросли, а качество упало.", "Вежливый персонал, чисто и уютно. Вернёмся ещё."};
  std::mt19937 rng(7);
  std::string out = "[";
  for (int i = 0; out.size() < bytes; ++i) {
    if (i > 0) out += ",";
    out += R"({"_id":")" + std::to_string(100000 + rng() % 900000) + R"(","name":")" +
           kNames[rng() % 4] + R"(","message":")" + kTexts[rng() % 4] + R"(","rating":)" +
           std::to_string(1 + rng() % 5) + R"(,"date":"2025-0)" + std::to_string(1 + rng() % 9) +
           R"(-1)" + std::to_string(rng() % 10) +
           R"(T10:00:00.000Z","src":"https://maps.example/r/)" + std::to_string(rng()) +
           R"(","type":"googleMap"})";
  }
  return out + "]";
}

std::string random_bytes(std::size_t n) {
  std::mt19937 rng(11);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng() & 0xFF);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(codecs_test)

BOOST_AUTO_TEST_CASE(gzip_round_trip_cyrillic_json) {
  std::string body = reviews_json(150 * 1024);
  for (int level : {1, 6, 9}) {
    auto packed = gzip_compress(body, level);
    BOOST_REQUIRE(packed);
    BOOST_TEST(packed->size() < body.size() / 3);
    // gzip magic, deflate method
    BOOST_TEST(static_cast<unsigned char>((*packed)[0]) == 0x1f);
    BOOST_TEST(static_cast<unsigned char>((*packed)[1]) == 0x8b);
    auto unpacked = gzip_decompress(*packed);
    BOOST_REQUIRE(unpacked);
    BOOST_TEST((*unpacked == body));
  }
}

BOOST_AUTO_TEST_CASE(brotli_round_trip_cyrillic_json) {
  std::string body = reviews_json(150 * 1024);
  for (int quality : {0, 5, 9}) {
    auto packed = brotli_compress(body, quality);
    BOOST_REQUIRE(packed);
    BOOST_TEST(packed->size() < body.size() / 3);
    auto unpacked = brotli_decompress(*packed);
    BOOST_REQUIRE(unpacked);
    BOOST_TEST((*unpacked == body));
  }
}

BOOST_AUTO_TEST_CASE(default_levels_beat_gzip_with_brotli) {
  std::string body = reviews_json(150 * 1024);
  auto gz = gzip_compress(body);
  auto br = brotli_compress(body);
  BOOST_REQUIRE(gz);
  BOOST_REQUIRE(br);
  BOOST_TEST(br->size() < gz->size());
}

BOOST_AUTO_TEST_CASE(empty_and_binary_inputs_round_trip) {
  for (const std::string& body : {std::string(), std::string("x"), random_bytes(70000)}) {
    auto gz = gzip_compress(body);
    auto br = brotli_compress(body);
    BOOST_REQUIRE(gz);
    BOOST_REQUIRE(br);
    BOOST_TEST((gzip_decompress(*gz) == body));
    BOOST_TEST((brotli_decompress(*br) == body));
  }
}

BOOST_AUTO_TEST_CASE(bad_levels_are_refused) {
  BOOST_TEST(!gzip_compress("abc", -1));
  BOOST_TEST(!gzip_compress("abc", 10));
  BOOST_TEST(!brotli_compress("abc", -1));
  BOOST_TEST(!brotli_compress("abc", 12));
}

BOOST_AUTO_TEST_CASE(decompressors_reject_truncated_trailing_and_garbage) {
  std::string body = reviews_json(20000);
  auto gz = gzip_compress(body);
  auto br = brotli_compress(body);
  BOOST_REQUIRE(gz);
  BOOST_REQUIRE(br);
  for (std::size_t cut :
       {std::size_t{0}, std::size_t{1}, std::size_t{10}, gz->size() / 2, gz->size() - 1}) {
    BOOST_TEST(!gzip_decompress(gz->substr(0, cut)), "gzip cut at " << cut);
  }
  for (std::size_t cut : {std::size_t{1}, std::size_t{10}, br->size() / 2, br->size() - 1}) {
    BOOST_TEST(!brotli_decompress(br->substr(0, cut)), "br cut at " << cut);
  }
  BOOST_TEST(!gzip_decompress(*gz + "x"));
  BOOST_TEST(!brotli_decompress(*br + "x"));
  BOOST_TEST(!gzip_decompress(body));
  BOOST_TEST(!brotli_decompress(body));
  BOOST_TEST(!gzip_decompress(*br));
  std::string corrupt = *gz;
  corrupt[corrupt.size() / 2] ^= 0x55;
  BOOST_TEST(!gzip_decompress(corrupt));  // deflate data or CRC-32 check fails
}

BOOST_AUTO_TEST_CASE(decompressors_bound_their_output) {
  // A small "bomb": 10 MB of zeros compresses to a few KB.
  std::string zeros(10 * 1000 * 1000, '\0');
  auto gz = gzip_compress(zeros);
  auto br = brotli_compress(zeros);
  BOOST_REQUIRE(gz);
  BOOST_REQUIRE(br);
  BOOST_TEST(gz->size() < 100 * 1000);
  BOOST_TEST(!gzip_decompress(*gz, 1000 * 1000));
  BOOST_TEST(!brotli_decompress(*br, 1000 * 1000));
  BOOST_TEST(!gzip_decompress(*gz, zeros.size() - 1));
  BOOST_TEST(!brotli_decompress(*br, zeros.size() - 1));
  // Exactly at the limit is fine.
  BOOST_TEST(gzip_decompress(*gz, zeros.size()).has_value());
  BOOST_TEST(brotli_decompress(*br, zeros.size()).has_value());
}

BOOST_AUTO_TEST_CASE(a_large_body_encodes_into_its_own_bytes_only) {
  const std::string body = reviews_json(150 * 1024);
  for (std::string_view coding : {"br", "gzip"}) {
    BOOST_TEST_CONTEXT(coding) {
      auto encoded = encode(coding, body);
      BOOST_REQUIRE(encoded.has_value());
      const auto decoded = coding == "br" ? brotli_decompress(*encoded) : gzip_decompress(*encoded);
      BOOST_TEST((decoded == body));
      // A cached variant holds its bytes, not the encoder's worst-case buffer (about the body's
      // size): L1 charges capacity, and every entry would otherwise carry a spare body.
      BOOST_TEST(encoded->capacity() < body.size() / 4);
    }
  }
}

BOOST_AUTO_TEST_CASE(encode_makes_one_coding_only_when_it_pays) {
  const std::string body(4096, 'a');
  auto br = encode("br", body);
  auto gz = encode("gzip", body);
  BOOST_REQUIRE(br.has_value());
  BOOST_REQUIRE(gz.has_value());
  BOOST_TEST(brotli_decompress(*br).value_or("") == body);
  BOOST_TEST(gzip_decompress(*gz).value_or("") == body);
  BOOST_TEST(!encode("zstd", body).has_value());
  BOOST_TEST(!encode("br", random_bytes(4096)).has_value());  // it would grow
}

BOOST_AUTO_TEST_CASE(on_demand_budget_is_a_token_bucket_of_input_bytes) {
  using namespace std::chrono_literals;
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  CompressionBudget budget(1000, 3000);  // 1000 bytes/s, burst 3000
  BOOST_TEST(budget.take(2000, t0));
  BOOST_TEST(budget.take(1000, t0));
  BOOST_TEST(!budget.take(1, t0));            // the burst is spent
  BOOST_TEST(!budget.take(600, t0 + 500ms));  // 500 bytes came back
  BOOST_TEST(budget.take(500, t0 + 500ms));
  BOOST_TEST(budget.take(3000, t0 + 1h));  // refills up to the burst, no further
  BOOST_TEST(!budget.take(1, t0 + 1h));
  BOOST_TEST(!budget.take(4000, t0 + 2h));  // larger than the burst: never
}

BOOST_AUTO_TEST_SUITE_END()  // codecs_test
