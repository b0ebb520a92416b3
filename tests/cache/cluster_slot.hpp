#pragma once
// Redis Cluster's slot of a key, computed as Redis does (cluster.c keyHashSlot): CRC16/XMODEM
// of the hash tag (key_space.hpp's hash_tag) modulo 16384. Written out here, apart from the
// code under test, so that tests check the tags the keys carry against Redis' own arithmetic.

#include <cstdint>
#include <string_view>

namespace wg::cache::test {

// CRC16/XMODEM (polynomial 0x1021, initial value 0), bit by bit.
inline std::uint16_t crc16(std::string_view bytes) {
  std::uint16_t crc = 0;
  for (unsigned char byte : bytes) {
    crc ^= static_cast<std::uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<std::uint16_t>(crc << 1);
    }
  }
  return crc;
}

// The slot of `key`: only the text between the first '{' and the next '}' counts, when there
// is such a pair with something between them.
inline std::uint16_t cluster_slot(std::string_view key) {
  const auto open = key.find('{');
  if (open != std::string_view::npos) {
    const auto close = key.find('}', open + 1);
    if (close != std::string_view::npos && close != open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return crc16(key) & 16383;
}

}  // namespace wg::cache::test
