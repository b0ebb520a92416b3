#pragma once
// A request's header lines as the session read them: name and value views into the
// connection's buffer (or the session's own storage), in the order the client sent them.
// Handlers look fields up by name, case-insensitively; a head holds at most
// kMaxHeaderFields lines, so a lookup is a short scan.

#include <cstddef>
#include <span>
#include <string_view>

#include "widget_gateway/common/ascii.hpp"

namespace wg::http {

struct HeaderLine {
  std::string_view name;   // as sent
  std::string_view value;  // without surrounding whitespace; obs-fold joined with one space
};

class RequestHeaders {
 public:
  RequestHeaders() = default;
  explicit RequestHeaders(std::span<const HeaderLine> lines) : lines_(lines) {}

  auto begin() const { return lines_.begin(); }
  auto end() const { return lines_.end(); }
  std::size_t size() const { return lines_.size(); }

  // The first line named `name`, nullptr when there is none.
  const HeaderLine* find(std::string_view name) const {
    for (const HeaderLine& line : lines_) {
      if (ascii::iequals(line.name, name)) return &line;
    }
    return nullptr;
  }
  // The first such line's value; empty when there is none.
  std::string_view value(std::string_view name) const {
    const HeaderLine* line = find(name);
    return line == nullptr ? std::string_view() : line->value;
  }
  std::size_t count(std::string_view name) const {
    std::size_t n = 0;
    for (const HeaderLine& line : lines_) n += ascii::iequals(line.name, name);
    return n;
  }
  // `visit(value)` for every line named `name`, in order.
  template <class Visit>
  void for_each(std::string_view name, Visit&& visit) const {
    for (const HeaderLine& line : lines_) {
      if (ascii::iequals(line.name, name)) visit(line.value);
    }
  }

 private:
  std::span<const HeaderLine> lines_;
};

}  // namespace wg::http
