// sandbox_lifecycle: managing VMs outside any agent run with exedev::VMs: provision, inspect,
// pause (after a flush), resume, get_vm for the raw client, destroy; and the scope tag refusing
// a VM that lacks it. Runs against an in-process emulator.
#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/exedev.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <iostream>

namespace asio = boost::asio;

// (Braced lists are built outside coroutines: GCC 12 rejects them inside.)
exedev::VMSpec demo_spec() { return exedev::VMSpec({.comment = "lifecycle demo", .tags = {"examples"}}); }

asio::awaitable<void> manage(const exedev::ClientOptions& client_options) {
  exedev::VMsOptions options;
  options.scope_tag = "agents";
  options.client_options = client_options;
  exedev::VMs vms(options);

  const auto made = co_await vms.provision(demo_spec());
  const auto ref = made.ref;
  auto state = co_await vms.inspect(ref);
  std::cout << state.name << ": " << state.status.raw << ", created " << state.created_at << ", tags:";
  for (const auto& tag : state.tags) std::cout << ' ' << tag;
  std::cout << "\n";

  std::cout << "pause -> " << (co_await vms.pause(ref)).status.raw << "\n";
  std::cout << "inspect doesn't resume -> " << (co_await vms.inspect(ref)).status.raw << "\n";
  std::cout << "resume -> " << (co_await vms.resume(ref)).status.raw << "\n";

  auto vm = co_await vms.get_vm(ref);  // the client and name, for anything not wrapped
  std::cout << "uptime: " << (co_await vm.client.run(vm.name, "echo up")).stdout_bytes;

  // A VM made outside the scope tag is refused.
  exedev::NewVMOptions outside;
  outside.name = "not-an-agent";
  co_await vm.client.new_vm(outside);
  try {
    co_await vms.destroy("not-an-agent");
  } catch (const exedev::VMOutOfScopeError& e) {
    std::cout << "refused: " << e.what() << "\n";
  }

  std::cout << "destroy -> " << std::boolalpha << co_await vms.destroy(ref) << ", again -> "
            << co_await vms.destroy(ref) << "\n";
  co_await vms.close();
}

int main() {
  try {
    exedev::emulator::Emulator emulator;
    const auto client_options = exedev::emulator::client_options(emulator);
    asio::io_context io;
    std::exception_ptr failure;
    asio::co_spawn(io, manage(client_options), [&](std::exception_ptr e) { failure = e; });
    io.run();
    if (failure) std::rethrow_exception(failure);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "sandbox_lifecycle failed: " << e.what() << "\n";
    return 1;
  }
}
