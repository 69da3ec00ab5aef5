#pragma once
// Shell: the tool set that runs commands in a workspace (the reference harness's `Shell`
// capability and ShellToolset, workspaces-api.md §4.3-§4.5; docs/tools.md, "Shell").
//
// Tools: run_command, start_command, check_command, stop_command (the default), the opt-in
// persistent `shell`, and the opt-in interactive sessions (start_session, send_to_session,
// read_session, list_sessions, close_session; with allow_interactive). Every command, file and signal goes through the workspace, so background
// jobs live in the environment (`.pydantic-ai-harness/shell/<id>/` below its working
// directory): a later run, through another backend attached to the same environment, or the
// Python harness, can check and stop them.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <exedev/coawait_guard.hpp>
#include <exedev/tools/toolset.hpp>
#include <exedev/workspace/types.hpp>

namespace exedev::workspace {
class Workspace;
}

namespace exedev::tools {

/// The default tools: commands that end with the call, and background commands that keep
/// running until they exit or stop_command stops them.
inline const std::vector<std::string>& run_scoped_tool_names() {
  static const std::vector<std::string> names{"run_command", "start_command", "check_command", "stop_command"};
  return names;
}
/// The opt-in tool whose commands return handles to their log and status files.
inline constexpr const char* persistent_tool_name = "shell";

/// The opt-in interactive session tools (they need ShellOptions::allow_interactive): programs
/// that keep running between calls and talk back (a REPL, a debugger, a prompt), fed input and
/// read from by what they printed since the last read. They run as the workspace's named
/// process sessions (exedev/workspace/sessions.hpp), so they outlive the run.
inline const std::vector<std::string>& session_tool_names() {
  static const std::vector<std::string> names{"start_session", "send_to_session", "read_session", "list_sessions",
                                              "close_session"};
  return names;
}

/// The environment variable patterns of LLM provider keys: pass them in
/// ShellOptions::denied_env_patterns to keep such keys from commands.
inline const std::vector<std::string>& llm_api_key_env_patterns() {
  static const std::vector<std::string> patterns{"ANTHROPIC_*", "GATEWAY_*",     "GEMINI_*",
                                                 "GOOGLE_*",    "OPENAI_*",      "OPENROUTER_*",
                                                 "PYDANTIC_AI_GATEWAY_API_KEY"};
  return patterns;
}

/// The commands a model may run and how their output is kept. Validated by Shell's constructor
/// (std::invalid_argument with the reference's messages).
struct ShellOptions {
  /// When non-empty, a command's first word must be one of these.
  std::vector<std::string> allowed_commands{};
  /// A command whose first word is one of these is refused. nullopt: rm rmdir mkfs dd format
  /// shutdown reboot halt poweroff init, or none when allowed_commands is set. Setting both
  /// lists is an error.
  std::optional<std::vector<std::string>> denied_commands{};
  /// A command containing one of these substrings (e.g. "|", "&&", ">") is refused.
  std::vector<std::string> denied_operators{};
  /// Timeout of run_command without timeout_seconds, and the persistent tool's foreground wait.
  /// Positive and finite; at most 270 s when the `shell` tool is enabled.
  workspace::Seconds default_timeout{30.0};
  /// Every result keeps at most this many characters (code points): its tail, marked.
  std::size_t max_output_chars = 50'000;
  /// `ulimit -f` for commands, in bytes (rounded up to the shell's block size); positive, at
  /// most INT64_MAX; not with persist_cwd, the `shell` tool nor the session tools.
  std::optional<std::uint64_t> max_file_bytes{};
  /// Keep the directory a successful run_command ended in for the next run_command and
  /// start_command (per run: by ToolCallContext::run_id, stored in the workspace; without a
  /// run id, in this Shell).
  bool persist_cwd = false;
  /// Allow programs that talk back: commands that start an editor, pager or login (vi, less,
  /// top, sudo, ssh, ...) pass the policy, and the session tools (session_tool_names()), which
  /// exist to drive such programs, may be offered. Without it they are refused in `tools`.
  bool allow_interactive = false;
  /// Variables added to the workspace's environment for every command; nullopt adds none.
  std::optional<workspace::Env> env{};
  /// Names in `env` matching one of these globs (fnmatch, case-sensitive) are not passed.
  std::vector<std::string> denied_env_patterns{};
  /// Texts the model must never see (a token, a password the commands use): wherever one
  /// occurs in what the tools return (results, errors, output streamed to
  /// ToolCallContext::on_output, session output) it is replaced by "[redacted]", even split
  /// between two pieces of a stream (a piece's end that may begin one waits for the next; a
  /// session read says how many characters wait). Matched exactly, byte for byte; at a position
  /// the longest matching value wins. Non-empty UTF-8 strings.
  std::vector<std::string> redacted_values{};
  /// Applied after redacted_values to every text the tools return, each streamed piece and each
  /// session read on its own (a pattern split between pieces is the hook's to handle). Empty:
  /// none. Called on the tool call's coroutine; it must not throw.
  std::function<std::string(std::string)> redact{};
  /// The tools to offer: a subset of run_scoped_tool_names(), "shell" and session_tool_names().
  /// The session tools start their programs through the same policy as commands; what is then
  /// typed into a session (a shell's command lines among it) is not checked.
  std::vector<std::string> tools = run_scoped_tool_names();
  /// The tool set's id.
  std::string id = "shell";
  EXEDEV_COAWAIT_GUARD;
};

/// The Shell tool set over one workspace. Offers no tools when the workspace cannot run
/// commands (read-only, or a backend without commands), and the session tools only where the
/// backend has process sessions; tools() of a workspace that is not
/// attached throws UserError (exedev/tools/errors.hpp) saying how to attach one; so does call().
///
/// With persist_cwd, use one Shell per agent run (the directory of calls without a run id is
/// kept in this object). Cancellation of call(): a foreground command is stopped (the
/// workspace's run() cancellation); a stop_command that has begun stopping a job finishes that
/// (shielded); a cancelled persistent `shell` call stops and removes its job (shielded,
/// bounded by 30 s); a cancelled start_command may leave the job starting (it then sees its
/// launcher gone and exits 143 without running the command); a cancelled session read leaves
/// the run's read position where it was (the output comes with the next read).
class Shell final : public Toolset {
 public:
  /// Throws std::invalid_argument for invalid options, or a null workspace.
  Shell(std::shared_ptr<workspace::Workspace> workspace, ShellOptions options);
  /// With default options.
  explicit Shell(std::shared_ptr<workspace::Workspace> workspace);
  ~Shell() override;
  Shell(const Shell&) = delete;
  Shell& operator=(const Shell&) = delete;

  [[nodiscard]] std::string id() const override;
  Task<std::vector<ToolDefinition>> tools() override;
  Task<ToolResult> call(std::string name, std::string arguments, ToolCallContext context) override;

  /// With persist_cwd: forgets the directory saved for `run_id` in the workspace (call it when
  /// the run ends). A missing record is fine.
  Task<void> clear_run_cwd(std::string run_id);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace exedev::tools
