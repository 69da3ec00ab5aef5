// client_from_environment: a default exedev::Client, configured only by the environment:
// EXE_BASE_URL, EXE_TOKEN and EXE_CA_FILE. Against the real exe.dev, set EXE_TOKEN alone; against
// the emulator, let it print all three (docs/emulator.md):
//   eval "$(exedev-emulator --background --print-env)"
//   ./client_from_environment
//   kill "$EXEDEV_EMULATOR_PID"
#include <exedev/client.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <iostream>

namespace asio = boost::asio;

asio::awaitable<void> hello(exedev::Client& client) {
  const auto me = co_await client.whoami();
  std::cout << "signed in as " << me.email << "\n";
  exedev::NewVMOptions spec;
  spec.name = "env-vm";
  const auto vm = co_await client.new_vm(spec);
  const auto result = co_await client.run(vm.name, "echo hello from $(hostname)");
  std::cout << result.stdout_bytes;
  const std::vector<std::string> names = {vm.name};
  co_await client.remove_vms(names);
  co_await client.close();
}

int main() {
  asio::io_context io;
  exedev::Client client(io.get_executor());  // reads EXE_BASE_URL, EXE_TOKEN, EXE_CA_FILE
  std::exception_ptr failure;
  asio::co_spawn(io, hello(client), [&](std::exception_ptr e) { failure = e; });
  io.run();
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      std::cerr << "client_from_environment: " << e.what() << "\n";
      return 1;
    }
  }
  return 0;
}
