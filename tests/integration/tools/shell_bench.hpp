#pragma once
// Helpers of the Shell tool tests: a Bench reaches one environment through a first backend and
// through a second one attached by ref, on LocalBackend or SandboxBackend (emulator).
#include "integration/sandbox/fixture.hpp"

#include <nlohmann/json.hpp>

#include <exedev/testing/co_check.hpp>

#include <exedev/tools/errors.hpp>
#include <exedev/tools/shell.hpp>
#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/local_backend.hpp>
#include <exedev/workspace/unavailable.hpp>
#include <exedev/workspace/workspace.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

using namespace sbx;
namespace ws = exedev::workspace;
namespace tools = exedev::tools;
using tools::ToolOutcome;
using tools::ToolResult;

namespace shell_test {

/// One environment reached through a first backend, and through a second one attached by ref.
class Bench {
 public:
  explicit Bench(std::string kind) : kind_(std::move(kind)) {
    if (kind_ == "local") {
      std::string pattern = (std::filesystem::temp_directory_path() / "exedev-shell-XXXXXX").string();
      local_dir_ = ::mkdtemp(pattern.data());
    } else {
      fixture_.emplace();
    }
  }
  ~Bench() {
    if (!local_dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(local_dir_, ignored);
    }
  }

  [[nodiscard]] const std::string& kind() const { return kind_; }

  bool skip() { return fixture_ && fixture_->skip("the emulator's VM directories on this machine"); }

  /// The workspace over the first backend (a sandbox one provisions its VM on first use).
  std::shared_ptr<ws::Workspace> first() {
    if (!first_) first_ = std::make_shared<ws::Workspace>(make_backend(std::nullopt));
    return first_;
  }

  /// A workspace over a new backend attached to the first one's environment by its ref.
  std::shared_ptr<ws::Workspace> second() {
    REQUIRE(first()->ref());
    auto backend = make_backend(first()->ref());
    return std::make_shared<ws::Workspace>(std::move(backend));
  }

  Task<void> close() {
    for (auto& backend : sandboxes_) co_await backend->close();
  }

 private:
  std::shared_ptr<ws::WorkspaceBackend> make_backend(std::optional<ws::WorkspaceRef> ref) {
    if (kind_ == "local") {
      return std::make_shared<ws::LocalBackend>(ref ? ref->id : local_dir_);
    }
    auto backend = fixture_->backend(std::move(ref), fixture_->spec());
    sandboxes_.push_back(backend);
    return backend;
  }

  std::string kind_;
  std::string local_dir_;
  std::optional<Fixture> fixture_;
  std::shared_ptr<ws::Workspace> first_;
  std::vector<std::shared_ptr<exedev::SandboxBackend>> sandboxes_;
};

/// Runs `body` on each backend (the test case runs once per generated kind), on a fresh
/// io_context, then closes the sandbox backends' clients; returns at once where the bench skips.
inline void on_each_backend(const std::function<Task<void>(Bench&)>& body) {
  Bench bench(GENERATE(as<std::string>{}, "local", "sandbox"));
  INFO("backend: " << bench.kind());
  if (bench.skip()) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    co_await body(bench);
    co_await bench.close();
  }, limits());
}

std::string args(const nlohmann::json& json) { return json.dump(); }

std::string command_args(const std::string& command) {
  nlohmann::json json;
  json["command"] = command;
  return json.dump();
}

std::string id_args(const std::string& id) {
  nlohmann::json json;
  json["command_id"] = id;
  return json.dump();
}

/// A call in `context` whose outcome must be `outcome`; returns its text. (Callers pass a named
/// context: GCC 12 miscompiles a braced list in a co_await expression.)
Task<std::string> call_in(tools::Shell& shell, std::string name, std::string arguments, tools::ToolCallContext context,
                          ToolOutcome outcome = ToolOutcome::success) {
  const auto result = co_await shell.call(std::move(name), std::move(arguments), std::move(context));
  INFO(result.text);
  CHECK(result.outcome == outcome);
  co_return result.text;
}

Task<std::string> call(tools::Shell& shell, std::string name, std::string arguments,
                       ToolOutcome outcome = ToolOutcome::success) {
  tools::ToolCallContext none;
  co_return co_await call_in(shell, std::move(name), std::move(arguments), std::move(none), outcome);
}

Task<std::string> run(tools::Shell& shell, std::string command, ToolOutcome outcome = ToolOutcome::success) {
  co_return co_await call(shell, "run_command", command_args(command), outcome);
}

/// The ID in start_command's answer.
std::string started_id(const std::string& text) {
  const std::regex pattern("^Started background command: .*\nID: ([0-9a-f]{32})$");
  std::smatch match;
  REQUIRE(std::regex_match(text, match, pattern));
  return match[1];
}

/// Polls check_command until its answer contains `needle` (the test's deadline bounds it).
Task<std::string> check_until(tools::Shell& shell, std::string id, std::string needle) {
  for (;;) {
    const auto text = co_await call(shell, "check_command", id_args(id));
    if (text.find(needle) != std::string::npos) co_return text;
    co_await sleep_for(50ms);
  }
}

/// Waits until `path` exists in the workspace and returns its contents.
Task<std::string> wait_for_file(ws::Workspace& workspace, std::string path) {
  for (;;) {
    const bool there = co_await workspace.exists(path);
    if (there) break;
    co_await sleep_for(50ms);
  }
  for (;;) {
    auto text = co_await workspace.read_text(path);
    if (!text.empty() && text.back() == '\n') co_return text;
    co_await sleep_for(50ms);
  }
}

/// Whether process `pid` still runs in the environment (a zombie awaiting its reaper is gone).
Task<bool> process_alive(ws::Workspace& workspace, std::string pid) {
  auto command = ws::Command::shell("kill -0 " + pid + " 2> /dev/null && ! grep -q ') Z' /proc/" + pid + "/stat");
  const auto result = co_await workspace.run(std::move(command));
  co_return result.exit_code == 0;
}

/// CHECK(value == expected) for a value that is co_awaited: evaluated once, shown on failure.
#define CHECK_TEXT(value, expected)      \
  do {                                   \
    const auto checked_value_ = (value); \
    CHECK(checked_value_ == (expected)); \
  } while (false)

}  // namespace shell_test
