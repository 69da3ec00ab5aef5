#pragma once
// A command kept running with its stdin and stdout open between operations: bytes written reach
// it as the caller writes them, its output is read as it comes. Process sessions attach through
// it (sessions.hpp, attach_session), so that a write and the echo it causes cost no command each.
// SandboxBackend over SSH: one session channel (one of the connection's session slots while
// open); LocalBackend: a child process with pipes. exe.dev's /exec has no stdin: there
// open_command_stream() answers nullptr.

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <exedev/task.hpp>
#include <exedev/workspace/types.hpp>

namespace exedev::workspace {

using exedev::Task;

/// One running command's stdin and stdout. Its stderr is discarded. Use it from one executor,
/// one reader and one writer at a time. Errors: a stream that broke (its connection dropped, the
/// process could not be read) throws WorkspaceError from the operation that found it, and is
/// ended from then on.
class CommandStream {
 public:
  virtual ~CommandStream() = default;  ///< Closes without waiting: the command's stdin reaches EOF.

  /// Writes all of `data` to the command's stdin, waiting while it does not take them (flow
  /// control). WorkspaceTimeoutError when it took none of the rest for `stall_timeout`; then part
  /// may have been written, as after a cancellation or an error. A command that no longer reads
  /// its stdin (it ended) is WorkspaceError.
  virtual Task<void> write(Bytes data, std::chrono::milliseconds stall_timeout) = 0;

  /// Sends EOF on the command's stdin; later writes are refused (std::logic_error). Cancellation:
  /// EOF may or may not have been sent.
  virtual Task<void> close_stdin() = 0;

  /// Up to `max_bytes` (at least 1) of the command's stdout, waiting up to `wait` for at least one
  /// byte. Empty when `wait` passed, or at the end of stdout (then ended() is true). Cancellation:
  /// nothing was taken from the stream.
  virtual Task<Bytes> read_some(std::size_t max_bytes, std::chrono::milliseconds wait) = 0;

  /// The command's stdout has ended (read to its end, or the stream broke).
  [[nodiscard]] virtual bool ended() const noexcept = 0;

  /// Closes the stream: stdin reaches EOF and whatever is still unread is discarded. Waits for the
  /// command's end only as long as the transport needs to free what the stream held (SSH: the
  /// channel's close). Never throws for a stream that broke. Not cancellable (it is short).
  virtual Task<void> close() = 0;
};

/// Optional: commands whose stdin and stdout stay open (CommandStream).
class SupportsCommandStreams {
 public:
  virtual ~SupportsCommandStreams() = default;

  /// Starts `script` under POSIX sh with positional parameters `args` (as
  /// SupportsShellScripts::run_script takes them) and stdin and stdout as the stream. nullptr
  /// when the backend's route in use has no such channel (SandboxBackend over /exec); errors as
  /// run(). Cancellation: nothing is left running.
  virtual Task<std::unique_ptr<CommandStream>> open_command_stream(std::string script,
                                                                  std::vector<std::string> args) = 0;
};

}  // namespace exedev::workspace
