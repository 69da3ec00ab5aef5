#pragma once
// The shell scripts behind the Shell tools and the parsers of what they print (internal,
// sans-IO). The job files are a protocol shared with the reference harness (Python), so a job
// started by either can be checked and stopped by the other:
//
//   <working dir>/.pydantic-ai-harness/shell/<32 hex>/   the job directory (mode 0700)
//     stdout.log, stderr.log | output.log   the command's output (separate | combined)
//     status.json   {"pid": <supervisor pid>, "exit_code": null | <int>}, replaced atomically
//     handle        "<supervisor pid> <process group | ->", written once the supervisor runs
//     launch.ready  the launcher saw the supervisor start: it may run the command
//     stop          a stop was requested: a supervisor that has not started the command won't
//
// The launcher runs the supervisor in a new session (`setsid`), so the supervisor's pid is
// also the job's process group; without `setsid` the job stays in the launcher's process group,
// which is only the job's when the launcher leads its group (else it is reported as `-`).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::tools::detail {

/// Bound of one control command (launch, read, signal): instant in a healthy workspace.
inline constexpr std::chrono::duration<double> kControlTimeout{30.0};
/// How long a job gets after SIGTERM before its process group gets SIGKILL.
inline constexpr std::chrono::milliseconds kKillGrace{2000};
/// Bounds of the backoff between polls of a job.
inline constexpr std::chrono::milliseconds kPollMin{50};
inline constexpr std::chrono::milliseconds kPollMax{1000};
/// The launcher's exit status when `mv` or `base64` is missing (it prints the missing names).
inline constexpr int kMissingJobTools = 122;
/// The launcher's exit status when an exclusive job directory already exists.
inline constexpr int kJobClaimed = 126;
/// The read script's exit status when the log does not exist (read as empty).
inline constexpr int kLogMissing = 66;
/// The report script's exit status when the job has no usable handle (an unknown command ID).
inline constexpr int kJobUnknown = 64;
/// Where job directories live, below the working directory's metadata directory.
inline constexpr const char* kJobsDirName = "shell";

// ---- the per-file size limit (max_file_bytes) ----

/// The shell function `__harness_limit_files <bytes>`: measures `ulimit -f`'s block size (512
/// or 1024) by writing past a one-block limit in a subshell, then sets the limit rounded up.
[[nodiscard]] std::string limit_function();
/// `command` preceded by the limit (failing with "Unable to apply max_file_bytes."), or
/// unchanged without one.
[[nodiscard]] std::string limited_script(const std::string& command, std::optional<std::uint64_t> limit);
/// The note appended after a non-zero exit code under a limit: SIGXFSZ (-25, 153, 281) or any
/// other failure; empty without a limit or for exit 0.
[[nodiscard]] std::string file_limit_status(int exit_code, std::optional<std::uint64_t> limit);

// ---- run_command ----

/// `cd <cwd> || exit`, a newline, then `script`.
[[nodiscard]] std::string in_directory(const std::string& cwd, const std::string& script);
/// persist_cwd: `command`, then its status kept while `pwd` is written to `capture`.
[[nodiscard]] std::string capture_cwd_script(const std::string& command, const std::string& capture);

/// `[stdout]\n<out>` and `[stderr]\n<err>` sections joined by newlines, `empty` when both are
/// empty (nothing when `empty` is nullopt), then `trailer` as the last line.
[[nodiscard]] std::string labelled(const std::string& stdout_text, const std::string& stderr_text,
                                   const std::optional<std::string>& empty,
                                   const std::optional<std::string>& trailer = std::nullopt);

// ---- background jobs ----

/// The supervisor script (`sh -c <it> sh <dir> <mode> <command> <limit> <launcher pid>`).
[[nodiscard]] std::string supervisor_script();

struct LaunchRequest {
  std::string cwd{};
  std::string directory{};
  bool exclusive = false;  ///< The directory must not exist yet (a job id derived from the call).
  bool combined = false;   ///< One output.log rather than stdout.log and stderr.log.
  std::string command{};
  std::optional<std::uint64_t> file_limit{};
  /// A script run first in the same command (in a subshell, before the `cd`): when it fails the
  /// command ends with its status, one of `prelude_exit_codes`, which differ from the launcher's
  /// own (kMissingJobTools, kJobClaimed, 125, and cd's 1 or 2). start_command's first job sets
  /// up the metadata directory this way (tools/workspace_access.hpp).
  std::string prelude{};
  std::vector<int> prelude_exit_codes{};
};
/// The whole launcher: `cd`, the variable assignments, then the launcher body. It prints
/// `<pid> <group>` (also written to `handle`) once the supervisor has published its status.
[[nodiscard]] std::string launcher_script(const LaunchRequest& request);

/// The signal command (an argv): creates `stop_file`, then `kill -s <signal> -- <target>`.
[[nodiscard]] std::vector<std::string> signal_argv(const std::string& signal, const std::string& target,
                                                   const std::string& stop_file);
/// Up to `length` bytes of `path` from `offset`, base64-encoded; exit 66 when it is missing.
[[nodiscard]] std::string read_log_script(const std::string& path, std::uint64_t offset, std::uint64_t length);

/// check_command's and stop_command's one script (one workspace command, so one request on a
/// remote backend): reads the job's `handle` (exit kJobUnknown when it is missing, not a file
/// or malformed, as parse_handle reads it); for a stop, does what Job::kill does (SIGTERM to
/// the group or pid, then SIGKILL once kKillGrace has passed with the group still there, or at
/// once when the supervisor already published; nothing when it published and there is no
/// group); then prints `#status` and status.json in base64 (`#running` when there is none), the
/// last `max_bytes` of stdout.log and stderr.log after `#out` and `#err` in base64 (nothing for
/// a log that is missing or not a regular file), and `#end`; for a stop, then removes the job
/// directory. Any other failure exits non-zero with the message on stderr.
[[nodiscard]] std::string job_report_script(const std::string& directory, std::uint64_t max_bytes, bool stop);

/// What job_report_script printed. nullopt when the output is not a whole report.
struct JobReport {
  std::optional<std::string> status;  ///< status.json's bytes; nullopt before the first publication
  std::string stdout_tail;
  std::string stderr_tail;
};
[[nodiscard]] std::optional<JobReport> parse_job_report(std::string_view output);

struct JobHandle {
  long long pid = 0;
  std::optional<long long> pgid{};  ///< nullopt: only the pid is safe to signal.
};
/// `<pid> <group|->` as the launcher prints it and `handle` holds; nullopt when malformed.
[[nodiscard]] std::optional<JobHandle> parse_handle(std::string_view text);
/// The exit code in `status.json`; nullopt while running (null, absent, a bool, garbage).
[[nodiscard]] std::optional<long long> parse_exit_code(std::string_view status_json);

/// A command ID: exactly 32 lowercase hex digits.
[[nodiscard]] bool is_command_id(std::string_view text);

}  // namespace exedev::tools::detail
