#pragma once
// The filesystem derived from a backend's shell (internal). Every operation is one or more
// POSIX `sh` scripts run through SupportsCommands::run without a timeout. The script builders
// and output parsers below are sans-IO so they are unit tested without processes.
//
// Needs POSIX sh (test, printf, case, $(( ))) plus base64 cp dd find mkdir mv readlink rm wc;
// uses gzip (compressed transfers) and sha256sum (the digest check of writes) when present.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <exedev/workspace/backend.hpp>
#include <exedev/workspace/errors.hpp>

#include "common/base64.hpp"

namespace exedev::workspace::detail {

/// Private exit codes of the scripts: 100 + the Linux errno, above the codes sh, base64 and
/// find use themselves.
enum ShellStatus : int {
  kNotFound = 102,
  kPermission = 113,
  kExists = 117,
  kNotADirectory = 120,
  kIsADirectory = 121,
  kNotARegularFile = 122,
  kShortWrite = 105,     ///< EIO: the bytes that arrived are not those sent (size, digest, gzip stream).
  kRefusedRoot = 101,    ///< remove of the working directory or an ancestor.
  kMissingGzip = 108,    ///< ENOEXEC: no gzip to unpack a compressed write; nothing was written.
};

/// The tools the scripts need, in the order the missing-tools message names them.
inline constexpr const char* kShellTools[] = {"base64", "cp", "dd", "find", "mkdir", "mv", "readlink", "rm", "wc"};

/// Bound of every best-effort cleanup command (temp files), which also runs after cancellation.
inline constexpr double kCleanupTimeoutSeconds = 10.0;
/// read_bytes gives up after this many stat+read attempts.
inline constexpr int kReadAttempts = 3;
/// Links the realpath script follows before keeping the rest of the path as written.
inline constexpr int kRealpathMaxLinks = 40;

/// Output that is not what the script prints: never turned into a partial result.
class DamagedOutputError : public WorkspaceError {
 public:
  explicit DamagedOutputError(const std::string& path);
};

/// A write whose data did not arrive intact (its size, SHA-256 digest or gzip stream is not
/// what was sent): the destination was not replaced and the temp files are gone.
class DamagedWriteError : public WorkspaceError {
 public:
  explicit DamagedWriteError(const std::string& path);
};

/// What the environment checks before a write's temp file replaces the destination.
struct WriteCheck {
  std::uint64_t size = 0;
  std::string sha256;  ///< hex digest of the data; checked when not empty and the environment has sha256sum
  bool gzip = false;   ///< the data travels as one gzip member, unpacked before the checks
  bool transferred = false;  ///< the temp file was made by a file transfer (owner's bits only)
};

// ---- posixpath helpers (Python semantics) ----
[[nodiscard]] std::string posix_basename(const std::string& path);
[[nodiscard]] std::string posix_dirname(const std::string& path);
[[nodiscard]] std::string posix_join(const std::string& a, const std::string& b);

/// `text` without leading and trailing ASCII whitespace (Python's str.strip() on a command's
/// output).
[[nodiscard]] std::string strip(const std::string& text);

// ---- script builders (Q = shell_quote(path)) ----
/// `parent=...` must be set before it; walks up to the nearest existing ancestor.
[[nodiscard]] std::string check_parents_fragment();
[[nodiscard]] std::string stat_script(const std::string& path);
/// A `raw` or `gzip` line, then the base64 of page `index` (of `page_bytes`) as it is or as one
/// gzip member: gzip only when `may_compress`, the environment has gzip and a sample of the page
/// compresses (the rule compression_pays applies to writes). `source_word` is a shell word (a
/// quoted path, or an expression like "${TMPDIR:-/tmp}"/x).
[[nodiscard]] std::string read_chunk_script(const std::string& source_word, std::size_t page_bytes,
                                            std::size_t index, bool may_compress);
[[nodiscard]] std::string tool_probe_script();
/// Sets `value` to the path's realpath (see realpath_script); exits 1 when a link is unreadable.
[[nodiscard]] std::string realpath_fragment(const std::string& path);
/// Resolves `path` through symlinks into `dest`, checks and creates its parent `dir` and names
/// the temp files `temp` and `decoded` (in `dir`, from `temp_name`).
[[nodiscard]] std::string write_prepare_fragment(const std::string& path, const std::string& temp_name);
/// A whole write in one script: the data is $1 (base64; absent when the size is 0). A gzip
/// write exits kMissingGzip first, having written nothing, when the environment has no gzip.
[[nodiscard]] std::string write_whole_script(const std::string& path, const std::string& temp_name,
                                             const WriteCheck& check);
/// The first request of a chunked write: prepares an empty temp file (unless `creates_temp` is
/// false: a file transfer makes it) and prints the resolved destination (as realpath_script
/// prints its value) unless it is `path` itself, normalized. `gzip`: as write_whole_script.
/// Sent again, it does the same (no block has been written before its answer), so it is sent
/// as idempotent: a connection lost under it does not cost the write.
[[nodiscard]] std::string write_begin_script(const std::string& path, const std::string& temp_name, bool gzip,
                                             bool creates_temp = true);
/// The temp file of a chunked write made with its first block in it ($1, base64): as
/// write_begin_script without printing the destination (a confined write knows it).
[[nodiscard]] std::string write_first_block_script(const std::string& path, const std::string& temp_name, bool gzip);
/// Writes the block in $1 (base64) at offset index × block_bytes of `temp`: the same block sent
/// twice writes the same bytes at the same place.
[[nodiscard]] std::string write_block_script(const std::string& temp, std::size_t block_bytes, std::size_t index);

/// Where the blocks of a chunked write go: block i is the base64 characters from starts[i] up
/// to the next start (the last one, to `chars`), written by write_block_script at byte offset
/// starts[i] / 4 × 3, a multiple of `granule_bytes` (dd's block size there).
struct WriteBlocks {
  std::size_t chars = 0;
  std::size_t granule_bytes = 0;
  std::vector<std::size_t> starts;
  [[nodiscard]] std::size_t count() const noexcept { return starts.size(); }
  [[nodiscard]] std::size_t length(std::size_t block) const noexcept {
    return (block + 1 < starts.size() ? starts[block + 1] : chars) - starts[block];
  }
  [[nodiscard]] std::size_t dd_index(std::size_t block) const noexcept { return starts[block] / 4 * 3 / granule_bytes; }
};
/// `chars` (more than `chunk`) in blocks of `chunk` characters, a multiple of 4.
[[nodiscard]] WriteBlocks uniform_write_blocks(std::size_t chars, std::size_t chunk);
/// The characters every block of a confined write starts at a multiple of: 4 times a power of
/// two, at most 1/256 of `chunk` (aligning wastes little of a request) and at most 1024.
[[nodiscard]] std::size_t confined_block_quantum(std::size_t chunk);
/// The blocks of a confined write of `chars` characters: the first `first_chars` (a positive
/// multiple of `quantum`, fewer than `chars`) go with the checks; then as few blocks of at most
/// `room` characters as leave the last at most `last_room` (its request carries the commit), all
/// starting at multiples of `quantum`. A `last_room` below `quantum` leaves the last block empty:
/// the commit travels alone.
[[nodiscard]] WriteBlocks confined_write_blocks(std::size_t chars, std::size_t first_chars, std::size_t room,
                                                std::size_t last_room, std::size_t quantum);
/// The last request of a write in blocks: the last of `blocks` (its base64 in $1) into `temp`
/// unless it is empty, then `commit` (a commit_script); a failed block skips the commit.
[[nodiscard]] std::string write_last_block_script(const std::string& temp, const WriteBlocks& blocks,
                                                  const std::string& commit);
/// Unpacks the temp file (the data, or its gzip member) into `decoded` beside the destination,
/// checks its size and digest (exit kShortWrite otherwise), then moves it over the destination
/// (keeping the destination's mode bits; a new destination made from a transferred temp file gets
/// the mode bits of a file the shell creates). The three words are shell words.
[[nodiscard]] std::string commit_script(const std::string& destination_word, const std::string& temp_word,
                                        const std::string& decoded_word, const WriteCheck& check);
/// The temp file `temp_name` beside `path` as given (normalized, no symlink resolved), where a
/// transferred write's upload starts; nullopt for a relative path.
[[nodiscard]] std::optional<std::string> temp_beside_path_as_given(const std::string& path, const std::string& temp_name);
/// Removes a chunked, whole or transferred write's temp files, found again from `path`.
[[nodiscard]] std::string write_cleanup_script(const std::string& path, const std::string& temp_name);
/// Type checks, then the size line and the first page (as read_chunk_script) of a regular file.
/// A file of at most `raw_bytes_at_most` bytes (0: none) comes whole instead, raw, behind the
/// line `bytes`. With `no_page_when_larger`, a file larger than one page gets the line `none`
/// instead (its data is to come by file transfer, so a page would be sent for nothing).
[[nodiscard]] std::string read_first_page_script(const std::string& path, std::size_t page_bytes, bool may_compress,
                                                 bool no_page_when_larger = false, std::size_t raw_bytes_at_most = 0);
[[nodiscard]] std::string remove_files_script(const std::vector<std::string>& shell_words);
/// The shell word naming the listing temp file `name` in the environment's $TMPDIR.
[[nodiscard]] std::string listing_temp_word(const std::string& name);
[[nodiscard]] std::string list_script(const std::string& path, const std::string& temp_word,
                                      std::size_t inline_bytes);
[[nodiscard]] std::string make_dir_script(const std::string& path);
/// Refuses (kRefusedRoot) the working directory `root` and its ancestors, after resolving the
/// path's parent through symlinks; a missing path exits kNotFound.
[[nodiscard]] std::string remove_script(const std::string& path, const std::string& root);
[[nodiscard]] std::string exists_script(const std::string& path);
[[nodiscard]] std::string realpath_script(const std::string& path);

// ---- confined operations (shell_filesystem_confined.cpp) ----
/// How much content a confined read carries (ShellFilesystemLimits::confined_content_bytes).
struct ConfinedContent {
  std::size_t file_bytes = 0;   ///< a regular file's content, at most
  std::optional<std::size_t> total_bytes;  ///< a tree's contents in all, at most (unset: no total)
  bool compress = false;        ///< as gzip members (only with a total, which bounds their inflation)
};
[[nodiscard]] ConfinedContent confined_content(const ShellFilesystemLimits& limits);

/// Resolves the target through its symlinks (realpath_fragment), prints its real path, and
/// stops with `outside` or `recheck` when that fails the target's checks; then sets `p` to the
/// path and defines `declined` (prints it, exits 0).
[[nodiscard]] std::string confined_prelude(const ConfinedTarget& target);
/// The entry, its content when it fits `content` (as asked), its children (as asked; with a
/// tree's contents, those of its files that fit, gathered in the temp file `contents_word` and
/// removed on exit), and the link target when the path itself is a symlink. With
/// `content.compress`, contents travel as gzip members when the environment has gzip.
[[nodiscard]] std::string confined_read_script(const ConfinedTarget& target, ConfinedReadOptions what,
                                               const ConfinedContent& content, const std::string& contents_word);
/// Declines a directory, a missing parent directory and (with `expected_sha256`) another
/// content, then writes as write_whole_script (the data is $1).
[[nodiscard]] std::string confined_write_script(const ConfinedTarget& target, const std::string& temp_name,
                                                const WriteCheck& check, const std::string& expected_sha256);
/// The first request of a confined write in blocks: the same checks as confined_write_script,
/// then write_first_block_script (the first block is $1); `done` once the temp file holds it.
[[nodiscard]] std::string confined_write_begin_script(const ConfinedTarget& target, const std::string& temp_name,
                                                      bool gzip, const std::string& expected_sha256);
[[nodiscard]] std::string confined_make_dir_script(const ConfinedTarget& target);
/// Applies `splice` to the regular file at the target (the inserted bytes are $1, base64 of them
/// or, with `gzip`, of their gzip member) when its digest is the splice's base: `spliced`. A
/// file whose digest is another one (or that has no sha256sum to tell) is reported as a read
/// with content reports it, and left as it is.
[[nodiscard]] std::string confined_splice_script(const ConfinedTarget& target, const std::string& temp_name,
                                                 const ConfinedSplice& splice, bool gzip,
                                                 const ConfinedContent& content);
/// A confined script's output; output that is damaged or cut, or contents past `content` (or
/// compressed when it is not), read as ConfinedStatus::declined.
[[nodiscard]] ConfinedResult parse_confined_output(const std::string& stdout_text, const ConfinedTarget& target,
                                                   const ConfinedContent& content);

// ---- output parsers (throw DamagedOutputError) ----
struct StatOutput {
  bool is_dir = false;
  std::optional<std::uint64_t> size;
};
[[nodiscard]] StatOutput parse_stat_output(const std::string& stdout_text, const std::string& path);
/// A `size` line: digits only (surrounding blanks allowed, as BSD wc prints them).
[[nodiscard]] std::uint64_t parse_size_line(const std::string& line, const std::string& path);
/// base64 text that must decode to exactly `expected` bytes.
[[nodiscard]] std::string decode_exact(const std::string& text, std::size_t expected, const std::string& path);
/// A page as read_chunk_script prints it, which must hold exactly `expected` bytes (a gzip
/// page is checked against its CRC-32 and length as well). PageDecoder over the whole text.
[[nodiscard]] std::string decode_page(const std::string& text, std::size_t expected, const std::string& path);

/// A page decoded as the environment's output arrives, split anywhere (SupportsShellScripts'
/// stdout sink): a raw page's bytes are appended to `out` as their base64 decodes, so a
/// multi-MiB page is never held as text; a gzip page's member (its compressed size) is
/// collected and inflated by finish(). feed() never throws, as it runs inside the transport's
/// read: a damaged page stops being decoded and finish() reports it.
class PageDecoder {
 public:
  /// A page of exactly `expected` bytes, appended to `out`.
  PageDecoder(std::string& out, std::size_t expected);
  /// read_first_page_script's output: the file's size line, then a page of
  /// min(page_bytes, size) bytes, `bytes` and the whole file raw, or `none` for a file larger
  /// than page_bytes.
  [[nodiscard]] static PageDecoder after_size_line(std::string& out, std::size_t page_bytes);

  /// The stdout bytes at `offset`; offset 0 again (the script was sent again) starts over.
  void feed(std::uint64_t offset, std::string_view bytes);
  /// Throws DamagedOutputError unless a whole page of the expected length arrived (and, for
  /// gzip, its CRC-32 and length match); the page is then in `out`.
  void finish(const std::string& path);
  /// The size line, once read (after_size_line).
  [[nodiscard]] std::optional<std::uint64_t> size() const noexcept { return size_; }

 private:
  enum class Stage { size_line, marker_line, bytes, raw, gzip, no_page, damaged };
  void restart();
  void take_line(std::string_view& bytes);
  void on_line();

  std::string& out_;
  std::size_t base_;  // out_.size() before the page
  std::size_t expected_ = 0;
  std::optional<std::size_t> page_bytes_;  // after_size_line: the page size
  Stage first_stage_;
  Stage stage_;
  std::uint64_t consumed_ = 0;
  std::optional<std::uint64_t> size_;
  std::string line_;
  exedev::detail::Base64Decoder base64_;
  std::string member_;
};

struct ListingOutput {
  std::uint64_t size = 0;
  bool paged = false;
  std::string records;  ///< The NUL-separated records when not paged.
};
[[nodiscard]] ListingOutput parse_listing_output(const std::string& stdout_text, const std::string& path);
/// `<d|-><path>\0` records, sorted by path.
[[nodiscard]] std::vector<FileEntry> parse_listing_records(const std::string& records, const std::string& path);
/// `wc -c` line then base64 of the value.
[[nodiscard]] std::string parse_realpath_output(const std::string& stdout_text, const std::string& path);
/// write_begin_script's output: the destination it printed, else `path` normalized.
[[nodiscard]] std::string parse_write_begin_output(const std::string& stdout_text, const std::string& path);
/// Tool names printed by tool_probe_script().
[[nodiscard]] std::vector<std::string> parse_missing_tools(const std::string& stdout_text);
[[nodiscard]] std::string missing_tools_message(const std::vector<std::string>& tools);

/// Throws the error a private exit code means (filesystem_error with the matching errc);
/// returns for 0 and for codes that are not private.
void raise_for_private_status(const CommandResult& result, const std::string& path);
/// WorkspaceError(stderr stripped, or "shell filesystem operation failed for '<path>'").
[[noreturn]] void raise_operation_failed(const CommandResult& result, const std::string& path);

/// The derived filesystem itself. Cheap; built per operation by Workspace.
class ShellFilesystem final : public SupportsFilesystem, public SupportsRealpath, public SupportsConfinedFiles {
 public:
  /// `commands` must be the SupportsCommands side of `backend`.
  ShellFilesystem(std::shared_ptr<WorkspaceBackend> backend, SupportsCommands& commands);

  Task<Bytes> read_bytes(std::string path) override;
  Task<void> write_bytes(std::string path, Bytes data) override;
  Task<FileEntry> stat(std::string path) override;
  Task<std::vector<FileEntry>> list_dir(std::string path) override;
  Task<void> make_dir(std::string path) override;
  Task<void> remove(std::string path) override;
  Task<bool> exists(std::string path) override;
  Task<std::string> realpath(std::string path) override;
  /// One script each; a failed or damaged script is ConfinedStatus::declined.
  Task<ConfinedResult> confined_read(ConfinedTarget target, ConfinedReadOptions what) override;
  Task<ConfinedResult> confined_write(ConfinedTarget target, Bytes data, std::string expected_sha256) override;
  Task<ConfinedResult> confined_make_dir(ConfinedTarget target) override;
  Task<ConfinedResult> confined_splice(ConfinedTarget target, ConfinedSplice splice) override;

 private:
  Task<ConfinedResult> confined(std::string script, std::vector<std::string> args, bool idempotent,
                                ConfinedTarget target);
  /// Runs a script (through SupportsShellScripts when the backend has it) with base64 `args`.
  Task<CommandResult> sh(std::string script, std::vector<std::string> args = {}, bool idempotent = false);
  /// The same, with stdout handed to `on_stdout` (as it arrives through SupportsShellScripts;
  /// at once, at the end, through run()) instead of returned.
  Task<CommandResult> sh_streaming(std::string script, ScriptStdoutSink on_stdout);
  /// One page script whose output `decoder` reads; a private status or a failure is thrown.
  Task<void> read_page(std::string script, PageDecoder& decoder, const std::string& path, const char* limit_what);
  Task<void> discard(std::string script);
  Task<void> check(const CommandResult& result, const std::string& path, bool missing);
  /// Pages from `first_index` on, appended to `data` until it holds `size` bytes.
  Task<std::string> read_pages(std::string source_word, std::uint64_t size, std::string path,
                               const char* limit_what, std::string data, std::size_t first_index);
  /// Base64 of the data's gzip member when compression pays: the data's base64 is more than
  /// `room` characters (one command's), a sample compresses and so does the whole.
  [[nodiscard]] std::optional<std::string> compressed_payload(const Bytes& data, std::size_t room) const;
  /// Writes `encoded` (base64 of the data, or of its gzip member when verify.gzip) in one script
  /// or in chunks. false: refused, nothing written, because the environment has no gzip.
  Task<bool> write_encoded(std::string path, std::string temp_name, std::string encoded, WriteCheck verify);
  Task<bool> write_chunked(std::string path, std::string temp_name, std::string encoded, WriteCheck verify);
  /// Whether the backend's file transfer channel should carry `bytes` of data (only data that
  /// the scripts would need more than one command for).
  Task<bool> transfers(std::uint64_t bytes);
  /// Writes through the file transfer channel: the same begin and commit scripts as a chunked
  /// write, with the raw data uploaded into the temp file, beside the begin script.
  Task<void> write_transferred(std::string path, std::string temp_name, Bytes data, WriteCheck verify);
  /// The begin script with the upload into `early_temp` beside it; the upload is cancelled when
  /// the script fails. Returns the script's result and the upload's failure, if any.
  Task<std::pair<CommandResult, std::exception_ptr>> begin_beside_upload(std::string script, std::string early_temp,
                                                                        std::string_view data);
  Task<void> write_block(std::string temp, std::string block, std::size_t block_bytes, std::size_t index,
                         std::string path);
  /// Blocks [first, end) of `blocks` (of the text `encoded`) into `temp`, write_window at a time.
  Task<void> write_blocks(std::string temp, std::string_view encoded, WriteBlocks blocks, std::size_t first,
                          std::size_t end, std::string path);
  /// Throws what a commit_script's failure means (DamagedWriteError for kShortWrite).
  Task<void> check_commit(const CommandResult& committed, const std::string& path);
  /// A confined write of `encoded` (more than `first_chars`, the first block's share) in blocks:
  /// the checks and the first block, the blocks between (write_window at a time), then the last
  /// block with the commit. A declined first request has its temp file removed.
  Task<ConfinedResult> confined_write_in_blocks(ConfinedTarget target, std::string temp_name, std::string encoded,
                                                WriteCheck verify, std::string expected_sha256,
                                                std::size_t first_chars);
  Task<void> cleanup(std::string script);
  /// Awaits `operation`; when it fails or is cancelled, removes the temp file `temp_name` beside
  /// `path` (best effort, even after cancellation) and rethrows.
  Task<ConfinedResult> removing_temp_on_failure(Task<ConfinedResult> operation, std::string path,
                                                std::string temp_name);

  std::shared_ptr<WorkspaceBackend> backend_;
  SupportsCommands& commands_;
  SupportsShellScripts* scripts_ = nullptr;
  SupportsFileTransfer* transfer_ = nullptr;
  ShellFilesystemLimits limits_;
};

}  // namespace exedev::workspace::detail
