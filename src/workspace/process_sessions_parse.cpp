// The process sessions' parsers: what the environment prints is hostile, so every line and
// number is checked against what the script prints and what was asked, and no buffer is sized
// from it.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>

#include "common/base64.hpp"
#include "common/inert_text.hpp"
#include "workspace/process_sessions.hpp"

namespace exedev::workspace::detail {

using exedev::detail::base64_decode;

namespace {

/// Linux signal numbers 1-31 by name (x86, ARM and RISC-V share them).
constexpr std::array<const char*, 32> kLinuxSignalNames = {
    nullptr, "HUP",  "INT",  "QUIT", "ILL",  "TRAP", "ABRT",   "BUS",  "FPE",   "KILL", "USR1",
    "SEGV",  "USR2", "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP",  "TSTP", "TTIN",
    "TTOU",  "URG",  "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO",  "PWR",   "SYS"};
/// Statuses 128 + N for N up to the last real-time signal name a signal.
constexpr int kLastSignal = 64;

/// Digits only, at most 19 of them (below 2^63): no sign, no blanks.
std::optional<std::uint64_t> parse_count(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

/// The next `\n`-ended line of `text` from `pos`, without its end; nullopt when none is left.
std::optional<std::string_view> next_line(std::string_view text, std::size_t& pos) {
  const auto end = text.find('\n', pos);
  if (end == std::string_view::npos) return std::nullopt;
  const auto line = text.substr(pos, end - pos);
  pos = end + 1;
  return line;
}

/// The value of the line `<key> <value>`.
std::optional<std::string_view> keyed_value(std::optional<std::string_view> line, std::string_view key) {
  if (!line || line->size() <= key.size() || line->substr(0, key.size()) != key || (*line)[key.size()] != ' ') {
    return std::nullopt;
  }
  return line->substr(key.size() + 1);
}

/// Splits on single spaces.
std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const auto space = line.find(' ', start);
    out.push_back(line.substr(start, space - start));
    if (space == std::string_view::npos) return out;
    start = space + 1;
  }
}

/// A status field: `-` (running), `lost`, or a recorded status.
struct StatusField {
  std::optional<SessionExit> exit;
  bool lost = false;
};

/// Throws for anything but the three forms.
StatusField parse_status_field(std::string_view text, const std::string& name) {
  StatusField field;
  if (text == "-") return field;
  if (text == "lost") {
    field.lost = true;
    return field;
  }
  field.exit = parse_session_exit(text);
  if (!field.exit) throw SessionOutputError(name);
  return field;
}

}  // namespace

SessionOutputError::SessionOutputError(const std::string& name)
    : WorkspaceError(fmt::format("process session '{}' returned damaged or incomplete output", name)) {}

std::optional<SessionExit> parse_session_exit(std::string_view text) {
  const auto value = parse_count(text);
  if (!value || *value > 255) return std::nullopt;
  SessionExit status;
  status.code = static_cast<int>(*value);
  const auto signal = status.code - 128;
  if (signal >= 1 && signal < static_cast<int>(kLinuxSignalNames.size())) {
    status.signal = kLinuxSignalNames[static_cast<std::size_t>(signal)];
  } else if (signal >= 1 && signal <= kLastSignal) {
    status.signal = fmt::format("SIG{}", signal);
  }
  return status;
}

SessionOutput parse_session_read(const std::string& stdout_text, const std::string& name, std::uint64_t from_offset,
                                 std::size_t max_bytes) {
  std::string_view text = stdout_text;
  std::size_t pos = 0;
  const auto exit_field = keyed_value(next_line(text, pos), "exit");
  const auto size_field = keyed_value(next_line(text, pos), "size");
  const auto start_field = keyed_value(next_line(text, pos), "start");
  const auto count_field = keyed_value(next_line(text, pos), "count");
  if (!exit_field || !size_field || !start_field || !count_field) throw SessionOutputError(name);
  const auto size = parse_count(*size_field);
  const auto start = parse_count(*start_field);
  const auto count = parse_count(*count_field);
  // A start past from_offset is a drop, which only happens inside the log; the bytes must lie in it.
  if (!size || !start || !count || *start < from_offset || *count > max_bytes ||
      (*start > from_offset && *start > *size) || (*count > 0 && *count > *size - std::min(*start, *size))) {
    throw SessionOutputError(name);
  }
  SessionOutput output;
  auto status = parse_status_field(*exit_field, name);
  output.exit = std::move(status.exit);
  output.lost = status.lost;
  if (*count > 0) {
    // base64 of `count` bytes is at most 4/3 of it plus line breaks: refuse longer text unread.
    const auto encoded = text.substr(pos);
    if (encoded.size() > (*count / 3 + 1) * 4 + (*count / 57 + 2)) throw SessionOutputError(name);
    auto data = base64_decode(encoded);
    if (!data || data->size() != *count) throw SessionOutputError(name);
    output.data = std::move(*data);
  } else if (pos != text.size()) {
    throw SessionOutputError(name);
  }
  output.offset = *start;
  output.dropped_bytes = *start - from_offset;
  output.next_offset = *start + *count;
  output.complete = (output.exit.has_value() || output.lost) && output.next_offset >= *size;
  return output;
}

std::optional<SessionExit> parse_session_wait(const std::string& stdout_text, const std::string& name) {
  if (stdout_text == "running\n") return std::nullopt;
  std::size_t pos = 0;
  const auto value = keyed_value(next_line(stdout_text, pos), "exit");
  if (!value || pos != stdout_text.size()) throw SessionOutputError(name);
  auto status = parse_status_field(*value, name);
  if (status.lost) {
    throw WorkspaceError(
        fmt::format("process session '{}': its holder and program are gone without recording how it ended", name));
  }
  if (!status.exit) throw SessionOutputError(name);
  return status.exit;
}

std::vector<SessionInfo> parse_session_list(const std::string& stdout_text) {
  std::vector<SessionInfo> sessions;
  std::string_view text = stdout_text;
  std::size_t pos = 0;
  while (const auto line = next_line(text, pos)) {
    const auto parts = fields(*line);
    if (parts.size() != 6 || parts[0] != "session") throw SessionOutputError("(list)");
    if (!is_session_name(parts[1])) continue;  // not a directory start_session() made
    SessionInfo info;
    info.name = std::string(parts[1]);
    auto status = parse_status_field(parts[2], info.name);
    info.exit = std::move(status.exit);
    info.state = info.exit ? SessionState::exited : (status.lost ? SessionState::lost : SessionState::running);
    if (parts[3] != "0" && parts[3] != "1") throw SessionOutputError(info.name);
    info.pty = parts[3] == "1";
    if (parts[4] != "-") {
      const auto seconds = parse_count(parts[4]);
      // Past year 9999 is no clock's reading: refuse rather than overflow the time point.
      if (!seconds || *seconds > 253402300799ULL) throw SessionOutputError(info.name);
      info.started = std::chrono::system_clock::time_point(std::chrono::seconds(*seconds));
    }
    if (parts[5] != "-") {
      auto command = base64_decode(parts[5]);
      if (!command) throw SessionOutputError(info.name);
      info.command = std::move(*command);
    }
    sessions.push_back(std::move(info));
  }
  if (pos != text.size()) throw SessionOutputError("(list)");
  std::sort(sessions.begin(), sessions.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return sessions;
}

std::vector<std::string> parse_session_missing_tools(const std::string& stdout_text) {
  static constexpr std::array<std::string_view, 6> known = {"base64", "mkfifo", "setsid", "stty", "timeout", "script"};
  std::vector<std::string> tools;
  std::size_t pos = 0;
  const auto line = next_line(stdout_text, pos);
  if (!line || line->substr(0, 7) != "missing") return tools;
  for (const auto word : fields(line->substr(std::min<std::size_t>(line->size(), 8)))) {
    if (std::find(known.begin(), known.end(), word) != known.end()) tools.emplace_back(word);
  }
  return tools;
}

SessionAttachHeader parse_session_attach_header(std::string_view line, const std::string& name, std::uint64_t from) {
  const auto parts = fields(line);
  SessionAttachHeader header;
  if (parts.size() == 2 && parts[0] == "refused") {
    const auto status = parse_count(parts[1]);
    if (!status || *status == 0 || *status > 255) throw SessionOutputError(name);
    header.refused = static_cast<int>(*status);
    return header;
  }
  if (parts.size() != 4 || parts[0] != "attached" || (parts[3] != "0" && parts[3] != "1")) throw SessionOutputError(name);
  const auto start = parse_count(parts[1]);
  const auto keep = parse_count(parts[2]);
  if (!start || !keep || *start < from || *keep < kSessionTrimStep) throw SessionOutputError(name);
  header.start = *start;
  header.keep = *keep;
  header.writable = parts[3] == "1";
  return header;
}

}  // namespace exedev::workspace::detail
