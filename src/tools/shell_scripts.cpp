#include "tools/shell_scripts.hpp"

#include "common/base64.hpp"

#include <nlohmann/json.hpp>

#include <exedev/workspace/types.hpp>

#include <cctype>

namespace exedev::tools::detail {

using workspace::shell_quote;

namespace {

// SIGXFSZ on Linux and the BSDs. A shell reports a child it killed as 128 + 25 (ksh93: 256 + 25).
constexpr int kSigxfsz = 25;

bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (const char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::vector<std::string_view> split_blanks(std::string_view text) {
  std::vector<std::string_view> fields;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const auto start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) fields.push_back(text.substr(start, i - start));
  }
  return fields;
}

}  // namespace

std::string limit_function() {
  // The probe file is written past a one-block limit with SIGXFSZ ignored, so the write stops
  // at exactly one block: its size is the unit `ulimit -f` counts in.
  return R"SH(__harness_limit_files() {
  __harness_probe=$(mktemp "${TMPDIR:-/tmp}/pydantic-ai-harness-ulimit.XXXXXX") || return 1
  ( trap '' XFSZ; ulimit -f 1 && printf '%01100d' 0 > "$__harness_probe" ) >/dev/null 2>&1
  __harness_unit=$(wc -c < "$__harness_probe" | tr -d ' ')
  rm -f "$__harness_probe"
  case $__harness_unit in 512|1024) ;; *) return 1 ;; esac
  ulimit -f $(( ($1 + __harness_unit - 1) / __harness_unit ))
})SH";
}

std::string limited_script(const std::string& command, std::optional<std::uint64_t> limit) {
  if (!limit) return command;
  return limit_function() + "\n__harness_limit_files " + std::to_string(*limit) +
         " || { echo 'Unable to apply max_file_bytes.' >&2; exit 1; }\n" + command;
}

std::string file_limit_status(int exit_code, std::optional<std::uint64_t> limit) {
  if (!limit || exit_code == 0) return "";
  const auto bytes = std::to_string(*limit);
  if (exit_code == -kSigxfsz || exit_code == 128 + kSigxfsz || exit_code == 256 + kSigxfsz) {
    return "\n[File-size limit exceeded: max_file_bytes=" + bytes + ". Reduce file output before retrying.]";
  }
  return "\n[Command failed with max_file_bytes=" + bytes + "; file writes may have reached the per-file limit.]";
}

std::string in_directory(const std::string& cwd, const std::string& script) {
  return "cd " + shell_quote(cwd) + " || exit\n" + script;
}

std::string capture_cwd_script(const std::string& command, const std::string& capture) {
  return command + "\n__harness_ec=$?\npwd > " + shell_quote(capture) + "\nexit $__harness_ec";
}

std::string labelled(const std::string& stdout_text, const std::string& stderr_text,
                     const std::optional<std::string>& empty, const std::optional<std::string>& trailer) {
  std::vector<std::string> sections;
  if (!stdout_text.empty()) sections.push_back("[stdout]\n" + stdout_text);
  if (!stderr_text.empty()) sections.push_back("[stderr]\n" + stderr_text);
  if (sections.empty() && empty) sections.push_back(*empty);
  if (trailer) sections.push_back(*trailer);
  std::string out;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (i > 0) out += '\n';
    out += sections[i];
  }
  return out;
}

std::string supervisor_script() {
  // Arguments: $1 job directory, $2 combined|separate, $3 command, $4 file limit (may be
  // empty), $5 the launcher's pid.
  //
  // The TERM trap only records the signal: the supervisor outlives a SIGTERM to its group long
  // enough to publish how the command ended (143). The command's subshell resets the trap to
  // the default, so SIGTERM ends the command. A stop that arrives before launch.ready (the
  // trap, the stop file, or a launcher that died before saying ready) means the command never
  // starts and 143 is published. The stop file also covers a SIGTERM lost while the subshell
  // was being forked.
  return limit_function() + R"SH(
dir=$1
publish() {
  printf '{"pid": %s, "exit_code": %s}' "$$" "$1" > "$dir/status.tmp" && mv -f "$dir/status.tmp" "$dir/status.json"
}
unset __harness_stopped
trap __harness_stopped=1 TERM
publish null
while [ -z "$__harness_stopped" ] && [ ! -e "$dir/launch.ready" ]; do
  kill -0 "$5" 2> /dev/null || [ -e "$dir/launch.ready" ] || __harness_stopped=1
  sleep 0.1 2> /dev/null || [ -n "$__harness_stopped" ] || sleep 1
done
if [ "$2" = combined ]; then out="$dir/output.log"; err="$dir/output.log"; else out="$dir/stdout.log"; err="$dir/stderr.log"; fi
if [ -n "$4" ]; then
  __harness_limit_files "$4" || { echo 'Unable to apply max_file_bytes.' >> "$err"; publish 1; exit 1; }
fi
(
  [ -z "$__harness_stopped" ] && [ ! -e "$dir/stop" ] || exit 143
  exec sh -c "$3"
) < /dev/null >> "$out" 2>> "$err"
publish $?
)SH";
}

namespace {

// The launcher after its variable assignments (dir, exclusive, mode, cmd, limit, wrapper).
// `command -v` is a builtin, so checking the tools costs no process. It waits for the
// supervisor's first status before returning because some workspaces kill the launching
// command's process group when it exits, which would take a supervisor that has not detached
// yet with it; the workspace bounds that wait (kControlTimeout). `sleep 1` stands in where
// `sleep` takes whole seconds only.
constexpr const char* kLauncherBody = R"SH(missing=
for tool in mv base64; do command -v "$tool" > /dev/null 2>&1 || missing="$missing $tool"; done
if [ -n "$missing" ]; then echo $missing; exit 122; fi
if [ "$exclusive" = 1 ]; then
  (umask 077 && mkdir "$dir") || exit 126
else
  (umask 077 && mkdir -p "$dir") || exit 125
fi
if [ "$mode" = combined ]; then : > "$dir/output.log"; else : > "$dir/stdout.log"; : > "$dir/stderr.log"; fi
if command -v setsid > /dev/null 2>&1; then
  setsid sh -c "$wrapper" sh "$dir" "$mode" "$cmd" "$limit" $$ < /dev/null > /dev/null 2>&1 &
  pid=$!; group=$pid
else
  nohup sh -c "$wrapper" sh "$dir" "$mode" "$cmd" "$limit" $$ < /dev/null > /dev/null 2>&1 &
  pid=$!; group=-
  if [ "$(ps -o pgid= -p $$ 2> /dev/null | tr -d ' ')" = "$$" ]; then group=$$; fi
fi
while [ ! -e "$dir/status.json" ]; do sleep 0.1 2> /dev/null || sleep 1; done
: > "$dir/launch.ready"
echo "$pid $group" > "$dir/handle"
echo "$pid $group"
)SH";

}  // namespace

std::string launcher_script(const LaunchRequest& request) {
  const std::string assignments =
      "dir=" + shell_quote(request.directory) + " exclusive=" + (request.exclusive ? "1" : "0") +
      " mode=" + (request.combined ? "combined" : "separate") + " cmd=" + shell_quote(request.command) +
      " limit=" + shell_quote(request.file_limit ? std::to_string(*request.file_limit) : "") +
      " wrapper=" + shell_quote(supervisor_script());
  auto launcher = in_directory(request.cwd, assignments + "\n" + kLauncherBody);
  if (request.prelude.empty()) return launcher;
  return "(\n" + request.prelude + "\n) || exit $?\n" + launcher;
}

std::vector<std::string> signal_argv(const std::string& signal, const std::string& target,
                                     const std::string& stop_file) {
  // `true` rather than `:`: a failed redirection on a special builtin would end the shell
  // (the job directory may be gone). The shell's kill builtin needs no kill executable.
  std::vector<std::string> argv;
  argv.emplace_back("sh");
  argv.emplace_back("-c");
  argv.emplace_back(R"SH(true 2> /dev/null > "$3"; kill -s "$1" -- "$2")SH");
  argv.emplace_back("kill");
  argv.push_back(signal);
  argv.push_back(target);
  argv.push_back(stop_file);
  return argv;
}

std::string read_log_script(const std::string& path, std::uint64_t offset, std::uint64_t length) {
  // A pipeline reports only base64's status, so the log is checked first.
  const auto q = shell_quote(path);
  return "test -f " + q + " || exit 66; test -r " + q + " || exit 67; tail -c +" + std::to_string(offset + 1) +
         " " + q + " | head -c " + std::to_string(length) + " | base64";
}

namespace {

// The report script after its variable assignments (dir, max, stop). The handle checks mirror
// parse_handle; the exit-code check mirrors parse_exit_code for status.json as the supervisors
// (this one's and the reference harness's) write it; signal mirrors signal_argv and Job::send.
constexpr const char* kReportBody = R"SH([ -f "$dir/handle" ] && [ -r "$dir/handle" ] || exit 64
pid= group= extra=
read -r pid group extra < "$dir/handle"
case $pid in ''|*[!0-9]*) exit 64 ;; esac
[ ${#pid} -le 18 ] && [ -n "$group" ] && [ -z "$extra" ] || exit 64
case $group in
  ''|*[!0-9]*) target=$pid; grouped=0 ;;
  *) if [ ${#group} -le 18 ]; then target=-$group; grouped=1; else target=$pid; grouped=0; fi ;;
esac
finished() {
  [ -f "$dir/status.json" ] || return 1
  st=
  IFS= read -r st < "$dir/status.json"
  case $st in *'"exit_code": '[-0-9]*|*'"exit_code":'[-0-9]*) return 0 ;; esac
  return 1
}
signal() {
  true 2> /dev/null > "$dir/stop"
  if err=$(kill -s "$1" -- "$target" 2>&1); then return 0; fi
  case $err in *[Nn][Oo]' '[Ss][Uu][Cc][Hh]' '[Pp][Rr][Oo][Cc][Ee][Ss][Ss]*) return 1 ;; esac
  printf '%s
' "${err:-Unable to send SIG$1 to job $pid.}" >&2
  exit 65
}
if [ "$stop" = 1 ] && { ! finished || [ "$grouped" = 1 ]; }; then
  if signal TERM && [ "$grouped" = 1 ]; then
    if finished; then
      if signal 0; then signal KILL || true; fi
    else
      waited=0
      while signal 0; do
        if [ "$waited" -ge 20 ]; then signal KILL || true; break; fi
        if sleep 0.1 2> /dev/null; then waited=$((waited + 1)); else sleep 1; waited=$((waited + 10)); fi
      done
    fi
  fi
fi
if [ -e "$dir/status.json" ]; then
  [ -f "$dir/status.json" ] && [ -r "$dir/status.json" ] || { echo "Unable to read $dir/status.json." >&2; exit 67; }
  echo '#status'
  base64 < "$dir/status.json" || exit 67
else
  echo '#running'
fi
for log in stdout stderr; do
  if [ "$log" = stdout ]; then echo '#out'; else echo '#err'; fi
  file="$dir/$log.log"
  [ -f "$file" ] || continue
  [ -r "$file" ] || { echo "Unable to read job log '$file'." >&2; exit 67; }
  tail -c "$max" "$file" | base64
done
echo '#end'
if [ "$stop" = 1 ]; then rm -rf -- "$dir" || exit 68; fi
)SH";

}  // namespace

std::string job_report_script(const std::string& directory, std::uint64_t max_bytes, bool stop) {
  return "dir=" + shell_quote(directory) + " max=" + std::to_string(max_bytes) + " stop=" + (stop ? "1" : "0") + "\n" +
         kReportBody;
}

std::optional<JobReport> parse_job_report(std::string_view output) {
  JobReport report;
  std::string section;
  std::string status, out, err;
  bool has_status = false, ended = false;
  std::size_t start = 0;
  while (start < output.size()) {
    auto end = output.find('\n', start);
    if (end == std::string_view::npos) end = output.size();
    const auto line = output.substr(start, end - start);
    start = end + 1;
    if (ended) return std::nullopt;  // nothing follows the end marker
    if (!line.empty() && line.front() == '#') {
      section = std::string(line);
      if (section == "#status") has_status = true;
      else if (section == "#end") ended = true;
      else if (section != "#running" && section != "#out" && section != "#err") return std::nullopt;
      continue;
    }
    std::string* target = section == "#status" ? &status : section == "#out" ? &out : section == "#err" ? &err : nullptr;
    if (target == nullptr) return std::nullopt;
    target->append(line);
  }
  if (!ended) return std::nullopt;
  const auto decoded_status = exedev::detail::base64_decode(status);
  const auto decoded_out = exedev::detail::base64_decode(out);
  const auto decoded_err = exedev::detail::base64_decode(err);
  if (!decoded_status || !decoded_out || !decoded_err) return std::nullopt;
  if (has_status) report.status = *decoded_status;
  report.stdout_tail = *decoded_out;
  report.stderr_tail = *decoded_err;
  return report;
}

std::optional<JobHandle> parse_handle(std::string_view text) {
  const auto fields = split_blanks(text);
  if (fields.size() != 2 || !all_digits(fields[0]) || fields[0].size() > 18) return std::nullopt;
  JobHandle handle;
  handle.pid = std::stoll(std::string(fields[0]));
  if (all_digits(fields[1]) && fields[1].size() <= 18) handle.pgid = std::stoll(std::string(fields[1]));
  return handle;
}

std::optional<long long> parse_exit_code(std::string_view status_json) {
  const auto json = nlohmann::json::parse(status_json, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return std::nullopt;
  const auto found = json.find("exit_code");
  if (found == json.end() || !found->is_number_integer()) return std::nullopt;
  if (found->is_number_unsigned()) {
    const auto value = found->get<std::uint64_t>();
    if (value > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<long long>(value);
  }
  return found->get<long long>();
}

bool is_command_id(std::string_view text) {
  if (text.size() != 32) return false;
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace exedev::tools::detail
