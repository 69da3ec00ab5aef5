#include "common/shell_quote.hpp"
#include "client/script_exec.hpp"

#include "common/base64.hpp"
#include "common/random_ids.hpp"
#include "client/lobby.hpp"
#include "client/run_protocol.hpp"

#include <exedev/client.hpp>
#include <exedev/errors.hpp>

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
  std::string wrapper = "main() {\n" + script + "\n}\n";
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
  std::string command = "echo " + base64_encode(wrapper) + "|base64 -d|/bin/sh -s --";
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

std::optional<ScriptOutput> parse_script_output(std::string_view body, const std::string& boundary) {
  const std::string begin = boundary + " b\n";
  const std::string exit_mark = "\n" + boundary + " x ";
  const std::string end = boundary + " .\n";
  std::size_t start = 0;
  if (body.starts_with(begin)) {
    start = begin.size();
  } else {
    const auto at = body.find("\n" + begin);
    if (at == std::string_view::npos) return std::nullopt;
    start = at + 1 + begin.size();
  }
  if (!body.ends_with(end)) return std::nullopt;
  const auto exit_at = body.rfind(exit_mark);
  if (exit_at == std::string_view::npos || exit_at < start - 1) throw garbled();
  ScriptOutput output;
  output.stdout_bytes = std::string(body.substr(start, exit_at - start));
  std::string_view rest = body.substr(exit_at + exit_mark.size());
  rest.remove_suffix(end.size());
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

}  // namespace exedev::detail
