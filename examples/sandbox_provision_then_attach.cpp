// sandbox_provision_then_attach: the app owns the VM's lifecycle. It provisions a VM with
// exedev::VMs, keeps its WorkspaceRef, and attaches a SandboxBackend to it; closing the backend
// closes the client it made and leaves the VM running. Runs against an in-process emulator.
#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/exedev.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <iostream>

namespace asio = boost::asio;
using exedev::workspace::Command;

// (Braced lists are built outside coroutines: GCC 12 rejects them inside.)
exedev::VMSpec build_spec() {
  return exedev::VMSpec({.name = "build-42", .tags = {"req-7f3a"}, .image = "ubuntu:24.04", .working_dir = "app"});
}
Command setup_command() { return Command::argv({"sh", "setup.sh"}); }

asio::awaitable<void> app(const exedev::ClientOptions& client_options) {
  const exedev::VMSpec spec = build_spec();

  exedev::VMsOptions vms_options;
  vms_options.scope_tag = "agents";
  vms_options.client_options = client_options;
  exedev::VMs vms(vms_options);
  const auto state = co_await vms.provision(spec);  // creates it, waits until it runs commands, makes `app`
  std::cout << "provisioned " << state.name << " (" << state.status.raw << ")\n";

  exedev::SandboxBackendOptions backend_options;
  backend_options.ref = state.ref;
  backend_options.spec = spec;
  backend_options.scope_tag = "agents";
  backend_options.client_options = client_options;
  auto backend = std::make_shared<exedev::SandboxBackend>(backend_options);
  exedev::workspace::Workspace ws(backend);
  co_await ws.write_text("setup.sh", "echo set up in $(pwd)\n");
  const auto setup = co_await ws.run(setup_command());
  std::cout << exedev::workspace::printable_text(setup.stdout_text);  // a VM's bytes, made printable
  co_await backend->close();  // the VM keeps running

  std::cout << "still " << (co_await vms.inspect(state.ref)).status.raw << " after the backend closed\n";
  std::cout << "deleted: " << std::boolalpha << co_await vms.destroy(state.ref) << "\n";
  co_await vms.close();
}

int main() {
  try {
    exedev::emulator::Emulator emulator;
    const auto client_options = exedev::emulator::client_options(emulator);
    asio::io_context io;
    std::exception_ptr failure;
    asio::co_spawn(io, app(client_options), [&](std::exception_ptr e) { failure = e; });
    io.run();
    if (failure) std::rethrow_exception(failure);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "sandbox_provision_then_attach failed: " << e.what() << "\n";
    return 1;
  }
}
