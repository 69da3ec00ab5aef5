#include "workspace/trees_local.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <set>
#include <stdexcept>
#include <system_error>
#include <utility>

#include <exedev/workspace/errors.hpp>

#include "common/random_ids.hpp"
#include "workspace/data_codec.hpp"

namespace exedev::workspace::detail {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void throw_errno(int error, const fs::path& path, const char* what) {
  throw fs::filesystem_error(what, path, std::error_code(error, std::generic_category()));
}

// Reads the file at `path` in pieces, each to `take`.
template <typename Take>
void read_pieces(const fs::path& path, Take take) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw_errno(errno, path, "cannot read file");
  std::string buffer(64 * 1024, '\0');
  for (;;) {
    const auto n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      throw_errno(error, path, "cannot read file");
    }
    if (n == 0) break;
    take(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
  }
  ::close(fd);
}

std::string read_whole(const fs::path& path) {
  std::string data;
  read_pieces(path, [&](std::string_view piece) { data.append(piece); });
  return data;
}

// Writes all of `data` to `fd` (the file at `path`, for the error).
void write_all(int fd, std::string_view data, const fs::path& path) {
  while (!data.empty()) {
    const auto n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno(errno, path, "cannot write file");
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

struct stat lstat_of(const fs::path& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) throw_errno(errno, path, "cannot stat");
  return info;
}

void list_into(const fs::path& root, const std::string& relative, const TreeFilter& filter, TreeManifest& manifest,
               std::vector<std::string>& others) {
  const fs::path directory = relative.empty() ? root : root / relative;
  std::vector<std::string> names;
  for (const auto& item : fs::directory_iterator(directory)) names.push_back(item.path().filename().string());
  for (const auto& name : names) {
    const std::string path = relative.empty() ? name : relative + "/" + name;
    const fs::path full = root / path;
    const struct stat info = lstat_of(full);
    TreeEntry entry;
    entry.mode = info.st_mode & 07777;
    if (S_ISDIR(info.st_mode)) {
      entry.type = TreeEntryType::directory;
    } else if (S_ISREG(info.st_mode)) {
      entry.type = TreeEntryType::file;
    } else if (S_ISLNK(info.st_mode)) {
      entry.type = TreeEntryType::symlink;
      entry.mode = 0777;
    } else {
      if (!filter.excludes(path, false)) others.push_back(path);
      continue;
    }
    if (filter.excludes(path, entry.type == TreeEntryType::directory)) continue;
    if (entry.type == TreeEntryType::file) {
      // Hashed as it is read: a tree's files need no memory of their size.
      exedev::detail::Sha256 hash;
      read_pieces(full, [&](std::string_view piece) {
        entry.size += piece.size();
        hash.update(piece);
      });
      entry.sha256 = hash.finish_hex();
    } else if (entry.type == TreeEntryType::symlink) {
      entry.target = fs::read_symlink(full).string();
    }
    const bool is_dir = entry.type == TreeEntryType::directory;
    manifest.emplace(path, std::move(entry));
    if (is_dir) list_into(root, path, filter, manifest, others);
  }
}

// Whether a component of `path` below `root` (not `path` itself) is anything but a directory.
void require_plain_parents(const fs::path& root, const std::string& path) {
  for (auto slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    const fs::path parent = root / path.substr(0, slash);
    struct stat info {};
    if (::lstat(parent.c_str(), &info) != 0) throw_errno(errno, parent, "a tree member's directory is missing");
    if (!S_ISDIR(info.st_mode)) throw_errno(ENOTDIR, parent, "a tree member's path crosses a non-directory");
  }
}

using DirectoryModes = std::vector<std::pair<fs::path, std::uint32_t>>;

// A copy of `from` at `to`: directories made anew (their modes into `modes`, to be set once
// everything is in), files hard-linked, symlinks recreated.
void clone_tree(const fs::path& from, const fs::path& to, DirectoryModes& modes) {
  const struct stat info = lstat_of(from);
  if (::mkdir(to.c_str(), 0700) != 0) throw_errno(errno, to, "cannot create directory");
  modes.emplace_back(to, info.st_mode & 07777);
  for (const auto& item : fs::directory_iterator(from)) {
    const fs::path target = to / item.path().filename();
    const struct stat child = lstat_of(item.path());
    if (S_ISDIR(child.st_mode)) {
      clone_tree(item.path(), target, modes);
    } else if (S_ISLNK(child.st_mode)) {
      fs::create_symlink(fs::read_symlink(item.path()), target);
    } else if (::link(item.path().c_str(), target.c_str()) != 0) {
      throw_errno(errno, target, "cannot link file");
    }
  }
}

// Sets the modes deepest first, so that a read-only directory still took its contents.
void set_modes(const DirectoryModes& modes) {
  for (auto it = modes.rbegin(); it != modes.rend(); ++it) {
    if (::chmod(it->first.c_str(), it->second) != 0) throw_errno(errno, it->first, "cannot set mode");
  }
}

void remove_entry(const fs::path& path) {
  std::error_code error;
  fs::remove_all(path, error);
  if (error) throw fs::filesystem_error("cannot remove", path, error);
}

}  // namespace

std::uint32_t process_umask() {
  // /proc/self/status reads it without changing it (umask(2) can only set it, racing other
  // threads that create files meanwhile).
  if (FILE* status = std::fopen("/proc/self/status", "re")) {
    char line[256];
    unsigned value = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, status) != nullptr) found = std::sscanf(line, "Umask: %o", &value) == 1;
    std::fclose(status);
    if (found) return value & 0777;
  }
  const mode_t mask = ::umask(022);
  ::umask(mask);
  return static_cast<std::uint32_t>(mask) & 0777;
}

TreeManifest list_local_tree(const fs::path& root, const TreeFilter& filter, std::vector<std::string>& others) {
  TreeManifest manifest;
  struct stat info {};
  if (::stat(root.c_str(), &info) != 0) {
    if (errno == ENOENT) return manifest;
    throw_errno(errno, root, "cannot stat");
  }
  if (!S_ISDIR(info.st_mode)) throw_errno(ENOTDIR, root, "not a directory");
  list_into(root, {}, filter, manifest, others);
  return manifest;
}

std::string pack_local_tree(const fs::path& root, const TreeManifest& manifest, const std::vector<std::string>& paths) {
  // The files arrive as of now (GNU tar sets what the archive says), so builds see them as new.
  TarWriter writer(static_cast<std::uint64_t>(std::time(nullptr)));
  for (const auto& path : paths) {
    const TreeEntry& entry = manifest.at(path);
    switch (entry.type) {
      case TreeEntryType::directory: writer.add_directory(path, entry.mode); break;
      case TreeEntryType::symlink: writer.add_symlink(path, entry.target); break;
      case TreeEntryType::file: {
        const std::string data = read_whole(root / path);
        writer.add_file(path, entry.mode, data);
        break;
      }
    }
  }
  return writer.finish();
}

TreeStage::TreeStage(fs::path destination, const std::vector<std::string>& remove, const TreeManifest& expected)
    : destination_(std::move(destination)), expected_(expected) {
  const fs::path parent = destination_.parent_path();
  fs::create_directories(parent);
  const std::string tag = exedev::detail::random_hex(8);
  stage_ = parent / ("." + destination_.filename().string() + ".exedev-stage-" + tag);
  old_ = parent / ("." + destination_.filename().string() + ".exedev-old-" + tag);
  struct stat info {};
  existed_ = ::lstat(destination_.c_str(), &info) == 0;
  if (existed_ && !S_ISDIR(info.st_mode)) throw_errno(ENOTDIR, destination_, "not a directory");
  try {
    if (existed_) {
      clone_tree(destination_, stage_, cloned_modes_);
    } else if (::mkdir(stage_.c_str(), 0755) != 0) {
      throw_errno(errno, stage_, "cannot create directory");
    }
    for (const auto& path : remove) {
      if (!is_tree_path(path)) throw WorkspaceError("a path to remove is not inside the tree");
      require_plain_parents(stage_, path);
      remove_entry(stage_ / path);
    }
  } catch (...) {
    discard();
    throw;
  }
}

TreeStage::~TreeStage() { discard(); }

void TreeStage::discard() noexcept {
  if (file_ >= 0) ::close(file_);
  file_ = -1;
  if (committed_ || stage_.empty()) return;
  std::error_code ignored;
  fs::remove_all(stage_, ignored);
  stage_.clear();
}

void TreeStage::member_begin(const TarEntry& member) {
  const auto it = expected_.find(member.path);
  if (!is_tree_path(member.path) || it == expected_.end() || it->second.type != member.type ||
      (member.type == TreeEntryType::symlink && member.target != it->second.target)) {
    throw WorkspaceError("the tree archive holds a member that was not asked for");
  }
  // The mode is the manifest's (restrict_modes decided it), never the archive's header: only
  // permission bits, whatever either says.
  const std::uint32_t mode = it->second.mode & 0777;
  require_plain_parents(stage_, member.path);
  const fs::path target = stage_ / member.path;
  struct stat present {};
  const bool exists = ::lstat(target.c_str(), &present) == 0;
  if (member.type == TreeEntryType::directory) {
    if (exists && !S_ISDIR(present.st_mode)) remove_entry(target);
    if ((!exists || !S_ISDIR(present.st_mode)) && ::mkdir(target.c_str(), 0700) != 0) {
      throw_errno(errno, target, "cannot create directory");
    }
    member_modes_.emplace_back(target, mode);
    return;
  }
  if (exists) remove_entry(target);
  if (member.type == TreeEntryType::symlink) {
    fs::create_symlink(member.target, target);
    return;
  }
  if (member.link_to) {
    // A hard link: a copy of a file this archive brought earlier.
    if (written_.count(*member.link_to) == 0) throw WorkspaceError("a hard link in the tree archive names no file before it");
    fs::copy_file(stage_ / *member.link_to, target);
    if (::chmod(target.c_str(), mode) != 0) throw_errno(errno, target, "cannot set mode");
    written_.insert(member.path);
    return;
  }
  file_ = ::open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (file_ < 0) throw_errno(errno, target, "cannot create file");
  file_path_ = target;
  file_mode_ = mode;
  written_.insert(member.path);
}

void TreeStage::member_data(std::string_view bytes) {
  if (file_ < 0) return;
  write_all(file_, bytes, file_path_);
}

void TreeStage::member_end() {
  if (file_ < 0) return;
  const int fd = std::exchange(file_, -1);
  const bool done = ::fchmod(fd, file_mode_) == 0;
  const int error = errno;
  if (::close(fd) != 0 || !done) throw_errno(done ? errno : error, file_path_, "cannot write file");
}

void TreeStage::commit() {
  if (file_ >= 0) throw WorkspaceError("the tree archive ended inside a member");
  set_modes(cloned_modes_);
  set_modes(member_modes_);
  if (existed_ && ::rename(destination_.c_str(), old_.c_str()) != 0) throw_errno(errno, destination_, "cannot move aside");
  if (::rename(stage_.c_str(), destination_.c_str()) != 0) {
    const int error = errno;
    if (existed_) ::rename(old_.c_str(), destination_.c_str());
    throw_errno(error, destination_, "cannot move into place");
  }
  committed_ = true;
  if (existed_) {
    std::error_code ignored;
    fs::remove_all(old_, ignored);
  }
}

void apply_local_tree(const fs::path& destination, const std::vector<std::string>& remove, std::string_view archive,
                      const TreeManifest& expected) {
  TreeStage stage(destination, remove, expected);
  TarStream stream(stage);
  stream.feed(archive);
  stream.finish();
  stage.commit();
}

void count_tree(const TreeManifest& manifest, TreeTransferResult& result) {
  for (const auto& [path, entry] : manifest) {
    switch (entry.type) {
      case TreeEntryType::file: ++result.files; break;
      case TreeEntryType::directory: ++result.directories; break;
      case TreeEntryType::symlink: ++result.symlinks; break;
    }
  }
}

TreeTransferResult copy_local_tree(const fs::path& from, const fs::path& to, const TreeTransferOptions& options) {
  const TreeFilter filter(options.excludes);
  TreeTransferResult result;
  struct stat info {};
  if (::stat(from.c_str(), &info) != 0) throw_errno(errno, from, "cannot read tree");
  TreeManifest source = list_local_tree(from, filter, result.refused);
  restrict_modes(source, 0777);  // as apply_local_tree writes them
  for (auto& path : drop_escaping_symlinks(source)) result.refused.push_back(std::move(path));
  std::vector<std::string> ignored;
  TreeManifest destination = list_local_tree(to, filter, ignored);
  const TreePlan plan = plan_tree(source, destination);
  count_tree(source, result);
  result.entries_removed = plan.remove.size();
  for (const auto& path : plan.send) result.files_sent += source.at(path).type == TreeEntryType::file ? 1 : 0;
  if (plan.empty() && ::stat(to.c_str(), &info) == 0) return result;
  const std::string archive = pack_local_tree(from, source, plan.send);
  result.archive_bytes = archive.size();
  apply_local_tree(to, plan.remove, archive, source);
  if (options.on_progress) {
    TreeProgress progress;
    progress.bytes_done = progress.bytes_total = result.archive_bytes;
    progress.files_done = progress.files_total = result.files_sent;
    options.on_progress(progress);
  }
  return result;
}

}  // namespace exedev::workspace::detail
