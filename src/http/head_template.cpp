#include "widget_gateway/http/head_template.hpp"

#include <charconv>
#include <cstring>
#include <stdexcept>

namespace wg::http {

namespace {

// Writes `value`'s digits at `out`, which has room for 20: how many it wrote.
std::size_t put_number(char* out, long long value) {
  return static_cast<std::size_t>(std::to_chars(out, out + 20, value).ptr - out);
}

}  // namespace

HeadTemplate::Field& HeadTemplate::begin_line(std::string_view name) {
  if (name.empty() || name.size() > 255 || fields_.size() == kMaxFields) {
    throw std::length_error("head template: bad name or too many fields");
  }
  Field field{};
  field.line_at = static_cast<std::uint16_t>(http1_.size());
  field.lower_at = static_cast<std::uint16_t>(lower_names_.size());
  field.name_size = static_cast<std::uint8_t>(name.size());
  field.slot = kNoSlot;
  http1_.append(name).append(": ");
  for (const char c : name) {
    lower_names_.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  }
  fields_.push_back(field);
  return fields_.back();
}

void HeadTemplate::add(std::string_view name, std::string_view value) {
  Field& field = begin_line(name);
  http1_.append(value).append("\r\n");
  if (http1_.size() > UINT16_MAX) throw std::length_error("head template too long");
  field.line_end = static_cast<std::uint16_t>(http1_.size());
}

void HeadTemplate::add_number(std::string_view name, std::string_view before, std::size_t slot,
                              std::string_view after) {
  std::uint8_t last_slot = kNoSlot;
  for (const Field& field : fields_) {
    if (field.slot != kNoSlot) last_slot = field.slot;
  }
  if (slot >= kMaxSlots || (last_slot != kNoSlot && slot <= last_slot) ||
      before.size() + after.size() > kMaxSlotTextBytes) {
    throw std::logic_error("head template: bad slot");
  }
  Field& field = begin_line(name);
  http1_.append(before);
  field.slot = static_cast<std::uint8_t>(slot);
  field.slot_at = static_cast<std::uint16_t>(http1_.size());
  http1_.append(after).append("\r\n");
  if (http1_.size() > UINT16_MAX) throw std::length_error("head template too long");
  field.line_end = static_cast<std::uint16_t>(http1_.size());
}

std::size_t HeadTemplate::bytes() const {
  return sizeof(*this) + http1_.capacity() + lower_names_.capacity() +
         fields_.capacity() * sizeof(Field);
}

void HeadTemplate::write_http1(std::string& out, const Numbers& numbers, std::size_t first) const {
  if (first >= fields_.size()) return;
  // Sized once, then the bytes between the slots copied with the numbers written in between.
  std::size_t from = fields_[first].line_at;
  std::size_t at = out.size();
  out.resize(at + (http1_.size() - from) + 20 * kMaxSlots);
  char* p = out.data();
  for (std::size_t i = first; i < fields_.size(); ++i) {
    const Field& field = fields_[i];
    if (field.slot == kNoSlot) continue;
    std::memcpy(p + at, http1_.data() + from, field.slot_at - from);
    at += field.slot_at - from;
    at += put_number(p + at, numbers[field.slot]);
    from = field.slot_at;
  }
  std::memcpy(p + at, http1_.data() + from, http1_.size() - from);
  at += http1_.size() - from;
  out.resize(at);
}

std::string_view HeadTemplate::h2_value(const Field& field, const Numbers& numbers,
                                        std::array<char, kSlotValuesBytes>& scratch,
                                        std::size_t& used) const {
  const std::size_t value_at = field.line_at + field.name_size + 2;
  const std::size_t value_end = field.line_end - 2u;
  if (field.slot == kNoSlot) {
    return std::string_view(http1_.data() + value_at, value_end - value_at);
  }
  // add_number bounds the text around a slot, and each slot appears once: this fits.
  char* const begin = scratch.data() + used;
  char* p = begin;
  std::memcpy(p, http1_.data() + value_at, field.slot_at - value_at);
  p += field.slot_at - value_at;
  p += put_number(p, numbers[field.slot]);
  std::memcpy(p, http1_.data() + field.slot_at, value_end - field.slot_at);
  p += value_end - field.slot_at;
  used += static_cast<std::size_t>(p - begin);
  return std::string_view(begin, static_cast<std::size_t>(p - begin));
}

}  // namespace wg::http
