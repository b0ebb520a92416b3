#pragma once
// Content codings of cached bodies. Bodies are compressed once, when an entry is stored, and
// served many times, so the levels favour ratio over speed within a few milliseconds per
// 150 KB body (see kGzipLevel / kBrotliQuality). Pure functions: no I/O, no shared state.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace wg::compress {

// Measured on a 154 KB reviews array (the stub's data: Cyrillic names and texts, URLs, ISO dates),
// one core of a shared, busy machine, so times are rough (output size, share of input, time):
//   gzip  1: 23.7 KB 15.4%  2 ms    6: 18.0 KB 11.7%  3 ms    9: 17.5 KB 11.4%  9 ms
//   br    4: 17.3 KB 11.2%  3 ms    5: 15.6 KB 10.2%  7 ms    6: 15.4 KB 10.0%  8 ms
//   br    9: 15.1 KB  9.8% 53 ms   11: 13.9 KB  9.0%  820 ms
// gzip 6 is the knee (9 saves 3% for three times the CPU); brotli 5 is 13% smaller than gzip 6
// at a cost paid once per upstream fetch, while 9 and up cost far more for 1-4% (and 11 would
// add most of a second to every miss). Real reviews repeat less than generated ones, so real
// ratios are worse, but the ranking of levels is the same.
inline constexpr int kGzipLevel = 6;
inline constexpr int kBrotliQuality = 5;

// A gzip member (RFC 1952) of `input` at zlib `level` (0..9). nullopt only if zlib fails or
// the input is larger than zlib can take in one call (4 GiB).
std::optional<std::string> gzip_compress(std::string_view input, int level = kGzipLevel);

// A brotli stream (RFC 7932) of `input` at `quality` (0..11), text mode, default window.
std::optional<std::string> brotli_compress(std::string_view input, int quality = kBrotliQuality);

// Inverses, for tests and tools. nullopt on malformed or truncated input, trailing bytes, or
// output that would exceed `max_output` bytes (so a decompression bomb costs at most that).
std::optional<std::string> gzip_decompress(std::string_view input,
                                           std::size_t max_output = std::size_t{64} << 20);
std::optional<std::string> brotli_decompress(std::string_view input,
                                             std::size_t max_output = std::size_t{64} << 20);

// A bound on the compression an io worker does on demand (entries are compressed when a client
// first accepts a coding for them): a token bucket of input bytes, refilled at
// `bytes_per_second` up to `burst`. Past it, the answer goes out uncompressed, which is always
// correct, and a later request compresses. Time is passed in; one worker's, not thread-safe.
class CompressionBudget {
 public:
  CompressionBudget(double bytes_per_second, double burst)
      : rate_(bytes_per_second), burst_(burst), tokens_(burst) {}
  // Whether `bytes` of input may be compressed now (and takes them if so).
  bool take(std::size_t bytes, std::chrono::steady_clock::time_point now);

 private:
  double rate_;
  double burst_;
  double tokens_;
  std::chrono::steady_clock::time_point last_{};
};
// Bodies shorter than this are not worth a coding (tiny JSON gains a few bytes at best, and
// headers and framing eat them).
inline constexpr std::size_t kMinCompressBytes = 1024;
// Per worker: about 10 ms of brotli-5 work per second on a 150 KB page (1-2 % of a core), with
// room for a burst of a dozen large pages at once.
inline constexpr double kOnDemandBytesPerSecond = 4.0 * 1024 * 1024;
inline constexpr double kOnDemandBurstBytes = 2.0 * 1024 * 1024;

// One encoding of `body` (br or gzip, by token), when it is smaller than the body; nullopt
// otherwise or for another token.
std::optional<std::string> encode(std::string_view token, std::string_view body);

}  // namespace wg::compress
