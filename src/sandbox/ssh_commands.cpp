#include "sandbox/ssh_commands.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "client/run_protocol.hpp"
#include "client/script_exec.hpp"
#include "common/base64.hpp"
#include "common/script_path.hpp"
#include "common/shell_quote.hpp"

namespace exedev::detail {

namespace {

// The marker line is bounded: a longer line before it is noise and dropped as it streams.
constexpr std::size_t kMaxMarkerLine = 256;
// The longest status an end mark carries ("-2147483648"): a longer line after a mark is data.
constexpr std::size_t kMostStatusChars = 11;

void require_boundary(const std::string& boundary) {
  if (boundary.empty() || boundary.size() > 64 ||
      boundary.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != std::string::npos) {
    throw std::invalid_argument("ssh: invalid marker boundary");
  }
}

// `set --` and the validated arguments.
std::string positional_parameters(const std::vector<std::string>& args) {
  std::string s = "set --";
  for (const auto& arg : args) {
    if (!valid_script_argument(arg)) throw std::invalid_argument("run_script: an argument must be non-empty base64 text");
    s += ' ';
    s += arg;
  }
  return s;
}

// Prints the marker line `<B> <pgid>` on stderr: the session's process group, from /proc (field
// 5 of stat, counted after the command name, which may hold spaces), else from ps.
std::string process_group_marker(const std::string& boundary) {
  std::string s = "g=\n";
  s += "if read -r l </proc/$$/stat 2>/dev/null; then set -- ${l##*) }; g=$3; fi\n";
  s += "[ -n \"$g\" ] || g=$(ps -o pgid= -p $$ 2>/dev/null | tr -d ' ')\n";
  s += "printf '%s %s\\n' " + sh_single_quote(boundary) + " \"$g\" >&2\n";
  return s;
}

}  // namespace

std::string ssh_command_program(const std::string& boundary, const std::string& shell_line,
                                const std::map<std::string, std::string>& env,
                                const std::optional<std::string>& working_dir) {
  require_boundary(boundary);
  const std::string text = command_text(shell_line, env, working_dir);
  std::string s = "main() {\n";
  s += login_shell_selection();
  s += process_group_marker(boundary);
  const std::string b = sh_single_quote(boundary);
  s += "\"$S\" -l -c " + sh_single_quote(text) + " </dev/null\n";
  s += "c=$?\n";
  // The end of each stream: a background child may hold the channel open past the exit. Right
  // after the command's last byte, with no newline before it: a newline that may begin the
  // mark would have to be held back, and a line's own newline would then wait for what follows.
  s += "printf '%s x %s\\n' " + b + " \"$c\"\n";
  s += "printf '%s x %s\\n' " + b + " \"$c\" >&2\n";
  // Never 0 (ssh_channel_status): the channel's exit-status then confirms the marks.
  s += "exit $((c % 255 + 1))\n";
  s += "}\n";
  s += "main\n";
  return s;
}

std::string ssh_stop_program(std::int64_t pgid) {
  if (pgid <= 1) throw std::invalid_argument("ssh: invalid process group");
  std::string group(1, '-');  // appended, not "-" + …: GCC 12 -O3 warns falsely on that (-Wrestrict)
  group += std::to_string(pgid);
  std::string s(script_path_line);
  s += "kill -s TERM -- " + group + " 2>/dev/null || exit 0\n";
  s += "i=0\n";
  s += "while kill -s 0 -- " + group + " 2>/dev/null; do\n";
  s += "  i=$((i + 1)); [ \"$i\" -gt 50 ] && break; sleep 0.1\n";
  s += "done\n";
  s += "kill -s KILL -- " + group + " 2>/dev/null\n";
  s += "exit 0\n";
  return s;
}

std::string ssh_stream_program_line(const std::string& script, const std::vector<std::string>& args) {
  if (script.find('\0') != std::string::npos) throw std::invalid_argument("a command stream's script must not contain a NUL byte");
  std::string program(script_path_line);
  program += positional_parameters(args);
  program += '\n';
  program += script;
  return base64_encode(program) + "\n";
}

std::string ssh_script_program(const std::string& boundary, const std::string& script, const std::vector<std::string>& args) {
  require_boundary(boundary);
  if (script.find('\0') != std::string::npos) throw std::invalid_argument("run_script: the script must not contain a NUL byte");
  std::string s(script_path_line);
  s += process_group_marker(boundary);
  s += positional_parameters(args);
  // A compound command is read whole before it runs, so the script cannot read its own text.
  s += "\n{\n";
  s += script;
  s += "\n} </dev/null\n";
  return s;
}

StartMarkerReader::StartMarkerReader(std::string boundary) : boundary_(std::move(boundary)) {}

std::string StartMarkerReader::feed(std::string_view bytes) {
  if (started_) return std::string(bytes);
  while (!bytes.empty()) {
    const auto nl = bytes.find('\n');
    const auto piece = bytes.substr(0, nl);
    if (line_.size() < kMaxMarkerLine) line_.append(piece.substr(0, kMaxMarkerLine - line_.size()));
    if (nl == std::string_view::npos) return {};
    bytes.remove_prefix(nl + 1);
    const std::string_view line = line_;
    if (line.size() > boundary_.size() && line.starts_with(boundary_) && line[boundary_.size()] == ' ') {
      started_ = true;
      const auto number = line.substr(boundary_.size() + 1);
      std::int64_t value = 0;
      const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
      if (ec == std::errc() && end == number.data() + number.size() && value > 1) pgid_ = value;
      line_.clear();
      return std::string(bytes);
    }
    line_.clear();
  }
  return {};
}

EndMarkerReader::EndMarkerReader(const std::string& boundary) : mark_(boundary + " x ") {}

std::string EndMarkerReader::feed(std::string_view bytes) {
  if (exit_code_) return {};
  pending_.append(bytes);
  std::string out;
  for (;;) {
    const auto at = pending_.find(mark_);
    if (at == std::string::npos) break;
    const auto digits = at + mark_.size();
    const auto nl = pending_.find('\n', digits);
    if (nl == std::string::npos && pending_.size() - digits <= kMostStatusChars) {
      // The status is still on its way: everything before the mark is data.
      out.append(pending_, 0, at);
      pending_.erase(0, at);
      return out;
    }
    if (nl == std::string::npos || nl - digits > kMostStatusChars) {
      // A mark with no status line after it (a forged or garbled one): data, and nothing more
      // is held back for it, so the reader's state stays bounded.
      out.append(pending_, 0, digits);
      pending_.erase(0, digits);
      continue;
    }
    int code = 0;
    const auto [end, ec] = std::from_chars(pending_.data() + digits, pending_.data() + nl, code);
    if (ec == std::errc() && end == pending_.data() + nl) {
      out.append(pending_, 0, at);
      pending_.clear();
      exit_code_ = code;
      return out;
    }
    // Not the end frame (the boundary is random, so only a garbled one): it is data.
    out.append(pending_, 0, digits);
    pending_.erase(0, digits);
  }
  // Hold back what may be the start of the mark.
  std::size_t keep = std::min(pending_.size(), mark_.size() - 1);
  while (keep > 0 && pending_.compare(pending_.size() - keep, keep, mark_, 0, keep) != 0) --keep;
  out.append(pending_, 0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string EndMarkerReader::finish() {
  std::string rest;
  rest.swap(pending_);
  return rest;
}

}  // namespace exedev::detail
