#include "widget_gateway/common/log.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/common/json_writer.hpp"
#include "widget_gateway/common/redact.hpp"

namespace wg::log {
namespace {

std::atomic<Level> g_level{Level::info};

// A log line carries the real time it was written, read here rather than from an injected
// Clock: the logger is process-wide with no owner to inject one, and a test that moves a
// ManualClock still wants its lines in the order and at the times they happened, next to the
// other processes' logs.
void append_time(std::string& out) {
  const WallTime now = SystemClock::instance().wall_now();
  auto secs = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms.count()));
  out += buf;
}

}  // namespace

std::string_view to_string(Level level) {
  switch (level) {
    case Level::debug: return "debug";
    case Level::info: return "info";
    case Level::warn: return "warn";
    case Level::error: return "error";
  }
  return "info";
}

bool parse_level(std::string_view text, Level& out) {
  for (Level l : {Level::debug, Level::info, Level::warn, Level::error}) {
    if (text == to_string(l)) {
      out = l;
      return true;
    }
  }
  return false;
}

void set_level(Level level) { g_level.store(level, std::memory_order_relaxed); }

bool enabled(Level level) {
  return static_cast<int>(level) >= static_cast<int>(g_level.load(std::memory_order_relaxed));
}

void Field::append_to(std::string& out) const {
  json::append_string(out, key_);
  out.push_back(':');
  switch (kind_) {
    // Any string may quote a URL (a config value, an error message): its password never
    // reaches a log line, whatever the level.
    case Kind::string: json::append_string(out, redact(s_)); break;
    case Kind::integer: out += std::to_string(i_); break;
    case Kind::unsigned_integer: out += std::to_string(u_); break;
    case Kind::number: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.6g", d_);
      out += buf;
      break;
    }
    case Kind::boolean: out += b_ ? "true" : "false"; break;
    case Kind::strings: {
      out.push_back('[');
      for (std::size_t i = 0; i < list_->size(); ++i) {
        if (i != 0) out.push_back(',');
        json::append_string(out, redact((*list_)[i]));
      }
      out.push_back(']');
      break;
    }
  }
}

void event(Level level, std::string_view name, std::initializer_list<Field> fields) {
  if (!enabled(level)) return;
  std::string line;
  line.reserve(128);
  line += "{\"time\":\"";
  append_time(line);
  line += "\",\"level\":\"";
  line += to_string(level);
  line += "\",\"event\":";
  json::append_string(line, name);
  for (const Field& f : fields) {
    line.push_back(',');
    f.append_to(line);
  }
  line += "}\n";
  // One write(2) per line so that lines from several threads never interleave.
  std::size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(STDERR_FILENO, line.data() + off, line.size() - off);
    if (n <= 0) break;
    off += static_cast<std::size_t>(n);
  }
}

}  // namespace wg::log
