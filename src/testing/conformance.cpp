// The workspace backend conformance suite: the helpers its rules share, and the registry that
// turns each rule (conformance_commands.cpp, conformance_files.cpp) into a Catch2 test per
// backend suite. One coroutine per rule of the reference WorkspaceBackendSuite, in its order and
// under its names, plus this library's rules on live output and the login shell.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <exedev/testing/conformance.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <type_traits>

#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/workspace.hpp>

#include <exedev/testing/co_check.hpp>

#include "common/coroutines.hpp"
#include "common/random_ids.hpp"
#include "testing/conformance_rules.hpp"

namespace exedev::testing {
namespace conformance {

using exedev::detail::capture;
using exedev::detail::sleep_for;

// The argv/shell form of a command is a type in C++: rule 2's TypeError is a compile error.
static_assert(!std::is_constructible_v<Command, std::string>);
static_assert(!std::is_constructible_v<Command, std::vector<std::string>>);

ws::SupportsCommands& commands(const BackendPtr& backend) {
  auto* c = dynamic_cast<ws::SupportsCommands*>(backend.get());
  if (!c) throw SkipRule{"the backend does not support commands"};
  return *c;
}

void need_real_shell(const Rule& r) {
  if (!r.suite.has_real_posix_shell) throw SkipRule{"has_real_posix_shell is false"};
}

Task<CommandResult> argv(const BackendPtr& b, std::vector<std::string> items, RunOptions options) {
  co_return co_await commands(b).run(Command::argv(std::move(items)), std::move(options));
}

Task<CommandResult> argv(const BackendPtr& b, std::vector<std::string> items) {
  return argv(b, std::move(items), RunOptions{});
}

Task<CommandResult> shell(const BackendPtr& b, std::string line, RunOptions options) {
  co_return co_await commands(b).run(Command::shell(std::move(line)), std::move(options));
}

Task<CommandResult> shell(const BackendPtr& b, std::string line) { return shell(b, std::move(line), RunOptions{}); }

Task<void> within(Task<void> op, std::chrono::steady_clock::duration limit, std::string what) {
  using namespace asio::experimental::awaitable_operators;
  asio::steady_timer timer(co_await asio::this_coro::executor, limit);
  auto outcome = co_await (capture(std::move(op)) || timer.async_wait(asio::use_awaitable));
  if (outcome.index() == 1) FAIL(what << " did not finish in time");
  if (auto error = std::get<0>(outcome)) std::rethrow_exception(error);
}

Task<bool> poll_until(std::function<Task<bool>()> predicate, std::chrono::steady_clock::duration limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (true) {
    const bool met = co_await predicate();
    if (met) co_return true;
    if (std::chrono::steady_clock::now() >= until) co_return false;
    co_await sleep_for(50ms);
  }
}

std::string describe(const std::exception& e) { return e.what(); }

Task<void> with_cleanup(Task<void> body, Task<void> cleanup) {
  std::exception_ptr error;
  try {
    co_await std::move(body);
  } catch (...) {
    error = std::current_exception();
  }
  try {
    co_await std::move(cleanup);
  } catch (...) {
    if (!error) error = std::current_exception();
  }
  if (error) std::rethrow_exception(error);
}

Task<void> with_scratch(Rule& r, std::function<Task<void>(std::string)> body) {
  const auto dir = co_await r.ws->resolve(".exedev-conformance-" + exedev::detail::random_hex(16));
  co_await r.ws->make_dir(dir);
  co_await with_cleanup(body(dir), r.ws->remove(dir));
}

}  // namespace conformance

namespace asio = boost::asio;
using conformance::Rule;
using conformance::RuleBody;
using conformance::SkipRule;
using workspace::Task;
using workspace::Workspace;

namespace {

std::mutex& skips_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::string>& skips() {
  static std::vector<std::string> v;
  return v;
}
int& rules_run() {
  static int n = 0;
  return n;
}

const conformance::RuleTable& rules() {
  static const conformance::RuleTable table = [] {
    auto all = conformance::command_rules();
    const auto& files = conformance::file_rules();
    all.insert(all.end(), files.begin(), files.end());
    const auto& sessions = conformance::session_rules();
    all.insert(all.end(), sessions.begin(), sessions.end());
    return all;
  }();
  return table;
}

class RuleInvoker final : public Catch::ITestInvoker {
 public:
  RuleInvoker(std::shared_ptr<const BackendSuite> suite, std::string rule)
      : suite_(std::move(suite)), rule_(std::move(rule)) {}
  void invoke() const override { run_backend_rule(*suite_, rule_); }

 private:
  std::shared_ptr<const BackendSuite> suite_;
  std::string rule_;
};

// Prints the skips at the end of the run: Catch2 v2 has no "skipped" state of its own.
class SkipSummary final : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;
  void testRunEnded(const Catch::TestRunStats& stats) override {
    const auto skipped = backend_suite_skips();
    if (rules_run() > 0) {
      Catch::cout() << "exedev conformance: " << rules_run() << " rules run, " << skipped.size() << " skipped\n";
      for (const auto& skip : skipped) Catch::cout() << "  skipped " << skip << "\n";
    }
    TestEventListenerBase::testRunEnded(stats);
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(SkipSummary)

const std::vector<std::string>& backend_suite_rule_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, body] : rules()) out.push_back(name);
    return out;
  }();
  return names;
}

void register_backend_suite(BackendSuite suite) {
  if (!suite.backend) throw std::invalid_argument("BackendSuite needs a backend fixture");
  if (suite.name.empty()) throw std::invalid_argument("BackendSuite needs a name");
  auto shared = std::make_shared<const BackendSuite>(std::move(suite));
  for (const auto& [name, body] : rules()) {
    const std::string test_name = shared->name + ": " + name;
    // Rule 28 depends on file permissions, which root bypasses: tagged so that a runner can
    // run it without that privilege (tests/run_permission_checks.sh).
    const std::string tags = "[conformance][" + shared->name + "]" +
                             (name == "test_permission_denied_uses_builtin_error" ? "[permissions]" : "");
    // The registry takes ownership of the invoker, as with Catch's own macros.
    Catch::AutoReg(new RuleInvoker(shared, name), CATCH_INTERNAL_LINEINFO, Catch::StringRef(),
                   Catch::NameAndTags(Catch::StringRef(test_name), Catch::StringRef(tags)));
  }
}

bool run_backend_rule(const BackendSuite& suite, const std::string& rule) {
  const auto& table = rules();
  const auto it = std::find_if(table.begin(), table.end(), [&](const auto& entry) { return entry.first == rule; });
  if (it == table.end()) throw std::invalid_argument("unknown conformance rule: " + rule);
  const RuleBody body = it->second;
  {
    std::lock_guard lock(skips_mutex());
    ++rules_run();
  }
  try {
    RunLimits limits;
    limits.deadline = suite.rule_deadline;
    exedev::testing::run(
        [&](asio::any_io_executor ex) -> Task<void> {
          auto backend = suite.backend(ex);
          REQUIRE(backend != nullptr);
          Rule r{suite, ex, backend, std::make_shared<Workspace>(backend)};
          co_await body(r);
        },
        limits);
  } catch (const SkipRule& skip) {
    WARN("skipped: " << skip.reason);
    std::lock_guard lock(skips_mutex());
    skips().push_back(suite.name + ": " + rule + ": " + skip.reason);
    return false;
  }
  return true;
}

std::vector<std::string> backend_suite_skips() {
  std::lock_guard lock(skips_mutex());
  return skips();
}

}  // namespace exedev::testing
