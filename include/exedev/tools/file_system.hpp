#pragma once
// FileSystem: the file tools a model uses inside a Workspace (read, write, edit, list, search,
// find, create directories, inspect), confined to a root directory and guarded by path
// patterns. The reference is the Pydantic AI harness's FileSystem (workspaces-api.md §4.6);
// docs/tools.md lists every output format and where C++ differs.

#include <exedev/coawait_guard.hpp>
#include <exedev/tools/toolset.hpp>
#include <exedev/workspace/workspace.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace exedev::tools {

/// The tools FileSystem offers by default; none needs a command-capable workspace.
[[nodiscard]] const std::vector<std::string>& file_system_default_tools();
/// Every tool FileSystem can offer, in registration order: the defaults, then the opt-in
/// `list_files` and `grep`.
[[nodiscard]] const std::vector<std::string>& file_system_tool_names();
/// The tools that change nothing: all a read-only FileSystem (or one over a read-only
/// workspace) offers.
[[nodiscard]] const std::vector<std::string>& file_system_read_only_tools();
/// Paths writes are refused on by default: version-control internals, environment files, keys,
/// secrets, and the tools' own metadata directory.
[[nodiscard]] const std::vector<std::string>& default_read_only_patterns();

/// Options of a FileSystem. Checked by the constructor (std::invalid_argument).
struct FileSystemOptions {
  /// The containment boundary, as a workspace path: absolute, or relative to the working
  /// directory (then only "." or a chain of ".." — a root below the working directory is a
  /// UserError). Unset: the working directory. "/" disables containment.
  std::optional<std::string> root_dir{};
  /// When non-empty, every file a tool touches must match one (fnmatch, `*` spans `/`).
  std::vector<std::string> allowed_patterns{};
  /// Paths (and everything below them) no tool may touch.
  std::vector<std::string> denied_patterns{};
  /// Paths (and everything below them) no tool may change.
  std::vector<std::string> read_only_patterns = default_read_only_patterns();
  int max_read_lines = 2000;                  ///< Lines read_file shows by default; > 0.
  std::optional<int> max_read_chars = 50000;  ///< Characters read_file returns at most; > 0 or unset.
  int max_list_results = 1000;                ///< Entries list_directory shows; > 0.
  int max_search_results = 1000;              ///< Matching lines search_files and grep show; > 0.
  int max_find_results = 1000;                ///< Paths find_files and list_files show; > 0.
  bool read_only = false;                     ///< Offer only file_system_read_only_tools().
  bool content_hashes = true;                 ///< Report hashes and accept expected_hash.
  std::vector<std::string> tools = file_system_default_tools();  ///< Subset of file_system_tool_names().
  std::string id = "file_system";            ///< The tool set's id.
  EXEDEV_COAWAIT_GUARD;
};

/// The file tools over one Workspace. Relative paths resolve from the working directory;
/// every target must stay inside the root both as written and through its symlinks.
/// The checks run before each operation: a symlink swapped in between is not caught.
/// These are guardrails for a model, not isolation: the workspace is the isolation boundary.
///
/// Cancellation: as Toolset::call; a cancelled write or edit leaves the file as the
/// workspace's write_bytes leaves it (untouched or fully replaced on every backend here).
class FileSystem final : public Toolset {
 public:
  /// Throws std::invalid_argument for an invalid option (UserError for a root_dir below the
  /// working directory). `workspace` must not be null.
  FileSystem(std::shared_ptr<workspace::Workspace> workspace, FileSystemOptions options);
  /// With default options.
  explicit FileSystem(std::shared_ptr<workspace::Workspace> workspace);
  ~FileSystem() override;
  FileSystem(const FileSystem&) = delete;
  FileSystem& operator=(const FileSystem&) = delete;

  [[nodiscard]] std::string id() const override;
  /// The configured tools (the read-only ones when read_only or the workspace is read-only).
  /// Throws UserError when the workspace is not attached.
  Task<std::vector<ToolDefinition>> tools() override;
  /// Throws UserError when the workspace is not attached, or when the working directory is
  /// outside root_dir (found on the first call that touches a file).
  Task<ToolResult> call(std::string name, std::string arguments, ToolCallContext context) override;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace exedev::tools
