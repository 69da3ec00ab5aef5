// VMs::provision and VMs::lookup: every provisioning and recovery path of the seed README,
// driven by the emulator's faults, each checked against the emulator's record afterwards.
#include "fixture.hpp"

#include <exedev/testing/co_check.hpp>

#include <algorithm>

using namespace sbx;
using exedev::LookupStatus;
using exedev::VMSpec;

namespace {

bool has(const std::vector<std::string>& tags, const std::string& tag) {
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}

}  // namespace

TEST_CASE("provision creates a ready VM with the scope tag, the spec's tags and comment, and its working_dir",
          "[integration][live]") {
  Fixture f;
  if (f.skip()) return;
  const auto name = f.vm_name("build");
  const VMSpec spec = f.spec({.name = name, .comment = "nightly build", .tags = {"req-7f3a"}, .working_dir = "app"});
  exedev::testing::run([&](Executor ex) -> Task<void> {
    auto vms = f.vms();
    const auto state = co_await vms.provision(spec);
    CHECK(state.ref == exedev::workspace::WorkspaceRef{"exedev", name});
    CHECK(state.status.kind == exedev::VMStatus::Kind::running);
    CHECK(has(state.tags, f.scope()));
    CHECK(has(state.tags, "req-7f3a"));
    CHECK(state.comment == "nightly build");
    // working_dir exists: a backend attached by ref starts there.
    auto backend = f.backend(state.ref, spec, {}, co_await vms.client());
    const auto wd = co_await backend->working_dir();
    CHECK(wd.size() > 4);
    CHECK(wd.substr(wd.size() - 4) == "/app");
    co_await vms.close();
    (void)ex;
  }, limits(300s));
  if (!live_mode()) {
    CHECK(f.emu().vms().size() == 1);
    CHECK(f.count("new") == 1);
  }
}

TEST_CASE("provision waits until the VM's own shell answers an echo probe", "[integration]") {
  exedev::emulator::Options options;
  options.modes.boot_delay = 1500ms;
  options.modes.unready_true_quirk = true;  // `true` would succeed before the VM is reachable
  Fixture f(options);
  if (f.skip("the emulator's boot delay")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto vms = f.vms();
    const auto spec_1 = f.spec({.working_dir = "work"});
    const auto state = co_await vms.provision(spec_1);
    CHECK(state.status.kind == exedev::VMStatus::Kind::running);
    co_await vms.close();
  });
  // Probes were refused while the VM booted, then one succeeded; the create ran once.
  std::size_t refused = 0;
  for (const auto& c : f.emu().commands()) refused += c.command == "ssh" && c.http_status == 422;
  CHECK(refused >= 1);
  CHECK(f.count("new") == 1);
  REQUIRE(f.emu().vms().size() == 1);
  CHECK(std::filesystem::is_directory(f.emu().vms()[0].home / "work"));
}

TEST_CASE("a readiness probe whose result was lost is repeated, not fatal", "[integration]") {
  Fixture f;
  if (f.skip("fault injection")) return;
  // The first probe's launch and all six recovery polls are cut before any byte: the client
  // gives up on that probe (OutcomeUnknownError); provision probes again and succeeds.
  f.emu().inject({.kind = exedev::emulator::FaultKind::truncate_stream, .command = "ssh", .count = 7, .after_bytes = 0});
  exedev::testing::run([&](Executor) -> Task<void> {
    auto vms = f.vms();
    const auto state = co_await vms.provision(f.spec());
    CHECK(state.status.kind == exedev::VMStatus::Kind::running);
    co_await vms.close();
  }, limits(120s));
  CHECK(f.count("new") == 1);
  CHECK(f.count("ssh") >= 8);  // the seven cut requests, then a probe that answered
  CHECK(f.emu().vms().size() == 1);
}

TEST_CASE("a create whose result is unknown raises ProvisionOutcomeUnknownError, retries nothing, and lookup recovers",
          "[integration]") {
  struct Case {
    const char* label;
    exedev::emulator::FaultKind kind;
    unsigned status;
    bool vm_made;
  };
  const Case cases[] = {
      {"504 after the gateway's limit", exedev::emulator::FaultKind::http_status, 504, true},
      {"500", exedev::emulator::FaultKind::http_status, 500, true},
      {"connection reset after the create ran", exedev::emulator::FaultKind::reset_after_run, 0, true},
      {"unreadable response", exedev::emulator::FaultKind::bad_json, 0, true},
      {"connection reset before the create ran", exedev::emulator::FaultKind::reset_before_run, 0, false},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.label) {
      Fixture f;
      if (f.skip("fault injection")) return;
      exedev::emulator::Fault fault;
      fault.kind = c.kind;
      fault.command = "new";
      fault.status = c.status;
      f.emu().inject(fault);
      const auto name = f.vm_name("build");
      const VMSpec spec = f.spec({.name = name, .tags = {"req-7f3a"}});
      exedev::testing::run([&](Executor) -> Task<void> {
        auto vms = f.vms();
        const auto error = expect_error<exedev::ProvisionOutcomeUnknownError>(co_await capture(vms.provision(spec)));
        CHECK(error.vm_name() == std::optional<std::string>(name));
        CHECK(has(error.tags(), "req-7f3a"));
        CHECK(has(error.tags(), f.scope()));
        const auto found = co_await vms.lookup(spec);
        if (c.vm_made) {
          CHECK(found.status == LookupStatus::found);
          REQUIRE(found.vm);
          CHECK(found.vm->name == name);
          // It was created: initialize it, and it is usable.
          co_await vms.initialize(found.vm->ref, spec);
        } else {
          CHECK(found.status == LookupStatus::not_found);
        }
        co_await vms.close();
      });
      CHECK(f.count("new") == 1);  // never retried
      CHECK(f.emu().vms().size() == (c.vm_made ? 1u : 0u));
    }
  }
}

TEST_CASE("a 4xx from create is a definite refusal that propagates as the client's APIError", "[integration][live]") {
  Fixture f;
  if (f.skip()) return;
  const auto name = f.vm_name("taken");
  exedev::testing::run([&](Executor) -> Task<void> {
    auto vms = f.vms();
    const auto spec_2 = f.spec({.name = name});
    co_await vms.provision(spec_2);
    const auto spec_3 = f.spec({.name = name});
    const auto error = expect_error<exedev::APIError>(co_await capture(vms.provision(spec_3)));
    CHECK(error.status() >= 400);
    CHECK(error.status() < 500);
    co_await vms.close();
  }, limits(300s));
  if (!live_mode()) {
    CHECK(f.emu().vms().size() == 1);
    CHECK(f.count("new") == 2);
  }
}

TEST_CASE("a cancelled provision deletes the VM it made before raising the cancellation", "[integration]") {
  exedev::emulator::Options options;
  options.modes.boot_delay = 5s;
  Fixture f(options);
  if (f.skip("the emulator's boot delay")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto vms = f.vms();
    // Cancel while provision waits for the VM to boot: the VM exists by then.
    const auto spec_4 = f.spec();
    const auto error = co_await cancel_when(vms.provision(spec_4), [&] { return !f.emu().vms().empty(); });
    CHECK(is_cancellation(error));
    co_await vms.close();
  });
  CHECK(f.emu().vms().empty());
  CHECK(f.count("rm") == 1);
}

TEST_CASE("a provision cancelled while it reads the ready VM's state deletes the VM too", "[integration]") {
  Fixture f;
  if (f.skip("fault injection")) return;
  // After the create and the readiness probe, provision reads the VM's state with `ls`: hold
  // that request and cancel while it hangs.
  f.emu().inject({.kind = exedev::emulator::FaultKind::stall, .command = "ls", .duration = 20s});
  const auto ls_hangs = [&] {
    const auto commands = f.emu().commands();
    return std::any_of(commands.begin(), commands.end(),
                       [](const auto& c) { return c.command == "ls" && c.http_status == 0; });
  };
  exedev::testing::run([&](Executor) -> Task<void> {
    auto vms = f.vms();
    const auto error = co_await cancel_when(vms.provision(f.spec()), ls_hangs);
    CHECK(is_cancellation(error));
    co_await vms.close();
  });
  CHECK(f.count("new") == 1);
  CHECK(f.count("rm") == 1);
  CHECK(f.emu().vms().empty());
}

TEST_CASE("a failure to get the VM ready raises VMInitializationError naming the kept VM; initialize recovers",
          "[integration]") {
  SECTION("working_dir can't be made") {
    Fixture f;
    if (f.skip("a VM whose filesystem refuses a directory")) return;
    const auto name = f.vm_name("init");
    exedev::testing::run([&](Executor) -> Task<void> {
      auto vms = f.vms();
      const auto spec_5 = f.spec({.name = name, .working_dir = "/dev/null/app"});
      const auto error = expect_error<exedev::VMInitializationError>(co_await capture(vms.provision(spec_5)));
      CHECK(error.ref() == exedev::vm_ref(name));
      CHECK_THAT(error.what(), Catch::Contains(name));
      // Safe to repeat; changes nothing else.
      const auto fixed = f.spec({.working_dir = "app"});
      co_await vms.initialize(error.ref(), fixed);
      const auto again = co_await vms.initialize(name, fixed);
      CHECK(again.status.kind == exedev::VMStatus::Kind::running);
      co_await vms.close();
    });
    REQUIRE(f.emu().vms().size() == 1);  // kept, never deleted for you
    CHECK(std::filesystem::is_directory(f.emu().vms()[0].home / "app"));
    CHECK(f.count("new") == 1);
    CHECK(f.count("rm") == 0);
    CHECK(f.count("tag") == 0);  // initialize found every tag already there
  }
  SECTION("the VM doesn't run commands in time") {
    exedev::emulator::Options options;
    options.modes.boot_delay = 2s;
    Fixture f(options);
    if (f.skip("the emulator's boot delay")) return;
    exedev::testing::run([&](Executor) -> Task<void> {
      exedev::VMsOptions o;
      o.scope_tag = f.scope();
      o.client_options = f.client_options();
      o.readiness.poll_interval = 100ms;
      o.readiness.timeout = 300ms;
      exedev::VMs impatient(std::move(o));
      const auto spec_6 = f.spec();
      const auto error = expect_error<exedev::VMInitializationError>(co_await capture(impatient.provision(spec_6)));
      co_await impatient.close();
      auto vms = f.vms();  // a patient manager finishes the job
      const auto spec_7 = f.spec();
      const auto state = co_await vms.initialize(error.ref(), spec_7);
      CHECK(state.status.kind == exedev::VMStatus::Kind::running);
      co_await vms.close();
    });
    CHECK(f.emu().vms().size() == 1);
    CHECK(f.count("rm") == 0);
  }
}

TEST_CASE("copy: the base is scope-checked and flushed first; tags and comment are set after the copy",
          "[integration]") {
  Fixture f;
  if (f.skip("the emulator's records")) return;
  const auto base_name = f.vm_name("golden");
  const auto copy_name = f.vm_name("copy");
  const auto base_spec = f.spec({.name = base_name, .comment = "base", .tags = {"base-tag"}});
  const auto copy_spec =
      f.spec({.name = copy_name, .comment = "copied", .tags = {"copy-tag"}, .base = base_name,
              .egress = exedev::Egress::integrations, .working_dir = "app"});
  const VMSpec untagged_copy({.base = base_name, .copy_base_tags = false});
  exedev::testing::run([&](Executor ex) -> Task<void> {
    auto vms = f.vms();
    co_await vms.provision(base_spec);
    f.emu().clear_commands();
    const auto copy = co_await vms.provision(copy_spec);
    CHECK(has(copy.tags, f.scope()));
    CHECK(has(copy.tags, "base-tag"));  // copy_base_tags defaults to yes
    CHECK(has(copy.tags, "copy-tag"));
    CHECK(copy.comment == "copied");
    CHECK(f.emu().vm(copy_name)->egress == "integrations");  // the copy request carried it

    // A base without the scope tag is refused before anything is copied.
    auto raw = f.client(ex);
    exedev::NewVMOptions outside;
    outside.name = f.vm_name("outside");
    co_await raw.new_vm(outside);
    const auto cps = f.count("cp");
    const auto spec_8 = f.spec({.base = *outside.name});
    const auto error = expect_error<exedev::VMOutOfScopeError>(co_await capture(vms.provision(spec_8)));
    CHECK(error.vm_name() == *outside.name);
    CHECK(f.count("cp") == cps);
    // A copy without its base's tags would not get the scope tag: refused before any request.
    expect_error<std::invalid_argument>(co_await capture(vms.provision(untagged_copy)));
    co_await vms.close();
    co_await raw.close();
  });
  // The flush (an ssh to the base) came before the copy request.
  const auto commands = f.emu().commands();
  const auto cp = std::find_if(commands.begin(), commands.end(), [](const auto& c) { return c.command == "cp"; });
  REQUIRE(cp != commands.end());
  CHECK(std::any_of(commands.begin(), cp, [&](const auto& c) { return c.command == "ssh" && c.vm == base_name; }));
  CHECK(f.count("cp") == 1);
  CHECK(f.count("tag") == 1);
  CHECK(f.count("comment") == 1);
}

TEST_CASE("lookup: found, not_found, conflict, ambiguous; it never creates or changes a VM", "[integration][live]") {
  Fixture f;
  if (f.skip()) return;
  const auto named = f.vm_name("named");
  const auto one_spec = f.spec({.name = named, .tags = {"req-one"}});
  const auto other_tag = f.spec({.name = named, .tags = {"req-two"}});
  const auto many = f.spec({.tags = {"req-many"}});
  const VMSpec untagged({.name = named});
  exedev::testing::run([&](Executor ex) -> Task<void> {
    auto vms = f.vms();
    CO_CHECK((co_await vms.lookup(one_spec)).status == LookupStatus::not_found);
    co_await vms.provision(one_spec);
    const auto found = co_await vms.lookup(one_spec);
    CHECK(found.status == LookupStatus::found);
    const auto conflict = co_await vms.lookup(other_tag);
    CHECK(conflict.status == LookupStatus::conflict);
    REQUIRE(conflict.candidates.size() == 1);
    CHECK(conflict.candidates[0].name == named);
    // Two VMs with the same tags and no name to go by.
    co_await vms.provision(many);
    co_await vms.provision(many);
    const auto ambiguous = co_await vms.lookup(many);
    CHECK(ambiguous.status == LookupStatus::ambiguous);
    CHECK(ambiguous.candidates.size() == 2);
    expect_error<std::invalid_argument>(co_await capture(vms.lookup(untagged)));
    co_await vms.close();
    (void)ex;
  }, limits(600s));
  if (!live_mode()) {
    CHECK(f.emu().vms().size() == 3);
    CHECK(f.count("new") == 3);
    CHECK(f.count("tag") == 0);
  }
}
