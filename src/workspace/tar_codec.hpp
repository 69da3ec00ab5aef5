#pragma once
// Tar archives for tree transfers (internal, sans-IO): a writer for the archives this machine
// sends, and a push reader for the archives it receives, which holds one header at a time.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "workspace/trees_codec.hpp"

namespace exedev::workspace::detail {

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
