#pragma once
// The "no secret echo" invariant of the config targets: what the loader says about a value (an
// error message, or --check-config's redacted output) never shows the secret in it (the admin
// token, the password of a URL).
//
// A secret can legitimately appear in a message by chance (a token "redis.url" in a message about
// redis.url). So a secret counts as shown only when the loader's text changes with it: the input
// is read a second time with the secret's letters and digits rotated (by a turn whose result is
// found nowhere in the input or the first text), and the second text shows the rotated secret.
// Words of the loader's own, and other values, do not follow the rotation.

#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "fuzz_check.hpp"

namespace wg::fuzz {

inline char rotate(char c, int turn) {
  if (c >= 'a' && c <= 'z') return static_cast<char>('a' + (c - 'a' + turn) % 26);
  if (c >= 'A' && c <= 'Z') return static_cast<char>('A' + (c - 'A' + turn) % 26);
  if (c >= '0' && c <= '9') return static_cast<char>('0' + (c - '0' + turn) % 10);
  return c;
}

inline std::string rotated(std::string_view text, int turn) {
  std::string out(text);
  for (char& c : out) c = rotate(c, turn);
  return out;
}

// A span of an input: [offset, offset + size).
struct Span {
  std::size_t offset = 0;
  std::size_t size = 0;
};

// Where the password of a URL lies, read as generously as redact() documents it: from the first
// ':' after "scheme://" to the last '@' (an unescaped '@' or '/' in a password still counts).
inline std::optional<Span> url_password(std::string_view url) {
  const std::size_t mark = url.find("://");
  if (mark == std::string_view::npos) return std::nullopt;
  const std::size_t start = mark + 3;
  const std::size_t at = url.rfind('@');
  if (at == std::string_view::npos || at < start) return std::nullopt;
  const std::size_t colon = url.find(':', start);
  if (colon == std::string_view::npos || colon >= at) return std::nullopt;
  return Span{colon + 1, at - colon - 1};
}

// Checks that `say(input)` does not show the secret at `secret` in `input`. `say` returns what
// the loader printed or threw for that input.
template <class Say>
void check_no_echo(std::string_view input, Span secret, Say&& say) {
  if (secret.size < 4 || secret.offset + secret.size > input.size()) return;
  const std::string_view value = input.substr(secret.offset, secret.size);
  const std::string said = say(input);
  if (said.find(value) == std::string::npos) return;
  // A turn whose text is nowhere yet, so that finding it later can only mean it came through.
  std::optional<std::string> turned;
  for (int turn : {13, 5, 7, 11, 3}) {
    std::string candidate = rotated(value, turn);
    if (candidate != value && input.find(candidate) == std::string_view::npos &&
        said.find(candidate) == std::string::npos) {
      turned = std::move(candidate);
      break;
    }
  }
  if (!turned) return;  // nothing to tell the copies apart by
  std::string other(input);
  other.replace(secret.offset, secret.size, *turned);
  const std::string said_other = say(other);
  if (said_other.find(*turned) != std::string::npos) {
    std::fprintf(stderr, "secret [%.*s] shown in: %s\n", static_cast<int>(value.size()),
                 value.data(), said.c_str());
    WG_FUZZ_CHECK(!"a secret is shown");
  }
}

}  // namespace wg::fuzz
