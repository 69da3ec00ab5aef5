// sandbox_recovery: recovering from a create whose result is unknown. The emulator answers the
// `new` request with a 504 after running it (as exe.dev's gateway can after /exec's 30-second
// limit). provision raises ProvisionOutcomeUnknownError and retries nothing; the spec's stable
// name and request tag let lookup find the VM, which initialize gets ready.
#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/exedev.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <iostream>

namespace asio = boost::asio;

asio::awaitable<exedev::VMState> provision_or_recover(exedev::VMs& vms, const exedev::VMSpec& spec) {
  try {
    co_return co_await vms.provision(spec);
  } catch (const exedev::ProvisionOutcomeUnknownError& e) {
    std::cout << "provision: " << e.what() << "\n";
  }
  const auto found = co_await vms.lookup(spec);
  switch (found.status) {
    case exedev::LookupStatus::found:
      std::cout << "lookup found " << found.vm->name << ": it was created; initializing it\n";
      co_return co_await vms.initialize(found.vm->ref, spec);
    case exedev::LookupStatus::not_found:
      throw std::runtime_error("not visible now: look again later, or provision again");
    default:
      throw std::runtime_error("a VM we can't confirm is ours: inspect it by hand");
  }
}

// (Braced lists are built outside coroutines: GCC 12 rejects them inside.)
exedev::VMSpec request_spec() {
  return exedev::VMSpec({.name = "build-42", .tags = {"req-7f3a"}, .working_dir = "app"});
}

asio::awaitable<void> recover(const exedev::ClientOptions& client_options) {
  exedev::VMsOptions options;
  options.scope_tag = "agents";
  options.client_options = client_options;
  exedev::VMs vms(options);
  const exedev::VMSpec spec = request_spec();
  const auto state = co_await provision_or_recover(vms, spec);
  auto vm = co_await vms.get_vm(state.ref);
  std::cout << "ready: " << (co_await vm.client.run(vm.name, "cd app && pwd")).stdout_bytes;
  co_await vms.destroy(state.ref);
  co_await vms.close();
}

int main() {
  try {
    exedev::emulator::Emulator emulator;
    exedev::emulator::Fault fault;
    fault.kind = exedev::emulator::FaultKind::http_status;
    fault.status = 504;
    fault.command = "new";
    emulator.inject(fault);

    const auto client_options = exedev::emulator::client_options(emulator);
    asio::io_context io;
    std::exception_ptr failure;
    asio::co_spawn(io, recover(client_options), [&](std::exception_ptr e) { failure = e; });
    io.run();
    if (failure) std::rethrow_exception(failure);
    std::size_t creates = 0;
    for (const auto& c : emulator.commands()) creates += c.command == "new";
    std::cout << "create requests sent: " << creates << "\n";
    return creates == 1 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "sandbox_recovery failed: " << e.what() << "\n";
    return 1;
  }
}
