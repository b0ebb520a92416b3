#include "widget_gateway/compress/compress.hpp"

#include <algorithm>

namespace wg::compress {

bool CompressionBudget::take(std::size_t bytes, std::chrono::steady_clock::time_point now) {
  if (last_ != std::chrono::steady_clock::time_point{} && now > last_) {
    tokens_ =
        std::min(burst_, tokens_ + rate_ * std::chrono::duration<double>(now - last_).count());
  }
  last_ = now;
  const auto need = static_cast<double>(bytes);
  if (tokens_ < need) return false;
  tokens_ -= need;
  return true;
}

std::optional<std::string> encode(std::string_view token, std::string_view body) {
  std::optional<std::string> encoded;
  if (token == "br") encoded = brotli_compress(body);
  if (token == "gzip") encoded = gzip_compress(body);
  if (!encoded || encoded->size() >= body.size()) return std::nullopt;
  // The encoders write into a buffer sized for the worst case (about the body's size); a
  // cached variant keeps only its bytes, or every entry would hold a body-sized spare buffer.
  encoded->shrink_to_fit();
  return encoded;
}

}  // namespace wg::compress
