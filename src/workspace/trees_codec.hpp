#pragma once
// Tree transfers, sans-IO (internal): the manifest of a tree, .gitignore-style filters, which
// symlinks stay inside the tree, what a destination needs from a source, and the tar archive
// (POSIX ustar with pax extended headers for long names) that carries it. Tested in
// tests/unit/workspace/trees_codec_test.cpp.

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

/// Builds a tar archive (ustar; a pax `x` header before an entry whose name or link target does
/// not fit ustar's fields). Names are written as given, bytes and all (spaces, newlines).
class TarWriter {
 public:
  /// `mtime`: every entry's modification time (seconds since the epoch).
  explicit TarWriter(std::uint64_t mtime = 0) : mtime_(mtime) {}
  void add_directory(const std::string& path, std::uint32_t mode);
  void add_symlink(const std::string& path, const std::string& target);
  void add_file(const std::string& path, std::uint32_t mode, std::string_view data);
  /// The archive, with its end (two zero blocks); the writer is empty afterwards.
  [[nodiscard]] std::string finish();
  [[nodiscard]] std::size_t size() const noexcept { return out_.size(); }

 private:
  void add_header(const std::string& path, char type, std::uint32_t mode, std::uint64_t size, const std::string& link);
  std::string out_;
  std::uint64_t mtime_;
};

/// A member of a tar stream, as its header (and the pax or GNU headers before it) describe it.
struct TarEntry {
  std::string path;  ///< without a trailing `/`, a leading `./` removed
  TreeEntryType type = TreeEntryType::file;
  std::uint32_t mode = 0;
  std::uint64_t size = 0;  ///< files: the data bytes that follow the header
  std::string target;      ///< symlinks
  std::optional<std::string> link_to;  ///< a hard link (a file member with no data of its own): the earlier file it names
};

/// Receives a tar stream's members as TarStream reads them.
class TarVisitor {
 public:
  virtual ~TarVisitor() = default;
  /// A member's header. A file's `size` data bytes follow in member_data calls (none for a hard
  /// link, whose data is the earlier file's), then member_end; other members end at once.
  virtual void member_begin(const TarEntry& entry) = 0;
  virtual void member_data(std::string_view bytes) = 0;
  virtual void member_end() = 0;
};

/// Reads a tar stream as it arrives (sans-IO): ustar, pax `x` and GNU `L`/`K` long names, pax
/// `g` headers ignored. What it holds at any time is one 512-byte header or one pax/long-name
/// header's data (at most kMostTarMetaBytes): a member's data goes to the visitor as it comes,
/// and no size the archive states sizes a buffer. Throws WorkspaceError for a damaged archive
/// (checksum, a malformed or oversized pax record) or a member type other than a file,
/// directory, symlink or hard link (devices, FIFOs); the visitor's exceptions pass through.
class TarStream {
 public:
  explicit TarStream(TarVisitor& visitor) : visitor_(visitor) {}
  void feed(std::string_view bytes);
  /// After the last bytes: throws WorkspaceError("the tree archive is cut short") unless the
  /// archive's end (a zero block) was read. Bytes after it are ignored.
  void finish() const;

 private:
  enum class State { header, meta, data, skip, end };
  void on_header();
  void on_meta();
  TarVisitor& visitor_;
  State state_ = State::header;
  std::string held_;             // the header block, or the pax/long-name data, being gathered
  std::uint64_t remaining_ = 0;  // of the meta data, member data or bytes to skip
  std::uint64_t padding_ = 0;    // zero bytes after them, up to the next block
  char meta_type_ = 0;
  std::optional<std::string> long_path_, long_link_;
  std::optional<std::uint64_t> long_size_;
};

/// The most data a pax or GNU long-name header may carry.
inline constexpr std::uint64_t kMostTarMetaBytes = 1024 * 1024;

struct TarMember {
  std::string path;  ///< without a trailing `/`, a leading `./` removed
  TreeEntryType type = TreeEntryType::file;
  std::uint32_t mode = 0;
  std::string_view data;  ///< files: into the archive
  std::string target;     ///< symlinks
};

/// The members of a complete tar archive, as TarStream reads them. A hard link to a file
/// earlier in the archive is a file member of its own with that file's data (a copy). Throws
/// what TarStream throws, and WorkspaceError for a hard link to no earlier file or an archive
/// cut short.
[[nodiscard]] std::vector<TarMember> read_tar(std::string_view archive);

}  // namespace exedev::workspace::detail
