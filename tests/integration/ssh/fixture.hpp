#pragma once
// Shared fixture of the SSH layer's integration tests: a private sshd with exe.dev's VM settings
// (tests/support/sshd_server.hpp), a known_hosts file that records its key, and options that use
// only the keys a test names (no agent, no ~/.ssh keys, no ~/.ssh/config).

#include "ssh/connection.hpp"
#include "support/expect_throw.hpp"
#include "support/scoped_variable.hpp"
#include "support/sshd_server.hpp"

#include <exedev/testing/co_check.hpp>
#include <exedev/testing/run.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <optional>
#include <string>

namespace exedev::ssh_test {

using namespace std::chrono_literals;
using ssh::Connection;

struct Fixture {
  explicit Fixture(const std::string& extra_config = "") : server(extra_config) {
    ::unsetenv("EXE_SSH_KEY");
    known_hosts = server.directory() / "known_hosts";
    std::ofstream(known_hosts) << server.known_hosts_line() << "\n";
  }

  [[nodiscard]] ssh::Endpoint endpoint() const { return ssh::Endpoint{"127.0.0.1", server.port(), server.user()}; }

  /// Strict host key check against `known_hosts`, the server's authorized client key, no
  /// ssh_config (the user's own must not change what a test does).
  [[nodiscard]] SshOptions options() const {
    SshOptions o;
    o.use_config = false;
    o.private_key_file = server.client_key().private_key;
    o.use_agent = false;
    o.default_key_files = {server.directory() / "no-such-key"};
    o.known_hosts_file = known_hosts;
    o.host_key_policy = HostKeyPolicy::strict;
    return o;
  }

  boost::asio::awaitable<std::shared_ptr<Connection>> open() {
    auto opening = Connection::open(endpoint(), options());
    co_return co_await std::move(opening);
  }

  test_support::SshServer server;
  std::filesystem::path known_hosts;
};

using exedev::testing_support::expect_throw;

/// A file's whole text (a known_hosts file the test reads back).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

using test_support::ScopedVariable;


inline std::string random_bytes(std::size_t size, unsigned seed) {
  std::string out(size, '\0');
  std::uint32_t state = seed * 2654435761u + 1;
  for (auto& c : out) {
    state = state * 1664525u + 1013904223u;
    c = static_cast<char>(state >> 24);
  }
  return out;
}

}  // namespace exedev::ssh_test
