#include "tools/workspace_access.hpp"

#include <exedev/tools/errors.hpp>
#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/unavailable.hpp>

#include <filesystem>


namespace exedev::tools::detail {

void require_workspace(const workspace::Workspace& workspace, const std::string& owner) {
  if (workspace.attached()) return;
  const auto* unavailable = dynamic_cast<const workspace::UnavailableBackend*>(workspace.backend().get());
  if (unavailable != nullptr && dynamic_cast<const workspace::UnattachedBackend*>(unavailable) == nullptr) {
    throw UserError("`" + owner + "` cannot use this workspace: " + unavailable->reason());
  }
  throw UserError("`" + owner +
                  "` needs a workspace, but none is attached to this run. Attach one, for example "
                  "Workspace(std::make_shared<LocalBackend>(\".\")) for a local directory.");
}

bool supports_commands(const workspace::Workspace& workspace) {
  return workspace.attached() && !workspace.read_only() &&
         dynamic_cast<const workspace::SupportsCommands*>(workspace.backend().get()) != nullptr;
}

bool supports_process_sessions(const workspace::Workspace& workspace) {
  return supports_commands(workspace) &&
         dynamic_cast<const workspace::SupportsProcessSessions*>(workspace.backend().get()) != nullptr;
}

namespace {

// Refuses a metadata path that is a symlink: its real path differs from its own spelling.
workspace::Task<void> refuse_symlink(std::shared_ptr<workspace::Workspace> workspace, std::string path) {
  // (The awaited value is named first: GCC 12 miscompiles a co_await compared in a condition.)
  const auto real = co_await workspace->realpath(path);
  if (real != path) throw workspace::WorkspaceError("Refusing to use " + path + ": it is a symlink.");
}

// metadata_dir's checks and creations as one command. The working directory is a real path
// (the backend protocol), so a path below it differs from its real path exactly when it is, or
// passes through, a symlink, which `test -L` on each directory in turn tells.
std::string metadata_setup_script(const std::string& base, const std::string& directory, const std::string& gitignore) {
  const auto symlink = std::to_string(kMetadataSymlink);
  const auto failed = std::to_string(kMetadataFailed);
  return "base=" + workspace::shell_quote(base) + "; dir=" + workspace::shell_quote(directory) +
         "; gi=" + workspace::shell_quote(gitignore) +
         "\nlinked() { if test -L \"$1\"; then printf %s \"$1\"; exit " + symlink + "; fi; }\n"
         "linked \"$base\"; mkdir -p \"$dir\" 2>/dev/null || exit " + failed + "\n"
         "linked \"$base\"; linked \"$dir\"; linked \"$gi\"\n"
         "test -e \"$gi\" || printf '*\\n' > \"$gi\" || exit " + failed + "\n";
}

}  // namespace

workspace::Task<MetadataSetup> metadata_setup(std::shared_ptr<workspace::Workspace> workspace, std::string name) {
  const std::string root = co_await workspace->working_dir();
  MetadataSetup setup;
  setup.base = workspace::normpath(root + "/" + metadata_dir_name);
  setup.directory = workspace::normpath(setup.base + "/" + name);
  setup.script = metadata_setup_script(setup.base, setup.directory, setup.base + "/.gitignore");
  co_return setup;
}

bool metadata_setup_done(int exit_code, const std::string& stdout_text) {
  if (exit_code == kMetadataSymlink && !stdout_text.empty()) {
    throw workspace::WorkspaceError("Refusing to use " + stdout_text + ": it is a symlink.");
  }
  return exit_code == 0;
}

workspace::Task<std::string> metadata_dir(std::shared_ptr<workspace::Workspace> workspace, std::string name) {
  const auto setup = co_await metadata_setup(workspace, name);
  if (supports_commands(*workspace)) {
    // One command where each check would be a request of its own.
    auto command = workspace::Command::shell(setup.script);
    workspace::RunOptions options;
    const auto result = co_await workspace->run(std::move(command), std::move(options));
    if (metadata_setup_done(result.exit_code, result.stdout_text)) co_return setup.directory;
  }
  const std::string& base = setup.base;
  const std::string& directory = setup.directory;
  const std::string gitignore = base + "/.gitignore";
  try {
    co_await refuse_symlink(workspace, base);
    co_await workspace->make_dir(directory);
    co_await refuse_symlink(workspace, base);
    co_await refuse_symlink(workspace, directory);
    co_await refuse_symlink(workspace, gitignore);
    const bool ignored = co_await workspace->exists(gitignore);
    if (!ignored) co_await workspace->write_bytes(gitignore, "*\n");
  } catch (const std::filesystem::filesystem_error& error) {
    throw workspace::WorkspaceError("Cannot create " + directory + ": " + error.code().message());
  }
  co_return directory;
}

}  // namespace exedev::tools::detail
