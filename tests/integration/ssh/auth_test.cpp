// Host key verification and authentication against a private OpenSSH sshd.
#include "fixture.hpp"

#include "common/subprocess.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>

using namespace exedev;
using namespace exedev::ssh_test;
namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

asio::awaitable<std::string> echo(Connection& connection) {
  ssh::ExecRequest request;
  request.command = "echo hello";
  auto running = connection.exec(std::move(request));
  const auto result = co_await std::move(running);
  co_return result.stdout_bytes;
}

// Another server's RSA key line for the same host (the front has RSA only): what a changed key looks like.
std::string other_key_line(const Fixture& f) {
  const auto other = test_support::make_key(f.server.directory(), "other_host_key", "", "rsa");
  const auto line = other.public_line();
  return "[127.0.0.1]:" + std::to_string(f.server.port()) + " " + line.substr(0, line.rfind(' '));
}

}  // namespace

TEST_CASE("ssh host keys: strict accepts the recorded key and refuses a changed one, naming both fingerprints") {
  Fixture f;
  testing::run([&](auto) -> asio::awaitable<void> {
    auto connection = co_await f.open();
    CO_CHECK(co_await echo(*connection) == "hello\n");
    co_await connection->close();

    const auto other = test_support::make_key(f.server.directory(), "recorded_key", "", "rsa");
    const auto line = other.public_line();
    std::ofstream(f.known_hosts) << "# the VM was recreated\n[127.0.0.1]:" << f.server.port() << " "
                                 << line.substr(0, line.rfind(' ')) << "\n";
    auto opening = f.open();
    const auto e = co_await expect_throw<HostKeyError>(std::move(opening));
    const std::string message = e.what();
    INFO(message);
    CHECK(e.code() == errc::host_key_rejected);
    CHECK(e.host() == "[127.0.0.1]:" + std::to_string(f.server.port()));
    CHECK(e.offered_fingerprint() == f.server.host_key_fingerprint());
    CHECK(e.recorded_fingerprint() == other.fingerprint());
    CHECK_THAT(message, Catch::Contains(f.server.host_key_fingerprint()));
    CHECK_THAT(message, Catch::Contains(other.fingerprint()));
    CHECK_THAT(message, Catch::Contains("line 2"));
    CHECK_FALSE(e.may_have_run());
  });
}

TEST_CASE("ssh host keys: strict refuses an unrecorded key; accept_new records it once, then checks it") {
  Fixture f;
  testing::run([&](auto) -> asio::awaitable<void> {
    fs::remove(f.known_hosts);
    auto opening = f.open();
    const auto e = co_await expect_throw<HostKeyError>(std::move(opening));
    CHECK_THAT(std::string(e.what()), Catch::Contains("not recorded"));
    CHECK_FALSE(e.recorded_fingerprint());

    // accept_new in a directory that does not exist yet: made 0700, the file 0600.
    auto options = f.options();
    options.host_key_policy = HostKeyPolicy::accept_new;
    options.known_hosts_file = f.server.directory() / "new-ssh-dir" / "known_hosts";
    auto first = Connection::open(f.endpoint(), options);
    auto connection = co_await std::move(first);
    co_await connection->close();
    CHECK(read_file(options.known_hosts_file) == f.server.known_hosts_line() + "\n");
    struct stat file_stat {};
    ::stat(options.known_hosts_file.c_str(), &file_stat);
    CHECK((file_stat.st_mode & 0777) == 0600);
    ::stat(options.known_hosts_file.parent_path().c_str(), &file_stat);
    CHECK((file_stat.st_mode & 0777) == 0700);
    // Recorded once: a second connection finds it and adds nothing.
    auto second = Connection::open(f.endpoint(), options);
    connection = co_await std::move(second);
    co_await connection->close();
    CHECK(read_file(options.known_hosts_file) == f.server.known_hosts_line() + "\n");
    // A changed key is refused under accept_new too.
    std::ofstream(options.known_hosts_file) << other_key_line(f) << "\n";
    auto third = Connection::open(f.endpoint(), options);
    const auto changed = co_await expect_throw<HostKeyError>(std::move(third));
    CHECK(changed.recorded_fingerprint());
    CHECK_THAT(std::string(changed.what()), Catch::Contains("has changed"));
  });
}

TEST_CASE("ssh host keys: the callback decides on a key not recorded as it is; a malformed line is skipped with a warning") {
  Fixture f;
  testing::run([&](auto) -> asio::awaitable<void> {
    std::ofstream(f.known_hosts) << other_key_line(f) << "\n";
    auto options = f.options();
    options.host_key_policy = HostKeyPolicy::callback;
    std::optional<HostKeyCheck> seen;
    options.host_key_callback = [&](const HostKeyCheck& check) {
      seen = check;
      return check.fingerprint == f.server.host_key_fingerprint();
    };
    auto opening = Connection::open(f.endpoint(), options);
    auto connection = co_await std::move(opening);
    co_await connection->close();
    REQUIRE(seen);
    CHECK(seen->host == "127.0.0.1");
    CHECK(seen->port == f.server.port());
    CHECK(seen->key_type == "ssh-rsa");
    CHECK(seen->known_fingerprint);
    options.host_key_callback = [](const HostKeyCheck&) { return false; };
    auto refused = Connection::open(f.endpoint(), options);
    co_await expect_throw<HostKeyError>(std::move(refused));

    // A line that does not parse is skipped, as OpenSSH skips it: one warning, the rest is used.
    std::ofstream(f.known_hosts) << "# fine\nthis BROKEN line\n" << f.server.known_hosts_line() << "\n";
    std::vector<std::string> warnings;
    auto strict = f.options();
    strict.on_warning = [&](std::string_view line) { warnings.emplace_back(line); };
    auto with_broken = Connection::open(f.endpoint(), strict);
    connection = co_await std::move(with_broken);
    CO_CHECK(co_await echo(*connection) == "hello\n");
    co_await connection->close();
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings[0], Catch::Contains(f.known_hosts.string()) && Catch::Contains("line 2") &&
                                !Catch::Contains("BROKEN"));
  });
}

TEST_CASE("ssh authentication: an unregistered key, an encrypted key, a passphrase, a missing file") {
  Fixture f;
  testing::run([&](auto) -> asio::awaitable<void> {
    const auto stranger = test_support::make_key(f.server.directory(), "stranger");
    auto options = f.options();
    options.private_key_file = stranger.private_key;
    auto opening = Connection::open(f.endpoint(), options);
    const auto refused = co_await expect_throw<SshAuthenticationError>(std::move(opening));
    INFO(refused.what());
    CHECK(refused.code() == errc::ssh_authentication_failed);
    REQUIRE(refused.tried().size() == 1);
    CHECK(refused.tried()[0] == stranger.private_key.string());
    CHECK_FALSE(refused.may_have_run());

    const auto locked = test_support::make_key(f.server.directory(), "locked", "correct horse");
    f.server.authorize(locked);
    options.private_key_file = locked.private_key;
    auto without = Connection::open(f.endpoint(), options);
    const auto unusable = co_await expect_throw<SshKeyUnusableError>(std::move(without));
    CHECK(unusable.code() == errc::ssh_key_unusable);
    CHECK(unusable.source() == locked.private_key.string());
    CHECK_THAT(std::string(unusable.what()), Catch::Contains("encrypted and no passphrase"));
    CHECK_THAT(std::string(unusable.what()), !Catch::Contains(locked.private_text().substr(40, 20)));

    options.passphrase = "not-XYZZY-the-passphrase";
    auto wrong = Connection::open(f.endpoint(), options);
    // libssh2 1.10 reports a wrong passphrase as a refused key; the message says it may be either.
    const auto wrong_error = co_await expect_throw<SshAuthenticationError>(std::move(wrong));
    CHECK_THAT(std::string(wrong_error.what()), Catch::Contains("wrong passphrase") && !Catch::Contains("XYZZY"));

    options.passphrase = "correct horse";
    auto right = Connection::open(f.endpoint(), options);
    auto connection = co_await std::move(right);
    CO_CHECK(co_await echo(*connection) == "hello\n");
    co_await connection->close();

    options.private_key_file = f.server.directory() / "missing_key";
    options.passphrase.reset();
    auto missing = Connection::open(f.endpoint(), options);
    const auto missing_error = co_await expect_throw<SshKeyUnusableError>(std::move(missing));
    CHECK_THAT(std::string(missing_error.what()), Catch::Contains("missing_key") && Catch::Contains("cannot be read"));
  });
}

TEST_CASE("ssh authentication: a key in memory (OpenSSH format), EXE_SSH_KEY, default key files") {
  Fixture f;
  testing::run([&](auto) -> asio::awaitable<void> {
    auto options = f.options();
    options.private_key_file.reset();
    options.private_key_pem = f.server.client_key().private_text();
    auto in_memory = Connection::open(f.endpoint(), options);
    auto connection = co_await std::move(in_memory);
    CO_CHECK(co_await echo(*connection) == "hello\n");
    co_await connection->close();

    options.private_key_pem.reset();
    ::setenv("EXE_SSH_KEY", f.server.client_key().private_key.c_str(), 1);
    auto from_env = Connection::open(f.endpoint(), options);
    connection = co_await std::move(from_env);
    ::unsetenv("EXE_SSH_KEY");
    co_await connection->close();

    // Default files: a missing one is skipped, an encrypted one is skipped and named, the last works.
    const auto locked = test_support::make_key(f.server.directory(), "default_locked", "pw");
    options.default_key_files = {f.server.directory() / "absent", locked.private_key, f.server.client_key().private_key};
    auto defaults = Connection::open(f.endpoint(), options);
    connection = co_await std::move(defaults);
    co_await connection->close();

    options.default_key_files = {f.server.directory() / "absent", locked.private_key};
    auto none = Connection::open(f.endpoint(), options);
    const auto e = co_await expect_throw<SshAuthenticationError>(std::move(none));
    CHECK(e.code() == errc::ssh_authentication_failed);
    REQUIRE(e.tried().size() == 1);
    CHECK_THAT(e.tried()[0], Catch::Contains("default_locked") && Catch::Contains("skipped"));
  });
}

TEST_CASE("ssh authentication: the agent's keys (ssh-agent at SSH_AUTH_SOCK)") {
  Fixture f;
  // A key the server does not know first, then the right one: both are tried in order.
  const auto stranger = test_support::make_key(f.server.directory(), "agent_stranger");
  const test_support::Agent agent(f.server.directory(), {stranger, f.server.client_key()});
  testing::run([&](auto) -> asio::awaitable<void> {
    auto options = f.options();
    options.private_key_file.reset();
    options.use_agent = true;
    auto opening = Connection::open(f.endpoint(), options);
    auto connection = co_await std::move(opening);
    CO_CHECK(co_await echo(*connection) == "hello\n");
    co_await connection->close();
  });
  // Only the stranger left: refused, each agent key named by fingerprint.
  CHECK(test_support::run_program({"/usr/bin/ssh-add", "-q", "-d", f.server.client_key().public_key.string()}) == 0);
  testing::run([&](auto) -> asio::awaitable<void> {
    auto options = f.options();
    options.private_key_file.reset();
    options.use_agent = true;
    auto opening = Connection::open(f.endpoint(), options);
    const auto e = co_await expect_throw<SshAuthenticationError>(std::move(opening));
    REQUIRE(e.tried().size() == 1);
    CHECK_THAT(e.tried()[0], Catch::StartsWith("agent key SHA256:"));
  });
}

TEST_CASE("ssh connect: an unresolvable host, a refused port, a silent port") {
  Fixture f;
  testing::run(
      [&](auto executor) -> asio::awaitable<void> {
        auto options = f.options();
        auto unresolvable = Connection::open(ssh::Endpoint{"no-such-host.invalid", 22, "root"}, options);
        const auto e = co_await expect_throw<ConnectionError>(std::move(unresolvable));
        CHECK_FALSE(e.sent());
        CHECK(e.cause());
        CHECK_THAT(std::string(e.what()), Catch::Contains("no-such-host.invalid"));

        // A port nothing listens on: the fixture's port after the server is gone is not
        // guaranteed free, so use a listener that is closed again.
        boost::asio::ip::tcp::acceptor closed(executor, {boost::asio::ip::make_address("127.0.0.1"), 0});
        const auto port = closed.local_endpoint().port();
        closed.close();
        auto refused = Connection::open(ssh::Endpoint{"127.0.0.1", port, "root"}, options);
        const auto r = co_await expect_throw<ConnectionError>(std::move(refused));
        CHECK(r.cause() == std::errc::connection_refused);

        // A listener that never speaks SSH: the handshake times out.
        boost::asio::ip::tcp::acceptor silent(executor, {boost::asio::ip::make_address("127.0.0.1"), 0});
        options.handshake_timeout = 300ms;
        auto timing_out = Connection::open(ssh::Endpoint{"127.0.0.1", silent.local_endpoint().port(), "root"}, options);
        const auto t = co_await expect_throw<ConnectionError>(std::move(timing_out));
        CHECK(t.cause() == std::errc::timed_out);
        CHECK_FALSE(t.sent());
      },
      testing::RunLimits{.deadline = 30s});
}

TEST_CASE("ssh authentication: with the account's keys known, only they are offered, in order") {
  // MaxAuthTries 1: like exe.dev's front, the server takes the first key offered, no other.
  Fixture f("MaxAuthTries 1\n");
  // The agent holds a work key the account does not know, then the account's key.
  const auto work = test_support::make_key(f.server.directory(), "work_key");
  f.server.authorize(work);  // the server would take it: only the account's list keeps it out
  const test_support::Agent agent(f.server.directory(), {work, f.server.client_key()});
  const auto registered = f.server.client_key().fingerprint();
  testing::run([&](auto) -> asio::awaitable<void> {
    auto options = f.options();
    options.private_key_file.reset();
    options.use_agent = true;
    const ssh::AccountKeys account{{registered}};
    auto opening = Connection::open(f.endpoint(), options, account);
    auto connection = co_await std::move(opening);
    CHECK(connection->user_key_fingerprint() == registered);
    CO_CHECK(co_await echo(*connection) == "hello\n");
    co_await connection->close();

    // Without the list the agent's first key gets in.
    auto unfiltered = Connection::open(f.endpoint(), options);
    connection = co_await std::move(unfiltered);
    CHECK(connection->user_key_fingerprint() == work.fingerprint());
    co_await connection->close();

    // A default file that is not the account's is not offered either; an explicit key of
    // another account fails before anything is offered, naming why.
    options.use_agent = false;
    options.default_key_files = {work.private_key, f.server.client_key().private_key};
    auto from_files = Connection::open(f.endpoint(), options, account);
    connection = co_await std::move(from_files);
    CHECK(connection->user_key_fingerprint() == registered);
    co_await connection->close();

    options.private_key_file = work.private_key;
    auto explicit_other = Connection::open(f.endpoint(), options, account);
    const auto e = co_await expect_throw<SshAuthenticationError>(std::move(explicit_other));
    CHECK_THAT(e.what(), Catch::Contains("not a key of the exe.dev account") && Catch::Contains("ssh-key add") &&
                             Catch::Contains(work.fingerprint()));
  });
}
