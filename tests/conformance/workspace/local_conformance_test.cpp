// The conformance suite on LocalBackend and on a commands-only view of it (which certifies the
// shell-derived filesystem on a real shell).
#include <exedev/testing/commands_only.hpp>
#include <exedev/testing/conformance.hpp>
#include <exedev/workspace/local_backend.hpp>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>


namespace {

using exedev::testing::BackendPtr;
using exedev::workspace::LocalBackend;
using exedev::workspace::WorkspaceRef;

// Temp directories of this process, removed when it exits.
class TempDirs {
 public:
  ~TempDirs() {
    for (const auto& dir : dirs_) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }
  std::string make() {
    std::string pattern = (std::filesystem::temp_directory_path() / "exedev-local-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::system_error(errno, std::generic_category(), "mkdtemp");
    std::lock_guard lock(mutex_);
    dirs_.push_back(pattern);
    return pattern;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> dirs_;
};

TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}

boost::asio::awaitable<void> destroy(BackendPtr backend) {
  std::filesystem::remove_all(backend->ref()->id);
  co_return;
}

}  // namespace

// LocalBackend's ref exists from construction, so it has no uninitialized state for the
// concurrent-first-use rule (as in the reference suite, which gives it no fresh_backend).
EXEDEV_BACKEND_SUITE(local_backend_suite) {
  exedev::testing::BackendSuite suite;
  suite.name = "LocalBackend";
  suite.backend = [](boost::asio::any_io_executor) { return std::make_shared<LocalBackend>(temp_dirs().make()); };
  suite.destructive_backend = suite.backend;
  suite.attach_backend = [](boost::asio::any_io_executor, const WorkspaceRef& ref) -> BackendPtr {
    return std::make_shared<LocalBackend>(ref.id);
  };
  suite.destroy_environment = destroy;
  return suite;
}

EXEDEV_BACKEND_SUITE(commands_only_suite) {
  exedev::testing::BackendSuite suite;
  suite.name = "CommandsOnlyLocalBackend";
  suite.backend = [](boost::asio::any_io_executor) -> BackendPtr {
    return std::make_shared<exedev::testing::CommandsOnly>(std::make_shared<LocalBackend>(temp_dirs().make()));
  };
  suite.destructive_backend = suite.backend;
  suite.attach_backend = [](boost::asio::any_io_executor, const WorkspaceRef& ref) -> BackendPtr {
    return std::make_shared<exedev::testing::CommandsOnly>(std::make_shared<LocalBackend>(ref.id));
  };
  suite.destroy_environment = destroy;
  return suite;
}
