#include "widget_gateway/compress/compress.hpp"

namespace wg::compress {

EncodedVariants make_variants(std::string_view body, std::size_t min_size) {
  EncodedVariants variants;
  if (body.size() < min_size) return variants;
  if (auto br = brotli_compress(body); br && br->size() < body.size()) {
    variants.emplace_back("br", std::move(*br));
  }
  if (auto gz = gzip_compress(body); gz && gz->size() < body.size()) {
    variants.emplace_back("gzip", std::move(*gz));
  }
  return variants;
}

}  // namespace wg::compress
