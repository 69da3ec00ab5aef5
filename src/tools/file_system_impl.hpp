#pragma once
// FileSystem's internals shared by its source files: the scope (root, working directory),
// path resolution and policy checks, the tools that walk directories (file_search.cpp), and
// FileSystem::State, the tool set's state: its options, offering and dispatch (file_system.cpp),
// the tools that read (file_system_reads.cpp) and those that change files (file_system_edits.cpp).

#include "tools/path_lock.hpp"

#include <exedev/tools/file_system.hpp>
#include <exedev/workspace/backend.hpp>
#include <exedev/workspace/types.hpp>

#include <list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace exedev::tools::detail {

using workspace::FileEntry;

/// The containment boundary and working directory, resolved on the first file operation.
struct Bounds {
  std::string root;               ///< The real (symlink-free) root.
  std::string cwd;                ///< Where relative paths start; inside root.
  bool checks_realpath = false;   ///< Whether targets are also checked through their symlinks.
};

/// Walks cap: directories listed and entries collected per walk (a symlink loop inside the root
/// would otherwise grow the walk without end).
inline constexpr std::size_t max_walk_directories = 10'000;
inline constexpr std::size_t max_walk_entries = 100'000;
/// Files larger than this are not read by a search that reads files itself.
inline constexpr std::uint64_t max_search_file_bytes = 10u << 20;

/// A confined operation (workspace::SupportsConfinedFiles) and what it carries.
struct ConfinedCall {
  enum class Kind { read, write, make_dir, splice };
  Kind kind = Kind::read;
  workspace::ConfinedReadOptions what{};
  std::string data;             ///< write: the new content
  std::string expected_sha256;  ///< write: a prefix the current content's digest must have
  workspace::ConfinedSplice splice{};
  EXEDEV_COAWAIT_GUARD;
};

/// The single splice (bytes replaced at one offset, with both digests) that turns `before` into
/// `after`: what lies between their common prefix and their common suffix.
[[nodiscard]] workspace::ConfinedSplice splice_between(std::string_view before, std::string_view after);

/// Bytes of file contents a FileSystem keeps (KnownContents).
inline constexpr std::size_t max_known_content_bytes = 4u << 20;

/// The contents of files the tool set last read or wrote through confined operations, up to
/// max_known_content_bytes in all (the oldest are forgotten first): an edit of one travels as a
/// splice, which the workspace applies only while the file's digest is that content's.
class KnownContents {
 public:
  void remember(const std::string& path, workspace::Bytes content);
  void forget(const std::string& path);
  [[nodiscard]] const workspace::Bytes* find(const std::string& path) const;

 private:
  std::list<std::pair<std::string, workspace::Bytes>> entries_;  // the oldest first
  std::size_t bytes_ = 0;
};

struct FileSystemCore {
  std::shared_ptr<workspace::Workspace> ws;
  FileSystemOptions options;
  std::optional<Bounds> bounds{};
  /// Without root_dir, the working directory taken for the root before its real path is known:
  /// a confined operation checks it on the way (ConfinedTarget::check_root) and, when it was
  /// real, makes it `bounds` without a request of its own.
  std::optional<Bounds> presumed{};
  PathLocks locks{};
  KnownContents known{};

  Task<Bounds> scope();
  /// `bounds` when known, else the presumed bounds (scope() when root_dir is set).
  Task<Bounds> presumed_scope();
  /// The path as written (normalized) and its real path; both inside the root, or ModelRetry.
  Task<std::pair<std::string, std::string>> resolve_path(std::string path);
  /// resolve_path, then the policy patterns on both spellings; returns the resolved path.
  Task<std::string> safe_resolve(std::string path, bool write, bool check_allowed);
  /// The path resolved and checked as safe_resolve checks it, with the real path's checks left
  /// to a confined operation. nullopt when the written spelling is refused: safe_resolve then
  /// reports it, in its order (a symlink escape first).
  Task<std::optional<workspace::ConfinedTarget>> confined_target(std::string path, bool write, bool check_allowed);
  /// Runs `call` on the target until its real path is settled: the result when done; nullopt
  /// when declined (the separate operations then do it, as without the capability); the escape
  /// ModelRetry when the real path is outside the root; another real path is checked as
  /// safe_resolve checks it, then the call is sent again for it.
  Task<std::optional<workspace::ConfinedResult>> run_confined(std::string path, workspace::ConfinedTarget target,
                                                              bool write, bool check_allowed, ConfinedCall call);
  /// confined_target, then a confined read of it: the resolved path and what the read found;
  /// nullopt when either declines.
  Task<std::optional<std::pair<std::string, workspace::ConfinedResult>>> confined_read(
      std::string path, bool write, bool check_allowed, workspace::ConfinedReadOptions what);
  void check_access(const std::string& relative, bool write, bool check_allowed) const;
  [[nodiscard]] bool is_accessible(const std::string& relative) const;
  /// The root-relative path of a walked entry, or nullopt to skip it (hidden below `start`,
  /// or refused by the patterns).
  [[nodiscard]] std::optional<std::string> walk_entry(const std::string& path, const std::string& start,
                                                      bool include_hidden) const;
  /// Whether a walked file's real path is inside the root and passes the read patterns.
  Task<bool> readable_entry(std::string path);
  Task<std::optional<FileEntry>> stat_or_none(std::string resolved);
  /// Entries below `directory` and whether the walk was cut short.
  Task<std::pair<std::vector<FileEntry>, bool>> walk(std::string directory, std::optional<std::size_t> max_depth,
                                                     bool include_hidden);

  /// walk() in one confined read: the entries the walk would give (sizes unknown, as the shell
  /// lists them) and the contents that fitted. nullopt when the workspace declines, or the tree
  /// holds a symlink or is larger than a walk takes (walk() decides those).
  struct ConfinedWalk {
    std::string resolved;
    std::optional<FileEntry> entry;
    std::vector<FileEntry> entries;
    std::map<std::string, workspace::Bytes> contents;
  };
  Task<std::optional<ConfinedWalk>> confined_walk(std::string path, std::optional<std::size_t> max_depth,
                                                  bool include_hidden, bool contents);
  Task<std::string> search_files(std::string pattern, std::string path, std::optional<std::string> include_glob);
  Task<std::string> find_files(std::string pattern, std::string path, bool files_only);
  Task<std::string> list_files(std::string path, std::optional<std::string> glob);
  Task<std::string> grep(std::string pattern, std::string path, std::optional<std::string> glob,
                         std::optional<std::string> file_type, bool ignore_case, bool literal, std::int64_t context);
};

struct ToolSpec;
/// The description and parameters of FileSystem tool `name` (file_system_specs.cpp); `hashes`:
/// whether content hashes are on.
[[nodiscard]] ToolSpec file_system_tool_spec(const std::string& name, bool hashes);

/// Whether NUL occurs in the first 8192 bytes.
[[nodiscard]] bool looks_binary(std::string_view bytes);
/// A walker's result, ending with notices for hidden entries omitted and caps hit.
[[nodiscard]] std::string with_walk_notice(std::vector<std::string> lines, bool walk_cut, std::size_t hidden_count);

/// The reference's _model_safe_filename: a path relative to the root, or a placeholder.
[[nodiscard]] std::string model_safe_filename(const std::string& filename, const std::string& root);

}  // namespace exedev::tools::detail

namespace exedev::tools {

struct FileSystem::State : detail::FileSystemCore {
  Task<std::string> run_tool(std::string name, std::string arguments);
  Task<std::string> recoverable(Task<std::string> body);
  /// The resolved path and what is there; no entry when nothing is (a path error included).
  Task<std::pair<std::string, std::optional<workspace::FileEntry>>> locate(std::string path);
  /// locate, in one confined read where the workspace offers it, with the file's content (when
  /// it fits) and the link target.
  struct Located {
    std::string resolved;
    std::optional<workspace::FileEntry> entry;
    std::optional<workspace::Bytes> content;
    bool link_known = false;  ///< Whether link_target says what readlink would.
    std::optional<std::string> link_target;
  };
  Task<Located> locate_with_content(std::string path);
  /// A regular file's bytes: `known` when the confined read brought them, else read; nullopt
  /// when the file is gone.
  Task<std::optional<workspace::Bytes>> content_of(std::string resolved, std::optional<workspace::Bytes> known);
  Task<std::string> read_file(std::string path, std::int64_t offset, std::optional<std::int64_t> limit);
  Task<std::string> write_file(std::string path, std::string content, std::optional<std::string> expected_hash);
  Task<std::string> edit_file(std::string path, std::vector<std::pair<std::string, std::string>> replacements,
                              std::optional<std::string> expected_hash);
  Task<std::string> list_directory(std::string path);
  Task<std::string> create_directory(std::string path);
  Task<std::string> file_info(std::string path);
  [[nodiscard]] std::vector<std::string> offered() const;
  [[nodiscard]] std::string read_header(const std::string& path, std::size_t total, const std::string& hash) const;
  [[nodiscard]] std::string hash_suffix(const std::string& hash) const {
    return options.content_hashes ? " [hash:" + hash + "]" : "";
  }
};

}  // namespace exedev::tools
