#include <exedev/workspace/workspace.hpp>

#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/unavailable.hpp>

#include <stdexcept>
#include <typeinfo>

#include "workspace/read_only.hpp"
#include "workspace/shell_filesystem.hpp"

namespace exedev::workspace {

std::string normpath(const std::string& path) {
  if (path.empty()) return ".";
  std::size_t initial_slashes = path.front() == '/' ? 1 : 0;
  if (initial_slashes && path.rfind("//", 0) == 0 && path.rfind("///", 0) != 0) initial_slashes = 2;
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    std::string comp = path.substr(start, end - start);
    start = end + 1;
    if (comp.empty() || comp == ".") continue;
    if (comp != ".." || (!initial_slashes && parts.empty()) || (!parts.empty() && parts.back() == "..")) {
      parts.push_back(std::move(comp));
    } else if (!parts.empty()) {
      parts.pop_back();
    }
  }
  std::string out(initial_slashes, '/');
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += '/';
    out += parts[i];
  }
  return out.empty() ? "." : out;
}

namespace {

// One of `backend`'s capabilities, or the shell-derived filesystem standing in for it; `ops` is
// null when there is neither. Built per call, not cached: a backend's capabilities are what its
// type says now.
template <typename Capability>
struct CapabilityView {
  std::unique_ptr<detail::ShellFilesystem> shell;
  Capability* ops = nullptr;
};

template <typename Capability>
CapabilityView<Capability> shell_derived(const std::shared_ptr<WorkspaceBackend>& backend) {
  CapabilityView<Capability> view;
  if (auto* commands = dynamic_cast<SupportsCommands*>(backend.get())) {
    view.shell = std::make_unique<detail::ShellFilesystem>(backend, *commands);
    view.ops = view.shell.get();
  }
  return view;
}

// The filesystem a facade's file methods use.
CapabilityView<SupportsFilesystem> filesystem_of(const std::shared_ptr<WorkspaceBackend>& backend) {
  if (auto* native = dynamic_cast<SupportsFilesystem*>(backend.get())) return {nullptr, native};
  auto view = shell_derived<SupportsFilesystem>(backend);
  if (!view.ops) {
    throw WorkspaceUsageError(
        "This workspace does not support filesystem operations. Attach a backend that implements "
        "`SupportsFilesystem` or `SupportsCommands`.");
  }
  return view;
}

}  // namespace

Workspace::Workspace(std::shared_ptr<WorkspaceBackend> backend) : backend_(std::move(backend)) {
  if (!backend_) throw std::invalid_argument("Workspace needs a backend, got a null pointer");
}

const std::shared_ptr<WorkspaceBackend>& Workspace::backend() const {
  if (const auto* inner = dynamic_cast<const Workspace*>(backend_.get())) return inner->backend();
  return backend_;
}

bool Workspace::read_only() const {
  if (const auto* inner = dynamic_cast<const Workspace*>(backend_.get())) return inner->read_only();
  return false;
}

bool Workspace::attached() const {
  if (const auto* inner = dynamic_cast<const Workspace*>(backend_.get())) return inner->attached();
  return dynamic_cast<const UnavailableBackend*>(backend_.get()) == nullptr;
}

std::optional<WorkspaceRef> Workspace::ref() const { return backend_->ref(); }

Task<std::string> Workspace::working_dir() { return backend_->working_dir(); }

Task<CommandResult> Workspace::run(Command command, RunOptions options) {
  validate_timeout(options.timeout);
  if (!command.is_shell() && command.args().empty()) throw std::invalid_argument("command must not be empty");
  auto* commands = dynamic_cast<SupportsCommands*>(backend_.get());
  if (!commands) throw WorkspaceUsageError("This workspace does not support command execution.");
  auto keep = backend_;
  co_return co_await commands->run(std::move(command), std::move(options));
}

ShellFilesystemLimits Workspace::shell_filesystem_limits() const {
  if (const auto* commands = dynamic_cast<const SupportsCommands*>(backend_.get())) {
    return commands->shell_filesystem_limits();
  }
  return {};
}

namespace {

SupportsTreeTransfer& tree_transfer(const std::shared_ptr<WorkspaceBackend>& backend) {
  auto* trees = dynamic_cast<SupportsTreeTransfer*>(backend.get());
  if (!trees) throw WorkspaceUsageError("This workspace does not support tree transfers.");
  return *trees;
}

}  // namespace

Task<TreeTransferResult> Workspace::upload_tree(std::string local_dir, std::string remote_dir, TreeTransferOptions options) {
  auto& trees = tree_transfer(backend_);
  auto keep = backend_;
  const std::string path = co_await resolve(std::move(remote_dir));
  co_return co_await trees.upload_tree(std::move(local_dir), path, std::move(options));
}

Task<TreeTransferResult> Workspace::download_tree(std::string remote_dir, std::string local_dir, TreeTransferOptions options) {
  auto& trees = tree_transfer(backend_);
  auto keep = backend_;
  const std::string path = co_await resolve(std::move(remote_dir));
  co_return co_await trees.download_tree(path, std::move(local_dir), std::move(options));
}

Task<std::string> Workspace::resolve(std::string path, std::optional<std::string> base) {
  if (base && (base->empty() || base->front() != '/')) {
    throw std::invalid_argument("base must be an absolute path, got '" + *base + "'");
  }
  if (!path.empty() && path.front() == '/') co_return normpath(path);
  // Not a conditional expression: GCC 12 double-destroys a temporary of `?:` around co_await.
  std::string root;
  if (base) {
    root = *base;
  } else {
    root = co_await working_dir();
  }
  co_return normpath(detail::posix_join(root, path));
}

Task<Bytes> Workspace::read_bytes(std::string path) {
  auto resolved = co_await resolve(std::move(path));
  auto view = filesystem_of(backend_);
  co_return co_await view.ops->read_bytes(std::move(resolved));
}

Task<void> Workspace::write_bytes(std::string path, Bytes data) {
  auto resolved = co_await resolve(std::move(path));
  auto view = filesystem_of(backend_);
  co_await view.ops->write_bytes(std::move(resolved), std::move(data));
}

Task<FileEntry> Workspace::stat(std::string path) {
  auto resolved = co_await resolve(std::move(path));
  auto view = filesystem_of(backend_);
  co_return co_await view.ops->stat(std::move(resolved));
}

Task<std::vector<FileEntry>> Workspace::list_dir(std::string path) {
  auto resolved = co_await resolve(std::move(path));
  auto view = filesystem_of(backend_);
  co_return co_await view.ops->list_dir(std::move(resolved));
}

Task<void> Workspace::make_dir(std::string path) {
  auto resolved = co_await resolve(std::move(path));
  auto view = filesystem_of(backend_);
  co_await view.ops->make_dir(std::move(resolved));
}

Task<void> Workspace::remove(std::string path) {
  auto resolved = co_await resolve(std::move(path));
  auto view = filesystem_of(backend_);
  co_await view.ops->remove(std::move(resolved));
}

Task<bool> Workspace::exists(std::string path) {
  auto resolved = co_await resolve(std::move(path));
  auto view = filesystem_of(backend_);
  co_return co_await view.ops->exists(std::move(resolved));
}

Task<std::string> Workspace::realpath(std::string path) {
  // Joined without normalizing, so that `link/..` climbs from the link's target.
  if (path.empty() || path.front() != '/') path = detail::posix_join(co_await working_dir(), path);
  if (auto* native = dynamic_cast<SupportsRealpath*>(backend_.get())) {
    auto keep = backend_;
    co_return co_await native->realpath(std::move(path));
  }
  if (auto* commands = dynamic_cast<SupportsCommands*>(backend_.get())) {
    detail::ShellFilesystem shell(backend_, *commands);
    co_return co_await shell.realpath(std::move(path));
  }
  co_return normpath(path);
}

namespace {

// The confined operations of `backend`: its own, else the shell-derived filesystem's for a
// backend with commands and no native filesystem; null otherwise (the caller declines).
CapabilityView<SupportsConfinedFiles> confined_of(const std::shared_ptr<WorkspaceBackend>& backend) {
  if (auto* own = dynamic_cast<SupportsConfinedFiles*>(backend.get())) return {nullptr, own};
  if (dynamic_cast<SupportsFilesystem*>(backend.get()) != nullptr) return {};
  return shell_derived<SupportsConfinedFiles>(backend);
}

// Runs `call` on `backend`'s confined operations, the backend kept alive until it ends, or
// declines when there are none. `call` may capture by reference only (ADR 7).
template <typename Call>
Task<ConfinedResult> confined_call(std::shared_ptr<WorkspaceBackend> backend, Call call) {
  auto view = confined_of(backend);
  if (!view.ops) {
    ConfinedResult declined;  // named: GCC 12 can lose an aggregate built in co_return
    co_return declined;
  }
  co_return co_await call(*view.ops);
}

}  // namespace

Task<ConfinedResult> Workspace::confined_read(ConfinedTarget target, ConfinedReadOptions what) {
  co_return co_await confined_call(backend_, [&](SupportsConfinedFiles& files) {
    return files.confined_read(std::move(target), what);
  });
}

Task<ConfinedResult> Workspace::confined_write(ConfinedTarget target, Bytes data, std::string expected_sha256) {
  co_return co_await confined_call(backend_, [&](SupportsConfinedFiles& files) {
    return files.confined_write(std::move(target), std::move(data), std::move(expected_sha256));
  });
}

Task<ConfinedResult> Workspace::confined_make_dir(ConfinedTarget target) {
  co_return co_await confined_call(backend_, [&](SupportsConfinedFiles& files) {
    return files.confined_make_dir(std::move(target));
  });
}

Task<ConfinedResult> Workspace::confined_splice(ConfinedTarget target, ConfinedSplice splice) {
  co_return co_await confined_call(backend_, [&](SupportsConfinedFiles& files) {
    return files.confined_splice(std::move(target), std::move(splice));
  });
}

Task<std::string> Workspace::read_text(std::string path) {
  const std::string shown = path;
  Bytes data = co_await read_bytes(std::move(path));
  if (!is_valid_utf8(data)) throw std::range_error("'" + shown + "' is not valid UTF-8 text");
  co_return data;
}

Task<void> Workspace::write_text(std::string path, std::string content) {
  co_await write_bytes(std::move(path), std::move(content));
}

std::vector<std::type_index> workspace_layers(const Workspace& workspace) {
  std::vector<std::type_index> layers;
  const WorkspaceBackend* layer = &workspace;
  while (const auto* facade = dynamic_cast<const Workspace*>(layer)) {
    if (typeid(*facade) != typeid(Workspace)) layers.emplace_back(typeid(*facade));
    layer = facade->backend_.get();
  }
  layers.emplace_back(typeid(*layer));
  return layers;
}

WrapperWorkspace::WrapperWorkspace(std::shared_ptr<Workspace> wrapped)
    : Workspace(wrapped), wrapped_(std::move(wrapped)) {}

Task<ConfinedResult> WrapperWorkspace::confined_read(ConfinedTarget, ConfinedReadOptions) {
  ConfinedResult declined;
  co_return declined;
}

Task<ConfinedResult> WrapperWorkspace::confined_write(ConfinedTarget, Bytes, std::string) {
  ConfinedResult declined;
  co_return declined;
}

Task<ConfinedResult> WrapperWorkspace::confined_make_dir(ConfinedTarget) {
  ConfinedResult declined;
  co_return declined;
}

Task<ConfinedResult> WrapperWorkspace::confined_splice(ConfinedTarget, ConfinedSplice) {
  ConfinedResult declined;
  co_return declined;
}

Task<ConfinedResult> ReadOnlyWorkspace::confined_read(ConfinedTarget target, ConfinedReadOptions what) {
  return Workspace::confined_read(std::move(target), what);
}

Task<CommandResult> ReadOnlyWorkspace::run(Command, RunOptions) {
  return detail::refused_as_read_only<CommandResult>();
}

Task<void> ReadOnlyWorkspace::write_bytes(std::string, Bytes) { return detail::refused_as_read_only<void>(); }

Task<void> ReadOnlyWorkspace::make_dir(std::string) { return detail::refused_as_read_only<void>(); }

Task<void> ReadOnlyWorkspace::remove(std::string) { return detail::refused_as_read_only<void>(); }

Task<TreeTransferResult> ReadOnlyWorkspace::upload_tree(std::string, std::string, TreeTransferOptions) {
  return detail::refused_as_read_only<TreeTransferResult>();
}

}  // namespace exedev::workspace
