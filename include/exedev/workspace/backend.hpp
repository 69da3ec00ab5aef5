#pragma once
// The backend protocol: what an environment an agent works in must provide.
//
// A backend derives from WorkspaceBackend and from each optional capability it supports:
// SupportsCommands, SupportsFilesystem, SupportsRealpath, SupportsConfinedFiles. Workspace
// discovers the capabilities with dynamic_cast. Because a capability is an abstract class, a
// backend that implements only part of SupportsFilesystem does not compile (the reference API
// checks this at run time).
//
// Contract shared by every backend (the reference protocol's module contract):
// - Construction does no I/O. Without a ref, the first operation creates a fresh environment;
//   with a ref, the first operation attaches, and raises WorkspaceUnavailableError if the
//   environment is gone; it never creates a replacement.
// - ref() is recorded as soon as the environment exists and never changes afterwards.
// - Concurrent first operations create at most one environment.
// - Backends never destroy the environment.
// - Errors: a dead environment is WorkspaceUnavailableError, a timeout WorkspaceTimeoutError,
//   a path failure std::filesystem::filesystem_error, bad arguments std::invalid_argument;
//   anything else (a transient transport error) propagates unchanged.
// - Every operation runs on the caller's executor and honours Asio per-operation cancellation
//   (terminal at least); each backend documents what a cancelled operation leaves behind.

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
#include <exedev/task.hpp>
#include <exedev/workspace/types.hpp>

namespace exedev::workspace {

using exedev::Task;

/// The environment an agent run works in.
class WorkspaceBackend {
 public:
  virtual ~WorkspaceBackend() = default;

  /// The environment's identity: nullopt until a fresh one is created, then set for good.
  [[nodiscard]] virtual std::optional<WorkspaceRef> ref() const = 0;

  /// The stable working directory: absolute, symlinks resolved, no ./.. segments.
  virtual Task<std::string> working_dir() = 0;
};

/// Sizes the shell-derived filesystem uses on a backend. A backend whose requests are small
/// (exe.dev: a 64 KiB request body) lowers them.
struct ShellFilesystemLimits {
  std::size_t read_page_bytes = 64 * 1024;         ///< Bytes read per command.
  std::size_t write_chunk_chars = 64 * 1024;       ///< Base64 characters written per command.
  std::size_t listing_inline_bytes = 64 * 1024;    ///< Listings larger than this are paged.
  /// Write chunks in flight at once (each is written at its own offset, so order and resends
  /// do not matter).
  std::size_t write_window = 1;
  /// Data that compresses travels gzip-compressed when the environment has `gzip`: a write that
  /// would take more than one command and whose sample compresses, and read pages the
  /// environment finds compressible. Random data never does.
  bool compress = false;
  /// A file of at most this many bytes comes back raw on its read script's stdout (0: never):
  /// for a backend whose script output is 8-bit clean and as wide as its output limit (SSH).
  /// Larger files come by SupportsFileTransfer when it is open, else in pages.
  std::size_t raw_read_bytes = 0;
  /// The largest file read_bytes returns. A larger size reported by the environment is refused
  /// (WorkspaceLimitError naming max_read_bytes) before the rest of the file is read: the first
  /// script's page is all that arrives, and no buffer is sized from the report.
  std::uint64_t max_read_bytes = 256 * 1024 * 1024;
  /// The largest listing list_dir takes (its records: a name and 2 bytes per entry), likewise.
  std::uint64_t max_listing_bytes = 64 * 1024 * 1024;
  /// Bytes of content one confined read (SupportsConfinedFiles) carries: a regular file's, or a
  /// tree's files' in all; with `compress`, as gzip members. 0: each file's up to the smaller of
  /// read_page_bytes and listing_inline_bytes, uncompressed, with no total (the seed's design).
  /// Either way never more than max_read_bytes.
  std::size_t confined_content_bytes = 0;
  /// Whether confined_splice applies edits; off, it declines, and an edit reads and writes the
  /// whole file (the seed's design).
  bool splices = true;
  /// Whether a confined write of data past one command (raw, else as a gzip member) goes in
  /// blocks: the checks with the first, the commit with the last, so as many commands as the
  /// data fills and one more at most. Off, it declines, and the separate operations write it
  /// (the seed's design).
  bool confined_block_writes = true;
};

/// Optional command execution. Without it, Workspace::run throws WorkspaceUsageError.
class SupportsCommands {
 public:
  virtual ~SupportsCommands() = default;

  /// Executes a command with stdin at EOF, starting in working_dir(), and returns its
  /// complete output or throws. A missing argv program exits 127. Undecodable output bytes
  /// become U+FFFD. On timeout or cancellation the foreground process tree is stopped.
  virtual Task<CommandResult> run(Command command, RunOptions options) = 0;

  /// The page sizes the shell-derived filesystem uses on this backend.
  [[nodiscard]] virtual ShellFilesystemLimits shell_filesystem_limits() const { return {}; }

  /// Called when the shell-derived filesystem finds that the environment has no `gzip` (a
  /// compressed write was refused before it wrote anything, and was sent again uncompressed).
  /// A backend that remembers it, returning limits with `compress` off from then on, spares
  /// later writes that refusal; the filesystem itself lasts one operation.
  virtual void note_gzip_missing() {}
};

/// Receives a script's stdout as it arrives (SupportsShellScripts::run_script): `bytes` start at
/// `offset` of the stdout. It must not block, and must not throw.
using ScriptStdoutSink = std::function<void(std::uint64_t offset, std::string_view bytes)>;

/// Optional, beside SupportsCommands: a cheaper channel for the shell-derived filesystem's own
/// scripts, which are short and bounded and take their data as arguments. (SandboxBackend: one
/// exe.dev request each, the data carried once.) Without it the scripts go through run().
class SupportsShellScripts {
 public:
  virtual ~SupportsShellScripts() = default;
  /// Runs `script` under POSIX sh with positional parameters `args` (each non-empty base64
  /// text), stdin at EOF, and returns its exit code, stdout and stderr. `idempotent`: running
  /// the script twice leaves the same state as once, so an answer that was lost may be
  /// resent. An answer that was cut is never returned as a result. Errors as run().
  ///
  /// With `on_stdout` set, stdout is handed to it as it arrives, raw, instead of being returned
  /// (CommandResult::stdout_text stays empty): `offset` is where the bytes start; a resent
  /// script starts again at 0. Only a returned result vouches for what arrived.
  virtual Task<CommandResult> run_script(std::string script, std::vector<std::string> args, bool idempotent,
                                         ScriptStdoutSink on_stdout) = 0;
};

/// Optional, beside SupportsShellScripts: a channel for file data apart from the scripts
/// (SandboxBackend over SSH: SFTP). The shell-derived filesystem's scripts still decide every
/// path and check (the same scripts as without it); only the bytes of large files travel here,
/// raw. Without it, or while it answers false, the scripts carry the data.
class SupportsFileTransfer {
 public:
  virtual ~SupportsFileTransfer() = default;
  /// Whether the channel can be used now (a backend may learn it only once connected).
  virtual Task<bool> file_transfer_available() = 0;
  /// Whether the channel is known to be open, without opening anything (a hint for choosing
  /// before an operation starts; false when unknown).
  [[nodiscard]] virtual bool file_transfer_open() const noexcept { return false; }
  /// Makes `data` the contents of the regular file `path` (absolute, symlinks resolved): a
  /// missing file is created readable and writable by its owner only, an existing one keeps its
  /// mode. `data` is not copied: it must stay valid until the returned task completes.
  virtual Task<void> upload(std::string path, std::string_view data) = 0;
  /// The contents of the regular file `path` (absolute), which the caller found to be `size`
  /// bytes: at most `size + 1` bytes are read (more means the file changed meanwhile, which the
  /// caller sees by the length). A path that is no longer a regular file (swapped for a device,
  /// say) throws filesystem_error(not_a_regular_file) and reads nothing.
  virtual Task<Bytes> download(std::string path, std::uint64_t size) = 0;
};

/// Where a confined file operation may act: the target and the boundary its real path must stay
/// in. The backend resolves the target through its symlinks where the files are, and acts only
/// when that real path passes the checks.
struct ConfinedTarget {
  std::string path;  ///< Absolute and normalized.
  std::string root;  ///< Absolute real path the target's real path must be, or be below; "/" allows all.
  /// The real path the caller has checked its own policy on. A target whose real path is another
  /// one is not touched (ConfinedStatus::recheck). Unset: any real path inside the root will do.
  std::optional<std::string> checked_real;
  /// Also check that `root` is its own real path (a caller that has not resolved it yet): a
  /// root with a symlink in it is declined (ConfinedStatus::declined).
  bool check_root = false;
  EXEDEV_COAWAIT_GUARD;
};

/// How a confined operation ended.
enum class ConfinedStatus {
  done,          ///< Checked and performed; the result's fields are set.
  outside_root,  ///< The target's real path (ConfinedResult::real) is outside the root: nothing done.
  recheck,       ///< The target's real path (ConfinedResult::real) is not the checked one: nothing done.
  /// Left to the separate operations (SupportsFilesystem, realpath): an unusual case (a special
  /// file, a permission, a parent that is missing or not a directory, a content that is not the
  /// expected one) or data too large for one round trip. Nothing was changed.
  declined,
};

/// What a confined read asks for besides the entry itself.
struct ConfinedReadOptions {
  bool content = false;   ///< A regular file's bytes, when they fit one round trip.
  bool children = false;  ///< A directory's entries.
  /// With children: every entry below the directory, walked without following symlinks (a
  /// symlink is an entry of its own, and ConfinedResult::symlinks_below says one was met).
  bool tree = false;
  std::optional<std::size_t> tree_depth;  ///< Levels of the tree (unset: all).
  bool tree_hidden = true;                ///< Whether the walk enters dot-named directories.
  bool tree_contents = false;             ///< Each regular file's bytes, when they fit (child_contents).
  EXEDEV_COAWAIT_GUARD;
};

struct ConfinedResult {
  ConfinedStatus status = ConfinedStatus::declined;
  std::string real;                 ///< The target's real path (absolute, normalized).
  std::optional<FileEntry> entry;   ///< read: what is at the path (symlinks followed); unset: nothing.
  std::optional<Bytes> content;     ///< read with content: a regular file's bytes, when they fit.
  std::optional<std::string> link_target;  ///< read: the target text when the path itself is a symlink.
  /// read with children: a directory's entries (path = the target's path + "/" + name), each
  /// readable regular file with its size, anything else (a dangling symlink too) without one.
  std::vector<FileEntry> children;
  bool symlinks_below = false;  ///< read with a tree: a symlink is among the children.
  /// read with a tree and its contents: the bytes of each child path whose content fitted.
  std::map<std::string, Bytes> child_contents;
  /// splice: whether the edit was applied. When it was not (the file's content is not the
  /// splice's base), `entry` and `content` are the file's, as a read with content gives them.
  bool spliced = false;
};

/// An edit of a regular file whose content the caller knows: `length` bytes at `offset` replaced
/// by `inserted`. The digests are SHA-256 in hex, of the content before and after.
struct ConfinedSplice {
  std::string base_sha256;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  Bytes inserted;
  std::uint64_t result_size = 0;
  std::string result_sha256;
  EXEDEV_COAWAIT_GUARD;
};

/// Optional: file operations whose confinement check (the real path inside a root), the
/// operation and what the caller shows of it travel together, one round trip where each part
/// would be one. A backend whose operations are cheap (LocalBackend) does without it: the
/// caller then uses realpath and SupportsFilesystem (ConfinedStatus::declined means the same).
/// Every operation runs the check first and changes nothing unless its status is `done`.
/// Cancellation: as the backend's file operations (a cancelled write leaves the file untouched
/// or fully replaced).
class SupportsConfinedFiles {
 public:
  virtual ~SupportsConfinedFiles() = default;
  /// The entry at the target (and, as asked, its content or its children).
  virtual Task<ConfinedResult> confined_read(ConfinedTarget target, ConfinedReadOptions what) = 0;
  /// Replaces, or creates, the regular file at the target with `data` when the target is not a
  /// directory and its parent directory exists; with `expected_sha256` non-empty, only when the
  /// existing file's SHA-256 hex digest starts with exactly that text (a missing file is created).
  virtual Task<ConfinedResult> confined_write(ConfinedTarget target, Bytes data, std::string expected_sha256) = 0;
  /// Creates the directory at the target (mkdir -p) when nothing is there and the nearest
  /// existing ancestor is a writable directory; `done` also when a directory is already there.
  virtual Task<ConfinedResult> confined_make_dir(ConfinedTarget target) = 0;
  /// Applies `splice` to the regular file at the target, in place of a read and a write of the
  /// whole file: only when its content's digest is the splice's base, and only if the new
  /// content's size and digest are the splice's result (else nothing is replaced). `done` with
  /// `spliced` set when applied; `done` without it, and the file's entry and content (when they
  /// fit), when the content is another one; declined otherwise (a file that is missing or not
  /// regular, a permission, no digest tool, an edit too large for one round trip).
  virtual Task<ConfinedResult> confined_splice(ConfinedTarget target, ConfinedSplice splice) = 0;
};

/// How far a tree transfer is: bytes of its archive moved and the files they carry, of the
/// totals (an unchanged tree has totals of 0).
struct TreeProgress {
  std::uint64_t bytes_done = 0;
  std::uint64_t bytes_total = 0;
  std::uint64_t files_done = 0;
  std::uint64_t files_total = 0;
};

/// Options of SupportsTreeTransfer's upload_tree and download_tree.
struct TreeTransferOptions {
  /// .gitignore-style patterns, relative to the tree's root (e.g. ".git/", "node_modules/",
  /// "*.o", "/build", "!keep.o"; docs/workspace.md, "Trees"). They apply to both ends: what
  /// they exclude is neither sent nor removed at the destination.
  std::vector<std::string> excludes{};
  /// Called as the archive moves, on the caller's executor; must not throw.
  std::function<void(const TreeProgress&)> on_progress{};
  /// download_tree: files and directories get the permission bits (0777) they have in the
  /// environment, filtered by this process's umask (as files this process creates are); true
  /// keeps the environment's permission bits unfiltered. Set-user-id, set-group-id and sticky
  /// bits never arrive either way (docs/workspace.md, "Trees").
  bool keep_remote_mode_bits = false;
  /// download_tree: the largest archive accepted from the environment, compressed and unpacked.
  /// It bounds the disk the staged tree takes, not memory (the archive is extracted as it
  /// arrives). Sizes the environment reports above it are refused (WorkspaceLimitError naming
  /// max_download_bytes) before any of it is fetched.
  std::uint64_t max_download_bytes = 512 * 1024 * 1024;
  /// download_tree (SandboxBackend): how long the VM may take to make the archive (tar, and
  /// gzip when it pays). The archive is made by a command, which outlives one /exec request
  /// (exe.dev ends those at 30 s) on either transport; past this it is stopped and the download
  /// throws WorkspaceTimeoutError naming this option. 0: no limit. LocalBackend makes no archive.
  std::chrono::milliseconds archive_timeout{std::chrono::minutes(5)};
  EXEDEV_COAWAIT_GUARD;
};

/// What a tree transfer did.
struct TreeTransferResult {
  std::uint64_t files = 0;        ///< regular files in the transferred tree
  std::uint64_t directories = 0;  ///< directories in it (the root not counted)
  std::uint64_t symlinks = 0;     ///< symlinks in it
  std::uint64_t files_sent = 0;   ///< files whose contents travelled (new or changed)
  std::uint64_t entries_removed = 0;  ///< destination entries removed (gone from the source)
  std::uint64_t archive_bytes = 0;    ///< archive bytes that travelled (0: only the manifests)
  bool compressed = false;            ///< the archive travelled gzip-compressed
  /// Paths (relative to the root) left out: symlinks that leave the tree (an absolute target, or
  /// one climbing above the root) and other file types (sockets, devices, FIFOs).
  std::vector<std::string> refused{};
};

/// Optional: moves a whole directory tree between this program's machine and the environment
/// in one archive (SandboxBackend, LocalBackend). Regular files (bytes and permission bits),
/// directories and symlinks that stay inside the tree travel; the destination's entries that the
/// source lacks are removed, except excluded ones. Only what differs travels (size and SHA-256
/// compared against the destination's manifest). Nothing half-written is visible: the new tree
/// is staged beside the destination and moved into place by renames, so a failed or cancelled
/// transfer leaves the destination as it was. A download extracts the archive into the stage
/// as it arrives, so its memory does not grow with the tree; an upload packs the local side in
/// memory (trees up to a few hundred MiB).
class SupportsTreeTransfer {
 public:
  virtual ~SupportsTreeTransfer() = default;
  /// Makes the environment's directory `remote_dir` (absolute) equal to this machine's
  /// `local_dir`, creating it and its parents when missing.
  virtual Task<TreeTransferResult> upload_tree(std::string local_dir, std::string remote_dir, TreeTransferOptions options) = 0;
  /// Makes this machine's directory `local_dir` equal to the environment's `remote_dir`
  /// (absolute), which must exist.
  virtual Task<TreeTransferResult> download_tree(std::string remote_dir, std::string local_dir,
                                                 TreeTransferOptions options) = 0;
};

/// Optional native file access; without it, Workspace uses the shell. Paths are absolute POSIX
/// paths. A missing path throws filesystem_error(no_such_file_or_directory) (except exists),
/// reading a directory throws filesystem_error(is_a_directory).
class SupportsFilesystem {
 public:
  virtual ~SupportsFilesystem() = default;
  virtual Task<Bytes> read_bytes(std::string path) = 0;
  /// Creates missing parents; writes through an existing symlink.
  virtual Task<void> write_bytes(std::string path, Bytes data) = 0;
  virtual Task<FileEntry> stat(std::string path) = 0;
  /// Non-recursive, sorted by path.
  virtual Task<std::vector<FileEntry>> list_dir(std::string path) = 0;
  /// mkdir -p semantics.
  virtual Task<void> make_dir(std::string path) = 0;
  /// A file, or a directory and its contents; a symlink is removed itself. Refuses the working
  /// directory and its ancestors with std::invalid_argument.
  virtual Task<void> remove(std::string path) = 0;
  virtual Task<bool> exists(std::string path) = 0;
};

/// Optional native symlink resolution, for a filesystem-only backend whose storage can hold
/// symlinks. Like os.path.realpath(path, strict=False): relative link targets start in the
/// link's directory, `..` after a link climbs from its target, missing components are kept,
/// a loop never hangs. Returns an absolute, normalized path.
class SupportsRealpath {
 public:
  virtual ~SupportsRealpath() = default;
  virtual Task<std::string> realpath(std::string path) = 0;
};

}  // namespace exedev::workspace
