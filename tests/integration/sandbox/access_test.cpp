// Refusals by the token's permissions or tag scope surface as ExeDevAccessError naming the
// command, whatever HTTP status exe.dev used (403 for `cmds`, 422 for a tag-scoped key).
#include "fixture.hpp"

#include <exedev/testing/co_check.hpp>

using namespace sbx;

namespace {

// The token docs/sandbox.md recommends: scoped to the tag, with every command the sandbox uses.
exedev::emulator::TokenSpec tag_scoped(const std::string& tag) {
  exedev::emulator::TokenSpec spec;
  spec.tag = tag;
  spec.cmds = std::vector<std::string>{"new", "ls", "ssh", "rm", "cp", "pause", "resume", "comment", "tag"};
  return spec;
}

}  // namespace

TEST_CASE("a tag-scoped token's refused pause and resume raise ExeDevAccessError naming the command",
          "[integration]") {
  Fixture f;
  if (f.skip("the emulator's tag-scoped tokens")) return;
  exedev::testing::run([&](Executor ex) -> Task<void> {
    auto vms = f.vms();
    const auto spec = exedev::VMSpec(exedev::VMSpecFields{});  // the scope tag only
    const auto state = co_await vms.provision(spec);

    auto options = f.client_options();
    options.token = f.emu().issue_token(tag_scoped(f.scope()));
    auto scoped = f.vms(exedev::Client(ex, options));
    CO_CHECK((co_await scoped.inspect(state.ref)).name == state.name);  // ls is allowed

    const auto paused = expect_error<exedev::ExeDevAccessError>(co_await capture(scoped.pause(state.ref)));
    CHECK(paused.status() == std::optional<unsigned>(403));
    CHECK(paused.command() == "pause");
    CHECK_THAT(paused.what(), Catch::Contains("`pause`"));
    CHECK_THAT(paused.what(), !Catch::Contains(*options.token));

    co_await vms.pause(state.ref);
    const auto resumed = expect_error<exedev::ExeDevAccessError>(co_await capture(scoped.resume(state.ref)));
    CHECK(resumed.command() == "resume");
    CHECK(f.emu().vm(state.name)->status == "paused");
    co_await vms.close();
  });
}

TEST_CASE("a provision refused by the token's tag scope raises ExeDevAccessError naming `new`", "[integration]") {
  Fixture f;
  if (f.skip("the emulator's tag-scoped tokens")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    exedev::VMsOptions o;
    o.scope_tag = f.scope();
    o.client_options = f.client_options();
    o.client_options.token = f.emu().issue_token(tag_scoped(f.scope()));
    o.readiness = f.readiness();
    exedev::VMs scoped(std::move(o));
    // A second tag: exe.dev lets a tag-scoped key use only --tag=<its tag>.
    const auto spec = f.spec();
    const auto refused = expect_error<exedev::ExeDevAccessError>(co_await capture(scoped.provision(spec)));
    CHECK(refused.status() == std::optional<unsigned>(403));
    CHECK(refused.command() == "new");
    CHECK(f.emu().vms().empty());
    // With the scope tag alone the same token provisions.
    const auto scope_only = exedev::VMSpec(exedev::VMSpecFields{});
    const auto made = co_await scoped.provision(scope_only);
    CHECK(made.tags == one(f.scope()));
    co_await scoped.close();
  });
}

TEST_CASE("a command on a paused VM with a token that may not resume says so plainly", "[integration]") {
  Fixture f;
  if (f.skip("the emulator's tag-scoped tokens")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto vms = f.vms();
    const auto spec = exedev::VMSpec(exedev::VMSpecFields{});
    const auto state = co_await vms.provision(spec);
    co_await vms.pause(state.ref);
    co_await vms.close();

    exedev::SandboxBackendOptions o;
    o.ref = state.ref;
    o.scope_tag = f.scope();
    o.client_options = f.client_options();
    o.client_options.token = f.emu().issue_token(tag_scoped(f.scope()));  // `resume` in its cmds, refused by its scope
    o.readiness = f.readiness();
    exedev::SandboxBackend backend(o);
    const auto command = exedev::workspace::Command::shell("echo hi");
    const auto refused = expect_error<exedev::ExeDevAccessError>(co_await capture(backend.run(command, no_options())));
    CHECK(refused.command() == "resume");
    CHECK_THAT(refused.what(), Catch::Contains("is paused"));
    CHECK_THAT(refused.what(), Catch::Contains("`resume`"));
    CHECK(f.emu().vm(state.name)->status == "paused");
    co_await backend.close();
  });
}
