#pragma once
// The fuzz targets of the one fuzz program, and the one of them WG_FUZZ_TARGET names.

#include <cstddef>
#include <cstdint>

namespace wg::fuzz {

struct Target {
  const char* name;
  int (*run)(const std::uint8_t* data, std::size_t size);
};
extern const Target kTargets[];
extern const std::size_t kTargetCount;

// The target WG_FUZZ_TARGET names; exits with the list of names when it names none.
const Target& selected_target();

}  // namespace wg::fuzz
