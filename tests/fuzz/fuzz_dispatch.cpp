#include "fuzz_dispatch.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace wg::fuzz {

const Target& selected_target() {
  static const Target* selected = [] {
    const char* wanted = std::getenv("WG_FUZZ_TARGET");
    for (std::size_t i = 0; wanted != nullptr && i < kTargetCount; ++i) {
      if (std::strcmp(kTargets[i].name, wanted) == 0) return &kTargets[i];
    }
    std::fprintf(stderr, "fuzz: set WG_FUZZ_TARGET to one of:");
    for (std::size_t i = 0; i < kTargetCount; ++i) std::fprintf(stderr, " %s", kTargets[i].name);
    std::fprintf(stderr, "\n");
    std::exit(2);
    return static_cast<const Target*>(nullptr);
  }();
  return *selected;
}

}  // namespace wg::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  wg::fuzz::selected_target();  // a wrong name fails at once, not at the first input
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return wg::fuzz::selected_target().run(data, size);
}
