// Conformance rules 1 and 2 can fail: each runs on LocalBackend behind a view with one defect,
// in a test case Catch2 counts as passed only if the rule fails ([!shouldfail]), and on the
// same view without a defect, where the rule must pass.
#include <catch2/catch.hpp>

#include <exedev/testing/conformance.hpp>
#include <exedev/workspace/local_backend.hpp>

#include <memory>
#include <stdexcept>
#include <string>

#include "unit/workspace/support.hpp"

namespace ws = exedev::workspace;

using exedev::test::TempDir;

namespace {

enum class Defect {
  none,
  empty_provider,        // ref() {"", id}
  unstable_ref,          // every ref() read differs
  relative_working_dir,  // working_dir() without its leading '/'
  zero_read_page,        // shell_filesystem_limits() the derived filesystem cannot use
  runs_empty_argv,       // run(argv{}) returns a result
  crashes_on_empty_argv, // run(argv{}) reads argv[0] with at(): std::out_of_range
  argv_through_shell,    // a non-empty argv joined into a shell line unquoted
};

class DefectiveBackend final : public ws::WorkspaceBackend, public ws::SupportsCommands {
 public:
  DefectiveBackend(const std::string& dir, Defect defect)
      : inner_(std::make_shared<ws::LocalBackend>(dir)), defect_(defect) {}

  [[nodiscard]] std::optional<ws::WorkspaceRef> ref() const override {
    auto ref = inner_->ref();
    if (defect_ == Defect::empty_provider) ref->provider.clear();
    if (defect_ == Defect::unstable_ref) ref->id += "/" + std::to_string(++ref_reads_);
    return ref;
  }

  ws::Task<std::string> working_dir() override {
    auto dir = co_await inner_->working_dir();
    if (defect_ == Defect::relative_working_dir) dir.erase(0, 1);
    co_return dir;
  }

  ws::Task<ws::CommandResult> run(ws::Command command, ws::RunOptions options) override {
    if (!command.is_shell() && defect_ == Defect::runs_empty_argv && command.args().empty()) {
      co_return ws::CommandResult{};
    }
    if (!command.is_shell() && defect_ == Defect::crashes_on_empty_argv) {
      (void)command.args().at(0);
    }
    if (!command.is_shell() && defect_ == Defect::argv_through_shell && !command.args().empty()) {
      std::string line;
      for (const auto& item : command.args()) line += (line.empty() ? "" : " ") + item;
      command = ws::Command::shell(line);
    }
    co_return co_await inner_->run(std::move(command), std::move(options));
  }

  [[nodiscard]] ws::ShellFilesystemLimits shell_filesystem_limits() const override {
    auto limits = inner_->shell_filesystem_limits();
    if (defect_ == Defect::zero_read_page) limits.read_page_bytes = 0;
    return limits;
  }

 private:
  std::shared_ptr<ws::LocalBackend> inner_;
  Defect defect_;
  mutable int ref_reads_ = 0;
};

// Runs one rule on a DefectiveBackend over a fresh directory.
void run_rule(const char* rule, Defect defect) {
  TempDir dir;
  exedev::testing::BackendSuite suite;
  suite.name = "DefectiveBackend";
  suite.backend = [&dir, defect](boost::asio::any_io_executor) -> exedev::testing::BackendPtr {
    return std::make_shared<DefectiveBackend>(dir.path(), defect);
  };
  const bool ran = exedev::testing::run_backend_rule(suite, rule);
  REQUIRE(ran);  // the rule did not skip
}

constexpr const char* kRule1 = "test_has_the_required_members";
constexpr const char* kRule2 = "test_command_form_must_match_shell";

}  // namespace

TEST_CASE("conformance rules 1 and 2 pass for a backend without defects", "[unit][workspace]") {
  run_rule(kRule1, Defect::none);
  run_rule(kRule2, Defect::none);
}

TEST_CASE("conformance rule 1 fails for a ref with an empty provider", "[unit][workspace][!shouldfail]") {
  run_rule(kRule1, Defect::empty_provider);
}

TEST_CASE("conformance rule 1 fails for a ref that changes on every read", "[unit][workspace][!shouldfail]") {
  run_rule(kRule1, Defect::unstable_ref);
}

TEST_CASE("conformance rule 1 fails for a relative working directory", "[unit][workspace][!shouldfail]") {
  run_rule(kRule1, Defect::relative_working_dir);
}

TEST_CASE("conformance rule 1 fails for unusable shell filesystem sizes", "[unit][workspace][!shouldfail]") {
  run_rule(kRule1, Defect::zero_read_page);
}

TEST_CASE("conformance rule 2 fails for a backend that runs an empty argv", "[unit][workspace][!shouldfail]") {
  run_rule(kRule2, Defect::runs_empty_argv);
}

TEST_CASE("conformance rule 2 fails for a backend that throws the wrong error on an empty argv",
          "[unit][workspace][!shouldfail]") {
  run_rule(kRule2, Defect::crashes_on_empty_argv);
}

TEST_CASE("conformance rule 2 fails for a backend that hands an argv to a shell", "[unit][workspace][!shouldfail]") {
  run_rule(kRule2, Defect::argv_through_shell);
}
