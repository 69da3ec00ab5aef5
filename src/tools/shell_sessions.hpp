#pragma once
// The Shell tool set's interactive session tools (internal): start_session, send_to_session,
// read_session, list_sessions and close_session over the workspace's process sessions
// (exedev/workspace/sessions.hpp). The tools keep each session's read position, per run, so a
// read answers with what the program printed since the previous one.

#include <exedev/coawait_guard.hpp>
#include <exedev/workspace/workspace.hpp>

#include "tools/arguments.hpp"
#include "tools/redaction.hpp"
#include "tools/schema.hpp"
#include "tools/shell_policy.hpp"
#include "tools/utf8_stream.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <string>

namespace exedev::tools::detail {

/// Session tool `name`'s description and parameters, as the model sees them.
[[nodiscard]] ToolSpec session_tool_spec(const std::string& name);

/// The bytes a named key of send_to_session stands for; nullopt for the keys that are not
/// bytes ("ctrl-c" signals the program, "ctrl-d" ends its input) and for unknown names.
[[nodiscard]] std::optional<std::string> key_bytes(const std::string& key);

/// What the session tools take from the Shell's options.
struct SessionToolOptions {
  CommandPolicy policy{};
  workspace::Env env{};  ///< Already without the denied names.
  std::size_t max_output_chars = 50'000;
  /// ShellOptions' redaction (never null; by default it redacts nothing).
  std::shared_ptr<const Redaction> redaction = std::make_shared<const Redaction>();
  EXEDEV_COAWAIT_GUARD;
};

class SessionTools {
 public:
  SessionTools(std::shared_ptr<workspace::Workspace> workspace, SessionToolOptions options);

  /// Runs session tool `name` with validated `args`. A session without a cwd starts in
  /// `default_cwd` (unset: the workspace's working directory), and a relative cwd is taken from
  /// there. Invalid arguments the workspace refuses become retries.
  Task<std::string> call(std::string name, Arguments args, std::string run_id, std::optional<std::string> default_cwd);

 private:
  /// Where a run's next read of a session starts, and the UTF-8 sequence cut at its end.
  struct Cursor {
    std::uint64_t next_offset = 0;
    Utf8Stream decoder;
    /// The output's redaction, from the first read on: a value split between reads is redacted.
    RedactingStream redactor;
  };

  Task<std::string> start(Arguments args, std::string run_id, std::optional<std::string> default_cwd);
  Task<std::string> send(Arguments args, std::string run_id);
  /// `heading`, then what `name` printed since this run's last read, waiting up to `wait` for the
  /// first byte and then until it is quiet; with the dropped bytes, the cut and the session's
  /// state said, all within max_output_chars.
  Task<std::string> read_since_last(std::string name, std::string run_id, std::chrono::milliseconds wait,
                                    std::string heading);
  Task<std::string> list();
  Task<std::string> close(std::string name);

  /// Keeps `name` attached where run `run_id`'s next read goes on from (workspace
  /// attach_session: writes and reads then cost no command each where the backend has command
  /// streams; attached there already, it costs nothing). The attachment follows the first run
  /// that touches the session; other runs' reads are commands. A session that could not be
  /// attached once (an ended one, or a backend without command streams) is not asked again.
  Task<void> keep_attached(const std::string& name, const std::string& run_id, std::uint64_t offset);
  std::shared_ptr<Cursor> cursor(const std::string& name, const std::string& run_id);
  /// `text` redacted as a whole (what is not the session's output: headings, states, lists).
  [[nodiscard]] std::string redacted(std::string text) const;
  /// Forgets every run's position in session `name` (it ended, or starts anew).
  void forget(const std::string& name);

  std::shared_ptr<workspace::Workspace> workspace_;
  SessionToolOptions options_;
  /// By session name, '\n', run id (a name holds no newline).
  std::map<std::string, std::shared_ptr<Cursor>> cursors_;
  /// The run each attached session follows, by session name.
  std::map<std::string, std::string> attached_runs_;
  /// The sessions that could not be attached.
  std::set<std::string> attach_declined_;
};

}  // namespace exedev::tools::detail
