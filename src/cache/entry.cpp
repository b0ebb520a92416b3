#include "widget_gateway/cache/entry.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <limits>
#include <stdexcept>

namespace wg::cache {
namespace {

constexpr std::string_view kMagic = "WGE1";
constexpr std::uint8_t kTagVariant = 1;
constexpr std::uint8_t kTagHold = 2;
constexpr std::uint8_t kTagFetch = 3;
constexpr std::size_t kHoldBytes = 8 + 1;
constexpr std::size_t kFetchBytes = 4 + 8;

void put_u8(std::string& out, std::uint8_t v) {
  out.push_back(static_cast<char>(v));
}

template <class T>
void put_le(std::string& out, T v) {
  auto u = static_cast<std::make_unsigned_t<T>>(v);
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out.push_back(static_cast<char>((u >> (8 * i)) & 0xFF));
  }
}

void put_string(std::string& out, std::string_view s) {
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(s.size()));
  out.append(s);
}

// Every read checks the remaining length first; a failed read leaves the reader failed.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : rest_(bytes) {}

  bool ok() const { return ok_; }
  bool at_end() const { return rest_.empty(); }
  std::size_t remaining() const { return rest_.size(); }

  std::string_view take(std::size_t n) {
    if (!ok_ || rest_.size() < n) {
      ok_ = false;
      return {};
    }
    std::string_view out = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return out;
  }

  template <class T>
  T le() {
    std::string_view raw = take(sizeof(T));
    if (!ok_) return T{};
    std::make_unsigned_t<T> u = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      u |= static_cast<std::make_unsigned_t<T>>(static_cast<unsigned char>(raw[i])) << (8 * i);
    }
    return static_cast<T>(u);
  }

  std::string_view string() {
    auto n = le<std::uint32_t>();
    return take(n);
  }

 private:
  std::string_view rest_;
  bool ok_ = true;
};

}  // namespace

void codings_on_demand(Entry& entry) {
  if (!entry.variants.empty()) return;
  entry.compress_on_demand = true;
}

std::shared_ptr<const Entry> with_variant(const Entry& entry, std::string coding,
                                          std::string encoded) {
  auto copy = std::make_shared<Entry>(entry);
  copy->variants.reserve(kMaxVariants);
  copy->variants.emplace_back(std::move(coding), std::move(encoded));
  return copy;
}

std::shared_ptr<const Entry> with_element_spans(
    const Entry& entry, std::vector<std::pair<std::uint32_t, std::uint32_t>> spans) {
  auto copy = std::make_shared<Entry>(entry);
  copy->element_spans = std::move(spans);
  return copy;
}

std::shared_ptr<const Entry> with_body_file(const Entry& entry,
                                            std::shared_ptr<const BodyFile> file) {
  auto copy = std::make_shared<Entry>(entry);
  copy->body_file = std::move(file);
  return copy;
}

std::string encode_entry(const Entry& entry) {
  const bool fetch = entry.fetch_time.count() > 0 || entry.early_at != WallTime{};
  std::size_t size = kMagic.size() + 2 + 3 * 8 + 4 + entry.etag.size() + 4 + entry.body.size() + 4;
  for (const auto& [coding, body] : entry.variants) size += 1 + 4 + 4 + coding.size() + body.size();
  if (entry.hold) size += 1 + 4 + kHoldBytes;
  if (fetch) size += 1 + 4 + kFetchBytes;

  std::string out;
  out.reserve(size);
  out.append(kMagic);
  put_le<std::uint16_t>(out, entry.status);
  put_le<std::int64_t>(out, unix_millis(entry.stored_at));
  put_le<std::int64_t>(out, unix_millis(entry.fresh_until));
  put_le<std::int64_t>(out, unix_millis(entry.stale_until));
  put_string(out, entry.etag);
  put_string(out, entry.body);
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(entry.variants.size() +
                                                        (entry.hold ? 1 : 0) + (fetch ? 1 : 0)));
  for (const auto& [coding, body] : entry.variants) {
    put_u8(out, kTagVariant);
    put_le<std::uint32_t>(out, static_cast<std::uint32_t>(4 + coding.size() + body.size()));
    put_string(out, coding);
    out.append(body);
  }
  if (entry.hold) {
    put_u8(out, kTagHold);
    put_le<std::uint32_t>(out, static_cast<std::uint32_t>(kHoldBytes));
    put_le<std::int64_t>(out, unix_millis(entry.hold->since));
    put_u8(out, entry.hold->provisional ? 1 : 0);
  }
  if (fetch) {
    put_u8(out, kTagFetch);
    put_le<std::uint32_t>(out, static_cast<std::uint32_t>(kFetchBytes));
    const auto fetch_ms = std::clamp<std::int64_t>(entry.fetch_time.count(), 0, UINT32_MAX);
    put_le<std::uint32_t>(out, static_cast<std::uint32_t>(fetch_ms));
    put_le<std::int64_t>(out, unix_millis(entry.early_at));
  }
  return out;
}

std::optional<Entry> decode_entry(std::string_view bytes) {
  Reader in(bytes);
  if (in.take(kMagic.size()) != kMagic || !in.ok()) return std::nullopt;

  Entry entry;
  entry.status = in.le<std::uint16_t>();
  auto stored = wall_from_unix_millis(in.le<std::int64_t>());
  auto fresh = wall_from_unix_millis(in.le<std::int64_t>());
  auto stale = wall_from_unix_millis(in.le<std::int64_t>());
  std::string_view etag = in.string();
  std::string_view body = in.string();
  auto sections = in.le<std::uint32_t>();
  if (!in.ok() || !stored || !fresh || !stale) return std::nullopt;
  if (entry.status < 100 || entry.status > 599) return std::nullopt;
  if (*stored > *fresh || *fresh > *stale) return std::nullopt;
  // A section takes at least 5 bytes: reject impossible counts before looping over them.
  if (sections > in.remaining() / 5) return std::nullopt;

  entry.stored_at = *stored;
  entry.fresh_until = *fresh;
  entry.stale_until = *stale;
  entry.etag.assign(etag);
  entry.body.assign(body);

  for (std::uint32_t i = 0; i < sections; ++i) {
    auto tag = in.le<std::uint8_t>();
    Reader section(in.string());
    if (!in.ok()) return std::nullopt;
    if (tag == kTagHold) {
      if (section.remaining() != kHoldBytes || entry.hold) return std::nullopt;
      const auto since = wall_from_unix_millis(section.le<std::int64_t>());
      const auto provisional = section.le<std::uint8_t>();
      if (!since || provisional > 1) return std::nullopt;
      entry.hold = Hold{*since, provisional == 1};
      continue;
    }
    if (tag == kTagFetch) {
      if (section.remaining() != kFetchBytes) return std::nullopt;
      entry.fetch_time = std::chrono::milliseconds(section.le<std::uint32_t>());
      const auto early_at = wall_from_unix_millis(section.le<std::int64_t>());
      if (!early_at) return std::nullopt;
      entry.early_at = *early_at;
      continue;
    }
    if (tag != kTagVariant) continue;  // written by a newer version: skip
    std::string_view coding = section.string();
    if (!section.ok() || coding.empty()) return std::nullopt;
    std::string_view encoded = section.take(section.remaining());
    entry.variants.emplace_back(std::string(coding), std::string(encoded));
  }
  if (!in.at_end()) return std::nullopt;
  return entry;
}

std::string strong_etag(std::string_view body) {
  // Fetched once: with OpenSSL 3, EVP_sha256() inside EVP_Digest looks the algorithm up in the
  // provider on every call; every derived page is hashed. Thread-safe: a static's
  // initialization, and EVP_Digest keeps its state in a context of its own.
  static EVP_MD* const sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (sha256 == nullptr ||
      EVP_Digest(body.data(), body.size(), digest.data(), &length, sha256, nullptr) != 1 ||
      length < 8) {
    // Only fails when OpenSSL itself is broken; that is a bug, not an input error.
    throw std::runtime_error("SHA-256 unavailable");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (std::size_t i = 0; i < 8; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xF]);
  }
  out.push_back('"');
  return out;
}

std::optional<std::vector<std::string_view>> elements_from_spans(
    std::string_view body, const std::vector<std::pair<std::uint32_t, std::uint32_t>>& spans) {
  std::vector<std::string_view> elements;
  elements.reserve(spans.size());
  for (const auto& [offset, length] : spans) {
    if (offset > body.size() || length > body.size() - offset) return std::nullopt;
    elements.push_back(body.substr(offset, length));
  }
  return elements;
}

}  // namespace wg::cache
