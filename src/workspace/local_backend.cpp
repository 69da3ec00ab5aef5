// LocalBackend: its state, the working directory and the constructor. Commands and files are in
// local_backend_commands.cpp and local_backend_files.cpp.
#include <exedev/workspace/local_backend.hpp>

#include <fmt/format.h>

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <vector>

#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/workspace.hpp>

#include "workspace/local_backend_state.hpp"
#include "workspace/shell_filesystem.hpp"

namespace exedev::workspace {

namespace local {

bool is_directory(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace local

using local::is_directory;
using local::throw_errno;

std::string LocalBackend::State::ensure_alive() {
  std::string dir;
  {
    std::lock_guard lock(mutex);
    dir = resolved;
  }
  if (dir.empty()) {
    char* real = ::realpath(ref.id.c_str(), nullptr);
    if (real) {
      dir = real;
      std::free(real);
    }
  }
  if (dir.empty() || !is_directory(dir)) {
    throw WorkspaceUnavailableError(fmt::format("local workspace directory {} does not exist", ref.id));
  }
  std::lock_guard lock(mutex);
  resolved = dir;
  return dir;
}

namespace {

// A user's home directory from the password database, or nullopt.
std::optional<std::string> password_home(const std::optional<std::string>& user) {
  std::vector<char> buffer(16384);
  struct passwd entry {};
  struct passwd* found = nullptr;
  const int error = user ? ::getpwnam_r(user->c_str(), &entry, buffer.data(), buffer.size(), &found)
                         : ::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &found);
  if (error != 0 || found == nullptr || found->pw_dir == nullptr) return std::nullopt;
  return std::string(found->pw_dir);
}

// Python's posixpath.expanduser: `~` is HOME (the password database when HOME is unset),
// `~user` that user's home; an unknown user leaves the path as written.
std::string expand_user(const std::string& path) {
  if (path.empty() || path.front() != '~') return path;
  const auto slash = std::min(path.find('/', 1), path.size());
  std::optional<std::string> home;
  if (slash == 1) {
    const char* env_home = std::getenv("HOME");
    home = env_home ? std::optional<std::string>(env_home) : password_home(std::nullopt);
  } else {
    home = password_home(path.substr(1, slash - 1));
  }
  if (!home) return path;
  while (!home->empty() && home->back() == '/') home->pop_back();
  const std::string expanded = *home + path.substr(slash);
  return expanded.empty() ? "/" : expanded;
}

}  // namespace

LocalBackend::LocalBackend(std::string working_dir, Env env) : state_(std::make_shared<State>()) {
  working_dir = expand_user(working_dir);
  if (working_dir.empty() || working_dir.front() != '/') {
    std::string cwd(4096, '\0');
    if (!::getcwd(cwd.data(), cwd.size())) throw_errno(errno, ".", "cannot read the current directory");
    working_dir = detail::posix_join(cwd.c_str(), working_dir);
  }
  state_->ref = WorkspaceRef{"local", normpath(working_dir)};
  state_->env = std::move(env);
}

LocalBackend::~LocalBackend() = default;

std::optional<WorkspaceRef> LocalBackend::ref() const { return state_->ref; }

Task<std::string> LocalBackend::working_dir() { co_return state_->ensure_alive(); }

}  // namespace exedev::workspace
