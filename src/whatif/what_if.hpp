#pragma once
// widget-gateway --what-if ACCESS_LOG... [--config FILE] (docs/what-if.md): the access logs of
// one or more instances, merged in time order, replayed through the configured caching rules
// (Replay), and the figures printed as one JSON object. Nothing is sent anywhere.

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "replay.hpp"
#include "widget_gateway/config/config.hpp"

namespace wg::whatif {

// One access log line as a replay reads it.
struct LogLine {
  enum class Kind {
    api,         // an API request the replay takes (answered 200, or unknown widget)
    skipped,     // not an API request, or one answered with an error or a refusal
    unreadable,  // not a line of this gateway's access log, or one without the query and
                 // counts a replay needs (a log from an earlier version)
  };
  Kind kind = Kind::unreadable;
  LoggedRequest request;
  std::optional<double> sample;  // the line says the log keeps only this share
};

LogLine read_line(std::string_view line);

// "2024-05-01T12:34:56.789Z" (the access log's time); nullopt for anything else.
std::optional<WallTime> parse_log_time(std::string_view text);

// Reads every file, replays, prints the figures on `out`; 0 on success. A sampled log is
// refused (exit 2: a sample under-counts the hits that keep copies fresh, so no scaling gives
// the calls back); unreadable files and logs with nothing to replay exit 1. Messages go to `err`.
int run_what_if(const std::vector<std::string>& files, const config::Config& config,
                std::ostream& out, std::ostream& err);

// The figures as the JSON object run_what_if prints.
std::string figures_json(const Figures& figures, std::uint64_t skipped, std::uint64_t unreadable,
                         std::size_t files);

}  // namespace wg::whatif
