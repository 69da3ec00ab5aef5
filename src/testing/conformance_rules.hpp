#pragma once
// What the conformance suite's rules share: the rule's context, the skip signal, and the
// helpers the rules are written with. The rules: conformance_commands.cpp (commands, the ref,
// env) and conformance_files.cpp (files, attaching, destroying); the registry: conformance.cpp.
// Internal.

#include <exedev/testing/conformance.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>

#include <chrono>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <exedev/workspace/workspace.hpp>

#include "common/coroutines.hpp"

namespace exedev::testing::conformance {

namespace asio = boost::asio;
namespace ws = exedev::workspace;
using namespace std::chrono_literals;
using ws::Command;
using ws::CommandResult;
using ws::RunOptions;
using ws::Task;
using ws::Workspace;

/// Thrown by a rule that does not apply to the backend under test.
struct SkipRule {
  std::string reason;
};

struct Rule {
  const BackendSuite& suite;
  asio::any_io_executor ex;
  BackendPtr backend;
  std::shared_ptr<Workspace> ws;
};

/// The backend's commands, or SkipRule.
ws::SupportsCommands& commands(const BackendPtr& backend);

/// SkipRule unless the suite says the backend has a real POSIX shell.
void need_real_shell(const Rule& r);

// An argv list from its items (the helpers below take a vector).
template <typename... Items>
std::vector<std::string> cmd(Items... items) {
  return {std::string(items)...};
}

Task<CommandResult> argv(const BackendPtr& b, std::vector<std::string> items, RunOptions options);
// Overloads rather than defaulted options: a default would be a temporary of the caller's
// co_await, which GCC 12 miscompiles (and the options' guard refuses).
Task<CommandResult> argv(const BackendPtr& b, std::vector<std::string> items);
Task<CommandResult> shell(const BackendPtr& b, std::string line, RunOptions options);
Task<CommandResult> shell(const BackendPtr& b, std::string line);

/// A hang guard: fails the rule if `op` takes longer than `limit` (and cancels it).
Task<void> within(Task<void> op, std::chrono::steady_clock::duration limit, std::string what);

/// Polls `predicate` every 50 ms until it is true; false once `limit` has passed.
Task<bool> poll_until(std::function<Task<bool>()> predicate, std::chrono::steady_clock::duration limit);

std::string describe(const std::exception& e);

// Expects `op` to throw E (and `check` to accept it).
template <typename E, typename T>
Task<void> expect_throw(Task<T> op, std::string what, std::function<bool(const E&)> check = {}) {
  std::string failure;
  try {
    co_await std::move(op);
    failure = what + ": no exception was thrown";
  } catch (const E& e) {
    if (check && !check(e)) failure = what + ": wrong error: " + describe(e);
  } catch (const std::exception& e) {
    failure = what + ": unexpected exception: " + describe(e);
  }
  if (!failure.empty()) FAIL(failure);
  SUCCEED(what);
}

template <typename T>
Task<void> expect_errc(Task<T> op, std::errc code, std::string what) {
  // Named first: GCC 12 destroys a lambda's by-value captures in a co_await expression twice.
  const auto has_code = [code](const std::filesystem::filesystem_error& e) { return e.code() == code; };
  co_await expect_throw<std::filesystem::filesystem_error>(
      std::move(op), what + " (expected " + std::make_error_code(code).message() + ")", has_code);
}

/// Runs `body`, then `cleanup` whatever body did; rethrows body's error first, else cleanup's.
Task<void> with_cleanup(Task<void> body, Task<void> cleanup);

/// The reference suite's scratch directory: <working_dir>/.exedev-conformance-<hex>, removed after.
Task<void> with_scratch(Rule& r, std::function<Task<void>(std::string)> body);

// Runs `task` concurrently with the caller; `done` and `error` report its end.
struct Background {
  std::shared_ptr<bool> done = std::make_shared<bool>(false);
  std::shared_ptr<std::exception_ptr> error = std::make_shared<std::exception_ptr>();
  std::shared_ptr<asio::cancellation_signal> cancel = std::make_shared<asio::cancellation_signal>();

  void start(const asio::any_io_executor& ex, Task<void> task) {
    asio::co_spawn(ex, std::move(task),
                   // The handler holds the signal: the task's cancellation slot refers to it
                   // until the task's end, even when this Background is gone first.
                   asio::bind_cancellation_slot(cancel->slot(), [done = done, error = error, cancel = cancel](std::exception_ptr e) {
                     *done = true;
                     *error = e;
                   }));
  }
  /// Whether the task ended within `limit`.
  Task<bool> wait(std::chrono::steady_clock::duration limit) const { return wait_flag(done, limit); }

 private:
  static Task<bool> wait_flag(std::shared_ptr<bool> flag, std::chrono::steady_clock::duration limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!*flag) {
      if (std::chrono::steady_clock::now() >= until) co_return false;
      co_await exedev::detail::sleep_for(50ms);
    }
    co_return true;
  }
};

using RuleBody = Task<void> (*)(Rule&);
using RuleTable = std::vector<std::pair<std::string, RuleBody>>;

/// The command rules, then the ref's and env's, in the reference suite's order.
const RuleTable& command_rules();
/// The file rules, then attaching and destroying, in the reference suite's order.
const RuleTable& file_rules();
/// The process-session rules (conformance_sessions.cpp).
const RuleTable& session_rules();

}  // namespace exedev::testing::conformance
