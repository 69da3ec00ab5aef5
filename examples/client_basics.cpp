// client_basics: the exe.dev client against an in-process emulator.
//
// Creates a VM, runs commands on it (exit code, separate stdout and stderr), lists and tags
// VMs, then deletes the VM. Against the real exe.dev, drop the emulator and pass default
// ClientOptions: the client reads EXE_TOKEN (and EXE_BASE_URL) instead.
#include <exedev/client.hpp>
#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdio>
#include <exception>
#include <iostream>

namespace asio = boost::asio;

asio::awaitable<void> demo(exedev::Client& client) {
  exedev::NewVMOptions spec;
  spec.name = "demo-vm";
  spec.tags = {"examples"};
  const auto vm = co_await client.new_vm(spec);
  std::cout << "created " << vm.name << " (" << vm.ssh_dest << ")\n";

  const auto result = co_await client.run(vm.name, "echo hello from $(hostname); echo oops >&2; exit 3");
  std::cout << "exit " << result.exit_code << ", stdout: " << result.stdout_bytes << "stderr: " << result.stderr_bytes;

  exedev::ClientRunOptions options;
  options.working_dir = "/tmp";
  options.env = {{"NAME", "world"}};
  options.timeout = std::chrono::seconds(10);
  std::cout << (co_await client.run(vm.name, "echo \"hello, $NAME, from $(pwd)\"", options)).stdout_bytes;

  try {
    options.timeout = std::chrono::seconds(1);
    co_await client.run(vm.name, "sleep 60", options);
  } catch (const exedev::RunTimeoutError& e) {
    std::cout << "timed out as asked: " << e.what() << "\n";
  }

  // Named arguments rather than braced lists inside co_await: GCC 12 miscompiles the latter.
  const std::vector<std::string> new_tags = {"demo"};
  const auto tags = co_await client.add_tags(vm.name, new_tags);
  std::cout << "tags:";
  for (const auto& t : tags) std::cout << ' ' << t;
  std::cout << "\n";
  const std::vector<std::string> patterns = {"examples"};
  for (const auto& info : co_await client.list_vms(patterns)) {
    std::cout << "ls: " << info.name << " is " << info.status.raw << "\n";
  }

  try {
    co_await client.new_vm(spec);
  } catch (const exedev::CommandFailedError& e) {
    std::cout << "second create refused (HTTP " << e.status() << "): " << e.server_message() << "\n";
  }

  const std::vector<std::string> names = {vm.name};
  const auto removed = co_await client.remove_vms(names);
  std::cout << "deleted " << removed.deleted.size() << " VM(s)\n";
  co_await client.close();
}

int main() {
  try {
    exedev::emulator::Emulator emulator;
    asio::io_context io;
    exedev::Client client(io.get_executor(), exedev::emulator::client_options(emulator));
    std::exception_ptr failure;
    asio::co_spawn(io, demo(client), [&](std::exception_ptr e) { failure = e; });
    io.run();
    if (failure) std::rethrow_exception(failure);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "client_basics: %s\n", e.what());
    return 1;
  }
}
