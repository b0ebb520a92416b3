#pragma once
// Response header fields as name/value pairs, which each protocol serialises in its own form
// (HTTP/1.1 "Name: value" lines, HTTP/2 lower-case pairs).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>

#include "widget_gateway/common/ascii.hpp"

namespace wg::http {

// A response's header fields, in the order they were added, in one flat buffer: where the last
// field begins and how many there are (4 bytes each), then each field as its value's length
// (4 bytes), its name's length (1 byte), the name and the value. Building a hit's fields costs
// the buffer's one allocation (see reserve), neither protocol parses them back, and the object
// is no larger than one string: a Response lives in coroutine frames, which Asio recycles only
// up to about 1 KiB, and a frame over that costs an allocation per request. Names are sent as
// given over HTTP/1.1 and lower-cased for HTTP/2.
class Fields {
 public:
  // More than any answer of ours carries (a hit with CORS has 12); exceeding it is a bug.
  static constexpr std::size_t kMaxFields = 24;
  static constexpr std::size_t kMaxNameBytes = 255;

  struct Field {
    std::string_view name;
    std::string_view value;
  };

  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Field;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Field;

    const_iterator() = default;
    Field operator*() const { return field_; }
    const_iterator& operator++() {
      offset_ = static_cast<std::size_t>(field_.value.data() - fields_->bytes_.data()) +
                field_.value.size();
      if (offset_ < fields_->bytes_.size()) field_ = fields_->at(offset_);
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator before = *this;
      ++*this;
      return before;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) {
      return a.offset_ == b.offset_;
    }

   private:
    friend class Fields;
    // Decodes each field once, as it is reached.
    const_iterator(const Fields* fields, std::size_t offset) : fields_(fields), offset_(offset) {
      if (offset_ < fields_->bytes_.size()) field_ = fields_->at(offset_);
    }
    const Fields* fields_ = nullptr;
    std::size_t offset_ = 0;
    Field field_;
  };

  void reserve(std::size_t bytes) { bytes_.reserve(bytes); }
  void add(std::string_view name, std::string_view value) { start(name).append(value); }
  // Begins a field whose value is what the caller appends to the returned buffer before the
  // next add() or start(): a value built in pieces needs no temporary string. Append only.
  std::string& start(std::string_view name) {
    const std::uint32_t count = size();
    if (count == kMaxFields) throw std::length_error("too many response header fields");
    if (name.size() > kMaxNameBytes) throw std::length_error("response header name too long");
    if (count != 0) seal_last();
    // One resize for the header (first field), the length, the name's length and the name.
    const std::size_t begin = count == 0 ? kHeaderBytes : bytes_.size();
    bytes_.resize(begin + kLengthBytes + 1 + name.size());
    store(kLastAt, static_cast<std::uint32_t>(begin));
    store(kCountAt, count + 1);
    bytes_[begin + kLengthBytes] = static_cast<char>(name.size());
    std::memcpy(bytes_.data() + begin + kLengthBytes + 1, name.data(), name.size());
    return bytes_;
  }

  std::uint32_t size() const { return bytes_.empty() ? 0 : load(kCountAt); }
  bool empty() const { return bytes_.empty(); }
  const_iterator begin() const { return {this, empty() ? 0 : kHeaderBytes}; }
  const_iterator end() const { return {this, bytes_.size()}; }

  // The value of the first field called `name` (ASCII case-insensitive); empty when none.
  std::string_view find(std::string_view name) const {
    for (const Field field : *this) {
      if (ascii::iequals(field.name, name)) return field.value;
    }
    return {};
  }
  // HTTP/2 field names are lower case (RFC 9113 8.2.1): the HTTP/2 session makes them so in
  // place, in the copy of the response it owns.
  void lower_case_names() {
    for (std::size_t offset = kHeaderBytes; offset < bytes_.size(); offset = next(offset)) {
      char* name = bytes_.data() + offset + kLengthBytes + 1;
      const std::size_t size = static_cast<unsigned char>(name[-1]);
      for (std::size_t j = 0; j < size; ++j) {
        if (name[j] >= 'A' && name[j] <= 'Z') name[j] = static_cast<char>(name[j] - 'A' + 'a');
      }
    }
  }

 private:
  static constexpr std::size_t kLengthBytes = sizeof(std::uint32_t);
  static constexpr std::size_t kLastAt = 0;
  static constexpr std::size_t kCountAt = kLengthBytes;
  static constexpr std::size_t kHeaderBytes = 2 * kLengthBytes;

  std::uint32_t load(std::size_t at) const {
    std::uint32_t value;
    std::memcpy(&value, bytes_.data() + at, sizeof value);
    return value;
  }
  void store(std::size_t at, std::uint32_t value) {
    std::memcpy(bytes_.data() + at, &value, sizeof value);
  }

  // The field at `offset`. The last field's value runs to the end of the buffer (it may still
  // grow); the others' lengths were written when the next field began.
  Field at(std::size_t offset) const {
    const char* p = bytes_.data() + offset;
    const std::size_t name_size = static_cast<unsigned char>(p[kLengthBytes]);
    const std::size_t value_begin = offset + kLengthBytes + 1 + name_size;
    const std::size_t value_size =
        offset == load(kLastAt) ? bytes_.size() - value_begin : load(offset);
    return {std::string_view(p + kLengthBytes + 1, name_size),
            std::string_view(bytes_.data() + value_begin, value_size)};
  }
  std::size_t next(std::size_t offset) const {
    const Field field = at(offset);
    return static_cast<std::size_t>(field.value.data() - bytes_.data()) + field.value.size();
  }
  // Writes the last field's value length: its value is complete once another field begins.
  void seal_last() {
    const std::uint32_t last = load(kLastAt);
    const std::size_t name_size = static_cast<unsigned char>(bytes_[last + kLengthBytes]);
    const std::size_t value_size = bytes_.size() - (last + kLengthBytes + 1 + name_size);
    if (value_size > UINT32_MAX) throw std::length_error("response header value too long");
    store(last, static_cast<std::uint32_t>(value_size));
  }

  std::string bytes_;  // empty while there is no field
};

}  // namespace wg::http
