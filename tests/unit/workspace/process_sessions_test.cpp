// Process sessions' sans-IO half: the parsers against well-formed and hostile output, the
// script builders' quoting, name and argument validation; then, on a real /bin/sh through
// LocalBackend, the refusals that need a shell (a missing tool, a cancelled long poll).
#include <catch2/catch.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exedev/testing/commands_only.hpp>
#include <exedev/testing/run.hpp>
#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/local_backend.hpp>
#include <exedev/workspace/sessions.hpp>
#include <exedev/workspace/unavailable.hpp>
#include <exedev/workspace/workspace.hpp>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "common/base64.hpp"
#include "common/random_ids.hpp"
#include "unit/workspace/support.hpp"
#include "workspace/process_sessions.hpp"

namespace ws = exedev::workspace;
namespace detail = exedev::workspace::detail;

using exedev::detail::base64_encode;
using exedev::test::error_of;
using exedev::test::TempDir;

namespace {

std::string read_header(const char* exit, const char* size, const char* start, const char* count) {
  return std::string("exit ") + exit + "\nsize " + size + "\nstart " + start + "\ncount " + count + "\n";
}

}  // namespace

TEST_CASE("process sessions: names are validated", "[unit][workspace]") {
  for (const char* good : {"a", "repl", "py_3.12-x", "A0", "x.."}) {
    INFO(good);
    CHECK_NOTHROW(ws::validate_session_name(good));
  }
  const std::string too_long(65, 'a');
  for (const std::string& bad : {std::string(), std::string("."), std::string(".."), std::string(".hidden"),
                                std::string("-n"), std::string("a b"), std::string("a/b"), std::string("a'b"),
                                std::string("\xC3\xBC"), std::string("a\nb"), too_long}) {
    INFO(bad);
    CHECK_THROWS_AS(ws::validate_session_name(bad), std::invalid_argument);
  }
  CHECK_NOTHROW(ws::validate_session_name(std::string(64, 'a')));
}

TEST_CASE("process sessions: exit statuses name their signal", "[unit][workspace]") {
  const struct {
    const char* text;
    std::optional<int> code;
    std::optional<std::string> signal;
  } table[] = {
      {"0", 0, std::nullopt},      {"7", 7, std::nullopt},        {"128", 128, std::nullopt},
      {"130", 130, "INT"},         {"137", 137, "KILL"},          {"143", 143, "TERM"},
      {"159", 159, "SYS"},         {"160", 160, "SIG32"},         {"192", 192, "SIG64"},
      {"193", 193, std::nullopt},  {"255", 255, std::nullopt},    {"256", std::nullopt, std::nullopt},
      {"-1", std::nullopt, std::nullopt}, {"", std::nullopt, std::nullopt}, {" 1", std::nullopt, std::nullopt},
      {"1 ", std::nullopt, std::nullopt}, {"0x1", std::nullopt, std::nullopt},
      {"99999999999999999999999", std::nullopt, std::nullopt},
  };
  for (const auto& row : table) {
    INFO("'" << row.text << "'");
    const auto status = detail::parse_session_exit(row.text);
    REQUIRE(status.has_value() == row.code.has_value());
    if (!status) continue;
    CHECK(status->code == *row.code);
    CHECK(status->signal == row.signal);
  }
}

TEST_CASE("process sessions: a read's output", "[unit][workspace]") {
  SECTION("bytes, offsets and completeness") {
    const auto out = detail::parse_session_read(read_header("-", "10", "4", "3") + base64_encode("abc") + "\n", "s", 4, 3);
    CHECK(out.data == "abc");
    CHECK(out.offset == 4);
    CHECK(out.next_offset == 7);
    CHECK(out.dropped_bytes == 0);
    CHECK_FALSE(out.exit.has_value());
    CHECK_FALSE(out.complete);
  }
  SECTION("a drop moves the start past from_offset") {
    const auto out = detail::parse_session_read(read_header("0", "70000", "65536", "2") + base64_encode("xy"), "s", 10, 5);
    CHECK(out.dropped_bytes == 65526);
    CHECK(out.offset == 65536);
    CHECK(out.next_offset == 65538);
    REQUIRE(out.exit.has_value());
    CHECK_FALSE(out.complete);
  }
  SECTION("nothing left of an ended program is complete") {
    const auto out = detail::parse_session_read(read_header("137", "5", "5", "0"), "s", 5, 5);
    CHECK(out.data.empty());
    CHECK(out.complete);
    CHECK(out.exit->signal == std::optional<std::string>("KILL"));
  }
  SECTION("a lost session is complete once read, without a status") {
    const auto out = detail::parse_session_read(read_header("lost", "5", "2", "3") + base64_encode("abc"), "s", 2, 5);
    CHECK(out.lost);
    CHECK_FALSE(out.exit.has_value());
    CHECK(out.complete);
  }
  SECTION("an offset past the end waits and returns nothing") {
    const auto out = detail::parse_session_read(read_header("-", "5", "9", "0"), "s", 9, 5);
    CHECK(out.data.empty());
    CHECK(out.next_offset == 9);
  }
}

TEST_CASE("process sessions: a hostile read is refused", "[unit][workspace]") {
  const std::string abc = base64_encode("abc");
  const std::pair<std::string, const char*> table[] = {
      {"", "empty"},
      {read_header("-", "10", "0", "3"), "count without its bytes"},
      {read_header("-", "10", "0", "3") + base64_encode("ab"), "fewer bytes than the count"},
      {read_header("-", "10", "0", "3") + base64_encode("abcd"), "more bytes than the count"},
      {read_header("-", "10", "0", "3") + "!!!!", "not base64"},
      {read_header("-", "10", "0", "0") + "extra", "bytes after a count of 0"},
      {read_header("-", "10", "0", "4") + base64_encode("abcd"), "a count above max_bytes"},
      {read_header("-", "2", "0", "3") + abc, "bytes past the size"},
      {read_header("-", "10", "20", "3") + abc, "a start past the size with bytes"},
      {read_header("-", "10", "1", "3") + abc, "a start before from_offset"},
      {read_header("-", "10", "-1", "3") + abc, "a negative start"},
      {read_header("-", "99999999999999999999", "2", "3") + abc, "a size past 64 bits"},
      {read_header("-", "18446744073709551615", "2", "3") + abc, "a size of 20 digits"},
      {read_header("-", " 10", "2", "3") + abc, "a padded number"},
      {read_header("x", "10", "2", "3") + abc, "a word for a status"},
      {read_header("999", "10", "2", "3") + abc, "a status above 255"},
      {"exit -\nsize 10\ncount 3\nstart 2\n" + abc, "fields out of order"},
      {"exit -\nsize 10\nstart 2\n", "a missing count"},
      {"exit -\r\nsize 10\r\nstart 2\r\ncount 0\r\n", "CRLF lines"},
      {read_header("-", "10", "2", "3") + abc + std::string(100, 'A'), "padding past the bytes' text"},
  };
  for (const auto& [text, what] : table) {
    INFO(what);
    CHECK_THROWS_AS(detail::parse_session_read(text, "s", 2, 3), detail::SessionOutputError);
  }
}

TEST_CASE("process sessions: wait's output", "[unit][workspace]") {
  CHECK_FALSE(detail::parse_session_wait("running\n", "s").has_value());
  CHECK(detail::parse_session_wait("exit 3\n", "s")->code == 3);
  CHECK_THROWS_AS(detail::parse_session_wait("exit lost\n", "s"), ws::WorkspaceError);
  CHECK_THROWS_AS(detail::parse_session_wait("exit -\n", "s"), detail::SessionOutputError);
  for (const char* bad : {"", "running", "exit\n", "exit 3", "exit 3\nexit 4\n", "exit 300\n", "done\n"}) {
    INFO(bad);
    CHECK_THROWS_AS(detail::parse_session_wait(bad, "s"), detail::SessionOutputError);
  }
}

TEST_CASE("process sessions: list's records", "[unit][workspace]") {
  const auto command = base64_encode("python3 -i");
  const auto text = "session zeta - 1 1700000000 " + command +
                    "\nsession alpha 130 0 - -\nsession .x - 0 - -\nsession gone lost 0 - -\n";
  const auto sessions = detail::parse_session_list(text);
  REQUIRE(sessions.size() == 3);  // ".x" is no session start_session() made
  CHECK(sessions[1].name == "gone");
  CHECK(sessions[1].state == ws::SessionState::lost);
  CHECK_FALSE(sessions[1].exit.has_value());
  CHECK(sessions[0].name == "alpha");
  CHECK(sessions[0].state == ws::SessionState::exited);
  CHECK(sessions[0].exit->signal == std::optional<std::string>("INT"));
  CHECK_FALSE(sessions[0].pty);
  CHECK(sessions[2].name == "zeta");
  CHECK(sessions[2].state == ws::SessionState::running);
  CHECK(sessions[2].pty);
  CHECK(sessions[2].command == "python3 -i");
  CHECK(sessions[2].started.time_since_epoch() == std::chrono::seconds(1700000000));
  CHECK(detail::parse_session_list("").empty());
  for (const char* bad : {"session a - 1 1 -", "session a - 2 1 -\n", "session a - 1 x -\n",
                                "session a - 1 99999999999999 -\n", "session a - 1 1 !!\n", "session a -  1 1 -\n",
                                "sess a - 1 1 -\n", "session a 256 1 1 -\n", "session a - 1 1 - extra\n", "session a Lost 1 1 -\n"}) {
    INFO(bad);
    CHECK_THROWS_AS(detail::parse_session_list(bad), detail::SessionOutputError);
  }
}

TEST_CASE("process sessions: missing tools are named, others ignored", "[unit][workspace]") {
  CHECK(detail::parse_session_missing_tools("missing setsid script\n") == std::vector<std::string>{"setsid", "script"});
  CHECK(detail::parse_session_missing_tools("missing \x1b[31mrm script\n") == std::vector<std::string>{"script"});
  CHECK(detail::parse_session_missing_tools("").empty());
  CHECK(detail::parse_session_missing_tools("missing").empty());
}

TEST_CASE("process sessions: the launcher quotes what the caller gave", "[unit][workspace]") {
  ws::ProcessSessionSpec spec;
  spec.command = ws::Command::argv({"printf", "%s\\n", "it's $HOME"});
  spec.env = {{"GREETING", "a'b\nc"}};
  spec.pty = false;
  CHECK(detail::session_exec_words(spec.command) == "'printf' '%s\\n' 'it'\"'\"'s $HOME'");
  CHECK(detail::session_exec_words(ws::Command::shell("echo $x")) == "/bin/sh -c 'echo $x'");
  const auto script = detail::session_start_script("n", spec, "/work/it's");
  CHECK(script.find("timeout script") == std::string::npos);  // pipes need no `script`
  spec.pty = true;
  CHECK(detail::session_start_script("n", spec, "/w").find("timeout script") != std::string::npos);
  CHECK(detail::session_read_script("n", 5, 7, 3).find("from=5;") != std::string::npos);
}

TEST_CASE("process sessions: a script's status is its error", "[unit][workspace]") {
  const auto status = [](int code) {
    ws::CommandResult result;
    result.exit_code = code;
    result.stderr_text = "boom\x1b[2J";
    return result;
  };
  CHECK_NOTHROW(detail::raise_for_session_status(status(0), "s", "read"));
  CHECK_THROWS_AS(detail::raise_for_session_status(status(detail::kSessionUnknown), "s", "read"), ws::WorkspaceUsageError);
  CHECK_THROWS_AS(detail::raise_for_session_status(status(detail::kSessionExists), "s", "start"), ws::WorkspaceUsageError);
  CHECK_THROWS_AS(detail::raise_for_session_status(status(detail::kSessionNotPty), "s", "resize"), ws::WorkspaceUsageError);
  CHECK_THROWS_AS(detail::raise_for_session_status(status(detail::kSessionEnded), "s", "write"), ws::WorkspaceError);
  CHECK_THROWS_AS(detail::raise_for_session_status(status(detail::kSessionTimeout), "s", "write"),
                  ws::WorkspaceTimeoutError);
  try {
    detail::raise_for_session_status(status(2), "s", "read");
    FAIL("no error");
  } catch (const ws::WorkspaceScriptError& e) {
    // The environment's stderr is shown inert: no escape sequence reaches a terminal.
    CHECK(std::string(e.what()).find('\x1b') == std::string::npos);
    CHECK(std::string(e.what()).find("boom") != std::string::npos);
  }
}

TEST_CASE("process sessions: arguments are checked before anything runs", "[unit][workspace]") {
  TempDir dir;
  ws::LocalBackend backend(dir.path());
  exedev::testing::run([&](boost::asio::any_io_executor) -> ws::Task<void> {
    ws::ProcessSessionSpec empty;
    empty.pty = false;
    CO_CHECK((co_await error_of<std::invalid_argument>(backend.start_session("x", empty))).has_value());
    ws::ProcessSessionSpec bad_env;
    bad_env.command = ws::Command::shell("true");
    bad_env.env = {{"A-B", "1"}};
    CO_CHECK((co_await error_of<std::invalid_argument>(backend.start_session("x", bad_env))).has_value());
    ws::ProcessSessionSpec small;
    small.command = ws::Command::shell("true");
    small.max_output_bytes = 1000;
    CO_CHECK((co_await error_of<std::invalid_argument>(backend.start_session("x", small))).has_value());
    const std::string nothing;
    CO_CHECK((co_await error_of<std::invalid_argument>(backend.write_stdin("x", nothing))).has_value());
    const std::string too_much(ws::SupportsProcessSessions::max_write_bytes + 1, 'a');
    CO_CHECK((co_await error_of<std::invalid_argument>(backend.write_stdin("x", too_much))).has_value());
    CO_CHECK((co_await error_of<std::invalid_argument>(backend.read_output("x", 0, 0, std::chrono::milliseconds(0)))).has_value());
    CO_CHECK((co_await error_of<std::invalid_argument>(backend.read_output("x", 0, 1, std::chrono::milliseconds(20'001)))).has_value());
    CO_CHECK((co_await error_of<std::invalid_argument>(backend.signal_session("x", "SEGV"))).has_value());
    const std::uint64_t past_int64 = std::uint64_t{1} << 63;
    CO_CHECK((co_await error_of<std::invalid_argument>(backend.read_output("x", past_int64, 1, std::chrono::milliseconds(0))))
                 .has_value());
    const ws::TerminalSize no_rows{0, 80};
    CO_CHECK((co_await error_of<std::invalid_argument>(backend.resize_terminal("x", no_rows))).has_value());
    CO_CHECK((co_await error_of<std::invalid_argument>(backend.wait_session("x", std::chrono::milliseconds(0)))).has_value());
  });
}

TEST_CASE("process sessions: a missing `script` is named, nothing started", "[unit][workspace]") {
  TempDir dir;
  // A PATH holding every tool the start script uses except `script`.
  const auto bin = std::filesystem::path(dir.path()) / "bin";
  std::filesystem::create_directories(bin);
  for (const char* tool : {"sh", "base64", "mkfifo", "setsid", "stty", "timeout", "id", "mkdir", "rm", "date", "cat"}) {
    for (const char* prefix : {"/usr/bin/", "/bin/"}) {
      if (std::filesystem::exists(std::string(prefix) + tool)) {
        std::filesystem::create_symlink(std::string(prefix) + tool, bin / tool);
        break;
      }
    }
  }
  ws::LocalBackend backend(dir.path(), ws::Env{{"PATH", bin.string()}});
  const auto name = "unit-" + exedev::detail::random_hex(12);
  exedev::testing::run([&](boost::asio::any_io_executor) -> ws::Task<void> {
    ws::ProcessSessionSpec spec;
    spec.command = ws::Command::shell("true");
    const auto refusal = co_await error_of<ws::WorkspaceUsageError>(backend.start_session(name, spec));
    REQUIRE(refusal.has_value());
    CHECK(refusal->find("script") != std::string::npos);
    const auto listed = co_await backend.list_sessions();
    for (const auto& info : listed) CHECK(info.name != name);
  });
}

TEST_CASE("process sessions: a cancelled long poll leaves the session running", "[unit][workspace]") {
  TempDir dir;
  ws::LocalBackend backend(dir.path());
  const auto name = "unit-" + exedev::detail::random_hex(12);
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> ws::Task<void> {
    ws::ProcessSessionSpec spec;
    spec.command = ws::Command::shell("read x; echo \"got $x\"");
    spec.pty = false;
    co_await backend.start_session(name, spec);
    boost::asio::cancellation_signal cancel;
    bool done = false;
    std::exception_ptr error;
    boost::asio::co_spawn(ex, backend.read_output(name, 0, 100, std::chrono::milliseconds(20'000)),
                          boost::asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, ws::SessionOutput) {
                            done = true;
                            error = e;
                          }));
    // The read has nothing to return until the program writes. Once another command has made
    // its round trip, the read's command (spawned first, on this executor) polls: cancel it then.
    co_await backend.list_sessions();
    CHECK_FALSE(done);
    cancel.emit(boost::asio::cancellation_type::terminal);
    boost::asio::steady_timer tick(ex);
    for (int round = 0; round < 200 && !done; ++round) {
      tick.expires_after(std::chrono::milliseconds(50));
      co_await tick.async_wait(boost::asio::use_awaitable);
    }
    REQUIRE(done);
    CHECK(error != nullptr);
    const std::string line = "on\n";
    co_await backend.write_stdin(name, line);
    const auto status = co_await backend.wait_session(name, std::chrono::milliseconds(20'000));
    CHECK(status.code == 0);
    const auto out = co_await backend.read_output(name, 0, 100, std::chrono::milliseconds(0));
    CHECK(out.data == "got on\n");
    co_await backend.remove_session(name);
  });
}

TEST_CASE("process sessions: the program gets its argv, env and cwd literally", "[unit][workspace]") {
  TempDir dir;
  const auto cwd = dir / "it's here";
  std::filesystem::create_directories(cwd);
  ws::LocalBackend backend(dir.path());
  const auto name = "unit-" + exedev::detail::random_hex(12);
  exedev::testing::run([&](boost::asio::any_io_executor) -> ws::Task<void> {
    ws::ProcessSessionSpec spec;
    spec.command = ws::Command::argv({"sh", "-c", "printf '%s|%s|%s' \"$1\" \"$GREETING\" \"$PWD\"", "sh", "it's $HOME `x`"});
    spec.env = {{"GREETING", "a'b\nc EXEDEV_RUN"}};
    spec.cwd = cwd;
    spec.pty = false;
    co_await backend.start_session(name, spec);
    CO_CHECK((co_await backend.wait_session(name, std::chrono::milliseconds(20'000))).code == 0);
    const auto out = co_await backend.read_output(name, 0, 1000, std::chrono::milliseconds(0));
    CHECK(out.data == "it's $HOME `x`|a'b\nc EXEDEV_RUN|" + cwd);
    CHECK(out.complete);
    co_await backend.remove_session(name);
    const auto listed = co_await backend.list_sessions();
    for (const auto& info : listed) CHECK(info.name != name);
  });
}

TEST_CASE("process sessions through the Workspace facade", "[unit][workspace]") {
  TempDir dir;
  auto backend = std::make_shared<ws::LocalBackend>(dir.path());
  auto workspace = std::make_shared<ws::Workspace>(backend);
  auto read_only = std::make_shared<ws::ReadOnlyWorkspace>(workspace);
  ws::Workspace commands_only(std::make_shared<exedev::testing::CommandsOnly>(backend));
  const auto name = "unit-" + exedev::detail::random_hex(12);
  exedev::testing::run([&](boost::asio::any_io_executor) -> ws::Task<void> {
    ws::ProcessSessionSpec spec;
    spec.command = ws::Command::shell("echo through the facade");
    spec.pty = false;
    co_await workspace->start_session(name, spec);
    CO_CHECK((co_await workspace->wait_session(name, std::chrono::milliseconds(20'000))).code == 0);
    // A read-only workspace reads, waits and lists, and refuses what would change a session.
    const auto out = co_await read_only->read_output(name, 0, 100, std::chrono::milliseconds(0));
    CHECK(out.data == "through the facade\n");
    const auto listed = co_await read_only->list_sessions();
    CHECK(std::any_of(listed.begin(), listed.end(), [&](const auto& info) { return info.name == name; }));
    CO_CHECK((co_await error_of<ws::WorkspaceReadOnlyError>(read_only->start_session(name + "x", spec))).has_value());
    CO_CHECK((co_await error_of<ws::WorkspaceReadOnlyError>(read_only->signal_session(name, "TERM"))).has_value());
    CO_CHECK((co_await error_of<ws::WorkspaceReadOnlyError>(read_only->remove_session(name))).has_value());
    co_await workspace->remove_session(name);
    CO_CHECK((co_await error_of<ws::WorkspaceUsageError>(workspace->read_output(name, 0, 1, std::chrono::milliseconds(0))))
                 .has_value());
    // Without the capability: a usage error; with no environment: the unavailable reason.
    CO_CHECK((co_await error_of<ws::WorkspaceUsageError>(commands_only.list_sessions())).has_value());
    const auto unattached = co_await error_of<ws::WorkspaceUnavailableError>(ws::no_workspace()->list_sessions());
    REQUIRE(unattached.has_value());
    CHECK(*unattached == ws::UnattachedBackend::message);
  });
}

TEST_CASE("process sessions: stdin that is not read times out the write", "[unit][workspace]") {
  TempDir dir;
  ws::LocalBackend backend(dir.path());
  const auto name = "unit-" + exedev::detail::random_hex(12);
  exedev::testing::run(
      [&](boost::asio::any_io_executor) -> ws::Task<void> {
        ws::ProcessSessionSpec spec;
        spec.command = ws::Command::shell("exec sleep 100");
        spec.pty = false;
        co_await backend.start_session(name, spec);
        // The FIFO holds 64 KiB; past that a write waits for a reader that never reads.
        const std::string block(ws::SupportsProcessSessions::max_write_bytes, 'x');
        std::optional<std::string> timed_out;
        for (int round = 0; round < 4 && !timed_out; ++round) {
          timed_out = co_await error_of<ws::WorkspaceTimeoutError>(backend.write_stdin(name, block));
        }
        REQUIRE(timed_out.has_value());
        CHECK(timed_out->find("did not take the bytes") != std::string::npos);
        co_await backend.remove_session(name);
      },
      exedev::testing::RunLimits{std::chrono::seconds(60), std::chrono::seconds(2)});
}

TEST_CASE("process sessions: a holder killed from outside leaves a lost session", "[unit][workspace]") {
  TempDir dir;
  ws::LocalBackend backend(dir.path());
  const auto name = "unit-" + exedev::detail::random_hex(12);
  const auto state = "/tmp/exedev-sessions-" + std::to_string(::getuid()) + "/" + name;
  const auto pid_in = [&](const char* file) {
    std::ifstream in(state + "/" + file);
    pid_t pid = 0;
    in >> pid;
    return pid;
  };
  exedev::testing::run([&](boost::asio::any_io_executor) -> ws::Task<void> {
    ws::ProcessSessionSpec spec;
    spec.command = ws::Command::shell("echo up; exec sleep 100");
    spec.pty = false;
    co_await backend.start_session(name, spec);
    const auto up = co_await backend.read_output(name, 0, 100, std::chrono::milliseconds(10'000));
    CHECK(up.data == "up\n");
    // As a reboot's cleanup or the emulator deleting its VM would: the holder first, then the program.
    const auto holder = pid_in("holder.pid");
    const auto program = pid_in("pid");
    REQUIRE(holder > 0);
    REQUIRE(program > 0);
    REQUIRE(::kill(holder, SIGKILL) == 0);
    REQUIRE(::kill(-program, SIGKILL) == 0);
    // The program's end shows as lost, never as a status nobody recorded.
    const auto out = co_await backend.read_output(name, up.next_offset, 100, std::chrono::milliseconds(10'000));
    CHECK(out.lost);
    CHECK(out.complete);
    CHECK_FALSE(out.exit.has_value());
    const auto listed = co_await backend.list_sessions();
    const auto it = std::find_if(listed.begin(), listed.end(), [&](const auto& info) { return info.name == name; });
    REQUIRE(it != listed.end());
    CHECK(it->state == ws::SessionState::lost);
    CO_CHECK((co_await error_of<ws::WorkspaceError>(backend.wait_session(name, std::chrono::milliseconds(1000)))).has_value());
    const std::string line = "x\n";
    CO_CHECK((co_await error_of<ws::WorkspaceError>(backend.write_stdin(name, line))).has_value());
    co_await backend.remove_session(name);
    CHECK_FALSE(std::filesystem::exists(state));
  });
}

TEST_CASE("process sessions: an attach stream's header", "[unit][workspace]") {
  const auto attached = detail::parse_session_attach_header("attached 4096 65536 1", "s", 100);
  CHECK_FALSE(attached.refused.has_value());
  CHECK(attached.start == 4096);
  CHECK(attached.keep == 65536);
  CHECK(attached.writable);
  CHECK_FALSE(detail::parse_session_attach_header("attached 100 65536 0", "s", 100).writable);
  const auto refused = detail::parse_session_attach_header("refused 103", "s", 0);
  REQUIRE(refused.refused.has_value());
  CHECK(*refused.refused == detail::kSessionEnded);
  // Anything else is the environment's doing, and refused.
  const std::vector<std::string> hostile = {
      "",                                  // nothing
      "attached 99 65536 1",               // a start before the offset asked for
      "attached 100 1024 1",               // a keep below 64 KiB
      "attached 100 65536 2",              // not 0 or 1
      "attached 100 65536",                // a field short
      "attached 100 65536 1 extra",        // a field over
      "attached -1 65536 1",               // a sign
      "attached 99999999999999999999 65536 1",  // past 2^63
      "refused 0",                         // success is no refusal
      "refused 256",                       // not a status
      "refused",                           // no status
      "ATTACHED 100 65536 1",              // another word
      "attached  100 65536 1",             // two spaces
  };
  for (const auto& line : hostile) {
    INFO(line);
    CHECK_THROWS_AS(detail::parse_session_attach_header(line, "s", 100), detail::SessionOutputError);
  }
}

TEST_CASE("process sessions: attached reads go on where the stream is, on LocalBackend's streams", "[unit][workspace]") {
  TempDir dir;
  auto backend = std::make_shared<ws::LocalBackend>(dir.path());
  const auto name = "unit-" + exedev::detail::random_hex(12);
  exedev::testing::run([&](boost::asio::any_io_executor) -> ws::Task<void> {
    ws::ProcessSessionSpec spec;
    spec.command = ws::Command::shell("echo one; read x; echo \"got $x\"; read y");
    spec.pty = false;
    co_await backend->start_session(name, spec);
    CO_REQUIRE(co_await backend->attach_session(name, 0));
    CHECK(backend->session_attached(name));
    auto first = co_await backend->read_output(name, 0, 100, std::chrono::milliseconds(5000));
    CHECK(first.data == "one\n");
    // Attaching again where the reads are keeps the stream; the next read continues on it.
    CO_CHECK(co_await backend->attach_session(name, first.next_offset));
    const std::string line = "two\n";
    co_await backend->write_stdin(name, line);
    auto second = co_await backend->read_output(name, first.next_offset, 100, std::chrono::milliseconds(5000));
    CHECK(second.offset == 4);
    CHECK(second.data == "got two\n");
    // A read from elsewhere is a command, and leaves the attachment where it was.
    const auto again = co_await backend->read_output(name, 0, 100, std::chrono::milliseconds(0));
    CHECK(again.data == "one\ngot two\n");
    CHECK(backend->session_attached(name));
    co_await backend->detach_session(name);
    CHECK_FALSE(backend->session_attached(name));
    co_await backend->remove_session(name);
    // An unknown session is refused as a command would refuse it.
    CO_CHECK((co_await error_of<ws::WorkspaceUsageError>(backend->attach_session(name, 0))).has_value());
  });
}

TEST_CASE("process sessions: an ended program is not attached", "[unit][workspace]") {
  TempDir dir;
  auto backend = std::make_shared<ws::LocalBackend>(dir.path());
  const auto name = "unit-" + exedev::detail::random_hex(12);
  exedev::testing::run([&](boost::asio::any_io_executor) -> ws::Task<void> {
    ws::ProcessSessionSpec spec;
    spec.command = ws::Command::shell("exit 4");
    spec.pty = false;
    co_await backend->start_session(name, spec);
    CO_CHECK((co_await backend->wait_session(name, std::chrono::milliseconds(20'000))).code == 4);
    CO_CHECK_FALSE(co_await backend->attach_session(name, 0));
    CHECK_FALSE(backend->session_attached(name));
    co_await backend->remove_session(name);
  });
}

TEST_CASE("process sessions: follow_output hands every piece over until the end", "[unit][workspace]") {
  TempDir dir;
  auto backend = std::make_shared<ws::LocalBackend>(dir.path());
  exedev::testing::run([&](boost::asio::any_io_executor executor) -> ws::Task<void> {
    for (const bool attach : {false, true}) {
      INFO("attached: " << attach);
      const auto name = "unit-" + exedev::detail::random_hex(12);
      ws::ProcessSessionSpec spec;
      spec.command = ws::Command::shell("echo one; read x; echo \"got $x\"; exit 6");
      spec.pty = false;
      co_await backend->start_session(name, spec);
      if (attach) CO_REQUIRE(co_await backend->attach_session(name, 0));
      std::string seen;
      std::uint64_t expected_offset = 0;
      bool answered = false;
      std::exception_ptr write_failure;
      // The program waits for its line: the callback, having seen the first output, has it
      // written (a write beside the read under way).
      auto& sessions = *backend;
      const auto last = co_await ws::follow_output(sessions, name, 0, [&](const ws::SessionOutput& out) {
        CHECK(out.offset == expected_offset);
        expected_offset = out.next_offset;
        seen += out.data;
        if (!answered && seen == "one\n") {
          answered = true;
          const ws::Bytes line = "two\n";
          boost::asio::co_spawn(executor, backend->write_stdin(name, line),
                                [&](std::exception_ptr e) { write_failure = e; });
        }
      });
      CHECK_FALSE(write_failure);
      CHECK(seen == "one\ngot two\n");
      CHECK(last.complete);
      REQUIRE(last.exit.has_value());
      CHECK(last.exit->code == 6);
      co_await backend->remove_session(name);
    }
  });
}
