// FileSystem on LocalBackend and on its commands-only view (every file operation through the
// local shell), the same cases as on SandboxBackend (tests/integration/tools).
#include "unit/tools/file_system_cases.hpp"
#include "unit/workspace/support.hpp"

#include <exedev/testing/co_check.hpp>
#include <exedev/testing/commands_only.hpp>
#include <exedev/testing/run.hpp>
#include <exedev/tools/errors.hpp>
#include <exedev/workspace/local_backend.hpp>
#include <exedev/workspace/unavailable.hpp>

#include <filesystem>

namespace {

using exedev::test::TempDir;
namespace ws = exedev::workspace;
namespace tools = exedev::tools;

void run_case(const std::shared_ptr<ws::WorkspaceBackend>& backend, fs_cases::Case body) {
  auto workspace = std::make_shared<ws::Workspace>(backend);
  exedev::testing::run([&](boost::asio::any_io_executor) { return body(workspace); });
}

}  // namespace

TEST_CASE("FileSystem on LocalBackend", "[tools][file_system][local]") {
  TempDir dir;
  const auto backend = std::make_shared<ws::LocalBackend>(dir.path());
  fs_cases::run_all([&](fs_cases::Case body) { run_case(backend, body); });
}

TEST_CASE("FileSystem on LocalBackend's commands-only view", "[tools][file_system][commands_only]") {
  TempDir dir;
  const auto backend = std::make_shared<exedev::testing::CommandsOnly>(std::make_shared<ws::LocalBackend>(dir.path()));
  fs_cases::run_all([&](fs_cases::Case body) { run_case(backend, body); });
}

TEST_CASE("FileSystem options are checked at construction", "[tools][file_system]") {
  TempDir dir;
  const auto workspace = std::make_shared<ws::Workspace>(std::make_shared<ws::LocalBackend>(dir.path()));
  tools::FileSystemOptions zero;
  zero.max_read_lines = 0;
  CHECK_THROWS_AS(tools::FileSystem(workspace, zero), std::invalid_argument);
  tools::FileSystemOptions negative;
  negative.max_read_chars = -1;
  CHECK_THROWS_AS(tools::FileSystem(workspace, negative), std::invalid_argument);
  tools::FileSystemOptions unknown;
  unknown.tools = {"read_file", "shell", "bash"};
  CHECK_THROWS_WITH(tools::FileSystem(workspace, unknown),
                    "Unknown filesystem tools: bash, shell. Available: read_file, write_file, edit_file, "
                    "list_directory, search_files, find_files, create_directory, file_info, list_files, grep.");
  tools::FileSystemOptions below;
  below.root_dir = "src";
  CHECK_THROWS_AS(tools::FileSystem(workspace, below), tools::UserError);
  for (const char* allowed : {".", "..", "../..", "/anywhere"}) {
    tools::FileSystemOptions fine;
    fine.root_dir = allowed;
    CHECK_NOTHROW(tools::FileSystem(workspace, fine));
  }
  CHECK_THROWS_AS(tools::FileSystem(nullptr), std::invalid_argument);
}

TEST_CASE("FileSystem refuses a workspace that is not attached or outside root_dir", "[tools][file_system]") {
  TempDir dir;
  exedev::testing::run([&](boost::asio::any_io_executor) -> boost::asio::awaitable<void> {
    tools::FileSystem unattached(ws::no_workspace());
    CHECK_THROWS_AS(co_await unattached.tools(), tools::UserError);
    const auto gone = std::make_shared<ws::Workspace>(std::make_shared<ws::UnavailableBackend>("the VM was deleted"));
    tools::FileSystem unavailable(gone);
    try {
      co_await fs_cases::call(unavailable, "read_file", R"({"path": "x"})");
      FAIL("no UserError");
    } catch (const tools::UserError& error) {
      CHECK(std::string(error.what()) == "`FileSystem` cannot use this workspace: the VM was deleted");
    }
    // The working directory must be inside root_dir.
    std::filesystem::create_directories(dir / "inner");
    const auto inner = std::make_shared<ws::Workspace>(std::make_shared<ws::LocalBackend>(dir / "inner"));
    tools::FileSystemOptions elsewhere;
    elsewhere.root_dir = dir / "other";
    std::filesystem::create_directories(dir / "other");
    tools::FileSystem misplaced(inner, elsewhere);
    CHECK_THROWS_AS(co_await fs_cases::call(misplaced, "read_file", R"({"path": "x"})"), tools::UserError);
    // A root above the working directory contains it; paths are shown relative to the working dir.
    tools::FileSystemOptions above;
    above.root_dir = "..";
    tools::FileSystem wide(inner, above);
    std::filesystem::create_directories(dir / "other");
    co_await inner->write_bytes(dir / "other/o.txt", "o\n");
    const auto result = co_await fs_cases::call(wide, "list_directory", R"({"path": "../other"})");
    CHECK(result.outcome == tools::ToolOutcome::success);
    CHECK(result.text == "../other/o.txt  (2 bytes)");
  });
}

TEST_CASE("FileSystem ends the run when the workspace is gone", "[tools][file_system]") {
  auto dir = std::make_unique<TempDir>();
  const auto workspace = std::make_shared<ws::Workspace>(std::make_shared<ws::LocalBackend>(dir->path()));
  const std::string path = dir->path();
  exedev::testing::run([&](boost::asio::any_io_executor) -> boost::asio::awaitable<void> {
    tools::FileSystem files(workspace);
    CO_CHECK((co_await fs_cases::call(files, "list_directory", "{}")).outcome == tools::ToolOutcome::success);
    std::filesystem::remove_all(path);
    const auto result = co_await fs_cases::call(files, "read_file", R"({"path": "x"})");
    CHECK(result.outcome == tools::ToolOutcome::end_run);
    CHECK(result.error != nullptr);
    CHECK_THROWS_AS(std::rethrow_exception(result.error), ws::WorkspaceUnavailableError);
  });
}

TEST_CASE("FileSystem maps a read-only refusal to a failure", "[tools][file_system]") {
  TempDir dir;
  // A wrapper that claims to be writable but refuses like a read-only workspace below it.
  const auto inner = std::make_shared<ws::Workspace>(std::make_shared<ws::LocalBackend>(dir.path()));
  struct RefusingWrites : ws::WrapperWorkspace {
    using WrapperWorkspace::WrapperWorkspace;
    exedev::workspace::Task<void> write_bytes(std::string, ws::Bytes) override {
      throw ws::WorkspaceReadOnlyError(ws::ReadOnlyWorkspace::reason);
      co_return;
    }
  };
  const auto workspace = std::make_shared<RefusingWrites>(inner);
  exedev::testing::run([&](boost::asio::any_io_executor) -> boost::asio::awaitable<void> {
    tools::FileSystem files(workspace);
    const auto result = co_await fs_cases::call(files, "write_file", R"({"path": "x.txt", "content": "x"})");
    CHECK(result.outcome == tools::ToolOutcome::failed);
    CHECK(result.text == "The workspace is read-only; the change was refused.");
  });
}
