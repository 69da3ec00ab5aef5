// FileSystem on SandboxBackend over the emulator: one emulator and one VM for the whole binary,
// every case in a directory of its own.
#include "unit/tools/file_system_cases.hpp"

#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/exedev.hpp>
#include <exedev/testing/run.hpp>

#include <exception>
#include <memory>

namespace {

using namespace std::chrono_literals;

exedev::emulator::Emulator& emulator() {
  static exedev::emulator::Emulator instance;
  return instance;
}

// One VM for every case; the backend makes a new client on each run after close().
const std::shared_ptr<exedev::SandboxBackend>& sandbox() {
  static const auto backend = [] {
    exedev::SandboxBackendOptions o;
    o.spec = exedev::VMSpec({.working_dir = "workspace"});
    o.scope_tag = "tools";
    o.client_options = exedev::emulator::client_options(emulator());
    o.readiness.poll_interval = 100ms;
    return std::make_shared<exedev::SandboxBackend>(std::move(o));
  }();
  return backend;
}

boost::asio::awaitable<void> run_then_close(fs_cases::Case body) {
  auto workspace = std::make_shared<exedev::workspace::Workspace>(sandbox());
  std::exception_ptr failure;
  try {
    co_await body(workspace);
  } catch (...) {
    failure = std::current_exception();
  }
  co_await sandbox()->close();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace

TEST_CASE("FileSystem on SandboxBackend", "[tools][file_system][sandbox]") {
  exedev::testing::RunLimits limits;
  limits.deadline = 120s;
  limits.settle = 5s;
  fs_cases::run_all([&](fs_cases::Case body) {
    exedev::testing::run([&](boost::asio::any_io_executor) { return run_then_close(body); }, limits);
  });
}
