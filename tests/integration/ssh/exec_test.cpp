// Commands over SSH channels against a private OpenSSH sshd with exe.dev's VM settings.
#include "fixture.hpp"

#include "common/coroutines.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <filesystem>

#include <unistd.h>

using namespace exedev;
using namespace exedev::ssh_test;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace asio::experimental::awaitable_operators;

namespace {

asio::awaitable<ssh::ExecResult> run(Connection& connection, std::string command, std::string stdin_data = {}) {
  ssh::ExecRequest request;
  request.command = std::move(command);
  request.stdin_data = std::move(stdin_data);
  auto running = connection.exec(std::move(request));
  co_return co_await std::move(running);
}

}  // namespace

TEST_CASE("ssh exec: negotiates with exe.dev's front (libssh2 1.10: ssh-rsa host keys, no gcm or chacha20-poly1305)") {
  Fixture f;
  testing::run([&](auto) -> asio::awaitable<void> {
    auto connection = co_await f.open();
    const auto methods = connection->negotiated_methods();
    CHECK((methods.key_exchange == "curve25519-sha256" || methods.key_exchange.rfind("ecdh-sha2-nistp", 0) == 0));
    CHECK(methods.host_key == "ssh-rsa");
    // libssh2 1.10 prefers the ctr ciphers; the front offers each.
    CHECK(methods.cipher_client_to_server.find("-ctr") != std::string::npos);
    CHECK(methods.cipher_server_to_client == methods.cipher_client_to_server);
    CHECK((methods.mac_client_to_server == "hmac-sha2-256" || methods.mac_client_to_server == "hmac-sha2-512"));
    CHECK(connection->host_key_fingerprint() == f.server.host_key_fingerprint());
    CHECK(connection->is_open());
    co_await connection->close();
    CHECK_FALSE(connection->is_open());
    co_await connection->close();  // idempotent
  });
}

TEST_CASE("ssh exec: exit codes, separate exact stdout and stderr, stdin") {
  Fixture f;
  testing::run([&](auto) -> asio::awaitable<void> {
    auto connection = co_await f.open();
    auto r = co_await run(*connection, "exit 3");
    CHECK(r.exit_code == 3);
    r = co_await run(*connection, "printf 'out\\n'; printf 'err' >&2; exit 0");
    CHECK(r.exit_code == 0);
    CHECK(r.stdout_bytes == "out\n");
    CHECK(r.stderr_bytes == "err");
    // Binary bytes, every value, both ways.
    std::string all_bytes;
    for (int i = 0; i < 256; ++i) all_bytes += static_cast<char>(i);
    r = co_await run(*connection, "cat; cat /dev/null >&2", all_bytes);
    CHECK(r.stdout_bytes == all_bytes);
    r = co_await run(*connection, "cat >&2", all_bytes + all_bytes);
    CHECK(r.stdout_bytes.empty());
    CHECK(r.stderr_bytes == all_bytes + all_bytes);
    // No stdin: EOF at once.
    r = co_await run(*connection, "wc -c");
    CHECK(r.stdout_bytes == "0\n");
    co_await connection->close();
  });
}

TEST_CASE("ssh exec: 8 MiB each way, in and out at the same time, exact") {
  Fixture f;
  testing::run(
      [&](auto) -> asio::awaitable<void> {
        auto connection = co_await f.open();
        const auto data = random_bytes(8 << 20, 1);
        // cat echoes while stdin is still being written: both directions flow at once.
        auto r = co_await run(*connection, "cat", data);
        CHECK(r.exit_code == 0);
        CO_CHECK(r.stdout_bytes == data);
        r = co_await run(*connection, "head -c 8388608 /dev/zero >&2; head -c 8388608 /dev/zero | tr '\\0' x");
        CHECK(r.stderr_bytes == std::string(8 << 20, '\0'));
        CHECK(r.stdout_bytes == std::string(8 << 20, 'x'));
        co_await connection->close();
      },
      testing::RunLimits{.deadline = 120s});
}

TEST_CASE("ssh exec: live output arrives through the callbacks, and the output limit stops the command") {
  Fixture f;
  testing::run([&](auto) -> asio::awaitable<void> {
    auto connection = co_await f.open();
    std::string live_out, live_err;
    ssh::ExecRequest request;
    request.command = "printf a; printf b >&2; printf c";
    request.on_stdout = [&](std::string_view bytes) { live_out += bytes; };
    request.on_stderr = [&](std::string_view bytes) { live_err += bytes; };
    auto running = connection->exec(std::move(request));
    const auto r = co_await std::move(running);
    CHECK(live_out == "ac");
    CHECK(live_err == "b");
    CHECK(r.stdout_bytes.empty());

    ssh::ExecRequest limited;
    limited.command = "head -c 100000 /dev/zero; sleep 30";
    limited.max_output_bytes = 1000;
    auto limited_run = connection->exec(std::move(limited));
    const auto e = co_await expect_throw<OutputLimitError>(std::move(limited_run));
    CHECK(e.limit() == 1000);
    CHECK(e.output().stdout_data == std::string(1000, '\0'));
    // The connection stays usable.
    const auto after = co_await run(*connection, "echo ok");
    CHECK(after.stdout_bytes == "ok\n");
    co_await connection->close();
  });
}

TEST_CASE("ssh exec: a command killed by a signal exits with 128 + N") {
  Fixture f;
  testing::run([&](auto) -> asio::awaitable<void> {
    auto connection = co_await f.open();
    auto r = co_await run(*connection, "kill -KILL $$");
    CHECK(r.exit_code == 137);
    r = co_await run(*connection, "kill -TERM $$");
    CHECK(r.exit_code == 143);
    co_await connection->close();
  });
}

TEST_CASE("ssh exec: 30 concurrent commands with max_sessions 10 all complete") {
  Fixture f;
  testing::run(
      [&](auto executor) -> asio::awaitable<void> {
        auto connection = co_await f.open();
        int running = 0, most_running = 0, done = 0;
        auto one = [](Connection& c, int i, int& running, int& most_running, int& done) -> asio::awaitable<void> {
          ++running;
          most_running = std::max(most_running, running);
          ssh::ExecRequest request;
          request.command = "sleep 0.2; echo " + std::to_string(i);
          auto exec = c.exec(std::move(request));
          const auto r = co_await std::move(exec);
          --running;
          CHECK(r.stdout_bytes == std::to_string(i) + "\n");
          ++done;
        };
        using Op = decltype(asio::co_spawn(executor, one(*connection, 0, running, most_running, done), asio::deferred));
        std::vector<Op> ops;
        for (int i = 0; i < 30; ++i) ops.push_back(asio::co_spawn(executor, one(*connection, i, running, most_running, done), asio::deferred));
        auto group = asio::experimental::make_parallel_group(std::move(ops));
        auto [order, errors] = co_await group.async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
        for (const auto& error : errors) {
          if (!error) continue;
          try {
            std::rethrow_exception(error);
          } catch (const std::exception& e) {
            FAIL_CHECK(e.what());
          }
        }
        CHECK(done == 30);
        CHECK(most_running == 30);  // all were waiting at once; sshd would refuse an 11th session
        co_await connection->close();
      },
      testing::RunLimits{.deadline = 60s});
}

TEST_CASE("ssh exec: a channel kept ready runs the next exec of its command, and one whose process died is replaced") {
  Fixture f;
  testing::run(
      [&](auto) -> asio::awaitable<void> {
        auto connection = co_await f.open();
        // A tag in the command line, so that the test can find the waiting process on the server.
        const std::string ready = "/bin/sh -s ready-kept-" + std::to_string(::getpid());
        // Anchored: a login shell that runs the command line without exec'ing it names it too.
        const std::string waiting = "pgrep -f -- '^/bin/sh -s [r]eady-kept-" + std::to_string(::getpid()) + "$' | wc -l";
        connection->keep_ready(ready);
        // The first exec of the command takes the channel (waiting for it if it is still being made
        // ready); the next is made ready while it runs.
        auto r = co_await run(*connection, ready, "echo first; exit 4\n");
        CHECK(r.stdout_bytes == "first\n");
        CHECK(r.exit_code == 4);
        r = co_await run(*connection, ready, "cat\n");  // the rest of stdin is the program's
        CHECK(r.exit_code == 0);
        // A process waits, started, for the next program; other commands get channels of their own.
        r = co_await run(*connection, "until [ \"$(" + waiting + ")\" -ge 1 ]; do sleep 0.01; done; " + waiting);
        CHECK(r.stdout_bytes == "1\n");
        // Killed while it waits: the next exec does not take the dead channel (whose end arrived
        // before this command's own, since sshd saw it first).
        const std::string kept = "'^/bin/sh -s [r]eady-kept-" + std::to_string(::getpid()) + "$'";
        r = co_await run(*connection, "pkill -KILL -f -- " + kept + " && pidwait -f -- " + kept + "; [ \"$(" + waiting + ")\" = 0 ]");
        CHECK(r.exit_code == 0);
        r = co_await run(*connection, ready, "echo alive\n");
        CHECK(r.stdout_bytes == "alive\n");
        CHECK(r.exit_code == 0);
        co_await connection->close();
      },
      testing::RunLimits{.deadline = 60s});
}

TEST_CASE("ssh exec: a channel kept ready gives its session slot to work that needs one") {
  Fixture f;
  const auto dir = f.server.directory() / "barrier";
  fs::create_directory(dir);
  testing::run(
      [&](auto executor) -> asio::awaitable<void> {
        auto connection = co_await f.open();
        connection->keep_ready("/bin/sh");
        auto warm = co_await run(*connection, "/bin/sh", "echo warm\n");  // a ready channel waits after this
        CHECK(warm.stdout_bytes == "warm\n");
        // max_sessions (10) commands of another kind that end only once all ten have started: with
        // the waiting channel keeping its slot, the tenth could never start.
        auto one = [](Connection& c, std::string command) -> asio::awaitable<void> {
          const auto r = co_await run(c, std::move(command));
          CHECK(r.exit_code == 0);
        };
        using Op = decltype(asio::co_spawn(executor, one(*connection, {}), asio::deferred));
        std::vector<Op> ops;
        for (int i = 0; i < 10; ++i) {
          const auto d = dir.string();
          ops.push_back(asio::co_spawn(
              executor,
              one(*connection, "touch " + d + "/" + std::to_string(i) + "; until [ \"$(ls " + d + " | wc -l)\" -ge 10 ]; do sleep 0.01; done"),
              asio::deferred));
        }
        auto group = asio::experimental::make_parallel_group(std::move(ops));
        auto [order, errors] = co_await group.async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
        for (const auto& error : errors) CHECK_FALSE(error);
        co_await connection->close();
      },
      testing::RunLimits{.deadline = 60s});
}

TEST_CASE("ssh exec: cancelling one command leaves the others running and the connection usable") {
  Fixture f;
  testing::run(
      [&](auto executor) -> asio::awaitable<void> {
        auto connection = co_await f.open();
        // A long command cancelled by a timer while two others run beside it.
        auto slow = run(*connection, "sleep 30; echo never");
        asio::steady_timer timer(executor, 300ms);
        auto cancelled = co_await (exedev::detail::capture(std::move(slow)) || timer.async_wait(asio::use_awaitable));
        CHECK(cancelled.index() == 1);
        auto a = run(*connection, "sleep 0.3; echo a");
        auto b = run(*connection, "echo b");
        auto both = co_await (std::move(a) && std::move(b));
        CHECK(std::get<0>(both).stdout_bytes == "a\n");
        CHECK(std::get<1>(both).stdout_bytes == "b\n");
        // A cancellation that lands while output streams.
        auto streaming = run(*connection, "while :; do echo tick; sleep 0.01; done");
        asio::steady_timer second(executor, 200ms);
        auto stopped = co_await (exedev::detail::capture(std::move(streaming)) || second.async_wait(asio::use_awaitable));
        CHECK(stopped.index() == 1);
        const auto after = co_await run(*connection, "echo still");
        CHECK(after.stdout_bytes == "still\n");
        co_await connection->close();
      },
      testing::RunLimits{.deadline = 30s});
}

TEST_CASE("ssh exec: a connection dropped mid-command is ConnectionError with sent() == true") {
  Fixture f;
  testing::run(
      [&](auto executor) -> asio::awaitable<void> {
        auto connection = co_await f.open();
        ssh::ExecRequest request;
        request.command = "echo started; sleep 30";
        bool started = false;
        request.on_stdout = [&](std::string_view) {
          if (started) return;
          started = true;
          // The command runs: drop the connection under it.
          f.server.kill_connections();
        };
        auto running = connection->exec(std::move(request));
        const auto e = co_await expect_throw<ConnectionError>(std::move(running));
        CHECK(started);
        CHECK(e.sent());
        CHECK(e.may_have_run());
        CHECK(e.is_retryable());
        CHECK(e.cause());
        CHECK_FALSE(connection->is_open());
        // Later calls fail the same way, without hanging.
        auto next = run(*connection, "true");
        const auto again = co_await expect_throw<ConnectionError>(std::move(next));
        CHECK_FALSE(again.sent());
        co_await connection->close();
        (void)executor;
      },
      testing::RunLimits{.deadline = 30s});
}

TEST_CASE("ssh exec: a command on a connection the server dropped while idle fails unsent") {
  Fixture f;
  testing::run(
      [&](auto) -> asio::awaitable<void> {
        auto connection = co_await f.open();
        f.server.kill_connections();
        auto next = run(*connection, "true");
        const auto e = co_await expect_throw<ConnectionError>(std::move(next));
        CHECK_FALSE(e.sent());  // the exec request never went out
        CHECK_FALSE(connection->is_open());
        co_await connection->close();
      },
      testing::RunLimits{.deadline = 20s});
}
