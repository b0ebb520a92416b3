#pragma once
// Ways for a fuzz target to cut its input into the parts it needs, so that seed files can stay
// readable text (one part per line) while the fuzzer still reaches every byte.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace wg::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return size == 0 ? std::string_view()
                   : std::string_view(reinterpret_cast<const char*>(data), size);
}

// The first N - 1 lines of `text` (without their '\n') and then everything after them, newlines
// included. Parts the text does not reach are empty.
template <std::size_t N>
std::array<std::string_view, N> split_lines(std::string_view text) {
  std::array<std::string_view, N> parts{};
  for (std::size_t i = 0; i + 1 < N; ++i) {
    const std::size_t end = text.find('\n');
    parts[i] = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
  }
  parts[N - 1] = text;
  return parts;
}

// Reads choices and numbers off the front of the input, for targets that build a structured
// value from it; past the end every read gives zero, so any input is a complete one.
class Bytes {
 public:
  explicit Bytes(std::string_view bytes) : rest_(bytes) {}

  bool empty() const { return rest_.empty(); }

  std::uint8_t byte() {
    if (rest_.empty()) return 0;
    const auto b = static_cast<std::uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return b;
  }
  // One of `count` choices (count > 0).
  std::size_t pick(std::size_t count) { return byte() % count; }
  bool flag() { return (byte() & 1) != 0; }
  std::uint64_t u64() {
    std::uint64_t value = 0;
    for (int i = 0; i < 8; ++i) value = value << 8 | byte();
    return value;
  }

 private:
  std::string_view rest_;
};

}  // namespace wg::fuzz
