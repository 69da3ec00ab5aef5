#pragma once
// How SandboxBackend runs commands and scripts on a VM over SSH, sans-IO: what each exec
// channel carries and how its stderr is read (tested in tests/unit/sandbox/ssh_commands_test.cpp).
//
// Every exec request names `/bin/sh` (a line any login shell runs) and sends its program on
// stdin, so neither the VM's login shell nor sshd's command-line limits see the program's bytes
// or its data. A command's program prints one marker line on stderr, `<B> <pgid>`, before the
// command starts, then replaces itself with the login shell running the command text, so the
// channel's exit status is the command's. <pgid> is the process group sshd made for the session:
// closing a channel does not stop a process under OpenSSH, so a timeout, a cancellation or the
// output limit stops that group from a second channel (TERM, then KILL after 5 s, as on /exec).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::detail {

/// The command line of every exec request SandboxBackend sends over SSH.
inline constexpr std::string_view ssh_exec_command = "/bin/sh";

/// The program (stdin) of a command: the marker, then `$SHELL -l -c <command text>` with stdin
/// at EOF, in the session's process group, then the end marks; it exits with
/// ssh_channel_status(the command's status), never 0, so that the channel's exit-status
/// confirms the end marks (ExecRequest::on_exit_status). Throws std::invalid_argument as
/// command_text does, or for an invalid boundary.
[[nodiscard]] std::string ssh_command_program(const std::string& boundary, const std::string& shell_line,
                                              const std::map<std::string, std::string>& env,
                                              const std::optional<std::string>& working_dir);

/// The exit status a command's program exits with for a command that exited with `status`
/// (0-255): `status % 255 + 1`, never 0. The end marks carry the status itself.
[[nodiscard]] constexpr int ssh_channel_status(int status) { return status % 255 + 1; }
/// The command's status from its program's exit status (ssh_channel_status's inverse, for a
/// channel that ended without end marks; 255 reads as 0).
[[nodiscard]] constexpr int ssh_command_status(int channel_status) { return channel_status > 0 ? channel_status - 1 : 0; }

/// The program that stops process group `pgid`: TERM, then KILL once 5 s have passed with a
/// member still alive. Exits 0 whether or not the group still existed.
[[nodiscard]] std::string ssh_stop_program(std::int64_t pgid);

/// The program of a script: the marker `<B> <pgid>` on stderr (as a command's, so that a
/// script past its deadline can be stopped), positional parameters `args` (validated like
/// /exec's), then the script, read whole before it runs, with stdin at EOF.
[[nodiscard]] std::string ssh_script_program(const std::string& boundary, const std::string& script,
                                             const std::vector<std::string>& args);

/// The exec request of a command stream (SupportsCommandStreams): /bin/sh reads one line of
/// stdin, the base64 of its program, and runs it; the rest of stdin is the stream's. One byte at a
/// time (`read` on a pipe), so nothing of the stream is taken with the line.
inline constexpr std::string_view ssh_stream_command =
    "/bin/sh -c 'IFS= read -r p && eval \"$(printf %s \"$p\" | /usr/bin/base64 -d)\"'";

/// The first line a command stream's channel carries: the base64 of the fixed PATH, `set --`
/// with `args` (validated like run_script's) and `script`, then a newline. Throws
/// std::invalid_argument for a NUL in the script or an invalid argument.
[[nodiscard]] std::string ssh_stream_program_line(const std::string& script, const std::vector<std::string>& args);

/// Reads the stderr of a command started by ssh_command_program, split anywhere: bytes before the
/// marker (login-shell noise from sshd's session) are dropped, the marker gives the process
/// group, and everything after it is the command's stderr.
class StartMarkerReader {
 public:
  explicit StartMarkerReader(std::string boundary);
  /// Returns the command's stderr bytes among `bytes` (possibly none).
  [[nodiscard]] std::string feed(std::string_view bytes);
  /// The process group, once the marker has arrived.
  [[nodiscard]] std::optional<std::int64_t> pgid() const noexcept { return pgid_; }
  [[nodiscard]] bool started() const noexcept { return started_; }

 private:
  std::string boundary_;
  std::string line_;
  bool started_ = false;
  std::optional<std::int64_t> pgid_;
};

/// Reads one stream of a command started by ssh_command_program, split anywhere: the program
/// ends each stream with `<B> x <status>\n` once the command has exited, because a background
/// child that inherited the stream can keep the channel open long after. A process on the VM
/// can learn the boundary (it is in the shell's memory and on its stdin, which /proc shows to
/// the same user) and print a mark of its own: the marks are trusted only once the channel's
/// exit-status confirms them (ssh_vm.cpp), and a mark with no status line after it holds
/// nothing back, so the output limit holds either way (docs/reliability.md, "A hostile VM"). Bytes before that end
/// mark are the command's; bytes after it are ignored. The mark follows the command's last byte
/// directly, so only a possible start of the boundary is ever held back, never a newline.
class EndMarkerReader {
 public:
  explicit EndMarkerReader(const std::string& boundary);
  /// Returns the command's bytes among `bytes` (possibly none; a possible start of the mark is
  /// held back until it is decided).
  [[nodiscard]] std::string feed(std::string_view bytes);
  /// The bytes held back, when the stream ended without its end mark (the program was killed).
  [[nodiscard]] std::string finish();
  /// The command's exit status, once the end mark has arrived.
  [[nodiscard]] std::optional<int> exit_code() const noexcept { return exit_code_; }

 private:
  std::string mark_;
  std::string pending_;
  std::optional<int> exit_code_;
};

}  // namespace exedev::detail
