#include "widget_gateway/compress/compress.hpp"

namespace wg::compress {

EncodedVariants make_variants(std::string_view body, std::size_t min_size) {
  EncodedVariants variants;
  if (body.size() < min_size) return variants;
  // The encoders write into a buffer sized for the worst case (about the body's size); a cached
  // variant keeps only its bytes, or every entry would hold two body-sized spare buffers.
  if (auto br = brotli_compress(body); br && br->size() < body.size()) {
    br->shrink_to_fit();
    variants.emplace_back("br", std::move(*br));
  }
  if (auto gz = gzip_compress(body); gz && gz->size() < body.size()) {
    gz->shrink_to_fit();
    variants.emplace_back("gzip", std::move(*gz));
  }
  variants.shrink_to_fit();
  return variants;
}

}  // namespace wg::compress
