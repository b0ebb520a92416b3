#include "widget_gateway/quota/lease_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "widget_gateway/common/log.hpp"
#include "widget_gateway/quota/quota_period.hpp"

namespace wg::quota {

namespace {

constexpr std::string_view kTemporarySuffix = ".tmp";
// A ledger line per month of a year at most: anything larger is not a state file.
constexpr std::size_t kMaxFileBytes = 64 * 1024;

constexpr std::string_view kHeader =
    "# widget-gateway quota lease, left by an instance that stopped.\n"
    "# The next start with this file reports it to Redis under the same instance name.\n";

// "name=DIGITS", any count the writer can write (up to 2^64 - 1).
bool parse_count(std::string_view text, std::string_view name, std::uint64_t& out) {
  if (text.substr(0, name.size()) != name || text.size() <= name.size() ||
      text[name.size()] != '=') {
    return false;
  }
  const std::string_view digits = text.substr(name.size() + 1);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return false;
  }
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
  return error == std::errc{} && end == digits.data() + digits.size();
}

bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = EIO;
    if (n <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// The text of a regular file, read without following a symlink; nullopt for anything else (a
// symlink placed where the state file belongs would otherwise make a start read its target).
std::optional<std::string> read_regular_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<std::string> text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      st.st_size <= static_cast<off_t>(kMaxFileBytes)) {
    text.emplace();
    char buffer[4096];
    ssize_t n = 0;
    while ((n = ::read(fd, buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)) {
      if (n > 0) text->append(buffer, static_cast<std::size_t>(n));
      if (text->size() > kMaxFileBytes) break;
    }
    if (n < 0 || text->size() > kMaxFileBytes) text.reset();
  }
  ::close(fd);
  return text;
}

// Logs why the file was not written; always false.
bool refuse(const std::string& path, std::string_view why, int error) {
  std::string reason(why);
  if (error != 0) reason += std::string(": ") + std::strerror(error);
  log::error("quota_state_file_not_written", {{"path", path}, {"reason", reason}});
  return false;
}

}  // namespace

// A month's line: "YYYY-MM granted=G spent=S returned=R", then optionally (files of earlier
// versions have neither) "unsent=U" when not 0 and "seen=N" when known.
std::string format_lease_state(const LeaseState& state) {
  std::string out(kHeader);
  out += "instance=" + state.instance + "\n";
  for (const auto& [month, ledger] : state.ledgers) {
    out += month + " granted=" + std::to_string(ledger.granted) +
           " spent=" + std::to_string(ledger.spent) +
           " returned=" + std::to_string(ledger.returned);
    if (ledger.unsent > 0) out += " unsent=" + std::to_string(ledger.unsent);
    if (auto seen = state.seen.find(month); seen != state.seen.end()) {
      out += " seen=" + std::to_string(seen->second);
    }
    out += "\n";
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
    std::string month, granted, spent, returned;
    words >> month >> granted >> spent >> returned;
    Ledger ledger;
    if (!period_of_month(month, std::chrono::minutes(0)) ||
        !parse_count(granted, "granted", ledger.granted) ||
        !parse_count(spent, "spent", ledger.spent) ||
        !parse_count(returned, "returned", ledger.returned)) {
      return std::nullopt;
    }
    std::optional<std::uint64_t> unsent, seen;
    for (std::string word; words >> word;) {
      std::uint64_t value = 0;
      if (!unsent && parse_count(word, "unsent", value)) {
        unsent = value;
      } else if (!seen && parse_count(word, "seen", value)) {
        seen = value;
      } else {
        return std::nullopt;
      }
    }
    ledger.unsent = unsent.value_or(0);
    if (ledger.unsent > ledger.spent) return std::nullopt;
    state.ledgers[month] = ledger;
    if (seen) {
      state.seen[month] = *seen;
    } else {
      state.seen.erase(month);
    }
  }
  if (state.instance.empty() || state.instance.find_first_of(" \t\r") != std::string::npos) {
    return std::nullopt;
  }
  return state;
}

bool save_lease_state(const std::string& path, const LeaseState& state) {
  const std::filesystem::path target(path);
  const std::string name = target.filename().string();
  const std::string dir = target.has_parent_path() ? target.parent_path().string() : ".";
  if (name.empty() || name == "." || name == "..") return false;
  const std::string temporary = name + std::string(kTemporarySuffix);

  // Every step names files relative to the directory opened once, so that a directory swapped
  // for another meanwhile cannot redirect the later ones.
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return refuse(path, "cannot open the directory", errno);
  // A rename would replace a symlink rather than write through it, but one at `path` means the
  // path is not what the operator meant (or someone else's doing): refused, left as it is.
  struct stat existing {};
  if (::fstatat(dir_fd, name.c_str(), &existing, AT_SYMLINK_NOFOLLOW) == 0 &&
      !S_ISREG(existing.st_mode)) {
    ::close(dir_fd);
    return refuse(path, "not a regular file (a symlink?)", 0);
  }

  // O_EXCL creates a new file or fails: whatever sits at the temporary name (a crash's leftover,
  // a symlink, a hard link to another file) is never opened, only removed, and the creation
  // tried once more. O_NOFOLLOW is implied by O_EXCL for the last component; spelled anyway.
  constexpr int kCreate = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::openat(dir_fd, temporary.c_str(), kCreate, 0600);
  if (fd < 0 && errno == EEXIST && ::unlinkat(dir_fd, temporary.c_str(), 0) == 0) {
    fd = ::openat(dir_fd, temporary.c_str(), kCreate, 0600);
  }
  if (fd < 0) {
    const int error = errno;
    ::close(dir_fd);
    return refuse(path, "cannot create the temporary file", error);
  }

  // The umask may only have narrowed 0600; set it exactly.
  const std::string text = format_lease_state(state);
  int error = 0;
  if (::fchmod(fd, 0600) != 0 || !write_all(fd, text) || ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::renameat(dir_fd, temporary.c_str(), dir_fd, name.c_str()) != 0) {
    error = errno;
  }
  if (error != 0) {
    ::unlinkat(dir_fd, temporary.c_str(), 0);
    ::close(dir_fd);
    return refuse(path, "cannot write the file", error);
  }
  // The rename itself is durable only once the directory is.
  if (::fsync(dir_fd) != 0) error = errno;
  ::close(dir_fd);
  return error == 0 || refuse(path, "cannot sync the directory", error);
}

std::optional<LeaseState> take_lease_state(const std::string& path) {
  // Claimed by renaming first: of two starts racing for the file, one gets it.
  const std::string claimed = path + ".taken";
  std::error_code ec;
  std::filesystem::rename(path, claimed, ec);
  if (ec) return std::nullopt;
  std::optional<LeaseState> state;
  if (auto text = read_regular_file(claimed)) state = parse_lease_state(*text);
  if (!state) {
    std::filesystem::rename(claimed, path + ".bad", ec);
    log::error("quota_state_file_invalid", {{"path", path}, {"kept_as", path + ".bad"}});
    return std::nullopt;
  }
  std::filesystem::remove(claimed, ec);
  return state;
}

}  // namespace wg::quota
