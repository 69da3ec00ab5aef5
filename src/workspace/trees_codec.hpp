#pragma once
// Tree transfers, sans-IO (internal): the manifest of a tree, .gitignore-style filters, which
// symlinks stay inside the tree and what a destination needs from a source (the tar archive
// that carries it: tar_codec.hpp). Tested in tests/unit/workspace/trees_codec_test.cpp.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::workspace::detail {

enum class TreeEntryType { file, directory, symlink };

/// One entry of a tree, by its path relative to the tree's root ("a/b", never "." or "..").
struct TreeEntry {
  TreeEntryType type = TreeEntryType::file;
  std::uint32_t mode = 0;  ///< permission bits (07777)
  std::uint64_t size = 0;  ///< files only
  std::string sha256;      ///< files only: hex digest, empty when unknown (then always sent)
  std::string target;      ///< symlinks only
};

/// A tree by relative path; std::map order puts every directory before its contents.
using TreeManifest = std::map<std::string, TreeEntry>;

/// .gitignore-style excludes: blank lines and `#` comments are skipped; `!` re-includes; a
/// trailing `/` matches directories only; a pattern with a `/` elsewhere is anchored at the
/// root, else it matches a name at any depth; `*`, `?`, `[...]` do not match `/`, `**` does.
/// The last matching pattern decides. An excluded directory's contents are excluded with it.
class TreeFilter {
 public:
  TreeFilter() = default;
  explicit TreeFilter(const std::vector<std::string>& patterns);
  /// Whether `path` itself is excluded (its directories are not looked at).
  [[nodiscard]] bool excludes(std::string_view path, bool is_dir) const;
  /// Names of directories excluded wherever they are, by patterns that need no other check
  /// (`name/` or `name` without `/`, `!` or `**`): a lister may skip them (find -prune).
  [[nodiscard]] std::vector<std::string> prunable_names() const;
  [[nodiscard]] bool empty() const noexcept { return patterns_.empty(); }

 private:
  struct Pattern {
    std::string glob;
    bool negated = false;
    bool directory_only = false;
    bool anchored = false;
  };
  std::vector<Pattern> patterns_;
};

/// Whether glob `pattern` matches all of `text` (`*`, `?`, `[...]`, `[!...]` stop at `/`; `**`
/// crosses it, and `**/` also matches nothing).
[[nodiscard]] bool glob_match(std::string_view pattern, std::string_view text);

/// Keeps of every file's and directory's mode only the permission bits (0777) that `allowed` has:
/// never set-user-id, set-group-id or sticky. What a download applies to what the environment
/// listed (the umask's complement, or 0777), before it compares or writes anything.
void restrict_modes(TreeManifest& manifest, std::uint32_t allowed);

/// Drops from `manifest` what `filter` excludes, and the contents of excluded directories.
void apply_filter(TreeManifest& manifest, const TreeFilter& filter);

/// Removes from `manifest` the symlinks that leave the tree (an absolute target, or a relative
/// one that climbs above the root, following the tree's own symlinks; a loop counts as leaving)
/// and returns their paths. A link that stays inside may dangle.
[[nodiscard]] std::vector<std::string> drop_escaping_symlinks(TreeManifest& manifest);

/// Whether `path` is a relative tree path: non-empty, no leading `/`, no empty, `.` or `..`
/// component, no NUL.
[[nodiscard]] bool is_tree_path(std::string_view path);

/// What makes `destination` equal to `source`: the entries to send (new or different type,
/// mode, size, digest or target; directories only when new or their mode differs) and the
/// destination paths to remove first (gone from the source, or of another type).
struct TreePlan {
  std::vector<std::string> send;
  std::vector<std::string> remove;
  [[nodiscard]] bool empty() const noexcept { return send.empty() && remove.empty(); }
};
[[nodiscard]] TreePlan plan_tree(const TreeManifest& source, const TreeManifest& destination);

/// Reads what the manifest script prints (trees_remote's listing): records `<t> <mode> <size>
/// <path>\0<link target>\0` with t one of f, d, l (other types are returned in `others`), an
/// empty record, then `sha256sum -z` records `<hex>  ./<path>\0`. nullopt when malformed.
struct ListedTree {
  TreeManifest manifest;
  std::vector<std::string> others;
};
[[nodiscard]] std::optional<ListedTree> parse_tree_listing(std::string_view text);

}  // namespace exedev::workspace::detail
