// gzip via zlib: deflate with windowBits 15 + 16 writes the gzip header and trailer.

#include <zlib.h>

#include <algorithm>
#include <climits>

#include "widget_gateway/compress/compress.hpp"

namespace wg::compress {

namespace {

constexpr int kGzipWindowBits = 15 + 16;  // 32 KiB window, gzip wrapper
constexpr int kMemLevel = 8;              // zlib's default; 9 gains nothing measurable on JSON
constexpr std::size_t kInflateChunk = 64 * 1024;

}  // namespace

std::optional<std::string> gzip_compress(std::string_view input, int level) {
  if (input.size() > UINT_MAX || level < 0 || level > 9) return std::nullopt;
  z_stream stream{};
  if (deflateInit2(&stream, level, Z_DEFLATED, kGzipWindowBits, kMemLevel, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return std::nullopt;
  }
  // deflateBound is an upper bound for a single Z_FINISH call, so one call always completes.
  std::string out(deflateBound(&stream, static_cast<uLong>(input.size())), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  stream.avail_in = static_cast<uInt>(input.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&stream, Z_FINISH);
  std::size_t written = stream.total_out;
  deflateEnd(&stream);
  if (rc != Z_STREAM_END) return std::nullopt;
  out.resize(written);
  return out;
}

std::optional<std::string> gzip_decompress(std::string_view input, std::size_t max_output) {
  if (input.size() > UINT_MAX) return std::nullopt;
  z_stream stream{};
  if (inflateInit2(&stream, kGzipWindowBits) != Z_OK) return std::nullopt;
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  stream.avail_in = static_cast<uInt>(input.size());
  std::string out;
  bool complete = false;
  while (true) {
    std::size_t have = out.size();
    // One byte more than the limit allows, so that output past the limit is detected.
    std::size_t room = std::min(kInflateChunk, max_output - have) + 1;
    out.resize(have + room);
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + have);
    stream.avail_out = static_cast<uInt>(room);
    int rc = inflate(&stream, Z_NO_FLUSH);
    out.resize(have + room - stream.avail_out);
    if (out.size() > max_output) break;
    if (rc == Z_STREAM_END) {
      complete = stream.avail_in == 0;  // trailing bytes are rejected
      break;
    }
    // There is always output room, so Z_BUF_ERROR means the input ended early (truncated).
    if (rc != Z_OK) break;
  }
  inflateEnd(&stream);
  if (!complete) return std::nullopt;
  return out;
}

}  // namespace wg::compress
