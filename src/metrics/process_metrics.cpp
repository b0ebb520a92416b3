#include "widget_gateway/metrics/process_metrics.hpp"

#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "widget_gateway/metrics/registry.hpp"

namespace wg::metrics {

namespace {

std::optional<long long> number(std::string_view text) {
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t start = text.find_first_not_of(" \t\n", at);
    if (start == std::string_view::npos) break;
    std::size_t end = text.find_first_of(" \t\n", start);
    if (end == std::string_view::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    at = end;
  }
  return out;
}

// procfs files report a size of 0: read until the end. Small files, read on the scraping
// thread only.
std::optional<std::string> read_all(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::optional<ProcessStat> read_stat() {
  const auto text = read_all("/proc/self/stat");
  if (!text) return std::nullopt;
  return parse_proc_stat(*text, ::sysconf(_SC_CLK_TCK), ::sysconf(_SC_PAGESIZE));
}

double open_fds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  double n = 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  return n - 1;  // the directory's own descriptor, open only while it is counted
}

}  // namespace

std::optional<ProcessStat> parse_proc_stat(std::string_view line, long ticks_per_second,
                                           long page_bytes) {
  const std::size_t name_end = line.rfind(')');
  if (name_end == std::string_view::npos || ticks_per_second <= 0 || page_bytes <= 0) {
    return std::nullopt;
  }
  // Fields from 3 (state) on: utime is field 14, stime 15, starttime 22, vsize 23, rss 24.
  const std::vector<std::string_view> fields = words(line.substr(name_end + 1));
  auto field = [&](std::size_t n) -> std::optional<long long> {
    if (n - 3 >= fields.size()) return std::nullopt;
    return number(fields[n - 3]);
  };
  const auto utime = field(14), stime = field(15), start = field(22), vsize = field(23),
             rss = field(24);
  if (!utime || !stime || !start || !vsize || !rss) return std::nullopt;
  const double ticks = static_cast<double>(ticks_per_second);
  ProcessStat stat;
  stat.cpu_seconds = static_cast<double>(*utime + *stime) / ticks;
  stat.virtual_memory_bytes = static_cast<double>(*vsize);
  stat.resident_memory_bytes = static_cast<double>(*rss) * static_cast<double>(page_bytes);
  stat.start_seconds_after_boot = static_cast<double>(*start) / ticks;
  return stat;
}

std::optional<double> parse_boot_time(std::string_view proc_stat) {
  for (std::size_t at = 0; at < proc_stat.size();) {
    std::size_t end = proc_stat.find('\n', at);
    if (end == std::string_view::npos) end = proc_stat.size();
    const auto line = words(proc_stat.substr(at, end - at));
    if (line.size() == 2 && line[0] == "btime") {
      if (auto value = number(line[1])) return static_cast<double>(*value);
      return std::nullopt;
    }
    at = end + 1;
  }
  return std::nullopt;
}

std::optional<double> parse_max_open_files(std::string_view limits) {
  constexpr std::string_view kName = "Max open files";
  const std::size_t at = limits.find(kName);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t end = limits.find('\n', at);
  if (end == std::string_view::npos) end = limits.size();
  // "Max open files  <soft>  <hard>  files": the soft limit is what open() runs into.
  const auto line = words(limits.substr(at + kName.size(), end - at - kName.size()));
  if (line.empty()) return std::nullopt;
  if (auto value = number(line[0])) return static_cast<double>(*value);
  return std::nullopt;
}

void register_process_metrics(Registry& registry) {
  const auto stat = read_stat();
  if (!stat) return;
  registry.callback_counter("process_cpu_seconds_total",
                            "Total user and system CPU time spent in seconds.", {}, [] {
                              const auto s = read_stat();
                              return s ? s->cpu_seconds : 0.0;
                            });
  registry.callback_gauge("process_resident_memory_bytes", "Resident memory size in bytes.", {},
                          [] {
                            const auto s = read_stat();
                            return s ? s->resident_memory_bytes : 0.0;
                          });
  registry.callback_gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", {}, [] {
    const auto s = read_stat();
    return s ? s->virtual_memory_bytes : 0.0;
  });
  registry.callback_gauge("process_open_fds", "Number of open file descriptors.", {}, open_fds);
  if (const auto limits = read_all("/proc/self/limits")) {
    if (const auto max = parse_max_open_files(*limits)) {
      registry.gauge("process_max_fds", "Maximum number of open file descriptors.").set(*max);
    }
  }
  const auto proc_stat = read_all("/proc/stat");
  const auto boot = proc_stat ? parse_boot_time(*proc_stat) : std::nullopt;
  if (boot) {
    registry
        .gauge("process_start_time_seconds",
               "Start time of the process since unix epoch in seconds.")
        .set(*boot + stat->start_seconds_after_boot);
  }
}

}  // namespace wg::metrics
