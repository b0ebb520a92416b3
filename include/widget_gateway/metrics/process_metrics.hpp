#pragma once
// The standard process_* series of Prometheus clients (resident and virtual memory, CPU time,
// open and maximum file descriptors, start time), read from /proc/self when a scrape renders
// them: on the scraping thread (the admin listener's), never on an io worker's request path.
// The parsers are pure, for the tests.

#include <cstdint>
#include <optional>
#include <string_view>

namespace wg::metrics {

class Registry;

// What /proc/self/stat tells, in the units Prometheus wants.
struct ProcessStat {
  double cpu_seconds = 0;            // user + system time
  double virtual_memory_bytes = 0;   // vsize
  double resident_memory_bytes = 0;  // rss pages * page size
  double start_seconds_after_boot = 0;
};

// One line of /proc/<pid>/stat. The command name (field 2) is in parentheses and may itself
// hold spaces and parentheses: fields are counted from the last ')'. nullopt when the line is
// cut short or a field is not a number.
std::optional<ProcessStat> parse_proc_stat(std::string_view line, long ticks_per_second,
                                           long page_bytes);
// The boot time ("btime <unix seconds>") of /proc/stat.
std::optional<double> parse_boot_time(std::string_view proc_stat);
// The soft limit of "Max open files" in /proc/<pid>/limits; nullopt for "unlimited".
std::optional<double> parse_max_open_files(std::string_view limits);

// Registers the process_* series in `registry` (on Linux; elsewhere, or without /proc,
// nothing is registered). The start time is read once, now; the rest at every scrape.
void register_process_metrics(Registry& registry);

}  // namespace wg::metrics
