#pragma once
// The options and result of running a command or a script on a VM (Client::run, run_script).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <exedev/coawait_guard.hpp>

namespace exedev {

/// Options of Client::run.
struct ClientRunOptions {
  /// Exported before the command (names: [A-Za-z_][A-Za-z0-9_]*). Values never appear in
  /// errors or logs.
  std::map<std::string, std::string> env{};
  /// `cd` before the command; when it fails the command is not run and the exit code is 1.
  std::optional<std::string> working_dir{};
  /// Enforced on the VM (TERM, then KILL after 5 s, to the command's whole process group) and
  /// locally (8 s later, in case the VM cannot report it: the client then stops the command
  /// itself, in at most 12 s). run() returns at most 20 s after the timeout. Throws
  /// RunTimeoutError (OutcomeUnknownError when the stop could not be confirmed). A timeout of
  /// 100 years or more (or infinite) is no limit.
  std::optional<std::chrono::duration<double>> timeout{};
  /// stdout + stderr together; past it the command is stopped and OutputLimitError thrown.
  std::size_t max_output_bytes = 8 * 1024 * 1024;
  /// Called with output as it arrives (optional): raw bytes, in order, split anywhere. Called on
  /// the client's executor; it must not block. An exception thrown by a callback stops the
  /// command and propagates from run().
  std::function<void(std::string_view)> on_stdout{};
  std::function<void(std::string_view)> on_stderr{};
  EXEDEV_COAWAIT_GUARD;
};

/// Options of Client::run_script.
struct ScriptOptions {
  /// Positional parameters ($1, $2, …): each non-empty base64 text (A-Z a-z 0-9 + / =). They
  /// travel once, as they are; the script travels base64-encoded.
  std::vector<std::string> args{};
  /// Most stdout bytes read; a longer answer throws OutputLimitError (the script ran).
  std::size_t max_output_bytes = 8 * 1024 * 1024;
  /// Running the script twice leaves the same state as once. Then a 5xx, a connection lost
  /// after sending and a cut answer are retried under ClientOptions::retry; otherwise they
  /// throw (the script may have run). A request that was never sent is always retried.
  bool idempotent = false;
  /// Optional: receives the script's stdout as it arrives (raw bytes, in order, split
  /// anywhere), instead of RunResult::stdout_bytes, which then stays empty; `offset` is where
  /// the bytes start in the stdout. An attempt that is retried (see idempotent) starts again at
  /// offset 0, so a consumer starts over when it sees 0 again. Output of an attempt that fails
  /// has reached it too: only a returned result vouches for what arrived. Called on the
  /// client's executor; it must not block; an exception it throws abandons the request and
  /// propagates from run_script.
  std::function<void(std::uint64_t offset, std::string_view bytes)> on_stdout{};
  EXEDEV_COAWAIT_GUARD;
};

/// A finished command: exact bytes, separate streams, the real exit code (128 + N when a
/// signal N ended it).
struct RunResult {
  int exit_code = 0;
  std::string stdout_bytes;
  std::string stderr_bytes;
};

}  // namespace exedev
