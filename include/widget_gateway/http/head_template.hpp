#pragma once
// An answer's header fields written once and sent many times: the fixed bytes of every field
// in HTTP/1.1 form, with slots for the few numbers that change from one answer to the next
// (an age, a TTL). The frontend keeps one per cached entry and coding, beside the entry in its
// worker's L1 (docs/listener.md, "Answer heads"); each session renders it in its protocol's
// form: HTTP/1.1 copies the bytes between the slots, HTTP/2 hands nghttp2 the fields with
// lower-case names.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wg::http {

class HeadTemplate {
 public:
  static constexpr std::size_t kMaxFields = 16;
  static constexpr std::size_t kMaxSlots = 4;
  using Numbers = std::array<long long, kMaxSlots>;
  // What fixed text a field with a slot may carry around its number, so that the HTTP/2 form
  // of its value fits a session's fixed buffer.
  static constexpr std::size_t kMaxSlotTextBytes = 96;
  // The HTTP/2 values of slotted fields, assembled: what a session's buffer must hold.
  static constexpr std::size_t kSlotValuesBytes = kMaxSlots * (kMaxSlotTextBytes + 20);

  // A field with a fixed value. Fields are sent in the order they are added.
  void add(std::string_view name, std::string_view value);
  // A field whose value is `before`, the answer's number `slot`, then `after`. Each slot is
  // used at most once, in increasing order.
  void add_number(std::string_view name, std::string_view before, std::size_t slot,
                  std::string_view after = {});

  std::size_t fields() const { return fields_.size(); }
  // The heap this template holds, for the bound of what keeps it.
  std::size_t bytes() const;

  // Appends the field lines from field `first` on ("Name: value\r\n"), with `numbers` filled
  // in: a 304 leaves out a leading Content-Type this way.
  void write_http1(std::string& out, const Numbers& numbers, std::size_t first = 0) const;

  // Calls f(lower-case name, value) for each field from `first` on; the values of slotted
  // fields are assembled in `scratch`, which must outlive their use.
  template <class F>
  void for_each_h2(const Numbers& numbers, std::size_t first,
                   std::array<char, kSlotValuesBytes>& scratch, F&& f) const {
    std::size_t used = 0;
    for (std::size_t i = first; i < fields_.size(); ++i) {
      const Field& field = fields_[i];
      const std::string_view name(lower_names_.data() + field.lower_at, field.name_size);
      f(name, h2_value(field, numbers, scratch, used));
    }
  }

 private:
  struct Field {
    std::uint16_t line_at;   // where its line begins in http1_
    std::uint16_t line_end;  // past its "\r\n"
    std::uint16_t lower_at;  // its name in lower_names_
    std::uint8_t name_size;
    std::uint8_t slot;  // kNoSlot, or the number written at slot_at
    std::uint16_t slot_at;
  };
  static constexpr std::uint8_t kNoSlot = 0xff;

  std::string_view h2_value(const Field& field, const Numbers& numbers,
                            std::array<char, kSlotValuesBytes>& scratch, std::size_t& used) const;
  Field& begin_line(std::string_view name);

  std::string http1_;  // every field's line, each slot's number left out
  std::string lower_names_;
  std::vector<Field> fields_;
};

}  // namespace wg::http
