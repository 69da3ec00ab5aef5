#pragma once
// The wire protocol of Client::run, sans-IO: the POSIX sh scripts sent as `ssh <vm> …` and the
// parser of the framed output they print.
//
// A command runs detached on the VM (setsid: its own session and process group, stdin
// /dev/null) with its stdout, stderr and exit status in a record directory
//   ${XDG_STATE_HOME:-$HOME/.local/state}/exedev-cpp/runs/<id>/  {cmd run pgid out err status}
// Every request (the launch, then polls) streams the output past the offsets the client already
// holds and waits for the exit at most `wait_seconds`. The script prints only frames:
//   <B> s                  the command was started (launch only)
//   <B> o <offset>         stdout bytes from <offset>: base64 lines follow, then `<B> .`
//   <B> e <offset>         the same for stderr
//   <B> x <code> <flag>    the command exited (flag: `-`, `t` timed out on the VM, `c` stopped)
//   <B> r                  still running: poll again
//   <B> l                  no such record (lost, or in probe mode: never started)
//   <B> n                  the record could not be created: nothing was started
// where <B> is a random boundary. The command runs in the session's login shell ($SHELL -l,
// /bin/sh when unset or not POSIX-compatible); the scripts themselves are POSIX sh. Base64 lines cannot contain it, and lines that do not start
// with it (login-shell noise) are ignored. The script's exit status is the command's once it
// has exited, so the X-Exe-Exit trailer can cross-check the frame.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::detail {

enum class ScriptMode {
  launch,  ///< Create the record, start the command, then poll.
  follow,  ///< Poll a command known to have started.
  probe,   ///< Poll a command whose launch request's outcome is unknown: a missing record is
           ///< replaced by a tombstone (so a late launch cannot start it) and reported as `l`.
  stop,    ///< Stop the process group (TERM, then KILL), report the exit and remove the record;
           ///< a missing record is replaced by a tombstone and reported as `l` (never started).
  cleanup, ///< Only remove the records in `acks`.
};

struct ScriptRequest {
  ScriptMode mode = ScriptMode::launch;
  std::string id;        ///< Record id: [0-9a-f]+.
  std::string boundary;  ///< Frame boundary: printable ASCII, no quote, no space.
  std::uint64_t out_offset = 0;
  std::uint64_t err_offset = 0;
  int wait_seconds = 20;
  std::vector<std::string> acks;  ///< Records of finished runs to remove first.
  // stop only: stream no more output (past the output limit nothing more is wanted, and a fast
  // writer could leave more than the stop's bound can carry before its exit is confirmed).
  bool skip_output = false;
  // launch only:
  std::string shell_line;
  std::map<std::string, std::string> env;
  std::optional<std::string> working_dir;
  std::optional<double> timeout_seconds;
};

/// The POSIX sh script for one request. Throws std::invalid_argument for a NUL byte in the
/// command, env or working directory, or an invalid env name.
[[nodiscard]] std::string build_script(const ScriptRequest& request);

/// The text the login shell runs for a command: `cd` to the working directory (exit 1 when it
/// fails), the env exported, then the line. Throws std::invalid_argument for a NUL byte, an
/// empty working directory or an invalid env name. Shared by every transport.
[[nodiscard]] std::string command_text(const std::string& shell_line, const std::map<std::string, std::string>& env,
                                       const std::optional<std::string>& working_dir);

/// sh lines that set `S` to the session's login shell: $SHELL when it is POSIX-compatible and
/// executable, else /bin/sh.
[[nodiscard]] std::string_view login_shell_selection();

/// The word sent after `ssh <vm>`: a line any login shell runs (`echo <b64>|base64 -d|/bin/sh`),
/// so neither the lobby lexer nor the VM's shell ever sees the script's own bytes.
[[nodiscard]] std::string remote_command(const std::string& script);

struct FrameEvent {
  enum class Kind { started, data, exit, running, lost, not_created };
  Kind kind = Kind::started;
  char stream = 0;  ///< 'o' or 'e' for data.
  std::uint64_t offset = 0;  ///< Offset of `bytes` in its stream.
  std::string bytes;
  int exit_code = 0;
  char flag = '-';
};

/// Incremental parser of the frames above. Throws ProtocolError on a garbled frame.
class FrameParser {
 public:
  explicit FrameParser(std::string boundary);
  /// Feeds bytes as they arrive; returns the events completed by them.
  [[nodiscard]] std::vector<FrameEvent> feed(std::string_view bytes);
  /// True when the stream so far ended inside a data block or a line (it was cut).
  [[nodiscard]] bool mid_frame() const noexcept { return in_data_ || !line_.empty(); }

 private:
  void line(std::string_view text, std::vector<FrameEvent>& out);

  std::string boundary_;
  std::string line_;
  bool skipping_ = false;  ///< Inside a line that is not a frame.
  bool in_data_ = false;
  char stream_ = 0;
  std::uint64_t offset_ = 0;
};

}  // namespace exedev::detail
