// LocalBackend's command streams: real `sh -c` children with their stdin and stdout as pipes.
#include <catch2/catch.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exedev/testing/run.hpp>
#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/local_backend.hpp>

#include <signal.h>
#include <sys/types.h>

#include <cerrno>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/coroutines.hpp"
#include "common/event.hpp"
#include "common/subprocess.hpp"
#include "unit/workspace/support.hpp"

namespace asio = boost::asio;
namespace ws = exedev::workspace;

using namespace std::chrono_literals;
using exedev::test::error_of;
using exedev::test::TempDir;
using exedev::testing::run;
using ws::Task;

namespace {

// Long enough for any output a test expects; a read only waits this long when the output is
// missing, which fails the test.
constexpr auto kPatience = 10s;

// Reads until the output holds `expected`, stdout ends, or a read waited kPatience in vain.
Task<std::string> read_until(ws::CommandStream& stream, std::string expected) {
  std::string seen;
  while (seen.find(expected) == std::string::npos && !stream.ended()) {
    const auto chunk = co_await stream.read_some(4096, kPatience);
    if (chunk.empty() && !stream.ended()) break;
    seen += chunk;
  }
  co_return seen;
}

// Reads to the end of stdout (or until a read waited kPatience in vain).
Task<std::string> read_to_end(ws::CommandStream& stream) {
  std::string seen;
  while (!stream.ended()) {
    const auto chunk = co_await stream.read_some(4096, kPatience);
    if (chunk.empty() && !stream.ended()) break;
    seen += chunk;
  }
  co_return seen;
}

// The pid a script printed first (`echo $$`).
Task<pid_t> read_pid(ws::CommandStream& stream) {
  const auto line = co_await read_until(stream, "\n");
  co_return static_cast<pid_t>(std::stol(line));
}

// A pidfd of the process `pid` (not yet reaped): readable once it has exited, whoever reaps it.
asio::posix::stream_descriptor exit_watch(const asio::any_io_executor& executor, pid_t pid) {
  return asio::posix::stream_descriptor(executor, exedev::detail::open_pidfd(pid));
}

Task<void> wait_for_exit(asio::posix::stream_descriptor& watch) {
  co_await watch.async_wait(asio::posix::stream_descriptor::wait_read, asio::use_awaitable);
}

bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

Task<std::unique_ptr<ws::CommandStream>> open_stream(ws::LocalBackend& backend, std::string script,
                                                    std::vector<std::string> args = {}) {
  co_return co_await backend.open_command_stream(std::move(script), std::move(args));
}

}  // namespace

TEST_CASE("LocalBackend stream: bytes written to cat come back", "[unit][workspace]") {
  TempDir dir;
  ws::LocalBackend backend(dir.path());
  run([&](asio::any_io_executor) -> Task<void> {
    auto stream = co_await open_stream(backend, "cat");
    co_await stream->write("hello\n", 5s);
    CO_CHECK(co_await read_until(*stream, "hello\n") == "hello\n");
    CHECK_FALSE(stream->ended());
    co_await stream->close();
    CHECK(stream->ended());
  });
}

TEST_CASE("LocalBackend stream: output arrives while the program runs", "[unit][workspace]") {
  TempDir dir;
  ws::LocalBackend backend(dir.path());
  run([&](asio::any_io_executor) -> Task<void> {
    auto stream = co_await open_stream(backend, "while read l; do echo \"got $l\"; done");
    co_await stream->write("a\n", 5s);
    CO_CHECK(co_await read_until(*stream, "got a\n") == "got a\n");
    co_await stream->write("b\n", 5s);
    CO_CHECK(co_await read_until(*stream, "got b\n") == "got b\n");
    CHECK_FALSE(stream->ended());
    co_await stream->close();
  });
}

TEST_CASE("LocalBackend stream: close_stdin is EOF for the program, then its stdout ends", "[unit][workspace]") {
  TempDir dir;
  ws::LocalBackend backend(dir.path());
  run([&](asio::any_io_executor) -> Task<void> {
    auto stream = co_await open_stream(backend, "cat; echo done");
    co_await stream->write("x", 5s);
    co_await stream->close_stdin();
    CO_CHECK(co_await read_to_end(*stream) == "xdone\n");
    CHECK(stream->ended());
    CO_CHECK(co_await stream->read_some(10, 0ms) == "");
    CO_CHECK(co_await error_of<std::logic_error>(stream->write("late", 5s)) ==
             std::optional<std::string>("the command stream's stdin was closed"));
    co_await stream->close();
  });
}

TEST_CASE("LocalBackend stream: a read with nothing to read returns empty, not ended", "[unit][workspace]") {
  TempDir dir;
  ws::LocalBackend backend(dir.path());
  run([&](asio::any_io_executor) -> Task<void> {
    auto stream = co_await open_stream(backend, "exec sleep 1000");
    CO_CHECK(co_await stream->read_some(100, 50ms) == "");
    CHECK_FALSE(stream->ended());
    co_await stream->close();
  });
}

TEST_CASE("LocalBackend stream: a cancelled read takes nothing", "[unit][workspace]") {
  TempDir dir;
  ws::LocalBackend backend(dir.path());
  run([&](asio::any_io_executor executor) -> Task<void> {
    auto stream = co_await open_stream(backend, "cat");
    asio::cancellation_signal cancel;
    std::optional<std::exception_ptr> outcome;
    exedev::detail::Event finished;
    asio::co_spawn(executor, stream->read_some(100, kPatience),
                   asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr error, const ws::Bytes&) {
                     outcome = error;
                     finished.notify();
                   }));
    co_await asio::post(executor, asio::use_awaitable);  // the read starts
    cancel.emit(asio::cancellation_type::terminal);
    while (!outcome) co_await finished.wait();
    CHECK(exedev::detail::is_cancellation(*outcome));
    co_await stream->write("after", 5s);
    CO_CHECK(co_await read_until(*stream, "after") == "after");
    co_await stream->close();
  });
}

TEST_CASE("LocalBackend stream: writing to a command that exited is WorkspaceError", "[unit][workspace]") {
  TempDir dir;
  ws::LocalBackend backend(dir.path());
  run([&](asio::any_io_executor executor) -> Task<void> {
    auto stream = co_await open_stream(backend, "echo $$");
    const pid_t pid = co_await read_pid(*stream);
    // Its exit, not the end of its stdout: at exit the kernel may release stdout before stdin.
    auto watch = exit_watch(executor, pid);
    co_await wait_for_exit(watch);
    CO_CHECK(co_await error_of<ws::WorkspaceError>(stream->write("x", 5s)) ==
             std::optional<std::string>("the command no longer reads its stdin"));
    co_await stream->close();
  });
}

TEST_CASE("LocalBackend stream: a write the command does not take times out", "[unit][workspace]") {
  TempDir dir;
  ws::LocalBackend backend(dir.path());
  run([&](asio::any_io_executor) -> Task<void> {
    auto stream = co_await open_stream(backend, "exec sleep 1000");  // never reads its stdin
    const std::string mebibyte(1024 * 1024, 'x');
    const auto message = co_await error_of<ws::WorkspaceTimeoutError>(stream->write(mebibyte, 200ms));
    REQUIRE(message);
    CHECK(message->find("the command took none of its input for 200 ms") == 0);
    co_await stream->close();
  });
}

TEST_CASE("LocalBackend stream: close stops a running command and reaps it", "[unit][workspace]") {
  TempDir dir;
  ws::LocalBackend backend(dir.path());
  run([&](asio::any_io_executor) -> Task<void> {
    auto stream = co_await open_stream(backend, "echo $$; sleep 1000");
    const pid_t pid = co_await read_pid(*stream);
    CHECK(process_exists(pid));
    co_await stream->close();
    CHECK_FALSE(process_exists(pid));  // killed and reaped: not even a zombie is left
    CHECK(stream->ended());
  });
}

TEST_CASE("LocalBackend stream: destroying a stream kills its command", "[unit][workspace]") {
  TempDir dir;
  ws::LocalBackend backend(dir.path());
  run([&](asio::any_io_executor executor) -> Task<void> {
    auto stream = co_await open_stream(backend, "echo $$; sleep 1000");
    const pid_t pid = co_await read_pid(*stream);
    auto watch = exit_watch(executor, pid);  // before the stream's reaper can free the pid
    stream.reset();
    co_await wait_for_exit(watch);
  });
}

TEST_CASE("LocalBackend stream: args are positional parameters, stderr is discarded, env as run()",
          "[unit][workspace]") {
  TempDir dir;
  ws::LocalBackend backend(dir.path(), ws::Env{{"FROM_CTOR", "1"}});
  run([&](asio::any_io_executor) -> Task<void> {
    const std::vector<std::string> args{"a b", "", "$HOME"};
    auto stream = co_await open_stream(backend, "printf '%s|' \"$0\" \"$@\"; echo err >&2; echo \"$FROM_CTOR\"; pwd -P", args);
    CO_CHECK(co_await read_to_end(*stream) == "sh|a b||$HOME|1\n" + dir.path() + "\n");
    co_await stream->close();
  });
}

TEST_CASE("LocalBackend stream: a missing working directory is WorkspaceUnavailableError", "[unit][workspace]") {
  TempDir dir;
  ws::LocalBackend backend(dir / "missing");
  run([&](asio::any_io_executor) -> Task<void> {
    CO_CHECK(co_await error_of<ws::WorkspaceUnavailableError>(open_stream(backend, "true")) ==
             std::optional<std::string>("local workspace directory " + dir.path() + "/missing does not exist"));
  });
}
