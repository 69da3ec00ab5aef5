#include "sandbox/route_mark.hpp"

#include "common/shell_quote.hpp"


#include <algorithm>
#include <stdexcept>

namespace exedev::detail {

namespace {

constexpr std::string_view mark_prefix = "exedev-route ";
constexpr std::size_t mark_hex_digits = 32;
constexpr std::size_t max_output_read = 4096;
// exe.dev's lobby shell answers every exec with this (execore/ssh_server.go, handleExec).
constexpr std::string_view lobby_registration_text = "Please complete registration";

// The tools by their full search path: the VM user's shell startup files do not choose them.
constexpr std::string_view fixed_path = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n";
constexpr std::string_view mark_file = "\"$HOME/.cache/exedev/route-mark\"";

// The lines of `output` (the first max_output_read bytes) that start with the prefix, without it.
template <typename Visit>
void for_each_mark_line(std::string_view output, Visit visit) {
  output = output.substr(0, std::min(output.size(), max_output_read));
  while (!output.empty()) {
    const auto end = output.find('\n');
    auto line = output.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.starts_with(mark_prefix)) visit(line.substr(mark_prefix.size()));
    if (end == std::string_view::npos) break;
    output.remove_prefix(end + 1);
  }
}

bool is_mark_of(std::string_view value, std::string_view vm_name) {
  if (value.size() != vm_name.size() + 1 + mark_hex_digits) return false;
  if (!value.starts_with(vm_name) || value[vm_name.size()] != ' ') return false;
  const auto digits = value.substr(vm_name.size() + 1);
  return std::all_of(digits.begin(), digits.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

std::string route_mark_script(const std::string& vm_name) {
  if (vm_name.empty()) throw std::invalid_argument("route mark: the VM name is empty");
  std::string script(fixed_path);
  script += "umask 077\nname=" + sh_single_quote(vm_name) + "\nfile=" + std::string(mark_file) + "\n";
  // A mark naming another VM came with a copy of its disk: this VM gets its own.
  script += R"sh(mark=$(cat "$file" 2>/dev/null)
case $mark in
  "$name "????????????????????????????????) ;;
  *) mkdir -p "${file%/*}" &&
     mark="$name $(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')" &&
     printf '%s\n' "$mark" >"$file.$$" && mv -f "$file.$$" "$file" || exit 1 ;;
esac
printf 'exedev-route %s\n' "$mark"
)sh";
  return script;
}

std::string_view route_mark_probe() {
  static const std::string probe = std::string(fixed_path) + "mark=$(cat " + std::string(mark_file) +
                                   " 2>/dev/null) || mark=none\nprintf 'exedev-route %s\\n' \"$mark\"\n";
  return probe;
}

std::optional<std::string> parse_route_mark(std::string_view output, std::string_view vm_name) {
  std::optional<std::string> found;
  for_each_mark_line(output, [&](std::string_view value) {
    if (!found && is_mark_of(value, vm_name)) found = std::string(value);
  });
  return found;
}

ProbeReading read_probe_output(std::string_view output, std::string_view vm_name) {
  using Answer = ProbeReading::Answer;
  if (auto mark = parse_route_mark(output, vm_name)) return {Answer::mark, std::move(*mark)};
  auto answer = Answer::unrecognised;
  for_each_mark_line(output, [&](std::string_view value) { answer = value == "none" ? Answer::no_mark : Answer::other_vm; });
  const auto head = output.substr(0, std::min(output.size(), max_output_read));
  if (answer == Answer::unrecognised && head.find(lobby_registration_text) != std::string_view::npos) answer = Answer::lobby_shell;
  return {answer, {}};
}

}  // namespace exedev::detail
