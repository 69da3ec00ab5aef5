// ssh_endpoint: where a VM's SSH endpoint is, from exe.dev's description of it. What exe.dev
// leaves out is left for the SSH layer (ssh_config, then the local login name): never `root`.
#include "sandbox/ssh_vm.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using exedev::VMInfo;
using exedev::detail::ssh_endpoint;

TEST_CASE("ssh_endpoint: ssh_host/ssh_user/ssh_port, else ssh_dest split at @; no default user") {
  struct Row {
    std::string ssh_dest, ssh_host, ssh_user;
    std::optional<std::uint16_t> ssh_port;
    std::string host, user;
    std::uint16_t port;
  };
  const std::vector<Row> rows = {
      {"vm+box@exe.dev", "exe.dev", "vm+box", 22, "exe.dev", "vm+box", 22},   // name routing
      {"box.exe.xyz", "box.exe.xyz", "exedev", std::nullopt, "box.exe.xyz", "exedev", 0},
      {"exedev@box.exe.xyz", "", "", std::nullopt, "box.exe.xyz", "exedev", 0},  // older answers
      {"box.exe.xyz", "", "", 2222, "box.exe.xyz", "", 2222},
      {"", "box.exe.xyz", "", std::nullopt, "box.exe.xyz", "", 0},  // user and port left to the SSH layer
  };
  for (const auto& row : rows) {
    INFO(row.ssh_dest << " / " << row.ssh_host << " / " << row.ssh_user);
    VMInfo vm;
    vm.ssh_dest = row.ssh_dest;
    vm.ssh_host = row.ssh_host;
    vm.ssh_user = row.ssh_user;
    vm.ssh_port = row.ssh_port;
    const auto endpoint = ssh_endpoint(vm);
    REQUIRE(endpoint);
    CHECK(endpoint->host == row.host);
    CHECK(endpoint->user == row.user);
    CHECK(endpoint->port == row.port);
  }
  CHECK_FALSE(ssh_endpoint(VMInfo{}));
}
