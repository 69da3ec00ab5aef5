// Uses the package the way a user does: public headers only, linked through exedev:: targets.
// It touches every installed library: the coroutine runner (exedev::testing), a local
// workspace (exedev::workspace), and a VM workspace (exedev::exedev) on the in-process
// emulator (exedev::emulator) over real TLS, and the file tools (exedev::tools). It also finds the emulator program through the
// package (EXEDEV_EMULATOR_PROGRAM, from the exedev::exedev-emulator target).
#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/exedev.hpp>
#include <exedev/testing/run.hpp>
#include <exedev/tools/file_system.hpp>
#include <exedev/workspace/local_backend.hpp>

#include <boost/asio/awaitable.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

namespace {

namespace asio = boost::asio;
namespace ws = exedev::workspace;

int failures = 0;

void expect(bool condition, const char* what) {
  if (!condition) {
    std::cerr << "consumer check failed: " << what << "\n";
    ++failures;
  }
}

// One round trip through a workspace: a file written is read back, a command sees it.
asio::awaitable<void> round_trip(ws::Workspace& workspace, const char* label) {
  co_await workspace.write_text("consumer/hello.txt", "hello\n");
  const auto text = co_await workspace.read_text("consumer/hello.txt");
  expect(text == "hello\n", label);
  const auto command = ws::Command::shell("cat consumer/hello.txt");
  const auto result = co_await workspace.run(command);
  expect(result.exit_code == 0 && result.stdout_text == "hello\n", label);
}

// The file tools over a workspace: a model's read_file call sees the file with its header.
asio::awaitable<void> file_tool(std::shared_ptr<ws::Workspace> workspace) {
  exedev::tools::FileSystem files(std::move(workspace));
  exedev::tools::ToolCallContext context;  // a named variable: GCC 12 and braced lists, see README
  const auto result = co_await files.call("read_file", R"({"path": "consumer/hello.txt"})", std::move(context));
  expect(result.outcome == exedev::tools::ToolOutcome::success && result.text.find("     1\thello\n") != std::string::npos,
         "FileSystem read_file");
}

}  // namespace

int main() try {
  char directory_template[] = "/tmp/exedev-consumer-XXXXXX";
  const char* directory = ::mkdtemp(directory_template);
  if (directory == nullptr) throw std::runtime_error("mkdtemp failed");

  exedev::emulator::Emulator emulator;
  auto sandbox = std::make_shared<exedev::SandboxBackend>(exedev::SandboxBackendOptions{
      .spec = exedev::VMSpec({.name = "consumer-vm"}), .client_options = exedev::emulator::client_options(emulator)});

  exedev::testing::run([&](asio::any_io_executor) -> asio::awaitable<void> {
    ws::Workspace local(std::make_shared<ws::LocalBackend>(directory));
    co_await round_trip(local, "local workspace round trip");
    co_await file_tool(std::make_shared<ws::Workspace>(std::make_shared<ws::LocalBackend>(directory)));
    ws::Workspace vm(sandbox);
    co_await round_trip(vm, "VM workspace round trip");
    co_await sandbox->close();
  });
  expect(emulator.vms().size() == 1, "exactly one VM was provisioned");
#ifdef EXEDEV_EMULATOR_PROGRAM
  expect(std::filesystem::is_regular_file(EXEDEV_EMULATOR_PROGRAM), "the exedev-emulator program is where its target says");
#endif

  std::filesystem::remove_all(directory);
  if (failures != 0) return 1;
  std::cout << "consumer ok\n";
  return 0;
} catch (const std::exception& error) {
  std::cerr << "consumer: " << error.what() << "\n";
  return 1;
}
