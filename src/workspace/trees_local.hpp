#pragma once
// Tree transfers on this machine's filesystem (internal): listing a local tree into a manifest,
// packing the entries a plan sends into a tar archive, and applying an archive to a local
// directory through a staged copy moved into place. Used by LocalBackend (both ends local) and
// by SandboxBackend (this machine's end).

#include <cstdint>
#include <filesystem>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include <exedev/workspace/backend.hpp>

#include "workspace/tar_codec.hpp"
#include "workspace/trees_codec.hpp"

namespace exedev::workspace::detail {

/// The tree under `root` (lstat: symlinks are not followed), without what `filter` excludes and
/// with every file's SHA-256. Other file types go to `others`. A missing root is an empty tree;
/// a root that is not a directory throws filesystem_error(not_a_directory).
[[nodiscard]] TreeManifest list_local_tree(const std::filesystem::path& root, const TreeFilter& filter,
                                           std::vector<std::string>& others);

/// A tar archive of the `paths` of `manifest` read from under `root`, in manifest order.
[[nodiscard]] std::string pack_local_tree(const std::filesystem::path& root, const TreeManifest& manifest,
                                          const std::vector<std::string>& paths);

/// A local directory being made the result of removing paths from it and extracting a tree
/// archive into it, as the archive streams in (a TarVisitor for TarStream): the work is done in
/// a copy beside it (files hard-linked, so nothing is copied), which commit() moves into place by
/// two renames (one when it did not exist; its parents are created). Every member must be an
/// entry of `expected` with its type (and a symlink its target), and gets the entry's mode
/// (permission bits only, whatever the archive says); a member's path may not cross a symlink;
/// a hard link is a copy of a file the archive brought before it. Until commit() succeeds,
/// `destination` is as it was; the copy is removed with the stage.
class TreeStage final : public TarVisitor {
 public:
  /// Makes the copy and removes `remove` from it; `expected` must outlive the stage.
  TreeStage(std::filesystem::path destination, const std::vector<std::string>& remove, const TreeManifest& expected);
  ~TreeStage() override;
  TreeStage(const TreeStage&) = delete;
  TreeStage& operator=(const TreeStage&) = delete;

  void member_begin(const TarEntry& member) override;
  void member_data(std::string_view bytes) override;
  void member_end() override;
  /// Sets the directories' modes and moves the copy into place.
  void commit();

 private:
  void discard() noexcept;
  std::filesystem::path destination_, stage_, old_;
  const TreeManifest& expected_;
  bool existed_ = false;
  bool committed_ = false;
  std::vector<std::pair<std::filesystem::path, std::uint32_t>> cloned_modes_, member_modes_;
  std::set<std::string> written_;  // the files the archive brought, for its hard links
  int file_ = -1;                  // the file whose data is arriving
  std::filesystem::path file_path_;
  std::uint32_t file_mode_ = 0;
};

/// Makes `destination` the result of removing `remove` from it and extracting `archive` into it:
/// the work is done in a copy beside it (files hard-linked, so nothing is copied), which then
/// replaces it by two renames (one when it did not exist; its parents are created). Every member
/// must be an entry of `expected` with its type (and a symlink its target), and gets the
/// entry's mode (permission bits only, whatever the archive says); a member's path may not
/// cross a symlink. On any
/// failure the copy is removed and `destination` is as it was.
void apply_local_tree(const std::filesystem::path& destination, const std::vector<std::string>& remove,
                      std::string_view archive, const TreeManifest& expected);

/// This process's umask (permission bits only), read without changing it.
[[nodiscard]] std::uint32_t process_umask();

/// Counts of a manifest and the refused paths, into a result.
void count_tree(const TreeManifest& manifest, TreeTransferResult& result);

/// upload_tree / download_tree with both ends on this machine (LocalBackend).
[[nodiscard]] TreeTransferResult copy_local_tree(const std::filesystem::path& from, const std::filesystem::path& to,
                                                 const TreeTransferOptions& options);

}  // namespace exedev::workspace::detail
