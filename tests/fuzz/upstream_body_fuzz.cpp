// Fuzz target: inspection of upstream bodies before they are cached (full JSON validation,
// then the fields the cache needs). For reviews, the element views must be exact: joined
// with ',' inside "[...]" they must re-parse to the same elements, byte for byte, since
// derived pages are built exactly that way.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "widget_gateway/upstream/body_inspector.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace wg::upstream;
  const std::string_view body(reinterpret_cast<const char*>(data), size);

  const auto widget = inspect_widget_body(body);
  const auto reviews = inspect_reviews_body(body);
  // One document is an object or an array, never both.
  WG_FUZZ_CHECK(!(widget && reviews));
  if (!reviews) return 0;
  std::string joined = "[";
  for (std::size_t i = 0; i < reviews->elements.size(); ++i) {
    const std::string_view element = reviews->elements[i];
    WG_FUZZ_CHECK(element.data() >= body.data() &&
                  element.data() + element.size() <= body.data() + body.size());
    WG_FUZZ_CHECK(element.size() >= 2 && element.front() == '{' && element.back() == '}');
    if (i > 0) joined.push_back(',');
    joined.append(element);
  }
  joined.push_back(']');
  const auto again = inspect_reviews_body(joined);
  WG_FUZZ_CHECK(again.has_value());
  WG_FUZZ_CHECK(again->elements.size() == reviews->elements.size());
  for (std::size_t i = 0; i < again->elements.size(); ++i) {
    WG_FUZZ_CHECK(again->elements[i] == reviews->elements[i]);
  }
  return 0;
}
