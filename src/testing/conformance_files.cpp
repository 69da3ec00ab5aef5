// The conformance suite's file rules, then attaching by ref and destroying the environment, in
// the reference WorkspaceBackendSuite's order and under its names.

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <type_traits>

#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/workspace.hpp>

#include <exedev/testing/co_check.hpp>

#include "common/coroutines.hpp"
#include "common/exceptions.hpp"
#include "common/random_ids.hpp"
#include "testing/conformance_rules.hpp"

namespace exedev::testing::conformance {

using exedev::detail::capture;
using exedev::detail::sleep_for;

namespace {

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
  // Root bypasses permissions, unless it runs without CAP_DAC_OVERRIDE: tests/run_permission_checks.sh
  // runs the rule so and sets EXEDEV_PERMISSION_CHECKS=required, which also makes a root that
  // keeps the capability fail here instead of skipping (the WILL_FAIL twin).
  const char* required = std::getenv("EXEDEV_PERMISSION_CHECKS");
  const bool must_run = required != nullptr && std::string_view(required) == "required";
  const auto uid = co_await argv(r.backend, cmd("id", "-u"));
  if (!must_run && (uid.stdout_text == "0\n" || uid.stdout_text == "0")) {
    throw SkipRule{"commands run as root, which bypasses permissions"};
  }
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
    const bool visible = co_await r.ws->exists(link);
    if (!visible) throw SkipRule{"the symlink is not visible to file operations"};
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
  if (exedev::detail::exception_as<ws::WorkspaceUnavailableError>(*task.error) != nullptr) {
    SUCCEED("destroying the environment during a command raised WorkspaceUnavailableError");
  } else if (const auto* other = exedev::detail::exception_as<std::exception>(*task.error)) {
    FAIL("expected WorkspaceUnavailableError, got: " << other->what());
  } else {
    std::rethrow_exception(*task.error);
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

}  // namespace

const RuleTable& file_rules() {
#define EXEDEV_RULE(name) {#name, &name}
  static const RuleTable table = {
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

}  // namespace exedev::testing::conformance
