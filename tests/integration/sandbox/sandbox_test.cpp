// Sandbox: a workspace per run (new, by ref, fresh), the run's end closing its client and keeping
// the VM, vms() and destroy().
#include "fixture.hpp"

#include <exedev/testing/co_check.hpp>

using namespace sbx;
using exedev::workspace::Command;

TEST_CASE("Sandbox gives each run a workspace: a new VM, the same VM by ref, or a fresh one", "[integration][live]") {
  Fixture f;
  if (f.skip()) return;
  exedev::SandboxOptions options;
  options.spec = f.spec({.working_dir = "app"});
  options.scope_tag = f.scope();
  options.client_options = f.client_options();
  options.readiness = f.readiness();
  options.env = {{"RUN_ENV", "from-sandbox"}};
  const exedev::Sandbox sandbox(options);
  exedev::testing::run([&](Executor) -> Task<void> {
    std::optional<exedev::workspace::WorkspaceRef> first;
    co_await sandbox.with_run(std::nullopt, [&](exedev::SandboxRun& run) -> Task<void> {
      co_await run.workspace->write_text("notes.txt", "from the first run");
      const auto env = co_await run.workspace->run(Command::shell("printf %s \"$RUN_ENV\""));
      CHECK(env.stdout_text == "from-sandbox");
      first = run.backend->ref();
    });
    REQUIRE(first);
    // A second run on the same VM, by ref.
    co_await sandbox.with_run(first, [&](exedev::SandboxRun& run) -> Task<void> {
      CHECK(run.backend->ref() == first);
      const bool outcome_1 = co_await run.workspace->read_text("notes.txt") == "from the first run";  // (not inside CHECK: GCC 12 and Catch's temporaries)
      CHECK(outcome_1);
    });
    // A fresh VM on request, although a ref is at hand.
    std::optional<exedev::workspace::WorkspaceRef> fresh;
    auto run = sandbox.open_run(first, true);
    CHECK_FALSE(run.backend->ref());
    const bool outcome_2 = co_await run.workspace->exists("notes.txt");  // (not inside CHECK: GCC 12 and Catch's temporaries)
    CHECK_FALSE(outcome_2);
    fresh = run.backend->ref();
    co_await sandbox.finish_run(run);
    REQUIRE(fresh);
    CHECK(*fresh != *first);
    // The VM outlives its run; vms() and destroy() manage it.
    auto vms = sandbox.vms();
    CO_CHECK((co_await vms.inspect(*first)).status.kind == exedev::VMStatus::Kind::running);
    co_await vms.close();
    const bool outcome_3 = co_await sandbox.destroy(*fresh);  // (not inside CHECK: GCC 12 and Catch's temporaries)
    CHECK(outcome_3);
    const bool outcome_4 = co_await sandbox.destroy(*fresh);  // (not inside CHECK: GCC 12 and Catch's temporaries)
    CHECK_FALSE(outcome_4);
    CHECK_THROWS_AS(sandbox.open_run(exedev::workspace::WorkspaceRef{"local", "/tmp"}), std::invalid_argument);
  }, limits(600s));
  if (!live_mode()) {
    CHECK(f.emu().vms().size() == 1);
    CHECK(f.count("new") == 2);
  }
}

TEST_CASE("a cancelled run still closes its client before the cancellation reaches the caller", "[integration]") {
  Fixture f;
  if (f.skip("the emulator's connection count")) return;
  exedev::SandboxOptions options;
  options.spec = f.spec();
  options.scope_tag = f.scope();
  options.client_options = f.client_options();
  options.readiness = f.readiness();
  const exedev::Sandbox sandbox(options);
  exedev::testing::run([&](Executor) -> Task<void> {
    bool started = false;
    std::optional<exedev::workspace::WorkspaceRef> ref;
    const auto error = co_await cancel_when(
        sandbox.with_run(std::nullopt,
                         [&](exedev::SandboxRun& run) -> Task<void> {
                           co_await run.workspace->run(Command::shell("true"));
                           ref = run.backend->ref();
                           started = true;
                           co_await sleep_for(600s);
                         }),
        [&] { return started; });
    CHECK(is_cancellation(error));
    // The run's end closed its client: the emulator sees no open connection left.
    for (int i = 0; i < 100 && f.emu().open_connections() > 0; ++i) co_await sleep_for(20ms);
    CHECK(f.emu().open_connections() == 0);
    REQUIRE(ref);
    CHECK(f.emu().vm(ref->id));  // never deleted
  });
}
