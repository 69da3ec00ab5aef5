#pragma once
// The workspace backend conformance suite: the 38 rules of the reference WorkspaceBackendSuite
// as Catch2 (v2) test cases, plus this library's rules on live output and the login shell. Certify a backend by describing it in a BackendSuite and
// registering it from a test executable linked with exedev::testing and Catch2's main:
//
//   #include <exedev/coawait_guard.hpp>
#include <exedev/testing/conformance.hpp>
//   EXEDEV_BACKEND_SUITE(my_backend_suite) {
//     exedev::testing::BackendSuite suite;
//     suite.name = "MyBackend";
//     suite.backend = [](boost::asio::any_io_executor) { return std::make_shared<MyBackend>(...); };
//     return suite;
//   }
//
// Each rule becomes a Catch2 test case named "<suite name>: <rule name>" tagged
// [conformance][<suite name>] and runs on a fresh io_context (exedev::testing::run) with its
// own backend from the fixture. Command rules skip for a backend without SupportsCommands;
// file rules go through Workspace, so a commands-only backend is certified on the
// shell-derived filesystem. Catch2 v2 cannot mark a test skipped: a skipped rule WARNs
// "skipped: <reason>", is counted, and the counts are printed when the run ends.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <exedev/testing/run.hpp>
#include <exedev/workspace/backend.hpp>

namespace exedev::testing {

using BackendPtr = std::shared_ptr<workspace::WorkspaceBackend>;
/// Builds a backend for one rule; the executor is the rule's fresh io_context.
using BackendFactory = std::function<BackendPtr(boost::asio::any_io_executor)>;
/// Builds a second backend that attaches to the environment a ref names.
using AttachFactory = std::function<BackendPtr(boost::asio::any_io_executor, const workspace::WorkspaceRef&)>;
/// Destroys the environment behind a backend.
using DestroyEnvironment = std::function<boost::asio::awaitable<void>(BackendPtr)>;

/// What the suite needs to know about a backend (the reference suite's fixtures and switches).
struct BackendSuite {
  /// Prefix of every test case name; also a Catch2 tag.
  std::string name{};
  /// Required: the backend under test. Called once per rule.
  BackendFactory backend{};
  /// An uninitialized backend (no environment yet, ref() nullopt) for the concurrent-first-use
  /// rule. Empty: that rule skips.
  BackendFactory fresh_backend{};
  /// An independent environment the suite may destroy; empty: defaults to fresh_backend.
  BackendFactory destructive_backend{};
  /// Enables the reattach rules.
  AttachFactory attach_backend{};
  /// Enables the destroy rules (with destructive_backend or fresh_backend).
  DestroyEnvironment destroy_environment{};

  /// Set false only if the transport cannot report exit independently of pipe EOF.
  bool can_detect_exit_with_inherited_output_pipes = true;
  /// Set false only for a test double with no POSIX processes and filesystem.
  bool has_real_posix_shell = true;
  /// Set false only for an in-memory double without real path traversal.
  bool enforces_parent_file_errors = true;
  /// Set false for provider file APIs that bypass the command user's permissions.
  bool filesystem_honors_shell_permissions = true;
  /// Set true when shell commands run in a bash login shell (exe.dev's default image): the
  /// login-shell rule then runs bash-only syntax. False (default): that rule skips.
  bool shell_is_bash_login_shell = false;

  /// Hang guard of each rule (the rules' own waits are 30 s and 60 s at most).
  std::chrono::milliseconds rule_deadline = std::chrono::minutes(3);
  EXEDEV_COAWAIT_GUARD;
};

/// The rule names, in the reference suite's order (test_has_the_required_members, ...), with
/// this library's own rules after the command rules they extend.
[[nodiscard]] const std::vector<std::string>& backend_suite_rule_names();

/// Registers the rules of `suite` as Catch2 test cases. Call before Catch2 runs (at static
/// initialization: see EXEDEV_BACKEND_SUITE). Throws std::invalid_argument without a backend
/// fixture or a name.
void register_backend_suite(BackendSuite suite);

/// Runs one rule of `suite` inside the current Catch2 test case (for suites assembled by hand).
/// Returns false if the rule skipped (its reason was WARNed and counted).
bool run_backend_rule(const BackendSuite& suite, const std::string& rule);

/// Skips recorded so far in this process: "<suite>: <rule>: <reason>".
[[nodiscard]] std::vector<std::string> backend_suite_skips();

}  // namespace exedev::testing

#define EXEDEV_BACKEND_SUITE_CAT2(a, b) a##b
#define EXEDEV_BACKEND_SUITE_CAT(a, b) EXEDEV_BACKEND_SUITE_CAT2(a, b)
/// Defines `static exedev::testing::BackendSuite fn()` (write its body after the macro) and
/// registers the suite it returns at static initialization.
#define EXEDEV_BACKEND_SUITE(fn)                                                                   \
  static ::exedev::testing::BackendSuite fn();                                                      \
  namespace {                                                                                       \
  [[maybe_unused]] const bool EXEDEV_BACKEND_SUITE_CAT(exedev_backend_suite_registered_, fn) =                      \
      (::exedev::testing::register_backend_suite(fn()), true);                                      \
  }                                                                                                 \
  static ::exedev::testing::BackendSuite fn()
