// The conformance suite's process-session rules (SupportsProcessSessions): a pseudo-terminal's
// echo, resize and Ctrl-C, pipes' EOF, exit statuses, re-attaching from a second backend, live
// output, a burst, the read limits, and attached sessions (skipped where the backend's route has
// no command streams). Every wait is a read or wait with a bound, never a sleep; no rule asserts
// a duration.

#include <algorithm>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>

#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/sessions.hpp>

#include <exedev/testing/co_check.hpp>

#include "common/random_ids.hpp"
#include "testing/conformance_rules.hpp"

namespace exedev::testing::conformance {

namespace {

using ws::ProcessSessionSpec;
using ws::SessionExit;
using ws::SupportsProcessSessions;

/// Reads in a row that bring nothing (each waiting 2 s) before a rule gives up on output that
/// should come.
constexpr int kReadRounds = 30;
constexpr auto kReadWait = std::chrono::milliseconds(2000);
constexpr auto kExitWait = std::chrono::milliseconds(60'000);

SupportsProcessSessions& sessions(const BackendPtr& backend) {
  auto* s = dynamic_cast<SupportsProcessSessions*>(backend.get());
  if (s == nullptr) throw SkipRule{"the backend does not support process sessions"};
  return *s;
}

/// A session spec running a /bin/sh line.
ProcessSessionSpec shell_spec(std::string line, bool pty) {
  ProcessSessionSpec spec;
  spec.command = Command::shell(std::move(line));
  spec.pty = pty;
  return spec;
}

/// The output of a session as one caller reads it: the bytes so far and where to go on.
struct Reader {
  SupportsProcessSessions& sessions;
  std::string name;
  std::string text{};
  std::uint64_t offset = 0;
  std::optional<SessionExit> exit{};
  bool complete = false;
  std::size_t max_bytes = SupportsProcessSessions::max_read_bytes;

  /// Reads until `text` holds `needle` (true) or the program's output is complete or the rounds
  /// run out (false).
  Task<bool> until(std::string needle) {
    for (int idle = 0; idle < kReadRounds;) {
      if (text.find(needle) != std::string::npos) co_return true;
      if (complete) co_return false;
      const bool progressed = co_await step();
      idle = progressed ? 0 : idle + 1;
    }
    co_return text.find(needle) != std::string::npos;
  }
  /// Reads until the output is complete (false if the rounds run out first).
  Task<bool> until_complete() {
    for (int idle = 0; idle < kReadRounds && !complete;) {
      const bool progressed = co_await step();
      idle = progressed ? 0 : idle + 1;
    }
    co_return complete;
  }
  /// One read; true when it brought bytes or the end.
  Task<bool> step() {
    auto out = co_await sessions.read_output(name, offset, max_bytes, kReadWait);
    CHECK(out.dropped_bytes == 0);
    CHECK(out.data.size() <= max_bytes);
    CHECK(out.offset == offset);
    CHECK(out.next_offset == out.offset + out.data.size());
    text += out.data;
    offset = out.next_offset;
    exit = out.exit;
    complete = out.complete;
    co_return !out.data.empty() || out.complete;
  }
};

/// Starts `spec` as a fresh session, runs `body` with its name, and removes it after.
Task<void> with_session(Rule& r, ProcessSessionSpec spec, std::function<Task<void>(std::string)> body) {
  need_real_shell(r);
  auto& s = sessions(r.backend);
  const auto name = "conformance-" + exedev::detail::random_hex(12);
  co_await s.start_session(name, std::move(spec));
  co_await with_cleanup(body(name), s.remove_session(name));
}

Task<void> test_session_pty_echoes_input(Rule& r) {
  co_await with_session(r, shell_spec("exec cat", true), [&r](std::string name) -> Task<void> {
    auto& s = sessions(r.backend);
    const std::string input = "hello pty\n";
    co_await s.write_stdin(name, input);
    Reader reader{s, name};
    // The line discipline echoes the line, then cat prints it: the terminal shows it twice.
    CO_CHECK(co_await reader.until("hello pty\r\nhello pty\r\n"));
  });
}

Task<void> test_session_closed_stdin_reaches_eof(Rule& r) {
  const auto line = "while IFS= read -r l; do echo \"got:$l\"; done; echo eof; exit 3";
  co_await with_session(r, shell_spec(line, false), [&r](std::string name) -> Task<void> {
    auto& s = sessions(r.backend);
    const std::string input = "a\nb\n";
    co_await s.write_stdin(name, input);
    co_await s.close_stdin(name);
    const auto status = co_await s.wait_session(name, kExitWait);
    CHECK(status.code == 3);
    CHECK_FALSE(status.signal.has_value());
    Reader reader{s, name};
    CO_CHECK(co_await reader.until_complete());
    CHECK(reader.text == "got:a\ngot:b\neof\n");
    const std::string late = "c\n";
    co_await expect_throw<ws::WorkspaceError>(s.write_stdin(name, late), "a write after the program ended");
  });
}

Task<void> test_session_resize_is_seen_by_stty(Rule& r) {
  auto spec = shell_spec("stty size; read x; stty size; read x", true);
  spec.size = {30, 100};
  co_await with_session(r, std::move(spec), [&r](std::string name) -> Task<void> {
    auto& s = sessions(r.backend);
    Reader reader{s, name};
    CO_REQUIRE(co_await reader.until("30 100\r\n"));
    const ws::TerminalSize larger{40, 120};
    co_await s.resize_terminal(name, larger);
    const std::string enter = "\n";
    co_await s.write_stdin(name, enter);
    CO_CHECK(co_await reader.until("40 120\r\n"));
  });
}

Task<void> test_session_ctrl_c_interrupts_the_foreground_program(Rule& r) {
  co_await with_session(r, shell_spec("echo ready; sleep 100; echo not-interrupted", true),
                        [&r](std::string name) -> Task<void> {
                          auto& s = sessions(r.backend);
                          Reader reader{s, name};
                          CO_REQUIRE(co_await reader.until("ready\r\n"));
                          const std::string ctrl_c = "\x03";
                          co_await s.write_stdin(name, ctrl_c);
                          const auto status = co_await s.wait_session(name, kExitWait);
                          CHECK(status.code == 130);
                          CHECK(status.signal == std::optional<std::string>("INT"));
                          CO_CHECK(co_await reader.until_complete());
                          CHECK(reader.text.find("not-interrupted") == std::string::npos);
                        });
}

Task<void> test_session_signal_reaches_the_terminal_foreground_job(Rule& r) {
  // An interactive shell in the terminal runs a job in the foreground: a signal goes to that
  // job's group, not the shell's, so the job ends and the shell takes the next line.
  co_await with_session(r, shell_spec("exec sh -i", true), [&r](std::string name) -> Task<void> {
    auto& s = sessions(r.backend);
    Reader reader{s, name};
    // The echo shows the quotes; only the job's own output reads "started".
    const std::string job = "sh -c 'echo st\"\"arted; exec sleep 100'\n";
    co_await s.write_stdin(name, job);
    CO_REQUIRE(co_await reader.until("started\r\n"));
    co_await s.signal_session(name, "INT");
    const std::string next = "echo alive$((40 + 2))\n";
    co_await s.write_stdin(name, next);
    CO_CHECK(co_await reader.until("alive42"));
    CHECK_FALSE(reader.exit.has_value());
  });
}

Task<void> test_session_exit_status_gives_code_and_signal(Rule& r) {
  co_await with_session(r, shell_spec("exit 7", false), [&r](std::string name) -> Task<void> {
    const auto status = co_await sessions(r.backend).wait_session(name, kExitWait);
    CHECK(status.code == 7);
    CHECK_FALSE(status.signal.has_value());
  });
  co_await with_session(r, shell_spec("echo started; exec sleep 100", false), [&r](std::string name) -> Task<void> {
    auto& s = sessions(r.backend);
    Reader reader{s, name};
    CO_REQUIRE(co_await reader.until("started\n"));
    co_await s.signal_session(name, "KILL");
    const auto status = co_await s.wait_session(name, kExitWait);
    CHECK(status.code == 137);
    CHECK(status.signal == std::optional<std::string>("KILL"));
    co_await expect_throw<ws::WorkspaceError>(s.signal_session(name, "TERM"), "a signal to an ended program");
  });
}

Task<void> test_session_reattach_sees_output_written_while_detached(Rule& r) {
  if (!r.suite.attach_backend) throw SkipRule{"no attach_backend fixture"};
  co_await with_session(r, shell_spec("echo one; read x; echo \"two:$x\"", false), [&r](std::string name) -> Task<void> {
    Reader first{sessions(r.backend), name};
    CO_REQUIRE(co_await first.until("one\n"));
    const auto ref = r.backend->ref();
    REQUIRE(ref.has_value());
    // A second backend on the same environment: the first one's reads are over.
    auto attached = r.suite.attach_backend(r.ex, *ref);
    auto& again = sessions(attached);
    const auto listed = co_await again.list_sessions();
    const auto it = std::find_if(listed.begin(), listed.end(), [&](const auto& info) { return info.name == name; });
    REQUIRE(it != listed.end());
    CHECK(it->state == ws::SessionState::running);
    CHECK_FALSE(it->pty);
    CHECK(it->command == "echo one; read x; echo \"two:$x\"");
    const std::string input = "go\n";
    co_await again.write_stdin(name, input);
    CO_CHECK((co_await again.wait_session(name, kExitWait)).code == 0);
    Reader second{again, name};
    CO_CHECK(co_await second.until_complete());
    CHECK(second.text == "one\ntwo:go\n");
    const auto after = co_await again.list_sessions();
    const auto ended = std::find_if(after.begin(), after.end(), [&](const auto& info) { return info.name == name; });
    REQUIRE(ended != after.end());
    CHECK(ended->state == ws::SessionState::exited);
  });
}

Task<void> test_session_output_arrives_while_the_program_runs(Rule& r) {
  co_await with_session(r, shell_spec("echo first; read x; echo second", false), [&r](std::string name) -> Task<void> {
    auto& s = sessions(r.backend);
    Reader reader{s, name};
    CO_REQUIRE(co_await reader.until("first\n"));
    // The program still waits for its line: the first one came while it ran.
    CHECK_FALSE(reader.exit.has_value());
    CHECK(reader.text == "first\n");
    const std::string input = "x\n";
    co_await s.write_stdin(name, input);
    CO_CHECK(co_await reader.until_complete());
    CHECK(reader.text == "first\nsecond\n");
  });
}

Task<void> test_session_pty_burst_is_delivered_complete(Rule& r) {
  const auto line = "i=1; while [ $i -le 10000 ]; do echo \"line $i\"; i=$((i + 1)); done";
  co_await with_session(r, shell_spec(line, true), [&r](std::string name) -> Task<void> {
    Reader reader{sessions(r.backend), name};
    reader.max_bytes = 64 * 1024;
    CO_REQUIRE(co_await reader.until_complete());
    std::string expected;
    for (int i = 1; i <= 10000; ++i) expected += "line " + std::to_string(i) + "\r\n";
    CHECK(reader.text == expected);
    REQUIRE(reader.exit.has_value());
    CHECK(reader.exit->code == 0);
  });
}

Task<void> test_session_read_limits_and_offsets(Rule& r) {
  // 16-byte lines, so the byte at any offset is known: offset % 16 into "0123456789abcde\n".
  const std::string pattern = "0123456789abcde\n";
  auto spec = shell_spec("i=0; while [ $i -lt 20000 ]; do echo 0123456789abcde; i=$((i + 1)); done", false);
  spec.max_output_bytes = 64 * 1024;
  co_await with_session(r, std::move(spec), [&r, &pattern](std::string name) -> Task<void> {
    auto& s = sessions(r.backend);
    co_await s.wait_session(name, kExitWait);
    // max_bytes is respected and offsets continue where the last read stopped.
    auto first = co_await s.read_output(name, 0, 100, kReadWait);
    // 320,000 bytes were written and 64 KiB are kept: the oldest were released.
    CHECK(first.dropped_bytes > 0);
    CHECK(first.offset == first.dropped_bytes);
    CHECK(first.data.size() == 100);
    CHECK(first.next_offset == first.offset + 100);
    auto second = co_await s.read_output(name, first.next_offset, 50, kReadWait);
    CHECK(second.dropped_bytes == 0);
    CHECK(second.offset == first.next_offset);
    CHECK(second.data.size() == 50);
    const auto all = first.data + second.data;
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i] != pattern[(first.offset + i) % pattern.size()]) {
        FAIL("byte at offset " << first.offset + i << " is not the program's");
      }
    }
    // Past the end: nothing, and complete since the program has ended.
    const auto end = co_await s.read_output(name, 20000 * 16, 10, std::chrono::milliseconds(0));
    CHECK(end.data.empty());
    CHECK(end.complete);
    const std::size_t too_many = SupportsProcessSessions::max_read_bytes + 1;
    co_await expect_throw<std::invalid_argument>(s.read_output(name, 0, too_many, kReadWait), "max_bytes over the limit");
  });
}

Task<void> test_session_names_are_validated_and_unique(Rule& r) {
  need_real_shell(r);
  auto& s = sessions(r.backend);
  // Named: GCC 12 miscompiles an options temporary inside co_await (and the guard refuses it).
  const auto trivial = shell_spec("true", false);
  co_await expect_throw<std::invalid_argument>(s.start_session("bad name", trivial), "a name with a space");
  co_await expect_throw<std::invalid_argument>(s.start_session("../x", trivial), "a name with a slash");
  const auto missing = "conformance-missing-" + exedev::detail::random_hex(12);
  co_await expect_throw<ws::WorkspaceUsageError>(s.read_output(missing, 0, 10, kReadWait), "an unknown session");
  co_await with_session(r, shell_spec("read x", false), [&r, &trivial](std::string name) -> Task<void> {
    co_await expect_throw<ws::WorkspaceUsageError>(sessions(r.backend).start_session(name, trivial),
                                                   "a second session of a live name");
  });
}

/// Runs `body` on a fresh session of `spec` attached from offset 0, with a reader of it from
/// there; skips the rule where the backend's route has no command streams to attach on.
Task<void> with_attached_session(Rule& r, ProcessSessionSpec spec,
                                 std::function<Task<void>(SupportsProcessSessions&, std::string, Reader&)> body) {
  co_await with_session(r, std::move(spec), [&r, &body](std::string name) -> Task<void> {
    auto& s = sessions(r.backend);
    const bool attached = co_await s.attach_session(name, 0);
    if (!attached) throw SkipRule{"the backend's route has no command streams to attach on"};
    Reader reader{s, name};
    co_await body(s, name, reader);
  });
}

Task<void> test_session_attached_echo_and_detach(Rule& r) {
  co_await with_attached_session(r, shell_spec("exec cat", true),
                                 [](SupportsProcessSessions& s, std::string name, Reader& reader) -> Task<void> {
    const std::string first = "one\n";
    co_await s.write_stdin(name, first);
    CO_REQUIRE(co_await reader.until("one\r\none\r\n"));
    CHECK_FALSE(reader.exit.has_value());
    // Detached, the same offsets go on through commands.
    co_await s.detach_session(name);
    const std::string second = "two\n";
    co_await s.write_stdin(name, second);
    CO_CHECK(co_await reader.until("one\r\none\r\ntwo\r\ntwo\r\n"));
    // Attached again from where the reader is: nothing twice, nothing missed.
    const bool again = co_await s.attach_session(name, reader.offset);
    CHECK(again);
    const std::string third = "three\n";
    co_await s.write_stdin(name, third);
    CO_CHECK(co_await reader.until("two\r\ntwo\r\nthree\r\nthree\r\n"));
    CHECK(reader.text == "one\r\none\r\ntwo\r\ntwo\r\nthree\r\nthree\r\n");
  });
}

Task<void> test_session_attached_burst_and_end(Rule& r) {
  const auto line = "read x; i=1; while [ $i -le 10000 ]; do echo \"line $i\"; i=$((i + 1)); done; exit 5";
  co_await with_attached_session(r, shell_spec(line, true),
                                 [](SupportsProcessSessions& s, std::string name, Reader& reader) -> Task<void> {
    reader.max_bytes = 64 * 1024;
    const std::string go = "go\n";
    co_await s.write_stdin(name, go);
    CO_REQUIRE(co_await reader.until_complete());
    std::string expected = "go\r\n";
    for (int i = 1; i <= 10000; ++i) expected += "line " + std::to_string(i) + "\r\n";
    CHECK(reader.text == expected);
    REQUIRE(reader.exit.has_value());
    CHECK(reader.exit->code == 5);
    // The program's end ended the attachment; the session's state is still there to read.
    CO_CHECK((co_await s.wait_session(name, kExitWait)).code == 5);
  });
}

Task<void> test_session_attached_pipes_reach_eof(Rule& r) {
  const auto line = "while IFS= read -r l; do echo \"got:$l\"; done; echo eof";
  co_await with_attached_session(r, shell_spec(line, false),
                                 [](SupportsProcessSessions& s, std::string name, Reader& reader) -> Task<void> {
    const std::string input = "a\n";
    co_await s.write_stdin(name, input);
    CO_REQUIRE(co_await reader.until("got:a\n"));
    // The attached stream holds stdin open no longer than close_stdin.
    co_await s.close_stdin(name);
    CO_CHECK(co_await reader.until_complete());
    CHECK(reader.text == "got:a\neof\n");
    const std::string late = "b\n";
    co_await expect_throw<ws::WorkspaceError>(s.write_stdin(name, late), "a write after the program ended");
  });
}

}  // namespace

const RuleTable& session_rules() {
#define EXEDEV_RULE(name) {#name, &name}
  static const RuleTable table = {
      EXEDEV_RULE(test_session_pty_echoes_input),
      EXEDEV_RULE(test_session_closed_stdin_reaches_eof),
      EXEDEV_RULE(test_session_resize_is_seen_by_stty),
      EXEDEV_RULE(test_session_ctrl_c_interrupts_the_foreground_program),
      EXEDEV_RULE(test_session_signal_reaches_the_terminal_foreground_job),
      EXEDEV_RULE(test_session_exit_status_gives_code_and_signal),
      EXEDEV_RULE(test_session_reattach_sees_output_written_while_detached),
      EXEDEV_RULE(test_session_output_arrives_while_the_program_runs),
      EXEDEV_RULE(test_session_pty_burst_is_delivered_complete),
      EXEDEV_RULE(test_session_read_limits_and_offsets),
      EXEDEV_RULE(test_session_names_are_validated_and_unique),
      EXEDEV_RULE(test_session_attached_echo_and_detach),
      EXEDEV_RULE(test_session_attached_burst_and_end),
      EXEDEV_RULE(test_session_attached_pipes_reach_eof),
  };
#undef EXEDEV_RULE
  return table;
}

}  // namespace exedev::testing::conformance
