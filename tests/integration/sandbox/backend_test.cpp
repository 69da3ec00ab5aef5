// SandboxBackend: provisioning on first use (one VM for concurrent first operations, recorded
// refs, repeated outcome-unknown errors), attaching, commands and their error mapping, closing.
#include "fixture.hpp"

#include <exedev/testing/co_check.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <algorithm>

using namespace sbx;
using exedev::workspace::Command;
using exedev::workspace::RunOptions;

namespace {

Command sh_c(std::string line) {
  std::vector<std::string> argv{"sh", "-c"};
  argv.push_back(std::move(line));
  return Command::argv(std::move(argv));
}

Task<exedev::workspace::CommandResult> sh(exedev::SandboxBackend& backend, std::string line, RunOptions options = RunOptions()) {
  co_return co_await backend.run(sh_c(std::move(line)), std::move(options));
}

}  // namespace

TEST_CASE("concurrent first operations of a backend make exactly one VM", "[integration][live]") {
  Fixture f;
  if (f.skip()) return;
  exedev::testing::run([&](Executor ex) -> Task<void> {
    auto backend = f.backend(std::nullopt, f.spec({.working_dir = "app"}));
    CHECK_FALSE(backend->ref());
    int finished = 0;
    std::vector<std::exception_ptr> errors;
    for (int i = 0; i < 5; ++i) {
      asio::co_spawn(ex, capture(sh(*backend, "echo " + std::to_string(i))), [&](std::exception_ptr e, std::exception_ptr thrown) {
        errors.push_back(e ? e : thrown);
        ++finished;
      });
    }
    while (finished < 5) co_await sleep_for(20ms);
    for (const auto& e : errors) CHECK_FALSE(e);
    REQUIRE(backend->ref());
    const auto ref = *backend->ref();
    CHECK(ref.provider == "exedev");
    const bool outcome_8 = co_await backend->working_dir() == co_await backend->working_dir();  // (not inside CHECK: GCC 12 and Catch's temporaries)
    CHECK(outcome_8);
    CHECK(backend->ref() == ref);
    co_await backend->close();
  }, limits(300s));
  if (!live_mode()) {
    CHECK(f.emu().vms().size() == 1);
    CHECK(f.count("new") == 1);
  }
}

TEST_CASE("a backend records the ref before initialization and retries initialization next time", "[integration]") {
  exedev::emulator::Options options;
  options.modes.boot_delay = 2s;
  Fixture f(options);
  if (f.skip("the emulator's boot delay")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    exedev::SandboxBackendOptions o;
    o.spec = f.spec({.working_dir = "app"});
    o.scope_tag = f.scope();
    o.client_options = f.client_options();
    o.readiness.poll_interval = 100ms;
    o.readiness.timeout = 300ms;
    exedev::SandboxBackend backend(std::move(o));
    const auto error = expect_error<exedev::VMInitializationError>(co_await capture(sh(backend, "true")));
    REQUIRE(backend.ref());
    CHECK(error.ref() == *backend.ref());
    while (f.emu().vms().at(0).status != "running") co_await sleep_for(50ms);
    const auto result = co_await sh(backend, "pwd");
    CHECK(result.exit_code == 0);
    CHECK(result.stdout_text.find("/app\n") != std::string::npos);
    CHECK(backend.ref() == error.ref());
    co_await backend.close();
  });
  CHECK(f.emu().vms().size() == 1);
  CHECK(f.count("new") == 1);
}

TEST_CASE("after ProvisionOutcomeUnknownError a backend raises it again on every operation", "[integration]") {
  Fixture f;
  if (f.skip("fault injection")) return;
  exedev::emulator::Fault fault;
  fault.kind = exedev::emulator::FaultKind::http_status;
  fault.status = 504;
  fault.command = "new";
  f.emu().inject(fault);
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = f.backend(std::nullopt, f.spec({.name = "unknown-one", .tags = {"req-unknown"}}));
    expect_error<exedev::ProvisionOutcomeUnknownError>(co_await capture(sh(*backend, "true")));
    expect_error<exedev::ProvisionOutcomeUnknownError>(co_await capture(backend->working_dir()));
    expect_error<exedev::ProvisionOutcomeUnknownError>(co_await capture(sh(*backend, "true")));
    CHECK_FALSE(backend->ref());
    co_await backend->close();
  });
  CHECK(f.count("new") == 1);  // never a second VM
  CHECK(f.emu().vms().size() == 1);
}

TEST_CASE("a cancelled first operation keeps the VM it made and the next operation finishes it", "[integration]") {
  exedev::emulator::Options options;
  options.modes.boot_delay = 2s;
  Fixture f(options);
  if (f.skip("the emulator's boot delay")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = f.backend(std::nullopt, f.spec());
    const auto error = co_await cancel_when(sh(*backend, "true"), [&] { return !f.emu().vms().empty(); });
    CHECK(is_cancellation(error));
    REQUIRE(backend->ref());
    CO_CHECK((co_await sh(*backend, "echo again")).stdout_text == "again\n");
    co_await backend->close();
  });
  CHECK(f.emu().vms().size() == 1);
  CHECK(f.count("new") == 1);
  CHECK(f.count("rm") == 0);  // backends never destroy their environment
}

TEST_CASE("attaching by ref never creates, resumes or changes a VM", "[integration][live]") {
  Fixture f;
  if (f.skip()) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto missing = f.backend(exedev::vm_ref(f.vm_name("missing")), f.spec());
    CHECK(missing->ref());  // reported immediately
    const auto error = expect_error<exedev::VMNotFoundError>(co_await capture(missing->working_dir()));
    CHECK(error.vm_name() == missing->ref()->id);
    co_await missing->close();

    auto vms = f.vms();
    const auto spec_1 = f.spec({.working_dir = "app"});
    const auto state = co_await vms.provision(spec_1);
    // The spec of an attach only says where commands start; it must already exist.
    auto attached = f.backend(state.ref, f.spec({.working_dir = "app"}));
    CHECK(attached->ref() == state.ref);
    CO_CHECK((co_await sh(*attached, "pwd -P")).stdout_text.find("/app") != std::string::npos);
    const auto spec_2 = f.spec({.working_dir = "not-made"});
    auto wrong_dir = f.backend(state.ref, spec_2);
    expect_error<exedev::workspace::WorkspaceError>(co_await capture(wrong_dir->working_dir()));
    co_await wrong_dir->close();
    co_await attached->close();
    co_await vms.close();
  }, limits(300s));
  if (!live_mode()) {
    CHECK(f.emu().vms().size() == 1);
    CHECK(f.count("new") == 1);
    CHECK(f.count("tag") == 0);
    CHECK(f.count("comment") == 0);
  }
}

TEST_CASE("a command refused because the VM is paused resumes it and runs exactly once", "[integration][live]") {
  Fixture f;
  if (f.skip()) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto vms = f.vms();
    const auto spec_3 = f.spec();
    const auto state = co_await vms.provision(spec_3);
    const auto spec_4 = f.spec();
    co_await vms.pause(state.ref);
    auto backend = f.backend(state.ref, spec_4);
    const auto result = co_await sh(*backend, "echo ran >> runs.txt; cat runs.txt");
    CHECK(result.exit_code == 0);
    CHECK(result.stdout_text == "ran\n");
    CO_CHECK((co_await vms.inspect(state.ref)).status.kind == exedev::VMStatus::Kind::running);
    co_await backend->close();
    co_await vms.close();
  }, limits(300s));
  if (!live_mode()) CHECK(f.count("resume") == 1);
}

TEST_CASE("a VM deleted during a command fails it with VMNotFoundError", "[integration][live]") {
  Fixture f;
  if (f.skip()) return;
  exedev::testing::run([&](Executor ex) -> Task<void> {
    using namespace asio::experimental::awaitable_operators;
    auto backend = f.backend(std::nullopt, f.spec());
    co_await backend->working_dir();
    const auto name = backend->ref()->id;
    // The command marks that it runs; the remover waits for the mark, then deletes the VM.
    const std::string mark = "\"$HOME/.command-running\"";
    auto remover = [&]() -> Task<void> {
      auto c = f.client(ex);
      for (;;) {
        const auto probe = co_await c.run(name, "test -e " + mark);
        if (probe.exit_code == 0) break;
        co_await sleep_for(20ms);
      }
      co_await c.remove_vms(one(name));
      co_await c.close();
    };
    RunOptions options;
    options.timeout = exedev::workspace::Seconds(60);
    const auto outcome = co_await (capture(sh(*backend, "touch " + mark + "; sleep 30", options)) && remover());
    const auto error = expect_error<exedev::VMNotFoundError>(outcome);
    CHECK(error.vm_name() == name);
    co_await backend->close();
  }, limits(300s));
}

TEST_CASE("a command whose result is unknown raises CommandOutcomeUnknownError and never runs twice", "[integration]") {
  Fixture f;
  if (f.skip("fault injection")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = f.backend(std::nullopt, f.spec());
    co_await backend->working_dir();
    const auto name = backend->ref()->id;
    exedev::emulator::Fault fault;
    fault.kind = exedev::emulator::FaultKind::reset_after_run;
    fault.command = "ssh";
    fault.vm = name;
    fault.count = 50;
    f.emu().inject(fault);
    const auto error = expect_error<exedev::CommandOutcomeUnknownError>(
        co_await capture(sh(*backend, "echo ran >> once.txt; echo done")));
    CHECK(error.vm_name() == name);
    f.emu().clear_faults();
    CO_CHECK((co_await sh(*backend, "cat once.txt")).stdout_text == "ran\n");
    co_await backend->close();
  }, limits(300s));
}

TEST_CASE("access errors: 403 for a command the token may not run, 401 for a rejected token, none without one",
          "[integration]") {
  Fixture f;
  if (f.skip("the emulator's tokens")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto vms = f.vms();
    const auto spec_5 = f.spec();
    const auto state = co_await vms.provision(spec_5);
    co_await vms.close();

    exedev::emulator::TokenSpec no_ssh;
    no_ssh.cmds = std::vector<std::string>{"ls"};
    auto options = f.client_options();
    options.token = f.emu().issue_token(no_ssh);
    exedev::SandboxBackendOptions o;
    o.ref = state.ref;
    o.scope_tag = f.scope();
    o.client_options = options;
    exedev::SandboxBackend forbidden(o);
    const auto e403 = expect_error<exedev::ExeDevAccessError>(co_await capture(sh(forbidden, "true")));
    CHECK(e403.status() == std::optional<unsigned>(403));
    co_await forbidden.close();

    const auto revoked = f.emu().issue_token({});
    f.emu().revoke_token(revoked);
    o.client_options.token = revoked;
    exedev::SandboxBackend rejected(o);
    const auto e401 = expect_error<exedev::ExeDevAccessError>(co_await capture(rejected.working_dir()));
    CHECK(e401.status() == std::optional<unsigned>(401));
    CHECK(std::string(e401.what()).find(revoked) == std::string::npos);
    co_await rejected.close();

    ::unsetenv("EXE_TOKEN");
    ::unsetenv("EXE_TOKEN_FILE");
    o.client_options.token.reset();
    exedev::SandboxBackend tokenless(o);
    const auto none = expect_error<exedev::ExeDevAccessError>(co_await capture(tokenless.working_dir()));
    CHECK_FALSE(none.status());
    co_await tokenless.close();
  });
}

TEST_CASE("commands: login shell, working_dir, env layering, literal argv, UTF-8 replacement, exit codes",
          "[integration][live]") {
  Fixture f;
  if (f.skip()) return;
  const exedev::workspace::Env backend_env{{"LAYER_A", "backend"}, {"LAYER_B", "backend"}};
  RunOptions options;
  options.env = {{"LAYER_B", "call"}};
  const auto literal_argv = Command::argv({"printf", "%s", " literal $() `quoted`; && '\" "});
  const auto missing_argv = Command::argv({"exedev-cpp-missing-program"});
  // (Braced temporaries are never written inside a co_await expression: GCC 12 mishandles them.)
  const RunOptions no_options;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = f.backend(std::nullopt, f.spec({.working_dir = "app"}), backend_env);
    const auto layered = co_await sh(*backend, "printf '%s %s %s' \"$LAYER_A\" \"$LAYER_B\" \"${HOME:+home}\"", options);
    CHECK(layered.stdout_text == "backend call home");
    const auto literal = co_await backend->run(literal_argv, no_options);
    CHECK(literal.stdout_text == " literal $() `quoted`; && '\" ");
    const auto status = co_await backend->run(Command::shell("printf out; printf err >&2; exit 7"), no_options);
    CHECK(status == exedev::workspace::CommandResult{7, "out", "err"});
    const auto bytes = co_await backend->run(Command::shell("printf '\\377'; printf 'ok\\376' >&2"), no_options);
    CHECK(bytes.stdout_text == "\xEF\xBF\xBD");
    CHECK(bytes.stderr_text == "ok\xEF\xBF\xBD");
    const auto missing = co_await backend->run(missing_argv, no_options);
    CHECK(missing.exit_code == 127);
    co_await backend->close();
  }, limits(300s));
}

TEST_CASE("timeouts and the 8 MiB output limit stop the command", "[integration][live]") {
  Fixture f;
  if (f.skip()) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = f.backend(std::nullopt, f.spec());
    RunOptions quick;
    quick.timeout = exedev::workspace::Seconds(1);
    const auto timeout = expect_error<exedev::workspace::WorkspaceTimeoutError>(
        co_await capture(sh(*backend, "printf partial; sleep 60", quick)));
    CHECK(timeout.output().stdout_data == "partial");
    const auto limit = expect_error<exedev::workspace::WorkspaceOutputLimitError>(
        co_await capture(sh(*backend, "head -c 9437184 /dev/zero | tr '\\0' x; sleep 60")));
    CHECK(limit.limit() == 8u * 1024 * 1024);
    co_await backend->close();
  }, limits(300s));
}

TEST_CASE("files go through the shell filesystem within exe.dev's 64 KiB request body", "[integration][live]") {
  Fixture f;
  if (f.skip()) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = f.backend(std::nullopt, f.spec({.working_dir = "files"}), {{"BIG_SETTING", std::string(4096, 's')}});
    exedev::workspace::Workspace ws(backend);
    // Random bytes: compression would pack a repeating pattern into one chunk.
    std::mt19937 engine{7919};
    std::string data;
    for (unsigned i = 0; i < 300'000; ++i) data += static_cast<char>(engine() & 0xffu);
    const std::string path = std::string(200, 'd') + "/it's a \"long\" name.bin";
    co_await ws.write_bytes(path, data);
    const bool outcome_9 = co_await ws.read_bytes(path) == data;  // (not inside CHECK: GCC 12 and Catch's temporaries)
    CHECK(outcome_9);
    co_await backend->close();
  }, limits(600s));
  if (!live_mode()) {
    for (const auto& c : f.emu().commands()) CHECK(c.http_status != 413);
    CHECK(f.count("ssh") > 8);  // several chunks each way
  }
}

TEST_CASE("a cancelled close still waits for the VM being provisioned, then closes the client", "[integration]") {
  exedev::emulator::Options options;
  options.modes.boot_delay = 1500ms;
  Fixture f(options);
  if (f.skip("the emulator's boot delay")) return;
  exedev::testing::run([&](Executor ex) -> Task<void> {
    auto backend = f.backend(std::nullopt, f.spec());
    // Another coroutine's first operation provisions the VM (and uses no client afterwards).
    bool provisioned = false;
    std::exception_ptr provision_error;
    asio::co_spawn(ex, capture(backend->working_dir()), [&](std::exception_ptr e, std::exception_ptr thrown) {
      provision_error = e ? e : thrown;
      provisioned = true;
    });
    while (f.emu().vms().empty()) co_await sleep_for(20ms);  // created; now waiting for it to boot
    const auto error = co_await cancel_when(backend->close(), [] { return true; });
    CHECK(is_cancellation(error));
    CHECK(backend->ref());  // recorded before the close went on
    while (!provisioned) co_await sleep_for(20ms);
    CHECK_FALSE(provision_error);
    // The close did close the client: the emulator sees no connection left.
    for (int i = 0; i < 100 && f.emu().open_connections() > 0; ++i) co_await sleep_for(20ms);
    CHECK(f.emu().open_connections() == 0);
  }, limits(120s));
  CHECK(f.emu().vms().size() == 1);
}

TEST_CASE("close closes only a client the backend made, never touches the VM, and the backend stays usable",
          "[integration]") {
  Fixture f;
  if (f.skip("the emulator's connection count")) return;
  exedev::testing::run([&](Executor ex) -> Task<void> {
    auto backend = f.backend(std::nullopt, f.spec());
    CO_CHECK((co_await sh(*backend, "echo one")).stdout_text == "one\n");
    co_await backend->close();
    for (int i = 0; i < 100 && f.emu().open_connections() > 0; ++i) co_await sleep_for(20ms);
    CHECK(f.emu().open_connections() == 0);
    CO_CHECK((co_await sh(*backend, "echo two")).stdout_text == "two\n");  // a new client
    co_await backend->close();

    auto given = f.client(ex);
    auto shared = f.backend(backend->ref(), f.spec(), {}, given);
    CO_CHECK((co_await sh(*shared, "echo three")).stdout_text == "three\n");
    co_await shared->close();
    CO_CHECK((co_await given.list_vms()).size() == 1);  // still open and usable
    co_await given.close();
  });
  REQUIRE(f.emu().vms().size() == 1);
  CHECK(f.emu().vms()[0].status == "running");
  CHECK(f.count("rm") == 0);
  CHECK(f.count("pause") == 0);
}
