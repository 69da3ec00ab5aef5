// LocalBackend's files: POSIX calls on the host, with Python's rules for realpath and mkdir -p.
#include <exedev/workspace/local_backend.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <map>
#include <optional>
#include <stdexcept>
#include <vector>

#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/workspace.hpp>

#include "workspace/local_backend_state.hpp"
#include "workspace/shell_filesystem.hpp"

namespace exedev::workspace {

using local::Fd;
using local::is_directory;
using local::throw_errno;

namespace {

void require_absolute(const std::string& path) {
  if (path.empty() || path.front() != '/') throw std::invalid_argument("path must be absolute, got '" + path + "'");
}

// posixpath.split
std::pair<std::string, std::string> posix_split(const std::string& p) {
  const auto i = p.rfind('/') == std::string::npos ? 0 : p.rfind('/') + 1;
  std::string head = p.substr(0, i);
  std::string tail = p.substr(i);
  if (!head.empty() && head.find_first_not_of('/') != std::string::npos) {
    while (!head.empty() && head.back() == '/') head.pop_back();
  }
  return {head, tail};
}

std::string read_link(const std::string& path) {
  std::string buffer(256, '\0');
  while (true) {
    const auto n = ::readlink(path.c_str(), buffer.data(), buffer.size());
    if (n < 0) throw_errno(errno, path, "cannot read symlink");
    if (static_cast<std::size_t>(n) < buffer.size()) return buffer.substr(0, static_cast<std::size_t>(n));
    buffer.resize(buffer.size() * 2);
  }
}

// Python's posixpath._joinrealpath(strict=False): a loop returns the unresolved rest joined on.
std::pair<std::string, bool> join_realpath(std::string path, std::string rest,
                                           std::map<std::string, std::optional<std::string>>& seen) {
  if (!rest.empty() && rest.front() == '/') {
    rest = rest.substr(1);
    // A char, not "/": GCC 12 at -O3 warns falsely about assigning a 1-char literal to a string
    // (-Wrestrict, https://gcc.gnu.org/bugzilla/show_bug.cgi?id=105329).
    path = '/';
  }
  while (!rest.empty()) {
    const auto slash = rest.find('/');
    const std::string name = rest.substr(0, slash);
    rest = slash == std::string::npos ? "" : rest.substr(slash + 1);
    if (name.empty() || name == ".") continue;
    if (name == "..") {
      if (!path.empty()) {
        auto [head, tail] = posix_split(path);
        path = head;
        if (tail == "..") path = detail::posix_join(detail::posix_join(path, ".."), "..");
      } else {
        path = "..";
      }
      continue;
    }
    const auto newpath = detail::posix_join(path, name);
    struct stat st{};
    const bool is_link = ::lstat(newpath.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
    if (!is_link) {
      path = newpath;
      continue;
    }
    if (const auto it = seen.find(newpath); it != seen.end()) {
      if (it->second) {
        path = *it->second;
        continue;
      }
      return {detail::posix_join(newpath, rest), false};  // a loop
    }
    seen[newpath] = std::nullopt;
    auto [resolved, ok] = join_realpath(path, read_link(newpath), seen);
    if (!ok) return {detail::posix_join(resolved, rest), false};
    path = resolved;
    seen[newpath] = path;
  }
  return {path, true};
}

std::string native_realpath(const std::string& path) {
  std::map<std::string, std::optional<std::string>> seen;
  return normpath(join_realpath("", path, seen).first);
}

// mkdir -p. An existing non-directory is file_exists at the end of the path (or `last_error`),
// not_a_directory in the middle, as the OS reports them to os.makedirs.
void make_dirs(const std::string& path, std::errc last_error) {
  std::string current;
  std::size_t start = 1;
  while (start <= path.size()) {
    const auto end = std::min(path.find('/', start), path.size());
    const bool last = end >= path.size() || path.find_first_not_of('/', end) == std::string::npos;
    if (end > start) {
      // Appended in place, not as "/" + substr: GCC 12 at -O3 warns falsely about that
      // concatenation (-Wrestrict, https://gcc.gnu.org/bugzilla/show_bug.cgi?id=105651).
      current += '/';
      current.append(path, start, end - start);
      if (::mkdir(current.c_str(), 0777) != 0) {
        const int error = errno;
        if (error != EEXIST) throw_errno(error, path, "cannot create directory");
        if (!is_directory(current)) throw path_error(last ? last_error : std::errc::not_a_directory, path,
                                                     "cannot create directory");
      }
    }
    if (last) break;
    start = end + 1;
  }
}

int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  return ::remove(path) == 0 ? 0 : errno;
}

}  // namespace

Task<Bytes> LocalBackend::read_bytes(std::string path) {
  require_absolute(path);
  state_->ensure_alive();
  State::FileLock lock(*state_, native_realpath(path));
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) throw_errno(errno, path, "cannot read");
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) throw_errno(errno, path, "cannot read");
  if (S_ISDIR(st.st_mode)) throw path_error(std::errc::is_a_directory, path, "cannot read");
  if (!S_ISREG(st.st_mode)) throw path_error(not_a_regular_file, path, "not a regular file");
  Bytes data;
  data.reserve(static_cast<std::size_t>(st.st_size));
  std::array<char, 64 * 1024> chunk;
  while (true) {
    const auto n = ::read(fd.get(), chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno(errno, path, "cannot read");
    if (n == 0) break;
    data.append(chunk.data(), static_cast<std::size_t>(n));
  }
  co_return data;
}

Task<void> LocalBackend::write_bytes(std::string path, Bytes data) {
  require_absolute(path);
  state_->ensure_alive();
  make_dirs(detail::posix_dirname(path), std::errc::not_a_directory);
  State::FileLock lock(*state_, native_realpath(path));
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    throw path_error(not_a_regular_file, path, "not a regular file");
  }
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666));
  if (fd.get() < 0) throw_errno(errno, path, "cannot write");
  std::size_t written = 0;
  while (written < data.size()) {
    const auto n = ::write(fd.get(), data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno(errno, path, "cannot write");
    written += static_cast<std::size_t>(n);
  }
  if (::close(fd.release()) != 0) throw_errno(errno, path, "cannot write");
  co_return;
}

Task<FileEntry> LocalBackend::stat(std::string path) {
  require_absolute(path);
  state_->ensure_alive();
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw_errno(errno, path, "cannot stat");
  const bool dir = S_ISDIR(st.st_mode);
  FileEntry entry;
  entry.name = detail::posix_basename(normpath(path));
  entry.path = path;
  entry.is_dir = dir;
  if (!dir) entry.size = static_cast<std::uint64_t>(st.st_size);
  co_return entry;
}

Task<std::vector<FileEntry>> LocalBackend::list_dir(std::string path) {
  require_absolute(path);
  state_->ensure_alive();
  DIR* dir = ::opendir(path.c_str());
  if (!dir) throw_errno(errno, path, "cannot list");
  std::vector<FileEntry> entries;
  while (true) {
    errno = 0;  // readdir reports its errors only through errno; stat below may set it
    const dirent* item = ::readdir(dir);
    if (!item) break;
    const std::string name = item->d_name;
    if (name == "." || name == "..") continue;
    FileEntry entry{name, detail::posix_join(path, name), false, std::nullopt};
    struct stat st{};
    if (::stat(entry.path.c_str(), &st) == 0) {  // follows links; a loop or dangling link is a file
      entry.is_dir = S_ISDIR(st.st_mode);
      if (!entry.is_dir) entry.size = static_cast<std::uint64_t>(st.st_size);
    }
    entries.push_back(std::move(entry));
  }
  const int error = errno;
  ::closedir(dir);
  if (error != 0) throw_errno(error, path, "cannot list");
  std::sort(entries.begin(), entries.end(), [](const FileEntry& a, const FileEntry& b) { return a.path < b.path; });
  co_return entries;
}

Task<void> LocalBackend::make_dir(std::string path) {
  require_absolute(path);
  state_->ensure_alive();
  make_dirs(path, std::errc::file_exists);
  co_return;
}

Task<void> LocalBackend::remove(std::string path) {
  require_absolute(path);
  const auto root = state_->ensure_alive();
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) throw_errno(errno, path, "cannot remove");
  if (!S_ISLNK(st.st_mode)) {
    const auto target = native_realpath(path);
    if (target == "/" || target == root || root.rfind(target + "/", 0) == 0) {
      throw std::invalid_argument("cannot remove the workspace root or its ancestor");
    }
  }
  if (S_ISDIR(st.st_mode)) {
    const int error = ::nftw(path.c_str(), remove_entry, 64, FTW_DEPTH | FTW_PHYS);
    if (error != 0) throw_errno(error > 0 ? error : errno, path, "cannot remove");
  } else if (::unlink(path.c_str()) != 0) {
    throw_errno(errno, path, "cannot remove");
  }
  co_return;
}

Task<bool> LocalBackend::exists(std::string path) {
  require_absolute(path);
  state_->ensure_alive();
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0) co_return true;
  const int error = errno;
  // As pathlib's exists(): these mean "no such path"; anything else (EACCES) is an error.
  if (error == ENOENT || error == ENOTDIR || error == EBADF || error == ELOOP) co_return false;
  throw_errno(error, path, "cannot check");
}

Task<std::string> LocalBackend::realpath(std::string path) {
  require_absolute(path);
  state_->ensure_alive();
  co_return native_realpath(path);
}

}  // namespace exedev::workspace
