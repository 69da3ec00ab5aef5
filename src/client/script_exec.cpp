#include "common/shell_quote.hpp"
#include "common/script_path.hpp"
#include "client/script_exec.hpp"

#include "common/base64.hpp"
#include "common/random_ids.hpp"
#include "client/lobby.hpp"
#include "client/run_protocol.hpp"

#include <exedev/client.hpp>
#include <exedev/errors.hpp>

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace exedev::detail {

namespace {

constexpr std::size_t max_stderr_bytes = 64 * 1024;

ProtocolError garbled() { return ProtocolError("run_script: garbled frame in the script's output"); }

}  // namespace

bool valid_script_argument(std::string_view arg) {
  if (arg.empty()) return false;
  for (const char c : arg) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
                    c == '/' || c == '=';
    if (!ok) return false;
  }
  return true;
}

std::string script_boundary() { return "#EXEDEV-" + random_hex(12) + "#"; }

std::string script_remote_command(const std::string& script, const std::vector<std::string>& args,
                                  const std::string& boundary) {
  if (script.find('\0') != std::string::npos) throw std::invalid_argument("run_script: the script contains a NUL byte");
  if (boundary.empty() || boundary.find_first_of("' \t\r\n") != std::string::npos) {
    throw std::invalid_argument("run_script: invalid frame boundary");
  }
  // The script runs in a subshell so that its `exit` still lets the wrapper report; stdin is
  // /dev/null so that it cannot read the rest of the wrapper from the pipe.
  std::string wrapper(script_path_line);
  wrapper += "main() {\n" + script + "\n}\n";
  wrapper += "B=" + sh_single_quote(boundary) + "\n";
  wrapper += "e=$(mktemp 2>/dev/null) || e=/dev/null\n";
  wrapper += "printf '%s b\\n' \"$B\"\n";
  wrapper += "(main \"$@\") </dev/null 2>\"$e\"\n";
  wrapper += "c=$?\n";
  wrapper += "printf '\\n%s x %s\\n' \"$B\" \"$c\"\n";
  wrapper += "if [ \"$e\" != /dev/null ]; then head -c " + std::to_string(max_stderr_bytes) +
             " \"$e\" | base64; rm -f \"$e\"; fi\n";
  wrapper += "printf '%s .\\n' \"$B\"\n";
  wrapper += "exit 0\n";  // the status travels in the frame (ADR 3)
  // `--`: base64 text may start with '+', which sh would take for an option.
  std::string command = "echo " + base64_encode(wrapper) + "|" + std::string(script_base64_decode) + "|/bin/sh -s --";
  for (const auto& arg : args) {
    if (!valid_script_argument(arg)) throw std::invalid_argument("run_script: an argument must be non-empty base64 text");
    command += ' ';
    command += arg;
  }
  return command;
}

std::string script_lobby_line(const std::string& vm, const std::string& script, const std::vector<std::string>& args,
                              const std::string& boundary) {
  return "ssh " + lobby_quote(vm) + " " + lobby_quote(script_remote_command(script, args, boundary));
}

ScriptOutputReader::ScriptOutputReader(const std::string& boundary, StdoutSink on_stdout)
    : begin_(boundary + " b\n"), exit_mark_("\n" + boundary + " x "), end_(boundary + " .\n"),
      on_stdout_(std::move(on_stdout)) {}

void ScriptOutputReader::feed(std::string_view bytes) {
  last_bytes_.append(bytes.substr(bytes.size() - std::min(bytes.size(), end_.size())));
  if (last_bytes_.size() > end_.size()) last_bytes_.erase(0, last_bytes_.size() - end_.size());
  pending_.append(bytes);
  if (part_ == Part::preamble) scan_preamble();
  if (part_ == Part::stdout_bytes) scan_stdout();
}

void ScriptOutputReader::scan_preamble() {
  // Bytes before the begin frame are login-shell noise: the frame opens the answer or a line.
  std::size_t start = std::string::npos;
  if (at_body_start_) {
    if (pending_.size() < begin_.size() && begin_.starts_with(pending_)) return;  // may still be it
    if (pending_.starts_with(begin_)) start = begin_.size();
    at_body_start_ = false;
  }
  if (start == std::string::npos) {
    const auto at = pending_.find("\n" + begin_);
    if (at == std::string::npos) {
      // Keep only what may still be the start of "\n" + begin_.
      if (pending_.size() > begin_.size()) pending_.erase(0, pending_.size() - begin_.size());
      return;
    }
    start = at + 1 + begin_.size();
  }
  pending_.erase(0, start);
  part_ = Part::stdout_bytes;
}

void ScriptOutputReader::scan_stdout() {
  const auto at = pending_.find(exit_mark_);
  if (at != std::string::npos) {
    emit(std::string_view(pending_).substr(0, at));
    pending_.erase(0, at + exit_mark_.size());
    part_ = Part::trailer;
    return;
  }
  // The last bytes may be the start of the exit frame: they wait for what follows.
  const std::size_t held = exit_mark_.size() - 1;
  if (pending_.size() <= held) return;
  emit(std::string_view(pending_).substr(0, pending_.size() - held));
  pending_.erase(0, pending_.size() - held);
}

void ScriptOutputReader::emit(std::string_view bytes) {
  if (bytes.empty()) return;
  stdout_size_ += bytes.size();
  on_stdout_(bytes);
}

std::optional<ScriptOutput> ScriptOutputReader::finish() {
  if (part_ == Part::preamble || last_bytes_ != end_) return std::nullopt;
  if (part_ == Part::stdout_bytes || pending_.size() < end_.size()) throw garbled();  // no exit frame
  std::string_view rest(pending_);
  rest.remove_suffix(end_.size());
  ScriptOutput output;
  const auto newline = rest.find('\n');
  if (newline == std::string_view::npos) throw garbled();
  const auto code = rest.substr(0, newline);
  const auto [ptr, ec] = std::from_chars(code.data(), code.data() + code.size(), output.exit_code);
  if (ec != std::errc() || ptr != code.data() + code.size()) throw garbled();
  rest.remove_prefix(newline + 1);
  while (!rest.empty()) {
    const auto line_end = rest.find('\n');
    if (line_end == std::string_view::npos) throw garbled();
    auto bytes = base64_decode(rest.substr(0, line_end));
    if (!bytes) throw garbled();
    output.stderr_bytes += *bytes;
    rest.remove_prefix(line_end + 1);
  }
  return output;
}

std::optional<ScriptOutput> parse_script_output(std::string_view body, const std::string& boundary) {
  std::string stdout_bytes;
  ScriptOutputReader reader(boundary, [&stdout_bytes](std::string_view bytes) { stdout_bytes.append(bytes); });
  reader.feed(body);
  auto output = reader.finish();
  if (output) output->stdout_bytes = std::move(stdout_bytes);
  return output;
}

}  // namespace exedev::detail
