// ~/.ssh/config applied where the connection is made, against a private OpenSSH sshd: HostName,
// Port, User, IdentityFile, IdentitiesOnly, UserKnownHostsFile, StrictHostKeyChecking, and the
// login name when nothing names one.
#include "fixture.hpp"

#include <fstream>

using namespace exedev;
using namespace exedev::ssh_test;
namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

using test_support::Agent;

// Options that leave everything ssh_config may say to the config file at `config`.
SshOptions config_options(const Fixture& f, const fs::path& config) {
  auto options = f.options();
  options.private_key_file.reset();
  options.known_hosts_file.clear();
  options.host_key_policy.reset();
  options.use_agent = true;
  options.use_config = true;
  options.config_file = config;
  return options;
}

asio::awaitable<std::string> whoami(Connection& connection) {
  ssh::ExecRequest request;
  request.command = "id -un";
  auto running = connection.exec(std::move(request));
  const auto result = co_await std::move(running);
  co_return result.stdout_bytes;
}

}  // namespace

TEST_CASE("ssh_config: HostName, Port, User, IdentityFile, UserKnownHostsFile, StrictHostKeyChecking for an alias") {
  Fixture f;
  const ScopedVariable unset("EXE_SSH_KNOWN_HOSTS", std::nullopt);  // it would win over UserKnownHostsFile
  const auto config = f.server.directory() / "config";
  std::ofstream(config) << "# the user's file\n"
                        << "Host other\n  User nobody\n"
                        << "Host sshcfg-alias\n"
                        << "  HostName 127.0.0.1\n"
                        << "  Port " << f.server.port() << "\n"
                        << "  User = " << f.server.user() << "\n"
                        << "  IdentityFile \"" << f.server.client_key().private_key.string() << "\"\n"
                        << "  IdentitiesOnly yes\n"
                        << "  UserKnownHostsFile " << f.known_hosts.string() << "\n"
                        << "  StrictHostKeyChecking yes\n";
  testing::run([&](auto) -> asio::awaitable<void> {
    auto opening = Connection::open(ssh::Endpoint{"sshcfg-alias", 0, ""}, config_options(f, config));
    auto connection = co_await std::move(opening);
    CHECK(connection->endpoint().host == "127.0.0.1");
    CHECK(connection->endpoint().port == f.server.port());
    CHECK(connection->endpoint().user == f.server.user());
    CO_CHECK(co_await whoami(*connection) == f.server.user() + "\n");
    co_await connection->close();

    // StrictHostKeyChecking yes: a file without the key refuses it, naming that file.
    std::ofstream(f.known_hosts) << "# empty\n";
    auto strict = Connection::open(ssh::Endpoint{"sshcfg-alias", 0, ""}, config_options(f, config));
    const auto e = co_await expect_throw<HostKeyError>(std::move(strict));
    CHECK_THAT(std::string(e.what()), Catch::Contains("not recorded in " + f.known_hosts.string()));
  });
}

TEST_CASE("ssh_config: IdentityFile is offered before the agent's keys") {
  // One refused key ends the connection, as on exe.dev's proxy, where the first key decides.
  Fixture f("MaxAuthTries 1\n");
  const auto stranger = test_support::make_key(f.server.directory(), "stranger");
  const auto exe_key = test_support::make_key(f.server.directory(), "exe_key");
  f.server.authorize(exe_key);
  const auto config = f.server.directory() / "config";
  auto options = config_options(f, config);
  options.known_hosts_file = f.known_hosts;
  const Agent agent(f.server.directory(), {stranger});
  std::ofstream(config) << "Host 127.0.0.1\n  IdentityFile " << exe_key.private_key.string() << "\n";
  testing::run([&](auto) -> asio::awaitable<void> {
    auto opening = Connection::open(f.endpoint(), options);
    auto connection = co_await std::move(opening);
    co_await connection->close();
  });
}

TEST_CASE("ssh_config: IdentitiesOnly yes offers only the IdentityFile keys, never the agent's") {
  Fixture f;
  const auto stranger = test_support::make_key(f.server.directory(), "stranger");
  const auto config = f.server.directory() / "config";
  auto options = config_options(f, config);
  options.known_hosts_file = f.known_hosts;
  const Agent agent(f.server.directory(), {f.server.client_key()});
  std::ofstream(config) << "Host 127.0.0.1\n  IdentitiesOnly yes\n  IdentityFile " << stranger.private_key.string() << "\n";
  testing::run([&](auto) -> asio::awaitable<void> {
    auto refused = Connection::open(f.endpoint(), options);
    const auto e = co_await expect_throw<SshAuthenticationError>(std::move(refused));
    CHECK(e.tried() == std::vector<std::string>{stranger.private_key.string()});
    // Without IdentitiesOnly the agent's key is tried after it, and gets in.
    std::ofstream(config) << "Host 127.0.0.1\n  IdentityFile " << stranger.private_key.string() << "\n";
    auto opening = Connection::open(f.endpoint(), options);
    auto connection = co_await std::move(opening);
    co_await connection->close();
  });
}

TEST_CASE("ssh_config: the login name is the endpoint's, else the file's User, else the local login name") {
  Fixture f;
  const auto config = f.server.directory() / "config";
  std::ofstream(config) << "Match exec \"false\"\n  User never\nHost *\n  Port banana\n";
  auto options = f.options();
  options.use_config = true;
  options.config_file = config;
  std::vector<std::string> warnings;
  options.on_warning = [&](std::string_view line) { warnings.emplace_back(line); };
  testing::run([&](auto) -> asio::awaitable<void> {
    // Nothing names a user: the local login name (the server runs as the current user), not root
    // by rule; a Match it cannot evaluate is skipped, never applied, and said once per file read.
    auto opening = Connection::open(ssh::Endpoint{"127.0.0.1", f.server.port(), ""}, options);
    auto connection = co_await std::move(opening);
    CHECK(connection->endpoint().user == f.server.user());
    co_await connection->close();
    REQUIRE(warnings.size() == 2);
    CHECK_THAT(warnings[0], Catch::Contains(config.string() + " line 1") && Catch::Contains("Match exec is not evaluated"));
    CHECK_THAT(warnings[1], Catch::Contains(config.string() + " line 4") && Catch::Contains("Port") &&
                                !Catch::Contains("banana"));

    // The file's User for a user nobody named: sshd refuses a user that does not exist.
    std::ofstream(config) << "User no-such-user-here\n";
    auto by_config = Connection::open(ssh::Endpoint{"127.0.0.1", f.server.port(), ""}, options);
    const auto e = co_await expect_throw<SshAuthenticationError>(std::move(by_config));
    CHECK_THAT(std::string(e.what()), Catch::Contains("no-such-user-here@127.0.0.1"));
    // The endpoint's user (exe.dev's ssh_user) wins over the file.
    auto named = Connection::open(f.endpoint(), options);
    connection = co_await std::move(named);
    CHECK(connection->endpoint().user == f.server.user());
    co_await connection->close();
  });
}
