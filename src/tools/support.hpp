#pragma once
// Helpers shared by the tool sets (internal): outcomes, argument parsing, schemas, output caps,
// the workspace checks of the reference's _workspace.py.

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <exedev/tools/toolset.hpp>
#include <exedev/workspace/workspace.hpp>

namespace exedev::tools {

/// The reference's ModelRetry: the model is told `what()` and may call again.
class ModelRetry : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A retry outcome.
[[nodiscard]] ToolResult retry_result(std::string text);
/// The outcome of an exception a tool threw (§4.1): ModelRetry and PermissionError-like path
/// errors are retries, WorkspaceUnavailableError ends the run, a read-only refusal, a timeout
/// and other WorkspaceErrors are failures; anything else is rethrown.
[[nodiscard]] ToolResult tool_error_result(std::exception_ptr error);

/// `text` cut to its last `max_chars` code points, prefixed with
/// "[... output truncated, showing last N chars]\n" (which counts toward the cap).
[[nodiscard]] std::string truncate_tail(const std::string& text, std::size_t max_chars);

/// The first 64 hex digits of SHA-256 of `bytes`.
[[nodiscard]] std::string sha256_hex(std::string_view bytes);

/// Throws WorkspaceUsageError saying how `owner` can get a workspace (an unattached one).
void require_workspace(const workspace::Workspace& workspace, const std::string& owner);
/// Attached, not read-only, and the provider backend runs commands.
[[nodiscard]] bool supports_commands(const workspace::Workspace& workspace);
/// `<working dir>/.pydantic-ai-harness/<name>`, created, with a `.gitignore` of `*`;
/// WorkspaceError when one of them is a symlink or cannot be created.
workspace::Task<std::string> metadata_dir(std::shared_ptr<workspace::Workspace> workspace, std::string name);

[[nodiscard]] std::string unknown_tool_message(const std::string& name, const std::vector<std::string>& tools);

/// A JSON object schema with `additionalProperties: false`.
class SchemaBuilder {
 public:
  SchemaBuilder();
  ~SchemaBuilder();
  void required_string(const std::string& name, const std::string& description);
  void optional_number(const std::string& name, const std::string& description);
  void optional_enum(const std::string& name, const std::string& description, const std::vector<std::string>& values,
                     const std::string& default_value);
  [[nodiscard]] std::string json() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The arguments of one call: each getter throws ModelRetry naming what is wrong.
class Arguments {
 public:
  explicit Arguments(const std::string& json_text);
  ~Arguments();
  std::string required_string(const std::string& name);
  std::optional<double> optional_number(const std::string& name);
  std::string optional_enum(const std::string& name, const std::vector<std::string>& values,
                            const std::string& default_value);
  /// ModelRetry when an argument was not asked for.
  void finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace exedev::tools
