// Host keys as exe.dev publishes them, against a private OpenSSH sshd: what accept_new records,
// a hashed file, @revoked and @cert-authority lines, a changed key's message, and
// EXE_SSH_KNOWN_HOSTS as the default file.
#include "fixture.hpp"

#include "ssh/known_hosts.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <fstream>
#include <sstream>
#include <thread>

using namespace exedev;
using namespace exedev::ssh_test;
namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The server's key as known_hosts writes it after the host field: "ssh-ed25519 AAAA…".
std::string server_key(const Fixture& f) {
  const auto line = f.server.known_hosts_line();
  return line.substr(line.find(' ') + 1);
}

asio::awaitable<void> open_and_close(ssh::Endpoint endpoint, SshOptions options) {
  auto opening = Connection::open(std::move(endpoint), std::move(options));
  auto connection = co_await std::move(opening);
  co_await connection->close();
}

}  // namespace

TEST_CASE("ssh host keys: accept_new records one line, also when connections from several threads race") {
  Fixture f;
  fs::remove(f.known_hosts);
  auto options = f.options();
  options.host_key_policy = HostKeyPolicy::accept_new;
  // Each thread its own io_context, so the connections check and record at once (the file lock
  // makes one line whatever the interleaving; the test cannot force the closest one).
  constexpr int kThreads = 4;
  std::vector<std::exception_ptr> failures(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      asio::io_context context;
      asio::co_spawn(context, open_and_close(f.endpoint(), options), [&, i](std::exception_ptr e) { failures[i] = e; });
      context.run();
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& failure : failures) {
    try {
      if (failure) std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      FAIL(e.what());
    }
  }
  // An IP address is recorded as itself, once.
  CHECK(read_file(f.known_hosts) == f.server.known_hosts_line() + "\n");
}

TEST_CASE("ssh host keys: a hashed known_hosts gets a hashed line OpenSSH finds") {
  Fixture f;
  const auto other = test_support::make_key(f.server.directory(), "other_host");
  const auto other_line = other.public_line();
  std::ofstream(f.known_hosts) << "other.example " << other_line.substr(0, other_line.rfind(' ')) << "\n";
  REQUIRE(test_support::run_program({"/usr/bin/ssh-keygen", "-q", "-H", "-f", f.known_hosts.string()}) == 0);
  const auto hashed = read_file(f.known_hosts);
  REQUIRE(hashed.starts_with("|1|"));
  auto options = f.options();
  options.host_key_policy = HostKeyPolicy::accept_new;
  testing::run([&](auto) -> asio::awaitable<void> { co_await open_and_close(f.endpoint(), options); });
  const auto lines = lines_of(read_file(f.known_hosts));
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] + "\n" == hashed);
  CHECK(lines[1].starts_with("|1|"));
  CHECK(lines[1].ends_with(" " + server_key(f)));
  // OpenSSH's own lookup finds the host under the new line (line 2).
  std::string found;
  const auto name = "[127.0.0.1]:" + std::to_string(f.server.port());
  CHECK(test_support::run_program({"/usr/bin/ssh-keygen", "-F", name, "-f", f.known_hosts.string()}, &found) == 0);
  CHECK_THAT(found, Catch::Contains("found: line 2"));
}

TEST_CASE("ssh host keys: @revoked refuses a key only for the hosts its line names") {
  Fixture f;
  testing::run([&](auto) -> asio::awaitable<void> {
    std::ofstream(f.known_hosts) << "@revoked other.example " << server_key(f) << "\n" << f.server.known_hosts_line() << "\n";
    co_await open_and_close(f.endpoint(), f.options());

    std::ofstream(f.known_hosts) << f.server.known_hosts_line() << "\n@revoked [127.0.0.1]:* " << server_key(f) << "\n";
    auto revoked = f.open();
    const auto e = co_await expect_throw<HostKeyError>(std::move(revoked));
    CHECK_THAT(std::string(e.what()), Catch::Contains("@revoked") && Catch::Contains("line 2"));
  });
}

TEST_CASE("ssh host keys: strict with only a @cert-authority line says which line to add") {
  Fixture f;
  const auto ca = test_support::make_key(f.server.directory(), "host_ca");
  const auto ca_line = ca.public_line();
  std::ofstream(f.known_hosts) << "@cert-authority 127.0.0.1,[127.0.0.1]:* " << ca_line.substr(0, ca_line.rfind(' ')) << "\n";
  testing::run([&](auto) -> asio::awaitable<void> {
    auto opening = f.open();
    const auto e = co_await expect_throw<HostKeyError>(std::move(opening));
    const std::string message = e.what();
    INFO(message);
    CHECK_THAT(message, Catch::Contains("line 1 is a @cert-authority line") &&
                            Catch::Contains("this library does not check host certificates") &&
                            Catch::Contains("ssh-keyscan -t rsa -p " + std::to_string(f.server.port()) + " 127.0.0.1") &&
                            Catch::Contains(f.server.host_key_fingerprint()) &&
                            Catch::EndsWith("add this line to " + f.known_hosts.string() + ":\n" + f.server.known_hosts_line()));
    // The line it names is the one that works.
    std::ofstream(f.known_hosts, std::ios::app) << f.server.known_hosts_line() << "\n";
    co_await open_and_close(f.endpoint(), f.options());
  });
}

TEST_CASE("ssh host keys: a changed key's message says what it means on exe.dev and how to check") {
  Fixture f;
  const auto other = test_support::make_key(f.server.directory(), "rotated", "", "rsa");  // the front's key type
  const auto other_line = other.public_line();
  std::ofstream(f.known_hosts) << "[127.0.0.1]:" << f.server.port() << " " << other_line.substr(0, other_line.rfind(' ')) << "\n";
  testing::run([&](auto) -> asio::awaitable<void> {
    auto opening = f.open();
    const auto e = co_await expect_throw<HostKeyError>(std::move(opening));
    const std::string message = e.what();
    INFO(message);
    CHECK_THAT(message, Catch::Contains("has changed") && Catch::Contains("one host key for all of them") &&
                            Catch::Contains("rotated its key or that the connection is intercepted") &&
                            Catch::Contains("ssh-keyscan -t rsa -p " + std::to_string(f.server.port()) + " 127.0.0.1") &&
                            Catch::Contains("https://exe.xyz/.well-known/ssh-known-hosts") &&
                            Catch::Contains("delete line 1 of " + f.known_hosts.string()) &&
                            !Catch::Contains("recreated"));
  });
}

TEST_CASE("ssh host keys: EXE_SSH_KNOWN_HOSTS is the file when the options name none; ~/.ssh is never touched") {
  Fixture f;
  const auto home = f.server.directory() / "home";
  fs::create_directories(home);
  const auto emulator_file = f.server.directory() / "emulator_known_hosts";
  ScopedVariable home_variable("HOME", home.string());
  ScopedVariable known_hosts_variable("EXE_SSH_KNOWN_HOSTS", emulator_file.string());
  testing::run([&](auto) -> asio::awaitable<void> {
    auto options = f.options();
    options.known_hosts_file.clear();
    // Strict: the file from the environment is the one checked.
    auto refused = Connection::open(f.endpoint(), options);
    const auto e = co_await expect_throw<HostKeyError>(std::move(refused));
    CHECK_THAT(std::string(e.what()), Catch::Contains(emulator_file.string()));
    std::ofstream(emulator_file) << f.server.known_hosts_line() << "\n";
    co_await open_and_close(f.endpoint(), options);
    // accept_new records there too.
    fs::remove(emulator_file);
    options.host_key_policy = HostKeyPolicy::accept_new;
    co_await open_and_close(f.endpoint(), options);
    CHECK(read_file(emulator_file) == f.server.known_hosts_line() + "\n");
  });
  CHECK_FALSE(fs::exists(home / ".ssh"));
}
