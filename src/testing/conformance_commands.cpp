// The conformance suite's command rules (and the ref's and env's), in the reference
// WorkspaceBackendSuite's order and under its names, plus this library's rules on live output and
// the login shell.

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <system_error>
#include <type_traits>

#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/workspace.hpp>

#include <exedev/testing/co_check.hpp>

#include "common/coroutines.hpp"
#include "common/random_ids.hpp"
#include "testing/conformance_rules.hpp"

namespace exedev::testing::conformance {

using exedev::detail::capture;
using exedev::detail::sleep_for;

namespace {

// A ref names an environment for good: both fields are set and it survives its JSON form.
void check_ref_shape(const std::optional<ws::WorkspaceRef>& ref, const char* when) {
  if (!ref) return;
  INFO("ref() " << when);
  CHECK_FALSE(ref->provider.empty());
  CHECK_FALSE(ref->id.empty());
  try {
    CHECK(ws::WorkspaceRef::from_json(ref->to_json()) == *ref);
  } catch (const std::invalid_argument& e) {
    FAIL("the ref has no JSON form: " << e.what());
  }
}

Task<void> test_has_the_required_members(Rule& r) {
  // Structural membership is a compile-time fact: the fixture returns a WorkspaceBackend, and a
  // capability a backend claims is an abstract class it must implement in full. What remains
  // at run time is that the members answer as documented: ref() is nullopt or a well-formed
  // ref that reading does not change, working_dir() is absolute and stable, and a backend with
  // commands offers shell-filesystem sizes the derived filesystem can use.
  REQUIRE(r.backend != nullptr);
  const auto before = r.backend->ref();
  check_ref_shape(before, "before the first operation");
  CHECK(r.backend->ref() == before);
  const auto wd = co_await r.backend->working_dir();
  REQUIRE_FALSE(wd.empty());
  CHECK(wd.front() == '/');
  const auto after = r.backend->ref();
  check_ref_shape(after, "after working_dir()");
  CHECK(r.backend->ref() == after);
  CO_CHECK(co_await r.backend->working_dir() == wd);
  if (const auto* c = dynamic_cast<const ws::SupportsCommands*>(r.backend.get())) {
    const auto limits = c->shell_filesystem_limits();
    CHECK(limits.read_page_bytes > 0);
    CHECK(limits.write_chunk_chars > 0);
  }
}

Task<void> test_command_form_must_match_shell(Rule& r) {
  auto& backend_commands = commands(r.backend);
  // run('true') and run(['true'], shell=True) do not compile (static_asserts above). What
  // remains at run time: an empty argv is refused with std::invalid_argument by Workspace::run
  // and by the backend itself (callers may use it without the facade), and an argv is never
  // handed to a shell as text.
  const std::vector<std::string> no_items;
  co_await expect_throw<std::invalid_argument>(r.ws->run(Command::argv(no_items)), "Workspace::run(argv{})",
                                               [](const std::invalid_argument& e) {
                                                 return std::string(e.what()) == "command must not be empty";
                                               });
  const RunOptions no_options;
  co_await expect_throw<std::invalid_argument>(backend_commands.run(Command::argv(no_items), no_options),
                                               "the backend's own run(argv{})");
  const auto result = co_await argv(r.backend, cmd("exit 3"));
  INFO("argv {\"exit 3\"} names a program, not a shell line");
  CHECK(result.exit_code == 127);
}

Task<void> test_stdin_is_at_eof(Rule& r) {
  RunOptions options;
  options.timeout = ws::Seconds(30);
  const auto result = co_await argv(r.backend, cmd("sh", "-c", "read value || printf eof"), options);
  CHECK(result.exit_code == 0);
  CHECK(result.stdout_text == "eof");
}

Task<void> test_undecodable_command_bytes_are_replaced(Rule& r) {
  (void)commands(r.backend);
  need_real_shell(r);
  const auto result = co_await shell(r.backend, "printf '\\377'; printf '\\376' >&2");
  CHECK(result.stdout_text == "\xEF\xBF\xBD");
  CHECK(result.stderr_text == "\xEF\xBF\xBD");
}

Task<void> test_command_output_is_complete(Rule& r) {
  const auto result = co_await shell(
      r.backend, "i=0; while [ \"$i\" -lt 1024 ]; do printf workspace; printf workspace >&2; i=$((i + 1)); done");
  std::string expected;
  for (int i = 0; i < 1024; ++i) expected += "workspace";
  CHECK(result.exit_code == 0);
  CHECK(result.stdout_text.size() == expected.size());
  CHECK(result.stdout_text == expected);
  CHECK(result.stderr_text == expected);
}

Task<void> test_background_child_does_not_hold_up_completed_command(Rule& r) {
  (void)commands(r.backend);
  need_real_shell(r);
  if (!r.suite.can_detect_exit_with_inherited_output_pipes) {
    throw SkipRule{"can_detect_exit_with_inherited_output_pipes is false"};
  }
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    const auto release = scratch + "/release";
    const auto finished = scratch + "/finished";
    std::exception_ptr error;
    try {
      CommandResult result;
      co_await within(
          [&]() -> Task<void> {
            result = co_await argv(r.backend, cmd("sh", "-c",
                                               "(while [ ! -f \"$1\" ]; do sleep 0.1; done; printf finished > \"$2\") & "
                                               "printf done",
                                               "sh", release, finished));
          }(),
          60s, "a command whose background child holds its output");
      CHECK(result.exit_code == 0);
      CHECK(result.stdout_text == "done");
      CO_CHECK_FALSE(co_await r.ws->exists(finished));
    } catch (...) {
      error = std::current_exception();
    }
    // Let the background child finish before the scratch directory goes, even when this rule
    // was cancelled (shielded, 30 s): otherwise its loop would outlive the directory it waits on.
    const auto releasing = [](Rule& r, std::string release, std::string finished) -> Task<void> {
      co_await r.ws->write_bytes(release, "go");
      const bool ended = co_await poll_until([&]() { return r.ws->exists(finished); }, 30s);
      CHECK(ended);
    };
    EXEDEV_AWAIT_DESPITE_CANCELLATION(
        release_error, exedev::detail::shielded(within(releasing(r, release, finished), 30s, "releasing the background child")));
    if (error) std::rethrow_exception(error);
    if (release_error) std::rethrow_exception(release_error);
  });
}

Task<void> test_result_reports_exit_code_stdout_and_stderr(Rule& r) {
  const auto result = co_await shell(r.backend, "printf out; printf err >&2; exit 7");
  CHECK(result == CommandResult{7, "out", "err"});
}

Task<void> test_a_missing_program_exits_127(Rule& r) {
  const auto result = co_await argv(r.backend, cmd("exedev-conformance-missing-program"));
  CHECK(result.exit_code == 127);
}

Task<void> test_argv_items_are_literal(Rule& r) {
  const std::string payload = " literal $() `quoted`; && ";
  const auto result = co_await argv(r.backend, cmd("sh", "-c", "printf \"%s\" \"$1\"", "sh", payload));
  CHECK(result.exit_code == 0);
  CHECK(result.stdout_text == payload);
}

Task<void> test_working_dir_is_canonical(Rule& r) {
  const auto wd = co_await r.backend->working_dir();
  REQUIRE(!wd.empty());
  CHECK(wd.front() == '/');
  CHECK(ws::normpath(wd) == wd);
  if (dynamic_cast<ws::SupportsCommands*>(r.backend.get())) {
    const auto result = co_await argv(r.backend, cmd("sh", "-c", "pwd -P"));
    CHECK(result.stdout_text == wd + "\n");
  }
}

Task<void> test_timeout_raises_workspace_timeout_error(Rule& r) {
  RunOptions options;
  options.timeout = ws::Seconds(1.0);
  co_await expect_throw<ws::WorkspaceTimeoutError>(argv(r.backend, cmd("sh", "-c", "sleep 3600"), options),
                                                   "sleep 3600 with a 1 s timeout");
}

Task<void> test_cancellation_stops_foreground_work(Rule& r) {
  (void)commands(r.backend);
  need_real_shell(r);
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    const auto pid_file = scratch + "/pid";
    Background task;
    task.start(r.ex, [](BackendPtr b, std::string pid_file) -> Task<void> {
      co_await argv(b, cmd("sh", "-c", "echo $$ > \"$1\"; exec sleep 3600", "sh", pid_file));
    }(r.backend, pid_file));
    std::string pid;
    const bool started = co_await poll_until(
        [&]() -> Task<bool> {
          const bool written = co_await r.ws->exists(pid_file);
          if (!written) co_return false;
          pid = co_await r.ws->read_text(pid_file);
          while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
          co_return !pid.empty();
        },
        30s);
    task.cancel->emit(asio::cancellation_type::terminal);
    REQUIRE(started);
    CO_REQUIRE(co_await task.wait(30s));
    CHECK(*task.error != nullptr);  // a cancelled run does not return a result
    const bool stopped = co_await poll_until(
        [&]() -> Task<bool> {
          const auto result = co_await argv(r.backend, cmd("sh", "-c", "kill -0 \"$1\"", "sh", pid));
          co_return result.exit_code != 0;
        },
        60s);
    CHECK(stopped);
  });
}

// Output reaches the callbacks while the command runs: the command prints, then waits (up to
// its timeout) for a file that only the stdout callback creates. The timeout is shorter than a
// remote backend's long poll, so output held back until a request ends fails the rule too.
Task<void> test_output_callbacks_receive_output_while_the_command_runs(Rule& r) {
  (void)commands(r.backend);
  need_real_shell(r);
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    const auto release = scratch + "/release";
    std::string seen_out, seen_err;
    bool releasing = false;
    auto released = std::make_shared<std::exception_ptr>();
    RunOptions options;
    options.timeout = ws::Seconds(15.0);
    options.on_stdout = [&](std::string_view chunk) {
      seen_out.append(chunk);
      if (releasing || seen_out.find("ready") == std::string::npos) return;
      releasing = true;
      asio::co_spawn(r.ex, r.ws->write_bytes(release, "go"), [released](std::exception_ptr e) { *released = e; });
    };
    options.on_stderr = [&](std::string_view chunk) { seen_err.append(chunk); };
    const auto result = co_await argv(
        r.backend, cmd("sh", "-c", "echo ready; echo note >&2; while [ ! -f \"$1\" ]; do sleep 0.05; done; echo done", "sh", release),
        options);
    if (*released) std::rethrow_exception(*released);
    CHECK(result.exit_code == 0);
    CHECK(result.stdout_text == "ready\ndone\n");
    CHECK(result.stderr_text == "note\n");
    CHECK(seen_out == result.stdout_text);
    CHECK(seen_err == result.stderr_text);
  });
}

// An exception thrown by an output callback stops the command and comes out of run().
Task<void> test_an_output_callback_exception_stops_the_command(Rule& r) {
  (void)commands(r.backend);
  need_real_shell(r);
  struct Refused : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  RunOptions options;
  options.timeout = ws::Seconds(60.0);
  options.on_stdout = [](std::string_view) { throw Refused("the callback refused the output"); };
  co_await within(expect_throw<Refused>(shell(r.backend, "echo hello; exec sleep 3600", options),
                                        "a command whose output callback throws"),
                  50s, "a command whose output callback throws");
}

// Shell commands run in the environment's login shell: bash-only syntax works there.
Task<void> test_shell_commands_run_in_a_bash_login_shell(Rule& r) {
  (void)commands(r.backend);
  if (!r.suite.shell_is_bash_login_shell) throw SkipRule{"shell_is_bash_login_shell is false"};
  const auto result = co_await shell(
      r.backend, "a=(x y z); [[ ${#a[@]} == 3 ]] && echo \"bash ${a[1]}\"; shopt -q login_shell && echo login");
  CHECK(result.exit_code == 0);
  CHECK(result.stdout_text == "bash y\nlogin\n");
  CHECK(result.stderr_text.empty());
}

Task<void> test_env_is_added(Rule& r) {
  RunOptions options;
  options.env = {{"CONFORMANCE", "value"}};
  const auto result = co_await argv(r.backend, cmd("sh", "-c", "printf %s \"$CONFORMANCE\""), options);
  CHECK(result.stdout_text == "value");
}

Task<void> test_ref_exists_after_the_first_operation_and_is_stable(Rule& r) {
  const auto before = r.backend->ref();
  (void)co_await r.backend->working_dir();
  const auto created = r.backend->ref();
  (void)co_await r.backend->working_dir();
  REQUIRE(created.has_value());
  CHECK(r.backend->ref() == created);
  CHECK((!before || before == created));
}

Task<void> test_concurrent_first_use_shares_one_environment(Rule& r) {
  if (!r.suite.fresh_backend) throw SkipRule{"no fresh_backend fixture"};
  auto fresh = r.suite.fresh_backend(r.ex);
  REQUIRE(fresh != nullptr);
  REQUIRE_FALSE(fresh->ref().has_value());
  Workspace fws(fresh);
  std::vector<std::string> names;
  for (int i = 0; i < 5; ++i) names.push_back("concurrent-" + exedev::detail::random_hex(16));
  std::exception_ptr error;
  try {
    using namespace asio::experimental::awaitable_operators;
    co_await (fws.write_bytes(names[0], names[0]) && fws.write_bytes(names[1], names[1]) &&
              fws.write_bytes(names[2], names[2]) && fws.write_bytes(names[3], names[3]) &&
              fws.write_bytes(names[4], names[4]));
    const auto ref = fresh->ref();
    REQUIRE(ref.has_value());
    for (const auto& name : names) {
      CO_CHECK(co_await fws.read_bytes(name) == name);
      CHECK(fresh->ref() == ref);
    }
  } catch (...) {
    error = std::current_exception();
  }
  for (const auto& name : names) {
    try {
      co_await fws.remove(name);
    } catch (const std::filesystem::filesystem_error& e) {
      if (e.code() != std::errc::no_such_file_or_directory && !error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace

const RuleTable& command_rules() {
#define EXEDEV_RULE(name) {#name, &name}
  static const RuleTable table = {
      EXEDEV_RULE(test_has_the_required_members),
      EXEDEV_RULE(test_command_form_must_match_shell),
      EXEDEV_RULE(test_stdin_is_at_eof),
      EXEDEV_RULE(test_undecodable_command_bytes_are_replaced),
      EXEDEV_RULE(test_command_output_is_complete),
      EXEDEV_RULE(test_background_child_does_not_hold_up_completed_command),
      EXEDEV_RULE(test_result_reports_exit_code_stdout_and_stderr),
      EXEDEV_RULE(test_a_missing_program_exits_127),
      EXEDEV_RULE(test_argv_items_are_literal),
      EXEDEV_RULE(test_working_dir_is_canonical),
      EXEDEV_RULE(test_timeout_raises_workspace_timeout_error),
      EXEDEV_RULE(test_cancellation_stops_foreground_work),
      EXEDEV_RULE(test_env_is_added),
      EXEDEV_RULE(test_output_callbacks_receive_output_while_the_command_runs),
      EXEDEV_RULE(test_an_output_callback_exception_stops_the_command),
      EXEDEV_RULE(test_shell_commands_run_in_a_bash_login_shell),
      EXEDEV_RULE(test_ref_exists_after_the_first_operation_and_is_stable),
      EXEDEV_RULE(test_concurrent_first_use_shares_one_environment),
  };
#undef EXEDEV_RULE
  return table;
}

}  // namespace exedev::testing::conformance
