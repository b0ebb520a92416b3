#pragma once
// Invariant checks inside fuzz targets. A failed check aborts, which libFuzzer reports as a
// crash and saves the input that caused it (the replay runner reports it the same way).

#include <cstdio>
#include <cstdlib>

#define WG_FUZZ_CHECK(condition)                                                                  \
  do {                                                                                            \
    if (!(condition)) {                                                                           \
      std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                               \
    }                                                                                             \
  } while (false)
