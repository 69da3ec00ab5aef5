// B1 consumer: what a user's translation unit that drives exe.dev compiles: the umbrella
// header, a Client call, VMs and a SandboxBackend through the Workspace facade.
#include <exedev/exedev.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <memory>
#include <string>

namespace asio = boost::asio;

asio::awaitable<void> program(exedev::Client client) {
  const auto who = co_await client.whoami();
  (void)who;

  exedev::VMs vms(std::nullopt, client);
  const auto state = co_await vms.inspect(std::string("agent-vm"));
  (void)state;

  exedev::SandboxBackendOptions options;
  options.client = client;
  options.ref = exedev::workspace::WorkspaceRef{"exedev", "agent-vm"};
  auto workspace = std::make_shared<exedev::workspace::Workspace>(
      std::make_shared<exedev::SandboxBackend>(std::move(options)));
  const auto result = co_await workspace->run(exedev::workspace::Command::shell("make test"));
  co_await workspace->write_text("notes.txt", result.stdout_text);
}

int main() {
  asio::io_context io;
  exedev::Client client(io.get_executor());
  asio::co_spawn(io, program(client), asio::detached);
  io.run();
}
