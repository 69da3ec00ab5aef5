// The seed's close contract: a failed close raises; the client is kept, so the next close
// retries; under cancellation the close still finishes first and its error is nested in the
// cancellation. The failure: exe.dev resets the client's cleanup request (`ssh`) of the
// records of finished runs (twice: the client re-sends once when a reused connection closes).
#include "fixture.hpp"

using namespace sbx;
using exedev::workspace::Command;

namespace {

exedev::emulator::Fault cleanup_fault(exedev::emulator::FaultKind kind) {
  exedev::emulator::Fault fault;
  fault.kind = kind;
  fault.command = "ssh";
  fault.count = 2;
  fault.duration = 300ms;
  return fault;
}

// Whether `error` nests an E.
template <typename E>
bool nests(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    try {
      std::rethrow_if_nested(e);
    } catch (const E&) {
      return true;
    } catch (...) {
    }
  }
  return false;
}

// Closes with the cleanup request stalled and the caller cancelled meanwhile; checks that the
// cancellation carries the close's error, then that the kept client's next close succeeds.
template <typename Close>
Task<void> check_cancelled_close(Fixture& f, Close close) {
  f.emu().inject(cleanup_fault(exedev::emulator::FaultKind::stall));
  const auto before = f.count("ssh");
  const auto error = co_await cancel_when(close(), [&] { return f.count("ssh") > before; });
  CHECK(is_cancellation(error));
  CHECK(nests<exedev::ConnectionError>(error));
  f.emu().clear_faults();
  f.emu().clear_commands();
  co_await close();
  CHECK(f.count("ssh") == 1);  // the kept client removed the records it still had
}

template <typename Close>
Task<void> check_failed_close(Fixture& f, Close close) {
  f.emu().inject(cleanup_fault(exedev::emulator::FaultKind::reset_before_run));
  expect_error<exedev::ConnectionError>(co_await capture(close()));
  f.emu().clear_faults();
  f.emu().clear_commands();
  co_await close();
  CHECK(f.count("ssh") == 1);
  f.emu().clear_commands();
  co_await close();
  CHECK(f.count("ssh") == 0);  // closed: nothing left
}

}  // namespace

TEST_CASE("VMs::close raises a failed close, keeps the client, retries, and nests it under cancellation",
          "[integration]") {
  Fixture f;
  if (f.skip("the emulator's faults")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto vms = f.vms();
    const auto spec = f.spec();
    const auto made = co_await vms.provision(spec);  // its readiness probes leave run records to remove
    co_await check_failed_close(f, [&] { return vms.close(); });
    auto handle = co_await vms.get_vm(made.name);
    co_await handle.client.run(handle.name, "true");
    co_await check_cancelled_close(f, [&] { return vms.close(); });
  }, limits(300s));
}

TEST_CASE("SandboxBackend::close raises a failed close, keeps the client, retries, and nests it under cancellation",
          "[integration]") {
  Fixture f;
  if (f.skip("the emulator's faults")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = f.backend(std::nullopt, f.spec());
    const auto command = Command::shell("true");
    co_await backend->run(command, no_options());
    co_await check_failed_close(f, [&] { return backend->close(); });
    co_await backend->run(command, no_options());
    co_await check_cancelled_close(f, [&] { return backend->close(); });
  }, limits(300s));
}

TEST_CASE("Sandbox: a failed finish_run raises and retries; a cancelled run nests the close's error",
          "[integration]") {
  Fixture f;
  if (f.skip("the emulator's faults")) return;
  exedev::SandboxOptions options;
  options.spec = f.spec();
  options.scope_tag = f.scope();
  options.client_options = f.client_options();
  options.readiness = f.readiness();
  const exedev::Sandbox sandbox(options);
  exedev::testing::run([&](Executor) -> Task<void> {
    auto run = sandbox.open_run();
    const auto command = Command::shell("true");
    co_await run.workspace->run(command);
    co_await check_failed_close(f, [&] { return sandbox.finish_run(run); });

    bool started = false;
    const auto error = co_await cancel_when(
        sandbox.with_run(run.backend->ref(),
                         [&](exedev::SandboxRun& inner) -> Task<void> {
                           co_await inner.workspace->run(Command::shell("true"));
                           f.emu().inject(cleanup_fault(exedev::emulator::FaultKind::reset_before_run));
                           started = true;
                           co_await sleep_for(600s);
                         }),
        [&] { return started; });
    CHECK(is_cancellation(error));
    CHECK(nests<exedev::ConnectionError>(error));
    f.emu().clear_faults();
  }, limits(300s));
}
