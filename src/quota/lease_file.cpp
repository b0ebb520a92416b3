#include "widget_gateway/quota/lease_file.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "widget_gateway/common/log.hpp"

namespace wg::quota {

namespace {

constexpr std::string_view kHeader =
    "# widget-gateway quota lease, left by an instance that stopped without reaching Redis.\n"
    "# The next start with this file reports it to Redis under the same instance name.\n";

bool parse_count(std::string_view text, std::string_view name, std::uint64_t& out) {
  if (text.substr(0, name.size()) != name || text.size() <= name.size() ||
      text[name.size()] != '=') {
    return false;
  }
  const std::string digits(text.substr(name.size() + 1));
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
      digits.size() > 19) {
    return false;
  }
  out = std::stoull(digits);
  return true;
}

}  // namespace

std::string format_lease_state(const LeaseState& state) {
  std::string out(kHeader);
  out += "instance=" + state.instance + "\n";
  for (const auto& [month, ledger] : state.ledgers) {
    out += month + " granted=" + std::to_string(ledger.granted) +
           " spent=" + std::to_string(ledger.spent) +
           " returned=" + std::to_string(ledger.returned) + "\n";
  }
  return out;
}

std::optional<LeaseState> parse_lease_state(std::string_view text) {
  LeaseState state;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("instance=", 0) == 0) {
      state.instance = line.substr(9);
      continue;
    }
    std::istringstream words(line);
    std::string month, granted, spent, returned, extra;
    words >> month >> granted >> spent >> returned;
    Ledger ledger;
    if (!period_of_month(month, std::chrono::minutes(0)) || (words >> extra) ||
        !parse_count(granted, "granted", ledger.granted) ||
        !parse_count(spent, "spent", ledger.spent) ||
        !parse_count(returned, "returned", ledger.returned)) {
      return std::nullopt;
    }
    state.ledgers[month] = ledger;
  }
  if (state.instance.empty() || state.instance.find_first_of(" \t\r") != std::string::npos) {
    return std::nullopt;
  }
  return state;
}

bool save_lease_state(const std::string& path, const LeaseState& state) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << format_lease_state(state);
    out.flush();
    if (!out) return false;
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  return !ec;
}

std::optional<LeaseState> take_lease_state(const std::string& path) {
  // Claimed by renaming first: of two starts racing for the file, one gets it.
  const std::string claimed = path + ".taken";
  std::error_code ec;
  std::filesystem::rename(path, claimed, ec);
  if (ec) return std::nullopt;
  std::ifstream in(claimed);
  std::stringstream text;
  text << in.rdbuf();
  std::optional<LeaseState> state = parse_lease_state(text.str());
  if (!state) {
    std::filesystem::rename(claimed, path + ".bad", ec);
    log::error("quota_state_file_invalid", {{"path", path}, {"kept_as", path + ".bad"}});
    return std::nullopt;
  }
  std::filesystem::remove(claimed, ec);
  return state;
}

}  // namespace wg::quota
