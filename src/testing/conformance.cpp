// The workspace backend conformance suite. One coroutine per rule of the reference
// WorkspaceBackendSuite, in its order and under its names, plus this library's rules on live
// output and the login shell (after the command rules).
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <exedev/testing/conformance.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <type_traits>

#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/workspace.hpp>

#include <exedev/testing/co_check.hpp>

#include "common/coroutines.hpp"
#include "common/random_ids.hpp"

namespace exedev::testing {

namespace asio = boost::asio;
namespace ws = exedev::workspace;
using namespace std::chrono_literals;
using ws::Command;
using ws::CommandResult;
using ws::RunOptions;
using ws::Task;
using ws::Workspace;
using exedev::detail::capture;
using exedev::detail::sleep_for;

// The argv/shell form of a command is a type in C++: rule 2's TypeError is a compile error.
static_assert(!std::is_constructible_v<Command, std::string>);
static_assert(!std::is_constructible_v<Command, std::vector<std::string>>);

namespace {

struct SkipRule {
  std::string reason;
};

std::mutex& skips_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::string>& skips() {
  static std::vector<std::string> v;
  return v;
}
int& rules_run() {
  static int n = 0;
  return n;
}

struct Rule {
  const BackendSuite& suite;
  asio::any_io_executor ex;
  BackendPtr backend;
  std::shared_ptr<Workspace> ws;
};

ws::SupportsCommands& commands(const BackendPtr& backend) {
  auto* c = dynamic_cast<ws::SupportsCommands*>(backend.get());
  if (!c) throw SkipRule{"the backend does not support commands"};
  return *c;
}

void need_real_shell(const Rule& r) {
  if (!r.suite.has_real_posix_shell) throw SkipRule{"has_real_posix_shell is false"};
}

// An argv list from its items (the helpers below take a vector).
template <typename... Items>
std::vector<std::string> cmd(Items... items) {
  return {std::string(items)...};
}

Task<CommandResult> argv(const BackendPtr& b, std::vector<std::string> items, RunOptions options) {
  co_return co_await commands(b).run(Command::argv(std::move(items)), std::move(options));
}

// Overloads rather than defaulted options: a default would be a temporary of the caller's
// co_await, which GCC 12 miscompiles (and the options' guard refuses).
Task<CommandResult> argv(const BackendPtr& b, std::vector<std::string> items) {
  return argv(b, std::move(items), RunOptions{});
}

Task<CommandResult> shell(const BackendPtr& b, std::string line, RunOptions options) {
  co_return co_await commands(b).run(Command::shell(std::move(line)), std::move(options));
}

Task<CommandResult> shell(const BackendPtr& b, std::string line) { return shell(b, std::move(line), RunOptions{}); }


// A hang guard: fails the rule if `op` takes longer than `limit` (and cancels it).
Task<void> within(Task<void> op, std::chrono::steady_clock::duration limit, std::string what) {
  using namespace asio::experimental::awaitable_operators;
  asio::steady_timer timer(co_await asio::this_coro::executor, limit);
  auto outcome = co_await (capture(std::move(op)) || timer.async_wait(asio::use_awaitable));
  if (outcome.index() == 1) FAIL(what << " did not finish in time");
  if (auto error = std::get<0>(outcome)) std::rethrow_exception(error);
}

// Polls `predicate` every 50 ms until it is true; false once `limit` has passed.
Task<bool> poll_until(std::function<Task<bool>()> predicate, std::chrono::steady_clock::duration limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (true) {
    if (co_await predicate()) co_return true;
    if (std::chrono::steady_clock::now() >= until) co_return false;
    co_await sleep_for(50ms);
  }
}

std::string describe(const std::exception& e) { return e.what(); }

// Expects `op` to throw E (and `check` to accept it).
template <typename E, typename T>
Task<void> expect_throw(Task<T> op, std::string what, std::function<bool(const E&)> check = {}) {
  std::string failure;
  try {
    co_await std::move(op);
    failure = what + ": no exception was thrown";
  } catch (const E& e) {
    if (check && !check(e)) failure = what + ": wrong error: " + describe(e);
  } catch (const std::exception& e) {
    failure = what + ": unexpected exception: " + describe(e);
  }
  if (!failure.empty()) FAIL(failure);
  SUCCEED(what);
}

template <typename T>
Task<void> expect_errc(Task<T> op, std::errc code, std::string what) {
  co_await expect_throw<std::filesystem::filesystem_error>(
      std::move(op), what + " (expected " + std::make_error_code(code).message() + ")",
      [code](const std::filesystem::filesystem_error& e) { return e.code() == code; });
}

// The reference suite's scratch directory: <working_dir>/.exedev-conformance-<hex>, removed after.
Task<void> with_scratch(Rule& r, std::function<Task<void>(std::string)> body) {
  const auto dir = co_await r.ws->resolve(".exedev-conformance-" + exedev::detail::random_hex(16));
  co_await r.ws->make_dir(dir);
  std::exception_ptr error;
  try {
    co_await body(dir);
  } catch (...) {
    error = std::current_exception();
  }
  try {
    co_await r.ws->remove(dir);
  } catch (...) {
    if (!error) error = std::current_exception();
  }
  if (error) std::rethrow_exception(error);
}

// Runs `task` concurrently with the caller; `done` and `error` report its end.
struct Background {
  std::shared_ptr<bool> done = std::make_shared<bool>(false);
  std::shared_ptr<std::exception_ptr> error = std::make_shared<std::exception_ptr>();
  std::shared_ptr<asio::cancellation_signal> cancel = std::make_shared<asio::cancellation_signal>();

  void start(const asio::any_io_executor& ex, Task<void> task) {
    asio::co_spawn(ex, std::move(task),
                   asio::bind_cancellation_slot(cancel->slot(), [done = done, error = error](std::exception_ptr e) {
                     *done = true;
                     *error = e;
                   }));
  }
  /// Whether the task ended within `limit`.
  Task<bool> wait(std::chrono::steady_clock::duration limit) const { return wait_flag(done, limit); }

 private:
  static Task<bool> wait_flag(std::shared_ptr<bool> flag, std::chrono::steady_clock::duration limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!*flag) {
      if (std::chrono::steady_clock::now() >= until) co_return false;
      co_await sleep_for(50ms);
    }
    co_return true;
  }
};

// ---- the rules ----

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
          if (!co_await r.ws->exists(pid_file)) co_return false;
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

Task<void> test_large_file_round_trip(Rule& r) {
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    const std::string data(8 * 1024 * 1024, 'x');
    co_await r.ws->write_bytes(scratch + "/large.bin", data);
    const auto back = co_await r.ws->read_bytes(scratch + "/large.bin");
    CHECK(back.size() == data.size());
    CHECK(back == data);
  });
}

Task<void> test_bytes_round_trip_and_write_creates_parents(Rule& r) {
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    const auto path = scratch + "/nested/data.bin";
    const std::string data("\0workspace\xff", 11);
    co_await r.ws->write_bytes(path, data);
    CO_CHECK(co_await r.ws->read_bytes(path) == data);
    co_await r.ws->write_bytes(path, "replaced");
    CO_CHECK(co_await r.ws->read_bytes(path) == "replaced");
  });
}

Task<void> test_exists(Rule& r) {
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    co_await r.ws->write_bytes(scratch + "/file", "data");
    CO_CHECK(co_await r.ws->exists(scratch + "/file"));
    CO_CHECK(co_await r.ws->exists(scratch));
    CO_CHECK_FALSE(co_await r.ws->exists(scratch + "/absent"));
  });
}

Task<void> test_stat_and_list_dir(Rule& r) {
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    const auto child = scratch + "/child";
    const auto file = child + "/data.bin";
    co_await r.ws->write_bytes(file, "data");
    const auto entry = co_await r.ws->stat(file);
    CHECK(entry.name == "data.bin");
    CHECK(entry.path == file);
    CHECK_FALSE(entry.is_dir);
    CHECK((!entry.size || *entry.size == 4));
    const auto dir = co_await r.ws->stat(child);
    CHECK(dir.name == "child");
    CHECK(dir.path == child);
    CHECK(dir.is_dir);
    const auto listing = co_await r.ws->list_dir(scratch);
    REQUIRE(listing.size() == 1);
    CHECK(listing[0].name == "child");
    CHECK(listing[0].path == child);
    CHECK(listing[0].is_dir);
  });
}

Task<void> test_make_dir_creates_parents_and_is_idempotent(Rule& r) {
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    co_await r.ws->make_dir(scratch + "/a/b");
    co_await r.ws->make_dir(scratch + "/a/b");
    CO_CHECK((co_await r.ws->stat(scratch + "/a/b")).is_dir);
  });
}

Task<void> test_commands_and_files_share_one_environment(Rule& r) {
  (void)commands(r.backend);
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    const auto path = scratch + "/shared.txt";
    co_await r.ws->write_bytes(path, "in\n");
    const auto result = co_await argv(
        r.backend,
        cmd("sh", "-c", "IFS= read -r value < \"$1\" && [ \"$value\" = in ] && printf \"out\\n\" > \"$1\"", "sh", path));
    CHECK(result.exit_code == 0);
    CO_CHECK(co_await r.ws->read_bytes(path) == "out\n");
  });
}

Task<void> test_missing_paths_raise_file_not_found(Rule& r) {
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    const auto missing = scratch + "/missing";
    co_await expect_errc(r.ws->read_bytes(missing), std::errc::no_such_file_or_directory, "read_bytes(missing)");
    co_await expect_errc(r.ws->stat(missing), std::errc::no_such_file_or_directory, "stat(missing)");
    co_await expect_errc(r.ws->list_dir(missing), std::errc::no_such_file_or_directory, "list_dir(missing)");
    co_await expect_errc(r.ws->remove(missing), std::errc::no_such_file_or_directory, "remove(missing)");
  });
}

Task<void> test_reading_a_directory_raises_is_a_directory(Rule& r) {
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    co_await expect_errc(r.ws->read_bytes(scratch), std::errc::is_a_directory, "read_bytes(directory)");
  });
}

Task<void> test_listing_a_file_raises_not_a_directory(Rule& r) {
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    co_await r.ws->write_bytes(scratch + "/file", "data");
    co_await expect_errc(r.ws->list_dir(scratch + "/file"), std::errc::not_a_directory, "list_dir(file)");
  });
}

Task<void> test_writing_to_a_directory_raises_is_a_directory(Rule& r) {
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    co_await expect_errc(r.ws->write_bytes(scratch, "data"), std::errc::is_a_directory, "write_bytes(directory)");
  });
}

Task<void> test_symlink_loop_does_not_break_listing(Rule& r) {
  (void)commands(r.backend);
  need_real_shell(r);
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    const auto made = co_await argv(r.backend, cmd("ln", "-s", "loop", scratch + "/loop"));
    if (made.exit_code != 0) throw SkipRule{"ln -s failed: " + made.stderr_text};
    const auto listing = co_await r.ws->list_dir(scratch);
    REQUIRE(listing.size() == 1);
    CHECK(listing[0].name == "loop");
    CHECK_FALSE(listing[0].is_dir);
  });
}

Task<void> test_fifo_read_does_not_wait_for_writer(Rule& r) {
  (void)commands(r.backend);
  need_real_shell(r);
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    const auto fifo = scratch + "/fifo";
    const auto made = co_await argv(r.backend, cmd("mkfifo", fifo));
    if (made.exit_code != 0) throw SkipRule{"mkfifo failed: " + made.stderr_text};
    co_await within(expect_throw<std::filesystem::filesystem_error>(r.ws->read_bytes(fifo), "read_bytes(fifo)"), 30s,
                    "read_bytes(fifo)");
  });
}

Task<void> test_permission_denied_uses_builtin_error(Rule& r) {
  (void)commands(r.backend);
  need_real_shell(r);
  if (!r.suite.filesystem_honors_shell_permissions) throw SkipRule{"filesystem_honors_shell_permissions is false"};
  const auto uid = co_await argv(r.backend, cmd("id", "-u"));
  if (uid.stdout_text == "0\n" || uid.stdout_text == "0") throw SkipRule{"commands run as root, which bypasses permissions"};
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    const auto path = scratch + "/unreadable";
    co_await r.ws->write_bytes(path, "secret");
    const auto chmod = co_await argv(r.backend, cmd("chmod", "000", path));
    REQUIRE(chmod.exit_code == 0);
    co_await expect_errc(r.ws->read_bytes(path), std::errc::permission_denied, "read_bytes(mode 000)");
    co_await expect_errc(r.ws->write_bytes(path, "changed"), std::errc::permission_denied, "write_bytes(mode 000)");
  });
}

Task<void> test_file_as_parent_raises_not_a_directory(Rule& r) {
  if (!r.suite.enforces_parent_file_errors) throw SkipRule{"enforces_parent_file_errors is false"};
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    co_await r.ws->write_bytes(scratch + "/file", "data");
    co_await expect_errc(r.ws->write_bytes(scratch + "/file/child", "data"), std::errc::not_a_directory,
                         "write_bytes(file/child)");
    co_await expect_errc(r.ws->make_dir(scratch + "/file/child"), std::errc::not_a_directory, "make_dir(file/child)");
  });
}

Task<void> test_making_a_directory_over_a_file_raises_file_exists(Rule& r) {
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    co_await r.ws->write_bytes(scratch + "/file", "data");
    co_await expect_errc(r.ws->make_dir(scratch + "/file"), std::errc::file_exists, "make_dir(file)");
  });
}

Task<void> test_remove_deletes_a_file_or_a_tree(Rule& r) {
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    co_await r.ws->write_bytes(scratch + "/file", "data");
    co_await r.ws->write_bytes(scratch + "/tree/nested/file", "data");
    co_await r.ws->remove(scratch + "/file");
    co_await r.ws->remove(scratch + "/tree");
    CO_CHECK_FALSE(co_await r.ws->exists(scratch + "/file"));
    CO_CHECK_FALSE(co_await r.ws->exists(scratch + "/tree"));
  });
}

Task<void> test_remove_refuses_the_working_dir_and_its_ancestors(Rule& r) {
  const auto wd = co_await r.ws->working_dir();
  const std::vector<std::string> refused = {".", wd, std::filesystem::path(wd).parent_path().string(), "/"};
  for (const auto& path : refused) {
    co_await expect_throw<std::invalid_argument>(r.ws->remove(path), "remove('" + path + "')");
  }
  CO_CHECK(co_await r.ws->exists(wd));
}

Task<void> test_realpath_and_entries_follow_symlinks(Rule& r) {
  (void)commands(r.backend);
  co_await with_scratch(r, [&r](std::string root) -> Task<void> {
    const auto target = root + "/target";
    const auto link = root + "/link";
    co_await r.ws->make_dir(target);
    const auto made = co_await argv(r.backend, cmd("ln", "-s", target, link));
    if (made.exit_code != 0) throw SkipRule{"ln -s failed: " + made.stderr_text};
    if (!co_await r.ws->exists(link)) throw SkipRule{"the symlink is not visible to file operations"};
    CO_CHECK(co_await r.ws->realpath(link + "/missing") == target + "/missing");

    const auto a = root + "/a";
    co_await r.ws->make_dir(a + "/b");
    const auto links = co_await argv(r.backend, cmd("sh", "-c",
                                                 "cd \"$1\" && ln -s b rel && ln -s ../out up && ln -s loop2 loop1 && "
                                                 "ln -s loop1 loop2",
                                                 "sh", a));
    REQUIRE(links.exit_code == 0);
    CO_CHECK(co_await r.ws->realpath(a + "/rel/missing") == a + "/b/missing");
    CO_CHECK(co_await r.ws->realpath(a + "/up/missing") == root + "/out/missing");
    CO_CHECK(co_await r.ws->realpath(a + "/rel/..") == a);
    CO_CHECK(co_await r.ws->realpath(a + "/up/..") == root);
    co_await within(
        [&]() -> Task<void> {
          try {
            const auto looped = co_await r.ws->realpath(a + "/loop1/q");
            CHECK(looped.rfind(a + "/", 0) == 0);
          } catch (const std::system_error&) {
            SUCCEED("a symlink loop raised an OS error");
          }
        }(),
        30s, "realpath through a symlink loop");
    CO_CHECK((co_await r.ws->stat(link)).is_dir);
    std::map<std::string, bool> kinds;
    for (const auto& entry : co_await r.ws->list_dir(root)) kinds[entry.name] = entry.is_dir;
    CHECK(kinds == std::map<std::string, bool>{{"a", true}, {"link", true}, {"target", true}});
  });
}

Task<void> test_writes_go_through_a_symlink(Rule& r) {
  (void)commands(r.backend);
  co_await with_scratch(r, [&r](std::string root) -> Task<void> {
    const auto target = root + "/target";
    const auto link = root + "/link";
    co_await r.ws->write_bytes(target, "old");
    const auto made = co_await argv(r.backend, cmd("ln", "-s", target, link));
    REQUIRE(made.exit_code == 0);
    co_await r.ws->write_bytes(link, "new");
    CO_CHECK(co_await r.ws->read_bytes(target) == "new");
    CO_CHECK(co_await r.ws->realpath(link) == target);
  });
}

Task<void> test_native_realpath_keeps_the_working_dir_and_missing_names(Rule& r) {
  auto* native = dynamic_cast<ws::SupportsRealpath*>(r.backend.get());
  if (!native) throw SkipRule{"the backend does not implement SupportsRealpath"};
  const auto wd = co_await r.backend->working_dir();
  CO_CHECK(co_await native->realpath(wd) == wd);
  const auto missing = wd + "/.exedev-conformance-missing-" + exedev::detail::random_hex(16);
  CO_CHECK(co_await native->realpath(missing) == missing);
}

Task<void> test_a_backend_attached_by_ref_reaches_the_same_environment(Rule& r) {
  if (!r.suite.attach_backend) throw SkipRule{"no attach_backend fixture"};
  co_await with_scratch(r, [&r](std::string scratch) -> Task<void> {
    const auto path = scratch + "/file";
    co_await r.ws->write_bytes(path, "reattached");
    const auto ref = r.backend->ref();
    REQUIRE(ref.has_value());
    auto attached = r.suite.attach_backend(r.ex, *ref);
    REQUIRE(attached != nullptr);
    Workspace aws(attached);
    CO_CHECK(co_await aws.read_bytes(path) == "reattached");
    if (dynamic_cast<ws::SupportsCommands*>(attached.get())) {
      const auto result = co_await argv(attached, cmd("cat", path));
      CHECK(result.stdout_text == "reattached");
    }
    CHECK(attached->ref() == ref);
  });
}

BackendFactory destructive_factory(const BackendSuite& suite) {
  return suite.destructive_backend ? suite.destructive_backend : suite.fresh_backend;
}

Task<void> test_destroying_environment_during_command_raises_unavailable(Rule& r) {
  const auto factory = destructive_factory(r.suite);
  if (!factory || !r.suite.destroy_environment) throw SkipRule{"no destructive_backend and destroy_environment fixtures"};
  need_real_shell(r);
  auto b = factory(r.ex);
  REQUIRE(b != nullptr);
  (void)commands(b);
  Workspace bws(b);
  const auto wd = co_await b->working_dir();
  const auto marker = wd + "/.exedev-started-" + exedev::detail::random_hex(16);
  Background task;
  task.start(r.ex, [](BackendPtr b, std::string marker, std::string wd) -> Task<void> {
    RunOptions options;
    options.timeout = ws::Seconds(30);
    co_await argv(b, cmd("sh", "-c", "printf ready > \"$1\"; while [ -d \"$2\" ]; do sleep 0.1; done", "sh", marker, wd),
                  options);
  }(b, marker, wd));
  const bool started = co_await poll_until([&]() { return bws.exists(marker); }, 30s);
  if (!started) task.cancel->emit(asio::cancellation_type::terminal);
  REQUIRE(started);
  co_await r.suite.destroy_environment(b);
  CO_REQUIRE(co_await task.wait(60s));
  REQUIRE(*task.error != nullptr);
  try {
    std::rethrow_exception(*task.error);
  } catch (const ws::WorkspaceUnavailableError&) {
    SUCCEED("destroying the environment during a command raised WorkspaceUnavailableError");
  } catch (const std::exception& e) {
    FAIL("expected WorkspaceUnavailableError, got: " << e.what());
  }
}

Task<void> test_attaching_to_a_destroyed_environment_raises_unavailable(Rule& r) {
  const auto factory = destructive_factory(r.suite);
  if (!factory || !r.suite.attach_backend || !r.suite.destroy_environment) {
    throw SkipRule{"no destructive_backend, attach_backend and destroy_environment fixtures"};
  }
  auto b = factory(r.ex);
  REQUIRE(b != nullptr);
  (void)co_await b->working_dir();
  const auto ref = b->ref();
  REQUIRE(ref.has_value());
  co_await r.suite.destroy_environment(b);
  auto attached = r.suite.attach_backend(r.ex, *ref);
  REQUIRE(attached != nullptr);
  co_await expect_throw<ws::WorkspaceUnavailableError>(attached->working_dir(),
                                                       "working_dir() of a backend attached to a destroyed environment");
}

using RuleBody = Task<void> (*)(Rule&);

const std::vector<std::pair<std::string, RuleBody>>& rules() {
#define EXEDEV_RULE(name) {#name, &name}
  static const std::vector<std::pair<std::string, RuleBody>> table = {
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
      EXEDEV_RULE(test_large_file_round_trip),
      EXEDEV_RULE(test_bytes_round_trip_and_write_creates_parents),
      EXEDEV_RULE(test_exists),
      EXEDEV_RULE(test_stat_and_list_dir),
      EXEDEV_RULE(test_make_dir_creates_parents_and_is_idempotent),
      EXEDEV_RULE(test_commands_and_files_share_one_environment),
      EXEDEV_RULE(test_missing_paths_raise_file_not_found),
      EXEDEV_RULE(test_reading_a_directory_raises_is_a_directory),
      EXEDEV_RULE(test_listing_a_file_raises_not_a_directory),
      EXEDEV_RULE(test_writing_to_a_directory_raises_is_a_directory),
      EXEDEV_RULE(test_symlink_loop_does_not_break_listing),
      EXEDEV_RULE(test_fifo_read_does_not_wait_for_writer),
      EXEDEV_RULE(test_permission_denied_uses_builtin_error),
      EXEDEV_RULE(test_file_as_parent_raises_not_a_directory),
      EXEDEV_RULE(test_making_a_directory_over_a_file_raises_file_exists),
      EXEDEV_RULE(test_remove_deletes_a_file_or_a_tree),
      EXEDEV_RULE(test_remove_refuses_the_working_dir_and_its_ancestors),
      EXEDEV_RULE(test_realpath_and_entries_follow_symlinks),
      EXEDEV_RULE(test_writes_go_through_a_symlink),
      EXEDEV_RULE(test_native_realpath_keeps_the_working_dir_and_missing_names),
      EXEDEV_RULE(test_a_backend_attached_by_ref_reaches_the_same_environment),
      EXEDEV_RULE(test_destroying_environment_during_command_raises_unavailable),
      EXEDEV_RULE(test_attaching_to_a_destroyed_environment_raises_unavailable),
  };
#undef EXEDEV_RULE
  return table;
}

class RuleInvoker final : public Catch::ITestInvoker {
 public:
  RuleInvoker(std::shared_ptr<const BackendSuite> suite, std::string rule)
      : suite_(std::move(suite)), rule_(std::move(rule)) {}
  void invoke() const override { run_backend_rule(*suite_, rule_); }

 private:
  std::shared_ptr<const BackendSuite> suite_;
  std::string rule_;
};

// Prints the skips at the end of the run: Catch2 v2 has no "skipped" state of its own.
class SkipSummary final : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;
  void testRunEnded(const Catch::TestRunStats& stats) override {
    const auto skipped = backend_suite_skips();
    if (rules_run() > 0) {
      Catch::cout() << "exedev conformance: " << rules_run() << " rules run, " << skipped.size() << " skipped\n";
      for (const auto& skip : skipped) Catch::cout() << "  skipped " << skip << "\n";
    }
    TestEventListenerBase::testRunEnded(stats);
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(SkipSummary)

const std::vector<std::string>& backend_suite_rule_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, body] : rules()) out.push_back(name);
    return out;
  }();
  return names;
}

void register_backend_suite(BackendSuite suite) {
  if (!suite.backend) throw std::invalid_argument("BackendSuite needs a backend fixture");
  if (suite.name.empty()) throw std::invalid_argument("BackendSuite needs a name");
  auto shared = std::make_shared<const BackendSuite>(std::move(suite));
  for (const auto& [name, body] : rules()) {
    const std::string test_name = shared->name + ": " + name;
    // Rule 28 depends on file permissions, which root bypasses: tagged so that a runner can
    // give it an unprivileged user (tests/run_unprivileged.sh).
    const std::string tags = "[conformance][" + shared->name + "]" +
                             (name == "test_permission_denied_uses_builtin_error" ? "[permissions]" : "");
    // The registry takes ownership of the invoker, as with Catch's own macros.
    Catch::AutoReg(new RuleInvoker(shared, name), CATCH_INTERNAL_LINEINFO, Catch::StringRef(),
                   Catch::NameAndTags(Catch::StringRef(test_name), Catch::StringRef(tags)));
  }
}

bool run_backend_rule(const BackendSuite& suite, const std::string& rule) {
  const auto& table = rules();
  const auto it = std::find_if(table.begin(), table.end(), [&](const auto& entry) { return entry.first == rule; });
  if (it == table.end()) throw std::invalid_argument("unknown conformance rule: " + rule);
  const RuleBody body = it->second;
  {
    std::lock_guard lock(skips_mutex());
    ++rules_run();
  }
  try {
    RunLimits limits;
    limits.deadline = suite.rule_deadline;
    exedev::testing::run(
        [&](asio::any_io_executor ex) -> Task<void> {
          auto backend = suite.backend(ex);
          REQUIRE(backend != nullptr);
          Rule r{suite, ex, backend, std::make_shared<Workspace>(backend)};
          co_await body(r);
        },
        limits);
  } catch (const SkipRule& skip) {
    WARN("skipped: " << skip.reason);
    std::lock_guard lock(skips_mutex());
    skips().push_back(suite.name + ": " + rule + ": " + skip.reason);
    return false;
  }
  return true;
}

std::vector<std::string> backend_suite_skips() {
  std::lock_guard lock(skips_mutex());
  return skips();
}

}  // namespace exedev::testing
