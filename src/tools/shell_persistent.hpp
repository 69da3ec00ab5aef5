#pragma once
// The persistent `shell` tool (internal): a command that outlives the call and the run, with
// a bounded foreground wait. It runs as a combined-output background job (shell_jobs.hpp); the
// call returns the supervisor's pid and the paths of the log and status files, which name
// files in the same workspace the model's other tools act on. No notification arrives when
// the command finishes.

#include <chrono>
#include <memory>
#include <string>

#include <exedev/tools/toolset.hpp>
#include <exedev/workspace/workspace.hpp>

namespace exedev::tools::detail {

/// The longest foreground wait: a call returns before typical provider request timeouts.
inline constexpr std::chrono::duration<double> kMaxForegroundWait{270.0};
/// Bytes of the log a foreground call returns, and at most emits as live output.
inline constexpr std::uint64_t kOutputTailBytes = 16'000;
/// Bytes of the log read per live-output poll.
inline constexpr std::uint64_t kEventChunkBytes = 4096;

/// The tool's description (its docstring has no Returns section).
[[nodiscard]] std::string persistent_tool_description();

struct PersistentRequest {
  std::string command{};
  std::string base{};  ///< The jobs directory.
  std::string cwd{};   ///< The working directory (persist_cwd does not apply).
  workspace::Env env{};
  bool foreground = true;
  double timeout = 30.0;  ///< Seconds; must be in (0, 270], else ModelRetry.
};

/// Launches the job and returns its handles (after the log's tail in foreground). Live
/// output: the first kOutputTailBytes of the log, in order, through on_output.
/// Cancellation or failure after the launch stops the job and removes its directory
/// (shielded, bounded by kControlTimeout); handed-back logs are never removed.
Task<std::string> run_persistent(std::shared_ptr<workspace::Workspace> workspace, PersistentRequest request,
                                 std::function<void(std::string_view)> on_output);

}  // namespace exedev::tools::detail
