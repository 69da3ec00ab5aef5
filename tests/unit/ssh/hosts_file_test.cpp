// The hosts(5) file the SSH layer consults before the system resolver (SshOptions::hosts_file).
#include "ssh/hosts_file.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>

using exedev::ssh::address_in_hosts;
using exedev::ssh::hosts_file_to_use;

TEST_CASE("hosts file: the address of a name, as hosts(5) lists it") {
  const std::string text =
      "# the emulator's names\n"
      "127.0.0.1 exe.localhost alpha.exe.localhost\n"
      "\n"
      "127.0.0.2\tbeta.exe.localhost  # a comment\n"
      "127.0.0.3 alpha.exe.localhost\n"
      "::1 gamma.exe.localhost";
  struct Row {
    const char* name;
    std::optional<std::string> address;
  };
  for (const Row& row : {Row{"exe.localhost", "127.0.0.1"}, Row{"alpha.exe.localhost", "127.0.0.1"},  // the first line wins
                         Row{"BETA.exe.localhost", "127.0.0.2"}, Row{"gamma.exe.localhost", "::1"},
                         Row{"a.comment", std::nullopt}, Row{"127.0.0.1", std::nullopt}, Row{"delta.exe.localhost", std::nullopt},
                         Row{"exe", std::nullopt}}) {
    INFO(row.name);
    CHECK(address_in_hosts(text, row.name) == row.address);
  }
  CHECK_FALSE(address_in_hosts("", "exe.localhost"));
}

TEST_CASE("hosts file: the configured one, else EXE_SSH_HOSTS, else none") {
  ::unsetenv("EXE_SSH_HOSTS");
  CHECK(hosts_file_to_use("").empty());
  CHECK(hosts_file_to_use("/etc/emulator-hosts") == "/etc/emulator-hosts");
  ::setenv("EXE_SSH_HOSTS", "/tmp/from-environment", 1);
  CHECK(hosts_file_to_use("") == "/tmp/from-environment");
  CHECK(hosts_file_to_use("/etc/emulator-hosts") == "/etc/emulator-hosts");
  ::unsetenv("EXE_SSH_HOSTS");
}
