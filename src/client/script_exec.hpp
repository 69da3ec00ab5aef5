#pragma once
// The wire protocol of Client::run_script, sans-IO: one bounded `ssh <vm> …` request that runs
// a short script and answers with framed output. Unlike run()'s detached record (run_protocol),
// nothing stays on the VM and there is nothing to poll: the script must finish within one
// request (exe.dev cuts a request at ~30 s).
//
// The word sent after `ssh <vm>` is
//   echo <base64 of the wrapper>|base64 -d|/bin/sh -s -- <arg>...
// so the VM's login shell never sees the script's own bytes, while the arguments (already
// base64: file data) travel once, unencoded, as positional parameters. The wrapper prints
//   <B> b                 then the script's stdout, exactly
//   \n<B> x <code>        the script's exit status
//   base64 lines          the script's stderr (its first 64 KiB)
//   <B> .                 the end
// where <B> is a random boundary. Bytes before the first frame (login-shell noise) are ignored;
// an answer without the end frame was cut and is never read as a result.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::detail {

/// Whether `arg` may be sent as a positional parameter: non-empty, base64 alphabet and `=`
/// only (no shell, lobby or login-shell syntax).
[[nodiscard]] bool valid_script_argument(std::string_view arg);

/// The word sent after `ssh <vm>`. Throws std::invalid_argument for an invalid argument, a NUL
/// byte in the script or an invalid boundary.
[[nodiscard]] std::string script_remote_command(const std::string& script, const std::vector<std::string>& args,
                                                const std::string& boundary);

/// The lobby line: `ssh <vm> <quoted remote command>`.
[[nodiscard]] std::string script_lobby_line(const std::string& vm, const std::string& script,
                                            const std::vector<std::string>& args, const std::string& boundary);

/// A boundary of the length script_lobby_line callers use (for size computations).
[[nodiscard]] std::string script_boundary();

struct ScriptOutput {
  int exit_code = 0;
  std::string stdout_bytes;
  std::string stderr_bytes;
};

/// Reads an answer as it arrives, split anywhere: the script's stdout goes to `on_stdout` as soon
/// as it can no longer be the start of the exit frame (so a multi-MiB page is decoded while the
/// rest is on the way); the status and stderr are kept for finish(). The exit frame is the first
/// `\n<B> x ` after the begin frame: the boundary is random and made here, so the script's
/// output cannot hold it.
class ScriptOutputReader {
 public:
  using StdoutSink = std::function<void(std::string_view)>;
  ScriptOutputReader(const std::string& boundary, StdoutSink on_stdout);

  void feed(std::string_view bytes);
  /// The status and stderr (stdout went to the sink). nullopt when the begin or the end frame is
  /// missing (the answer was cut); throws ProtocolError when the frames are garbled.
  [[nodiscard]] std::optional<ScriptOutput> finish();
  /// The stdout bytes given to the sink so far.
  [[nodiscard]] std::uint64_t stdout_size() const noexcept { return stdout_size_; }

 private:
  enum class Part { preamble, stdout_bytes, trailer };
  void scan_preamble();
  void scan_stdout();
  void emit(std::string_view bytes);

  std::string begin_, exit_mark_, end_;
  StdoutSink on_stdout_;
  Part part_ = Part::preamble;
  bool at_body_start_ = true;  // the preamble buffer still starts at the answer's first byte
  std::string pending_;        // preamble: unscanned noise; stdout: bytes held back; trailer: all of it
  std::string last_bytes_;     // the answer's last end_.size() bytes
  std::uint64_t stdout_size_ = 0;
};

/// Reads a complete answer (ScriptOutputReader over the whole body, stdout collected).
[[nodiscard]] std::optional<ScriptOutput> parse_script_output(std::string_view body, const std::string& boundary);

}  // namespace exedev::detail
