#pragma once
// The tool-set interface: what an agent runtime hands to a model (each tool's name,
// description and JSON schema) and how it dispatches the model's calls. FileSystem and Shell
// implement it over a Workspace; exedev-mcp serves any tool set over MCP.
//
// Outcomes follow the reference harness (workspaces-api.md §4.1): a result the model reads,
// a retry the model is invited to correct (ModelRetry), a failure it is told about
// (ToolFailed), or an error that must end the agent run (WorkspaceUnavailableError).

#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <exedev/coawait_guard.hpp>
#include <exedev/workspace/backend.hpp>

namespace exedev::tools {

using workspace::Task;

/// One tool as a model sees it.
struct ToolDefinition {
  std::string name{};
  std::string description{};
  /// JSON Schema of the arguments, as JSON text: an object with `additionalProperties: false`,
  /// `required`, a `description` per property and defaults included (§4.2).
  std::string parameters_schema{};
};

/// How a call ended, so a runtime knows what to do next.
enum class ToolOutcome {
  success,  ///< `text` is the tool's result.
  retry,    ///< ModelRetry: `text` tells the model what to correct; it may call again.
  failed,   ///< ToolFailed: the tool could not do it; `text` says why; the run goes on.
  end_run,  ///< The workspace is gone: the run must end; `error` holds the exception.
};

/// The result of one call.
struct ToolResult {
  ToolOutcome outcome = ToolOutcome::success;
  std::string text{};           ///< What the model sees (for end_run: the error's message).
  std::exception_ptr error{};   ///< end_run only: the exception that ends the run.
};

/// What a runtime knows about a call besides its arguments.
struct ToolCallContext {
  std::string run_id{};        ///< The agent run's id, when the runtime has one.
  std::string tool_call_id{};  ///< The model's id for this call, when it has one.
  /// Live output of a long-running tool (UTF-8 text, in order); empty: none wanted.
  /// Called on the caller's executor; it must not block.
  std::function<void(std::string_view text)> on_output{};
  EXEDEV_COAWAIT_GUARD;
};

/// A set of tools over one workspace.
///
/// Cancellation: call() honours Asio per-operation cancellation (terminal at least); a
/// cancelled call leaves what the workspace operation it was awaiting leaves, and stops any
/// command it started in the foreground.
class Toolset {
 public:
  virtual ~Toolset() = default;

  /// The tool set's id, e.g. "file_system" or "shell".
  [[nodiscard]] virtual std::string id() const = 0;

  /// The tools a model may call now; may do I/O (which tools exist depends on the
  /// workspace's capabilities).
  virtual Task<std::vector<ToolDefinition>> tools() = 0;

  /// Calls `name` with `arguments`, the JSON object text the model sent. Arguments that are
  /// not valid JSON or do not match the schema, and an unknown tool, are a `retry` outcome.
  virtual Task<ToolResult> call(std::string name, std::string arguments,
                                ToolCallContext context) = 0;
};

}  // namespace exedev::tools
