// Files over SFTP against a private OpenSSH sshd (its sftp-server).
#include "fixture.hpp"

#include <exedev/testing/co_check.hpp>

#include "common/coroutines.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <algorithm>
#include <csignal>
#include <sys/inotify.h>
#include <sys/stat.h>

using namespace exedev;
using namespace exedev::ssh_test;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace asio::experimental::awaitable_operators;

namespace {

std::string read_local(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

template <typename T>
asio::awaitable<std::errc> error_of(asio::awaitable<T> task) {
  const auto e = co_await expect_throw<fs::filesystem_error>(std::move(task));
  co_return static_cast<std::errc>(e.code().value());
}

// The sftp-server processes serving this fixture's sshd (their HOME is its own), oldest first.
std::vector<pid_t> sftp_servers_of(const Fixture& f) {
  const auto home = "HOME=" + (f.server.directory() / "home").string();
  std::vector<std::pair<unsigned long long, pid_t>> found;  // (start time, pid)
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (read_local(entry.path() / "comm") != "sftp-server\n") continue;
    const auto environment = read_local(entry.path() / "environ");
    if (environment.find(home + '\0') == std::string::npos) continue;
    // Field 22 of stat, after the parenthesised command name.
    const auto stat_line = read_local(entry.path() / "stat");
    std::istringstream stat(stat_line.substr(stat_line.rfind(')') + 2));
    std::string field;
    for (int i = 3; i < 22; ++i) stat >> field;
    unsigned long long start = 0;
    stat >> start;
    found.emplace_back(start, static_cast<pid_t>(std::stoi(name)));
  }
  std::sort(found.begin(), found.end());
  std::vector<pid_t> pids;
  for (const auto& [start, pid] : found) pids.push_back(pid);
  return pids;
}

// Channels open one at a time, so a second SFTP session that was being opened is open once a
// command's own channel has been.
asio::awaitable<void> let_channel_openings_finish(Connection& connection) {
  ssh::ExecRequest request;
  request.command = "true";
  co_await connection.exec(std::move(request));
}

}  // namespace

TEST_CASE("ssh sftp: 8 MiB written and read back exactly, with the mode of a new file") {
  Fixture f;
  const auto dir = f.server.directory() / "files";
  fs::create_directory(dir);
  testing::run(
      [&](auto) -> asio::awaitable<void> {
        auto connection = co_await f.open();
        auto sftp = co_await connection->sftp();
        const auto data = random_bytes(8 << 20, 7);
        const auto path = (dir / "big.bin").string();
        co_await sftp->write_file(path, data, 0640);
        CO_CHECK(read_local(path) == data);
        struct stat file_stat {};
        ::stat(path.c_str(), &file_stat);
        CHECK((file_stat.st_mode & 0777) == (0640 & ~0022 & 0777));
        const auto back = co_await sftp->read_file(path);
        CO_CHECK(back == data);
        // Truncated on rewrite; an existing file's mode stays.
        ::chmod(path.c_str(), 0600);
        co_await sftp->write_file(path, "short", 0644);
        CHECK(read_local(path) == "short");
        ::stat(path.c_str(), &file_stat);
        CHECK((file_stat.st_mode & 0777) == 0600);
        // Empty files both ways.
        co_await sftp->write_file((dir / "empty").string(), "", 0644);
        CO_CHECK(co_await sftp->read_file((dir / "empty").string()) == "");
        // The same session for every caller.
        CO_CHECK(co_await connection->sftp() == sftp);
        co_await connection->close();
      },
      testing::RunLimits{.deadline = 120s});
}

TEST_CASE("ssh sftp: a large write goes in halves over a second session, which yields its slot and is let go when it breaks") {
  Fixture f;
  const auto dir = f.server.directory() / "lanes";
  fs::create_directory(dir);
  const auto path = (dir / "big.bin").string();
  testing::run(
      [&](auto) -> asio::awaitable<void> {
        auto options = f.options();
        options.max_sessions = 3;  // the SFTP session, the second one, one left for commands
        auto opening = Connection::open(f.endpoint(), options);
        auto connection = co_await std::move(opening);
        auto sftp = co_await connection->sftp();
        // Asked for: it opens in the background (whether it is open already when this returns
        // depends on the scheduling, so it is not checked).
        (void)connection->upload_lane();
        co_await let_channel_openings_finish(*connection);
        REQUIRE(connection->upload_lane() != nullptr);
        CHECK(sftp_servers_of(f).size() == 2);

        // A new file gets its mode; a shorter file over a longer one leaves nothing of the old.
        const auto big = random_bytes(9 << 20, 3);
        co_await sftp->write_file(path, big, 0640);
        CO_CHECK(read_local(path) == big);
        struct stat file_stat {};
        ::stat(path.c_str(), &file_stat);
        CHECK((file_stat.st_mode & 0777) == (0640 & ~0022 & 0777));
        const auto smaller = random_bytes(5 << 20, 4);
        co_await sftp->write_file(path, smaller, 0600);
        CO_CHECK(read_local(path) == smaller);
        ::stat(path.c_str(), &file_stat);
        CHECK((file_stat.st_mode & 0777) == (0640 & ~0022 & 0777));

        // Two commands that wait for each other need two slots: the idle second session gives
        // its up (else the reader waits forever and the test's deadline fails it).
        const auto fifo = dir / "meeting";
        REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
        ssh::ExecRequest reader;
        reader.command = "cat " + fifo.string();
        ssh::ExecRequest writer;
        writer.command = "echo met > " + fifo.string();
        const std::weak_ptr<ssh::Sftp> lane_before = connection->upload_lane();  // a weak one: keeps it idle
        REQUIRE_FALSE(lane_before.expired());
        auto met = co_await (connection->exec(std::move(reader)) && connection->exec(std::move(writer)));
        CHECK(std::get<0>(met).stdout_bytes == "met\n");
        // Given up (and asked for again: a new lane may already be open by now, never the old one).
        const auto lane_after = connection->upload_lane();
        CHECK((lane_after == nullptr || lane_after != lane_before.lock()));

        // A second session whose sftp-server dies is let go; the write goes whole on the first.
        co_await let_channel_openings_finish(*connection);
        const std::weak_ptr<ssh::Sftp> broken_lane = connection->upload_lane();
        REQUIRE_FALSE(broken_lane.expired());
        const auto servers = sftp_servers_of(f);
        REQUIRE(servers.size() == 2);
        REQUIRE(::kill(servers.back(), SIGKILL) == 0);
        const auto third = random_bytes(6 << 20, 5);
        co_await sftp->write_file(path, third, 0644);
        CO_CHECK(read_local(path) == third);
        // Let go (a new lane may already be opening or open by now, never the broken one).
        const auto lane_now = connection->upload_lane();
        CHECK((lane_now == nullptr || lane_now != broken_lane.lock()));
        co_await connection->close();
      },
      testing::RunLimits{.deadline = 120s});
}

TEST_CASE("ssh sftp: failures are filesystem_error with the path and the mapped code") {
  Fixture f;
  const auto dir = f.server.directory() / "errors";
  fs::create_directory(dir);
  std::ofstream(dir / "file") << "x";
  fs::create_directory_symlink(dir, dir / "link-to-dir");
  testing::run([&](auto) -> asio::awaitable<void> {
    auto connection = co_await f.open();
    auto sftp = co_await connection->sftp();
    const auto d = dir.string();
    const auto missing = co_await expect_throw<fs::filesystem_error>(sftp->read_file(d + "/missing"));
    CHECK(missing.code() == std::errc::no_such_file_or_directory);
    CHECK(missing.path1() == d + "/missing");
    CO_CHECK(co_await error_of(sftp->write_file(d + "/missing/x", "x", 0644)) == std::errc::no_such_file_or_directory);
    CO_CHECK(co_await error_of(sftp->read_file(d)) == std::errc::is_a_directory);
    CO_CHECK(co_await error_of(sftp->read_file(d + "/link-to-dir")) == std::errc::is_a_directory);
    // The session is still good after failures.
    CO_CHECK(co_await sftp->read_file(d + "/file") == "x");
    co_await connection->close();
  });
}

TEST_CASE("ssh sftp: concurrent readers and writers share the session; commands run beside them") {
  Fixture f;
  const auto dir = f.server.directory() / "concurrent";
  fs::create_directory(dir);
  testing::run(
      [&](auto) -> asio::awaitable<void> {
        auto connection = co_await f.open();
        auto sftp = co_await connection->sftp();
        const auto one = random_bytes(3 << 20, 11);
        const auto two = random_bytes(3 << 20, 12);
        const auto d = dir.string();
        ssh::ExecRequest request;
        request.command = "head -c 4000000 /dev/zero | wc -c";
        auto counted = co_await (sftp->write_file(d + "/one", one, 0644) && sftp->write_file(d + "/two", two, 0644) &&
                                 connection->exec(std::move(request)));
        CHECK(counted.stdout_bytes == "4000000\n");
        auto reads = co_await (sftp->read_file(d + "/one") && sftp->read_file(d + "/two"));
        CO_CHECK(std::get<0>(reads) == one);
        CO_CHECK(std::get<1>(reads) == two);
        co_await connection->close();
      },
      testing::RunLimits{.deadline = 120s});
}

TEST_CASE("ssh sftp: a connection lost during a write is ConnectionError") {
  Fixture f;
  const auto dir = f.server.directory() / "lost";
  fs::create_directory(dir);
  testing::run(
      [&](auto executor) -> asio::awaitable<void> {
        auto connection = co_await f.open();
        auto sftp = co_await connection->sftp();
        const auto data = random_bytes(64 << 20, 3);
        // Drop the connection as soon as the file's first bytes land (inotify says when).
        asio::posix::stream_descriptor watch(executor, ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
        ::inotify_add_watch(watch.native_handle(), dir.c_str(), IN_MODIFY);
        auto writing = sftp->write_file((dir / "big").string(), data, 0644);
        auto dropping = [](asio::posix::stream_descriptor& events, test_support::SshServer& server) -> asio::awaitable<void> {
          co_await events.async_wait(asio::posix::stream_descriptor::wait_read, asio::use_awaitable);
          server.kill_connections();
        };
        const auto failure = co_await (exedev::detail::capture(std::move(writing)) && dropping(watch, f.server));
        REQUIRE(failure);
        try {
          std::rethrow_exception(failure);
        } catch (const ConnectionError& e) {
          CHECK(e.sent());
        }
        CHECK_FALSE(connection->is_open());
        co_await connection->close();
      },
      testing::RunLimits{.deadline = 60s});
}

// Not part of the suite (hidden tag): `integration_ssh "[.benchmark]"` prints the time of a
// 64 MiB SFTP write and read on loopback beside a local `cat` of the same file.
TEST_CASE("ssh sftp: 64 MiB write and read time beside a local cat", "[.benchmark]") {
  Fixture f;
  const auto path = (f.server.directory() / "bench.bin").string();
  const auto data = random_bytes(64 << 20, 5);
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  Clock::duration write_time{}, read_time{};
  // Beside each transfer, a 1 ms timer on the same thread: the longest wait between its turns is
  // how long the transfer held the thread from the executor's other work.
  Clock::duration write_hold{}, read_hold{};
  const auto heartbeat = [](Clock::duration& longest) -> asio::awaitable<void> {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    auto last = Clock::now();
    for (;;) {
      timer.expires_after(1ms);
      co_await timer.async_wait(asio::use_awaitable);
      const auto now = Clock::now();
      longest = std::max(longest, now - last);
      last = now;
    }
  };
  testing::run(
      [&](auto) -> asio::awaitable<void> {
        auto connection = co_await f.open();
        auto sftp = co_await connection->sftp();
        const auto t0 = Clock::now();
        auto writing = sftp->write_file(path, data, 0644) || heartbeat(write_hold);  // named: GCC 12
        co_await std::move(writing);
        const auto t1 = Clock::now();
        auto read_racing = sftp->read_file(path) || heartbeat(read_hold);
        auto reading = co_await std::move(read_racing);
        const auto t2 = Clock::now();
        CO_CHECK(std::get<0>(reading) == data);
        write_time = t1 - t0;
        read_time = t2 - t1;
        co_await connection->close();
      },
      testing::RunLimits{.deadline = 300s});
  const auto c0 = Clock::now();
  std::string ignored;
  test_support::run_program({"/bin/sh", "-c", "cat '" + path + "' > /dev/null"}, &ignored);
  const auto cat_time = Clock::now() - c0;
  std::printf("64 MiB over SFTP on loopback: write %.3f s, read %.3f s; local cat %.3f s (ratio write+read / cat: %.1f)\n",
              seconds(write_time), seconds(read_time), seconds(cat_time),
              (seconds(write_time) + seconds(read_time)) / seconds(cat_time));
  std::printf("longest the thread was held from a 1 ms timer beside them: write %.1f ms, read %.1f ms\n",
              1000 * seconds(write_hold), 1000 * seconds(read_hold));
}
