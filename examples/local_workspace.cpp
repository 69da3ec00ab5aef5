// A local workspace end to end: commands, files, the shell-derived filesystem, a read-only view
// and a timeout, on a temporary directory that the program creates and removes itself.
#include <exedev/testing/commands_only.hpp>
#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/local_backend.hpp>
#include <exedev/workspace/workspace.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>

namespace ws = exedev::workspace;

namespace {

void expect(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("unexpected: " + what);
}

ws::Task<void> demo(const std::string& dir) {
  auto backend = std::make_shared<ws::LocalBackend>(dir, ws::Env{{"GREETING", "hello"}});
  ws::Workspace workspace(backend);
  std::cout << "workspace ref: " << backend->ref()->to_json() << "\n";

  // Commands: a non-zero exit is a result, not an error.
  const auto greeting = co_await workspace.run(ws::Command::shell("printf '%s from %s' \"$GREETING\" \"$(pwd -P)\""));
  std::cout << "command says: " << ws::printable_text(greeting.stdout_text) << "\n";
  // Commands are built in their own statement: GCC 12 miscompiles a braced list inside co_await.
  const auto failing = ws::Command::argv({"sh", "-c", "echo oops >&2; exit 3"});
  const auto failed = co_await workspace.run(failing);
  std::cout << "exit code " << failed.exit_code << ", stderr: " << ws::printable_text(failed.stderr_text);
  expect(failed.exit_code == 3, "exit code 3");

  // Files, with relative paths resolved against the working directory.
  co_await workspace.write_text("notes/todo.txt", "write the docs\n");
  const auto listing = co_await workspace.list_dir("notes");
  std::cout << "notes/ holds " << listing.size() << " entry: " << listing.front().name << "\n";

  // The same files through the shell-derived filesystem (what a commands-only backend gets).
  // CommandsOnly hides everything of the backend but its commands.
  ws::Workspace shell(std::make_shared<exedev::testing::CommandsOnly>(backend));
  const auto text = co_await shell.read_text("notes/todo.txt");
  expect(text == "write the docs\n", "shell read");
  co_await shell.write_bytes("notes/binary.bin", std::string("\0\xff\n", 3));
  expect((co_await workspace.read_bytes("notes/binary.bin")) == std::string("\0\xff\n", 3), "binary round trip");
  std::cout << "shell-derived filesystem read: " << text;

  // A read-only view refuses changes with a message the agent can act on.
  ws::ReadOnlyWorkspace read_only(std::make_shared<ws::Workspace>(backend));
  try {
    co_await read_only.write_text("notes/todo.txt", "overwritten");
    expect(false, "read-only write succeeded");
  } catch (const ws::WorkspaceReadOnlyError& e) {
    std::cout << "read-only: " << e.what() << "\n";
  }

  // A timeout stops the command's whole process group.
  ws::RunOptions options;
  options.timeout = ws::Seconds(0.5);
  try {
    const auto sleep = ws::Command::argv({"sleep", "30"});
    co_await workspace.run(sleep, options);
    expect(false, "sleep finished");
  } catch (const ws::WorkspaceTimeoutError& e) {
    std::cout << "timeout: " << e.what() << "\n";
  }
}

}  // namespace

int main() {
  std::string dir = (std::filesystem::temp_directory_path() / "exedev-example-XXXXXX").string();
  if (!::mkdtemp(dir.data())) {
    std::perror("mkdtemp");
    return 1;
  }
  int status = 0;
  boost::asio::io_context io;
  boost::asio::co_spawn(io, demo(dir), [&](std::exception_ptr error) {
    if (!error) return;
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      std::cerr << "error: " << e.what() << "\n";
      status = 1;
    }
  });
  io.run();
  std::filesystem::remove_all(dir);
  return status;
}
