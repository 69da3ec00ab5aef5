// LocalBackend's own rules and the Workspace facade and its wrappers.
#include <catch2/catch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exedev/testing/run.hpp>
#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/local_backend.hpp>
#include <exedev/workspace/unavailable.hpp>
#include <exedev/workspace/workspace.hpp>

#include <pwd.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <typeindex>

#include "unit/workspace/support.hpp"

namespace ws = exedev::workspace;

using exedev::test::cmd;
using exedev::test::error_of;
using exedev::test::errc_of;
using exedev::test::TempDir;
using exedev::testing::run;
using ws::Command;
using ws::RunOptions;
using ws::Task;

TEST_CASE("LocalBackend: ref is the normalized absolute path from construction", "[unit][workspace]") {
  TempDir dir;
  ws::LocalBackend backend(dir.path() + "/./sub/..//");
  REQUIRE(backend.ref().has_value());
  CHECK(*backend.ref() == ws::WorkspaceRef{"local", dir.path()});
  const auto cwd = std::filesystem::current_path();
  CHECK(ws::LocalBackend("rel").ref()->id == (cwd / "rel").string());
  const char* home = std::getenv("HOME");
  if (home) CHECK(ws::LocalBackend("~/x").ref()->id == ws::normpath(std::string(home) + "/x"));
}

TEST_CASE("LocalBackend: ~ and ~user expand as Python's expanduser does", "[unit][workspace]") {
  const struct passwd* me = ::getpwuid(::getuid());
  REQUIRE(me != nullptr);
  const std::string my_home = ws::normpath(me->pw_dir);
  const std::string my_name = me->pw_name;
  CHECK(ws::LocalBackend("~" + my_name + "/x").ref()->id == ws::normpath(my_home + "/x"));
  CHECK(ws::LocalBackend("~" + my_name).ref()->id == my_home);
  // An unknown user leaves the word as written: a relative path under the current directory.
  const auto cwd = std::filesystem::current_path();
  CHECK(ws::LocalBackend("~no-such-user-exedev/x").ref()->id == (cwd / "~no-such-user-exedev/x").string());
  // Without HOME, `~` is the password database's home of the current user.
  const char* saved = std::getenv("HOME");
  const std::optional<std::string> home = saved ? std::optional<std::string>(saved) : std::nullopt;
  ::setenv("HOME", "/from-env", 1);
  CHECK(ws::LocalBackend("~/x").ref()->id == "/from-env/x");
  ::unsetenv("HOME");
  const auto without_home = ws::LocalBackend("~/x").ref()->id;
  if (home) ::setenv("HOME", home->c_str(), 1);
  CHECK(without_home == ws::normpath(my_home + "/x"));
}

TEST_CASE("LocalBackend: children see only PATH, HOME, locale and the given env", "[unit][workspace]") {
  TempDir dir;
  ::setenv("EXEDEV_SECRET_FOR_TEST", "leak", 1);
  auto backend = std::make_shared<ws::LocalBackend>(dir.path(), ws::Env{{"FROM_CTOR", "1"}, {"BOTH", "ctor"}});
  run([&](boost::asio::any_io_executor) -> Task<void> {
    RunOptions options;
    options.env = {{"BOTH", "call"}, {"FROM_CALL", "2"}};
    const auto result = co_await backend->run(cmd("env"), options);
    std::set<std::string> names;
    std::istringstream lines(result.stdout_text);
    for (std::string line; std::getline(lines, line);) names.insert(line.substr(0, line.find('=')));
    for (const auto& name : names) {
      INFO(name);
      CHECK(std::set<std::string>{"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "FROM_CTOR", "BOTH", "FROM_CALL", "PWD",
                                  "SHLVL", "_"}
                .count(name) == 1);
    }
    CHECK(result.stdout_text.find("BOTH=call\n") != std::string::npos);
    CHECK(result.stdout_text.find("FROM_CTOR=1\n") != std::string::npos);
    CHECK(result.stdout_text.find("EXEDEV_SECRET_FOR_TEST") == std::string::npos);
  });
  ::unsetenv("EXEDEV_SECRET_FOR_TEST");
}

TEST_CASE("LocalBackend: missing and non-executable programs", "[unit][workspace]") {
  TempDir dir;
  std::ofstream(dir / "not-exec") << "#!/bin/sh\n";
  auto backend = std::make_shared<ws::LocalBackend>(dir.path());
  run([&](boost::asio::any_io_executor) -> Task<void> {
    const auto missing = co_await backend->run(cmd("exedev-no-such-program"), exedev::test::no_options());
    CHECK(missing == ws::CommandResult{127, "", "exedev-no-such-program: command not found\n"});
    const auto relative = co_await backend->run(cmd("./not-exec"), exedev::test::no_options());
    CHECK(relative.exit_code == 126);  // root too needs an x bit to execute
    const auto gone = co_await backend->run(cmd("./gone"), exedev::test::no_options());
    CHECK(gone.exit_code == 127);
  });
}

TEST_CASE("LocalBackend: a program without permission to run says Permission denied", "[unit][workspace][permissions]") {
  // Executable by group and others but not by its owner: the owner may not run it, a rule
  // root's CAP_DAC_OVERRIDE bypasses (any x bit lets it run). A file without any x bit is
  // refused to root too (the test above).
  if (exedev::test::skip_permission_checks()) {
    WARN("skipped: running as root, which may run any file with an x bit (tests/run_permission_checks.sh runs it)");
    return;
  }
  TempDir dir;
  std::ofstream(dir / "not-exec") << "#!/bin/sh\n";
  std::filesystem::permissions(dir / "not-exec", std::filesystem::perms::group_exec | std::filesystem::perms::others_exec);
  auto backend = std::make_shared<ws::LocalBackend>(dir.path());
  run([&](boost::asio::any_io_executor) -> Task<void> {
    const auto relative = co_await backend->run(cmd("./not-exec"), exedev::test::no_options());
    CHECK(relative == ws::CommandResult{126, "", "./not-exec: Permission denied\n"});
  });
}

TEST_CASE("LocalBackend: signals, stdin, undecodable output, working directory", "[unit][workspace]") {
  TempDir dir;
  auto backend = std::make_shared<ws::LocalBackend>(dir.path());
  run([&](boost::asio::any_io_executor) -> Task<void> {
    CO_CHECK((co_await backend->run(Command::shell("kill -9 $$"), exedev::test::no_options())).exit_code == 137);
    CO_CHECK((co_await backend->run(Command::shell("cat"), exedev::test::no_options())).stdout_text.empty());
    CO_CHECK((co_await backend->run(Command::shell("printf 'a\\377b'"), exedev::test::no_options())).stdout_text == "a\xEF\xBF\xBD" "b");
    CO_CHECK((co_await backend->run(cmd("pwd", "-P"), exedev::test::no_options())).stdout_text == dir.path() + "\n");
  });
}

TEST_CASE("LocalBackend: timeout kills the group and keeps partial output", "[unit][workspace]") {
  TempDir dir;
  auto backend = std::make_shared<ws::LocalBackend>(dir.path());
  run([&](boost::asio::any_io_executor) -> Task<void> {
    RunOptions options;
    options.timeout = ws::Seconds(0.5);
    std::string message;
    std::string partial;
    try {
      co_await backend->run(Command::shell("printf partial; (sleep 3600; echo survivor > late) & exec sleep 3600"),
                            options);
    } catch (const ws::WorkspaceTimeoutError& e) {
      message = e.what();
      partial = e.output().stdout_data;
    }
    CHECK(message == "command timed out after 0.5s and was killed");
    CHECK(partial == "partial");
  });
}

TEST_CASE("LocalBackend: a finite timeout too large for the clock is no practical limit", "[unit][workspace]") {
  // steady_clock counts int64 nanoseconds (~292 years): converting these would overflow.
  TempDir dir;
  auto backend = std::make_shared<ws::LocalBackend>(dir.path());
  run([&](boost::asio::any_io_executor) -> Task<void> {
    const std::array<double, 3> timeouts{1e10, 1e300, std::numeric_limits<double>::max()};
    for (const double seconds : timeouts) {
      INFO(seconds);
      RunOptions options;
      options.timeout = ws::Seconds(seconds);
      const auto result = co_await backend->run(cmd("true"), options);
      CHECK(result == ws::CommandResult{0, "", ""});
    }
  });
}

TEST_CASE("LocalBackend: output above 10 MiB is an error with the first 64 KiB", "[unit][workspace]") {
  TempDir dir;
  auto backend = std::make_shared<ws::LocalBackend>(dir.path());
  run([&](boost::asio::any_io_executor) -> Task<void> {
    bool raised = false;
    try {
      co_await backend->run(Command::shell("yes 0123456789abcdef"), exedev::test::no_options());
    } catch (const ws::WorkspaceOutputLimitError& e) {
      raised = true;
      CHECK(e.limit() == 10u * 1024 * 1024);
      CHECK(e.output().stdout_data.size() == 64u * 1024);
      CHECK(std::string(e.what()).rfind("local workspace output exceeded 10 MiB safety limit", 0) == 0);
    }
    CHECK(raised);
  });
}

TEST_CASE("LocalBackend: a background child holding stdout does not hold run()", "[unit][workspace]") {
  TempDir dir;
  auto backend = std::make_shared<ws::LocalBackend>(dir.path());
  run([&](boost::asio::any_io_executor) -> Task<void> {
    const auto result = co_await backend->run(Command::shell("sleep 30 & echo $! > bg.pid; printf done"), exedev::test::no_options());
    CHECK(result == ws::CommandResult{0, "done", ""});
    co_await backend->run(Command::shell("kill \"$(cat bg.pid)\""), exedev::test::no_options());
  });
}

TEST_CASE("LocalBackend: a deleted root is unavailable and never recreated", "[unit][workspace]") {
  auto dir = std::make_unique<TempDir>();
  const auto root = dir->path();
  auto backend = std::make_shared<ws::LocalBackend>(root);
  ws::Workspace workspace(backend);
  run([&](boost::asio::any_io_executor) -> Task<void> { co_await workspace.write_bytes("a", "1"); });
  dir.reset();
  const auto unavailable = "local workspace directory " + root + " does not exist";
  run([&](boost::asio::any_io_executor) -> Task<void> {
    CO_CHECK(co_await error_of<ws::WorkspaceUnavailableError>(workspace.write_bytes("b", "2")) == unavailable);
    CO_CHECK(co_await error_of<ws::WorkspaceUnavailableError>(workspace.exists("a")) == unavailable);
    CO_CHECK(co_await error_of<ws::WorkspaceUnavailableError>(workspace.realpath("a")) == unavailable);
    CO_CHECK(co_await error_of<ws::WorkspaceUnavailableError>(workspace.run(cmd("true"))) == unavailable);
  });
  CHECK_FALSE(std::filesystem::exists(root));
}

TEST_CASE("LocalBackend: native file errors and remove rules", "[unit][workspace]") {
  TempDir dir;
  auto backend = std::make_shared<ws::LocalBackend>(dir.path());
  ws::Workspace workspace(backend);
  std::filesystem::create_directory_symlink(dir.path(), dir / "root_link");
  TempDir other;
  std::filesystem::create_directory_symlink(std::filesystem::path(dir.path()).parent_path(), other / "up");
  const auto alias = other / "up/" + std::filesystem::path(dir.path()).filename().string();
  run([&](boost::asio::any_io_executor) -> Task<void> {
    CO_CHECK(co_await error_of<std::invalid_argument>(backend->read_bytes("relative")) ==
          "path must be absolute, got 'relative'");
    co_await workspace.write_bytes("file", "x");
    CO_CHECK(co_await errc_of(workspace.write_bytes("file/child", "x")) == std::errc::not_a_directory);
    CO_CHECK(co_await errc_of(workspace.make_dir("file")) == std::errc::file_exists);
    CO_CHECK(co_await errc_of(workspace.remove("missing")) == std::errc::no_such_file_or_directory);
    CO_CHECK(co_await error_of<std::invalid_argument>(workspace.remove(alias)) ==
          "cannot remove the workspace root or its ancestor");
    co_await workspace.remove("root_link");  // the link itself
    CO_CHECK(co_await workspace.exists("."));
  });
}

namespace {

// Writes `data` to `path` `rounds` times.
Task<void> write_repeatedly(std::shared_ptr<ws::LocalBackend> backend, std::string path, ws::Bytes data,
                            int rounds) {
  for (int i = 0; i < rounds; ++i) co_await backend->write_bytes(path, data);
}

// Reads `path` `rounds` times and counts the reads that are neither payload (a torn write).
Task<void> read_repeatedly(std::shared_ptr<ws::LocalBackend> backend, std::string path,
                           const std::array<ws::Bytes, 2>& payloads, int rounds, std::atomic<int>& torn) {
  for (int i = 0; i < rounds; ++i) {
    const auto seen = co_await backend->read_bytes(path);
    if (seen != payloads[0] && seen != payloads[1]) ++torn;
  }
}

}  // namespace

TEST_CASE("LocalBackend: reads and writes of one real file are serialized across its aliases",
          "[unit][workspace]") {
  // Writes truncate and rewrite in place. Unserialized, two writers interleave (the short
  // payload over the tail of the long one) and a reader sees a truncated or half-written file.
  // The writers and readers run on a thread pool, each through a different spelling of the file.
  TempDir dir;
  auto backend = std::make_shared<ws::LocalBackend>(dir.path());
  const auto real = dir / "real.bin";
  const auto alias = dir / "alias.bin";
  std::filesystem::create_symlink("real.bin", alias);
  const std::array<ws::Bytes, 2> payloads{ws::Bytes(256 * 1024, 'a'), ws::Bytes(1024 * 1024, 'b')};
  constexpr int rounds = 300;
  std::atomic<int> torn{0};
  boost::asio::thread_pool pool(4);
  run([&](boost::asio::any_io_executor) -> Task<void> {
    using namespace boost::asio::experimental::awaitable_operators;
    using boost::asio::co_spawn;
    using boost::asio::use_awaitable;
    co_await backend->write_bytes(real, payloads[0]);
    co_await (co_spawn(pool, write_repeatedly(backend, real, payloads[0], rounds), use_awaitable) &&
              co_spawn(pool, write_repeatedly(backend, alias, payloads[1], rounds), use_awaitable) &&
              co_spawn(pool, read_repeatedly(backend, real, payloads, rounds, torn), use_awaitable) &&
              co_spawn(pool, read_repeatedly(backend, alias, payloads, rounds, torn), use_awaitable));
    const auto final_content = co_await backend->read_bytes(real);
    CHECK((final_content == payloads[0] || final_content == payloads[1]));
  });
  pool.join();
  CHECK(torn == 0);
  CHECK(std::filesystem::is_symlink(alias));
}

TEST_CASE("Workspace: run checks, resolve, text", "[unit][workspace]") {
  TempDir dir;
  ws::Workspace workspace(std::make_shared<ws::LocalBackend>(dir.path()));
  run([&](boost::asio::any_io_executor) -> Task<void> {
    RunOptions zero;
    zero.timeout = ws::Seconds(0);
    CO_CHECK(co_await error_of<std::invalid_argument>(workspace.run(cmd(), zero)) ==
          "timeout must be a positive finite number or None");  // timeout is checked first
    CO_CHECK(co_await error_of<std::invalid_argument>(workspace.run(cmd())) == "command must not be empty");
    CO_CHECK(co_await workspace.resolve("a/../b") == dir / "b");
    CO_CHECK(co_await workspace.resolve("/x//y/") == "/x/y");
    CO_CHECK(co_await workspace.resolve("c", std::string("/base")) == "/base/c");
    CO_CHECK(co_await error_of<std::invalid_argument>(workspace.resolve("c", std::string("rel"))) ==
          "base must be an absolute path, got 'rel'");
    co_await workspace.write_text("t.txt", "h\xC3\xA9");
    CO_CHECK(co_await workspace.read_text("t.txt") == "h\xC3\xA9");
    co_await workspace.write_bytes("bad.txt", "\xFF");
    CO_CHECK(co_await error_of<std::range_error>(workspace.read_text("bad.txt")) == "'bad.txt' is not valid UTF-8 text");
  });
}

namespace {

// A backend with nothing but ref and working_dir.
class Bare final : public ws::WorkspaceBackend {
 public:
  [[nodiscard]] std::optional<ws::WorkspaceRef> ref() const override { return std::nullopt; }
  Task<std::string> working_dir() override { co_return "/"; }
};

class Shouting final : public ws::WrapperWorkspace {
 public:
  using WrapperWorkspace::WrapperWorkspace;
  Task<ws::Bytes> read_bytes(std::string path) override {
    auto data = co_await wrapped()->read_bytes(std::move(path));
    for (auto& c : data) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    co_return data;
  }
};

}  // namespace

TEST_CASE("Workspace: capabilities, wrappers, read-only and unavailable", "[unit][workspace]") {
  TempDir dir;
  auto local = std::make_shared<ws::LocalBackend>(dir.path());
  auto base = std::make_shared<ws::Workspace>(local);
  auto read_only = std::make_shared<ws::ReadOnlyWorkspace>(base);
  ws::Workspace outer(read_only);
  CHECK(outer.read_only());
  CHECK_FALSE(base->read_only());
  CHECK(outer.backend() == local);
  CHECK(outer.attached());
  CHECK(outer.ref() == local->ref());
  CHECK_THROWS_AS(ws::Workspace(nullptr), std::invalid_argument);

  ws::Workspace bare(std::make_shared<Bare>());
  auto unavailable = std::make_shared<ws::Workspace>(std::make_shared<ws::UnavailableBackend>("gone for good"));
  auto nothing = ws::no_workspace();
  CHECK_FALSE(unavailable->attached());
  CHECK_FALSE(ws::ReadOnlyWorkspace(unavailable).attached());
  CHECK_FALSE(nothing->attached());
  CHECK_FALSE(nothing->ref().has_value());

  run([&](boost::asio::any_io_executor) -> Task<void> {
    co_await base->write_bytes("r.txt", "abc");
    CO_CHECK(co_await read_only->read_bytes("r.txt") == "abc");
    CO_CHECK(co_await read_only->exists("r.txt"));
    // One statement per refusal: GCC 12 miscompiles co_await inside a braced list.
    std::vector<std::optional<std::string>> refusals;
    refusals.push_back(co_await error_of<ws::WorkspaceReadOnlyError>(read_only->write_bytes("r.txt", "x")));
    refusals.push_back(co_await error_of<ws::WorkspaceReadOnlyError>(outer.write_text("r.txt", "x")));
    refusals.push_back(co_await error_of<ws::WorkspaceReadOnlyError>(read_only->make_dir("d")));
    refusals.push_back(co_await error_of<ws::WorkspaceReadOnlyError>(read_only->remove("r.txt")));
    refusals.push_back(co_await error_of<ws::WorkspaceReadOnlyError>(read_only->run(cmd("true"))));
    for (const auto& message : refusals) CHECK(message == std::string(ws::ReadOnlyWorkspace::reason));
    CO_CHECK(co_await base->read_bytes("r.txt") == "abc");
    CO_CHECK(co_await Shouting(base).read_text("r.txt") == "ABC");  // text goes through the override

    CO_CHECK(co_await error_of<ws::WorkspaceUsageError>(bare.run(cmd("true"))) ==
          "This workspace does not support command execution.");
    CO_CHECK(co_await error_of<ws::WorkspaceUsageError>(bare.read_bytes("x")) ==
          "This workspace does not support filesystem operations. Attach a backend that implements "
          "`SupportsFilesystem` or `SupportsCommands`.");
    CO_CHECK(co_await bare.realpath("/a/../b") == "/b");  // text only without commands

    CO_CHECK(co_await error_of<ws::WorkspaceUnavailableError>(unavailable->run(cmd("true"))) == "gone for good");
    CO_CHECK(co_await error_of<ws::WorkspaceUnavailableError>(unavailable->working_dir()) == "gone for good");
    CO_CHECK(co_await error_of<ws::WorkspaceUnavailableError>(unavailable->read_bytes("/x")) == "gone for good");
    CO_CHECK(co_await error_of<ws::WorkspaceUnavailableError>(unavailable->write_bytes("/x", "")) == "gone for good");
    CO_CHECK(co_await error_of<ws::WorkspaceUnavailableError>(unavailable->stat("/x")) == "gone for good");
    CO_CHECK(co_await error_of<ws::WorkspaceUnavailableError>(unavailable->list_dir("/x")) == "gone for good");
    CO_CHECK(co_await error_of<ws::WorkspaceUnavailableError>(unavailable->make_dir("/x")) == "gone for good");
    CO_CHECK(co_await error_of<ws::WorkspaceUnavailableError>(unavailable->remove("/x")) == "gone for good");
    CO_CHECK(co_await error_of<ws::WorkspaceUnavailableError>(unavailable->exists("/x")) == "gone for good");
    const auto none = co_await error_of<ws::WorkspaceUnavailableError>(nothing->read_bytes("x"));
    REQUIRE(none.has_value());
    CHECK(none->rfind("No workspace is attached", 0) == 0);
    CHECK(none->find("LocalBackend") != std::string::npos);
  });
}

TEST_CASE("workspace_layers: wrappers outermost first, plain Workspaces skipped, backend last", "[unit][workspace]") {
  using Layers = std::vector<std::type_index>;
  TempDir dir;
  auto local = std::make_shared<ws::LocalBackend>(dir.path());
  auto plain = std::make_shared<ws::Workspace>(local);
  CHECK(ws::workspace_layers(*plain) == Layers{typeid(ws::LocalBackend)});

  auto read_only = std::make_shared<ws::ReadOnlyWorkspace>(plain);
  CHECK(ws::workspace_layers(*read_only) == Layers{typeid(ws::ReadOnlyWorkspace), typeid(ws::LocalBackend)});

  // Plain layers anywhere in the stack are skipped; wrappers keep their order.
  auto nested = std::make_shared<ws::Workspace>(std::make_shared<ws::Workspace>(plain));
  CHECK(ws::workspace_layers(*nested) == Layers{typeid(ws::LocalBackend)});
  auto shouting = std::make_shared<Shouting>(nested);
  ws::Workspace stack(std::make_shared<ws::ReadOnlyWorkspace>(std::make_shared<ws::Workspace>(shouting)));
  CHECK(ws::workspace_layers(stack) ==
        Layers{typeid(ws::ReadOnlyWorkspace), typeid(Shouting), typeid(ws::LocalBackend)});

  CHECK(ws::workspace_layers(*ws::no_workspace()) == Layers{typeid(ws::UnattachedBackend)});
  ws::ReadOnlyWorkspace unavailable(std::make_shared<ws::Workspace>(std::make_shared<ws::UnavailableBackend>("gone")));
  CHECK(ws::workspace_layers(unavailable) == Layers{typeid(ws::ReadOnlyWorkspace), typeid(ws::UnavailableBackend)});
  CHECK(ws::workspace_layers(ws::Workspace(std::make_shared<Bare>())) == Layers{typeid(Bare)});
}
