// brotli via libbrotlienc / libbrotlidec.

#include <brotli/decode.h>
#include <brotli/encode.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>

#include "widget_gateway/compress/compress.hpp"

namespace wg::compress {

namespace {

constexpr std::size_t kDecodeChunk = 64 * 1024;
// The window a body needs is no larger than the body: a smaller one sets the encoder up faster
// (2.8 KB of widget data: 87 us instead of 141 us at quality 5) for the same output. Not below
// 2^14, where set-up gets slower again.
constexpr int kMinWindowBits = 14;

int window_bits_for(std::size_t size) {
  return std::clamp(static_cast<int>(std::bit_width(size)), kMinWindowBits, BROTLI_DEFAULT_WINDOW);
}

struct DecoderDeleter {
  void operator()(BrotliDecoderState* state) const { BrotliDecoderDestroyInstance(state); }
};

}  // namespace

std::optional<std::string> brotli_compress(std::string_view input, int quality) {
  if (quality < BROTLI_MIN_QUALITY || quality > BROTLI_MAX_QUALITY) return std::nullopt;
  std::size_t bound = BrotliEncoderMaxCompressedSize(input.size());
  if (bound == 0) return std::nullopt;  // input too large for a one-shot call
  std::string out(bound, '\0');
  std::size_t written = out.size();
  if (BrotliEncoderCompress(quality, window_bits_for(input.size()), BROTLI_MODE_TEXT, input.size(),
                            reinterpret_cast<const std::uint8_t*>(input.data()), &written,
                            reinterpret_cast<std::uint8_t*>(out.data())) != BROTLI_TRUE) {
    return std::nullopt;
  }
  out.resize(written);
  return out;
}

std::optional<std::string> brotli_decompress(std::string_view input, std::size_t max_output) {
  std::unique_ptr<BrotliDecoderState, DecoderDeleter> state(
      BrotliDecoderCreateInstance(nullptr, nullptr, nullptr));
  if (!state) return std::nullopt;
  const auto* next_in = reinterpret_cast<const std::uint8_t*>(input.data());
  std::size_t avail_in = input.size();
  std::string out;
  while (true) {
    std::size_t have = out.size();
    // One byte more than the limit allows, so that output past the limit is detected.
    std::size_t room = std::min(kDecodeChunk, max_output - have) + 1;
    out.resize(have + room);
    auto* next_out = reinterpret_cast<std::uint8_t*>(out.data() + have);
    std::size_t avail_out = room;
    BrotliDecoderResult rc = BrotliDecoderDecompressStream(state.get(), &avail_in, &next_in,
                                                           &avail_out, &next_out, nullptr);
    out.resize(have + room - avail_out);
    if (out.size() > max_output) return std::nullopt;
    switch (rc) {
      case BROTLI_DECODER_RESULT_SUCCESS:
        if (avail_in != 0) return std::nullopt;  // trailing bytes
        return out;
      case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT:
        continue;
      case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT:  // truncated: all input already given
      case BROTLI_DECODER_RESULT_ERROR:
        return std::nullopt;
    }
  }
}

}  // namespace wg::compress
