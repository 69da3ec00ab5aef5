// The shell-derived filesystem through Workspace on a commands-only view of LocalBackend (a
// real /bin/sh), plus damaged-output injection.
#include <catch2/catch.hpp>

#include <exedev/testing/commands_only.hpp>
#include <exedev/testing/run.hpp>
#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/local_backend.hpp>
#include <exedev/workspace/workspace.hpp>

#include <sys/stat.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/base64.hpp"
#include "workspace/data_codec.hpp"
#include "workspace/shell_filesystem.hpp"
#include "unit/workspace/support.hpp"

namespace ws = exedev::workspace;

using exedev::testing::CommandsOnly;
using exedev::test::cmd;
using exedev::test::error_of;
using exedev::test::errc_of;
using exedev::test::TempDir;
using exedev::testing::run;
using ws::Task;

namespace {

struct ShellFixture {
  explicit ShellFixture(ws::Env env = {}) : local(std::make_shared<ws::LocalBackend>(dir.path(), std::move(env))) {}
  TempDir dir;
  std::shared_ptr<ws::LocalBackend> local;
  std::shared_ptr<CommandsOnly> only = std::make_shared<CommandsOnly>(local);
  ws::Workspace shell{only};
  ws::Workspace native{local};
};

std::string binary_payload() {
  std::string data;
  for (int round = 0; round < 800; ++round) {
    for (int i = 0; i < 256; ++i) data += static_cast<char>(i);
  }
  return data;
}

bool leftovers_in(const std::string& dir) {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().filename().string().rfind(".exedev-", 0) == 0) return true;
  }
  return false;
}

// Listing temp files (.exedev-<hex>.list) left in `directory` itself.
int listing_files_in(const std::string& directory) {
  int count = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(directory, ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind(".exedev-", 0) == 0 && name.size() > 5 && name.substr(name.size() - 5) == ".list") ++count;
  }
  return count;
}

}  // namespace

TEST_CASE("shell filesystem: binary payload under a name with quote and newline", "[unit][workspace]") {
  ShellFixture f;
  const auto data = binary_payload();
  run([&](boost::asio::any_io_executor) -> Task<void> {
    co_await f.shell.write_bytes("nested/weird '\n blob.bin", data);
    CO_CHECK(co_await f.shell.read_bytes("nested/weird '\n blob.bin") == data);
    CO_CHECK(co_await f.native.read_bytes("nested/weird '\n blob.bin") == data);
    const auto listing = co_await f.shell.list_dir("nested");
    REQUIRE(listing.size() == 1);
    CHECK(listing[0].name == "weird '\n blob.bin");
    CHECK(listing[0].path == f.dir / "nested/weird '\n blob.bin");
    const auto entry = co_await f.shell.stat("nested/weird '\n blob.bin");
    CHECK(entry.size == data.size());
  });
  CHECK_FALSE(leftovers_in(f.dir.path()));
}

TEST_CASE("shell filesystem: names with spaces, $, backticks and non-UTF-8 bytes", "[unit][workspace]") {
  ShellFixture f;
  run([&](boost::asio::any_io_executor) -> Task<void> {
    const std::vector<std::string> names = {"a b", "$(echo x)", "`id`", "file-\xFF", "-dash", "semi;colon"};
    for (const auto& name : names) co_await f.shell.write_bytes(name, name);
    for (const auto& name : names) CO_CHECK(co_await f.shell.read_bytes(name) == name);
    const auto listing = co_await f.shell.list_dir(".");
    REQUIRE(listing.size() == names.size());
    std::vector<std::string> listed;
    for (const auto& entry : listing) listed.push_back(entry.name);
    for (const auto& name : names) CHECK(std::find(listed.begin(), listed.end(), name) != listed.end());
    CO_CHECK(co_await f.shell.realpath("file-\xFF") == f.dir / "file-\xFF");
  });
}

TEST_CASE("shell filesystem: realpath agrees with the native one", "[unit][workspace]") {
  ShellFixture f;
  std::filesystem::create_directories(f.dir / "dir");
  std::filesystem::create_directories(f.dir / "newline\n");
  std::ofstream(f.dir / "file") << "x";
  std::filesystem::create_directory_symlink(f.dir / "dir", f.dir / "dir_link");
  std::filesystem::create_symlink(f.dir / "file", f.dir / "file_link");
  std::filesystem::create_directory_symlink("newline\n", f.dir / "newline_link");
  std::filesystem::create_symlink("missing", f.dir / "dangling_link");
  std::filesystem::create_symlink("missing/deeper", f.dir / "deep_dangling_link");
  run([&](boost::asio::any_io_executor) -> Task<void> {
    const std::vector<std::string> paths = {"dir_link/missing/new.txt", "file_link", "dir_link/..",
                                            "missing/../dir_link/escape.txt", "newline_link/escape.txt",
                                            "dangling_link", "deep_dangling_link/x", "/exedev-missing/file.txt"};
    for (const auto& path : paths) {
      INFO(path);
      const auto native = co_await f.native.realpath(path);
      CO_CHECK(co_await f.shell.realpath(path) == native);
    }
    CO_CHECK(co_await f.native.realpath("dir_link/missing/new.txt") == f.dir / "dir/missing/new.txt");
    // File methods open resolve(path), which collapses `..` as text; commands climb from the target.
    std::filesystem::create_directories(f.dir / "in/deep");
    std::filesystem::create_directory_symlink(f.dir / "in/deep", f.dir / "inlink");
    CO_CHECK(co_await f.shell.realpath("inlink/../../x") != co_await f.shell.realpath(co_await f.shell.resolve("inlink/../../x")));
  });
}

TEST_CASE("shell filesystem: FIFOs are not regular files and are never opened", "[unit][workspace]") {
  ShellFixture f;
  REQUIRE(::mkfifo((f.dir / "fifo").c_str(), 0600) == 0);
  run([&](boost::asio::any_io_executor) -> Task<void> {
    CO_CHECK(co_await errc_of(f.shell.read_bytes("fifo")) == ws::not_a_regular_file);
    CO_CHECK(co_await errc_of(f.shell.stat("fifo")) == ws::not_a_regular_file);
    CO_CHECK(co_await errc_of(f.shell.write_bytes("fifo", "x")) == ws::not_a_regular_file);
    CO_CHECK(co_await errc_of(f.native.read_bytes("fifo")) == ws::not_a_regular_file);
    CO_CHECK(co_await errc_of(f.native.write_bytes("fifo", "x")) == ws::not_a_regular_file);
  });
  CHECK(std::filesystem::is_fifo(f.dir / "fifo"));
  CHECK_FALSE(leftovers_in(f.dir.path()));
}

TEST_CASE("shell filesystem: path-class errors take exactly one command", "[unit][workspace]") {
  ShellFixture f;
  std::filesystem::create_directories(f.dir / "sub");
  std::ofstream(f.dir / "file") << "x";
  run([&](boost::asio::any_io_executor) -> Task<void> {
    int before = f.only->commands_run();
    CO_CHECK(co_await errc_of(f.shell.read_bytes("sub")) == std::errc::is_a_directory);
    CHECK(f.only->commands_run() - before == 1);
    before = f.only->commands_run();
    CO_CHECK(co_await errc_of(f.shell.read_bytes("missing")) == std::errc::no_such_file_or_directory);
    CHECK(f.only->commands_run() - before == 1);
    before = f.only->commands_run();
    CO_CHECK(co_await errc_of(f.shell.list_dir("missing")) == std::errc::no_such_file_or_directory);
    CHECK(f.only->commands_run() - before == 1);
    before = f.only->commands_run();
    CO_CHECK(co_await errc_of(f.shell.list_dir("file")) == std::errc::not_a_directory);
    CHECK(f.only->commands_run() - before == 1);
  });
}

TEST_CASE("shell filesystem: truncated or garbled output is never a result", "[unit][workspace]") {
  ShellFixture f;
  std::ofstream(f.dir / "file") << std::string(1000, 'z');
  std::filesystem::create_directories(f.dir / "sub/entry");
  const auto damaged = [](const std::optional<std::string>& message) {
    return message && message->find("damaged or incomplete output") != std::string::npos;
  };
  for (const bool truncate : {true, false}) {
    INFO((truncate ? "truncated" : "garbled"));
    f.only->set_rewrite([truncate](ws::CommandResult r) {
      if (r.stdout_text.size() > 4) {
        if (truncate) {
          r.stdout_text.resize(r.stdout_text.size() / 2);
        } else {
          r.stdout_text[3] = '@';
        }
      }
      return r;
    });
    run([&](boost::asio::any_io_executor) -> Task<void> {
      CO_CHECK(damaged(co_await error_of<ws::WorkspaceError>(f.shell.read_bytes("file"))));
      CO_CHECK(damaged(co_await error_of<ws::WorkspaceError>(f.shell.list_dir("sub"))));
      CO_CHECK(damaged(co_await error_of<ws::WorkspaceError>(f.shell.realpath("sub"))));
    });
  }
  f.only->set_rewrite([](ws::CommandResult r) {
    if (r.stdout_text == "1000\n") r.stdout_text = "10x0\n";
    return r;
  });
  run([&](boost::asio::any_io_executor) -> Task<void> { CO_CHECK(damaged(co_await error_of<ws::WorkspaceError>(f.shell.stat("file")))); });
}

TEST_CASE("shell filesystem: an implausible size line is refused by its limit, not an allocation failure",
          "[unit][workspace]") {
  ShellFixture f;
  std::ofstream(f.dir / "file") << std::string(1000, 'z');
  std::filesystem::create_directories(f.dir / "sub/entry");
  ws::ShellFilesystemLimits limits;
  limits.listing_inline_bytes = 1;  // every listing is paged, so its size line sizes the read
  f.only->set_limits(limits);
  // 19 digits pass the digits check but exceed std::string::max_size(); 1 TB cannot be
  // allocated. The pages hold the real bytes, far fewer than either.
  const std::array<std::string, 2> sizes{"9999999999999999999", "1000000000000"};
  for (const auto& size : sizes) {
    INFO(size);
    f.only->set_rewrite([&size](ws::CommandResult r) {
      // The read's first answer: the size line of `file`, then its first page.
      if (r.stdout_text.starts_with("1000\n")) r.stdout_text = size + r.stdout_text.substr(4);
      const auto paged = r.stdout_text.find("\nPAGED\n");
      if (paged != std::string::npos) r.stdout_text = size + r.stdout_text.substr(paged);  // the listing
      return r;
    });
    run([&](boost::asio::any_io_executor) -> Task<void> {
      // Checked against max_read_bytes / max_listing_bytes before another page is asked for.
      const auto read = co_await error_of<ws::WorkspaceLimitError>(f.shell.read_bytes("file"));
      CHECK(read == "the file '" + (f.dir / "file") + "' (" + size + " bytes) is larger than the limit of 268435456 bytes " +
                        "(option ShellFilesystemLimits::max_read_bytes)");
      const auto listing = co_await error_of<ws::WorkspaceLimitError>(f.shell.list_dir("sub"));
      CHECK(listing == "the listing of '" + (f.dir / "sub") + "' (" + size + " bytes) is larger than the limit of 67108864 bytes " +
                           "(option ShellFilesystemLimits::max_listing_bytes)");
    });
  }
}

TEST_CASE("shell filesystem: a read retries when the size changed, and gives up when it keeps changing",
          "[unit][workspace]") {
  ShellFixture f;
  const auto path = f.dir / "growing";
  std::ofstream(path) << "first";
  // The read's first answer: the size line, then the first page.
  const auto first_page = ws::utf8_replace_invalid("5\nraw\n" + exedev::detail::base64_encode("first") + "\n");
  bool changed = false;
  f.only->set_rewrite([&](ws::CommandResult r) {
    // The file changes size right after its first page was read: that page no longer matches.
    if (!changed && r.stdout_text == first_page) {
      changed = true;
      std::ofstream(path) << "second version";
      r.stdout_text += "AAAA";
    }
    return r;
  });
  run([&](boost::asio::any_io_executor) -> Task<void> { CO_CHECK(co_await f.shell.read_bytes("growing") == "second version"); });

  int size = 1;
  f.only->set_rewrite([&](ws::CommandResult r) {
    const bool page = r.stdout_text.find_first_not_of("0123456789\n") != std::string::npos;  // not a stat size
    if (page) {
      std::ofstream(path) << std::string(static_cast<std::size_t>(++size), 'k');  // changes on every read
      r.stdout_text += "AAAA";
    }
    return r;
  });
  run([&](boost::asio::any_io_executor) -> Task<void> {
    const auto message = co_await error_of<ws::WorkspaceError>(f.shell.read_bytes("growing"));
    CHECK(message == "shell filesystem returned damaged or incomplete output for '" + path + "'");
  });
}

TEST_CASE("shell filesystem: a find failure is not hidden", "[unit][workspace]") {
  TempDir dir;
  TempDir bin;
  // A PATH whose `find` fails: the listing must raise, not list nothing.
  std::ofstream(bin / "find") << "#!/bin/sh\necho 'find: broken' >&2\nexit 1\n";
  std::filesystem::permissions(bin / "find", std::filesystem::perms(0755));
  const char* host_path = std::getenv("PATH");
  ws::Env env{{"PATH", bin.path() + ":" + (host_path ? host_path : "/usr/bin:/bin")}};
  auto only = std::make_shared<CommandsOnly>(std::make_shared<ws::LocalBackend>(dir.path(), env));
  ws::Workspace shell(only);
  run([&](boost::asio::any_io_executor) -> Task<void> {
    CO_CHECK(co_await error_of<ws::WorkspaceError>(shell.list_dir(".")) == "find: broken");
  });
}

TEST_CASE("shell filesystem: output caps become named errors, listings page through $TMPDIR",
          "[unit][workspace]") {
  TempDir tmp;  // the environment's TMPDIR: other processes list through the shared one meanwhile
  ShellFixture f(ws::Env{{"TMPDIR", tmp.path()}});
  static constexpr std::size_t cap = 120 * 1024;  // static: both GCC and Clang agree it needs no capture
  f.only->set_rewrite([](ws::CommandResult r) {
    if (r.stdout_text.size() + r.stderr_text.size() > cap) {
      throw ws::WorkspaceOutputLimitError("test output cap", cap, exedev::PartialOutput{r.stdout_text.substr(0, 10)});
    }
    return r;
  });
  for (int i = 0; i < 600; ++i) {
    std::ofstream(f.dir / (std::to_string(i) + std::string(200, 'n'))) << i;
  }
  run([&](boost::asio::any_io_executor) -> Task<void> {
    const auto listing = co_await f.shell.list_dir(".");
    CHECK(listing.size() == 600);
  });
  CHECK(listing_files_in(tmp.path()) == 0);

  ws::ShellFilesystemLimits big;
  big.read_page_bytes = 200 * 1024;  // a page whose base64 exceeds the cap
  big.listing_inline_bytes = 1024 * 1024;
  f.only->set_limits(big);
  std::ofstream(f.dir / "big") << std::string(150 * 1024, 'b');
  run([&](boost::asio::any_io_executor) -> Task<void> {
    CO_CHECK(co_await error_of<ws::WorkspaceError>(f.shell.read_bytes("big")) ==
          "shell filesystem read exceeded command output limit for '" + f.dir / "big" + "'");
  });
  big.listing_inline_bytes = 64 * 1024;
  big.read_page_bytes = 200 * 1024;
  f.only->set_limits(big);
  run([&](boost::asio::any_io_executor) -> Task<void> {
    CO_CHECK(co_await error_of<ws::WorkspaceError>(f.shell.list_dir(".")) ==
          "shell filesystem listing exceeded command output limit for '" + f.dir.path() + "'");
  });
}

namespace {

// A commands-only backend that records each script it runs and the names `watched` held just
// before it ran.
class Recorder final : public ws::WorkspaceBackend, public ws::SupportsCommands {
 public:
  struct Call {
    std::string script;
    std::vector<std::string> watched_names;
  };

  Recorder(std::shared_ptr<CommandsOnly> inner, std::string watched)
      : inner_(std::move(inner)), watched_(std::move(watched)) {}

  [[nodiscard]] std::optional<ws::WorkspaceRef> ref() const override { return inner_->ref(); }
  Task<std::string> working_dir() override { return inner_->working_dir(); }
  Task<ws::CommandResult> run(ws::Command command, ws::RunOptions options) override {
    Call call;
    call.script = command.to_shell_line();
    for (const auto& entry : std::filesystem::directory_iterator(watched_)) {
      call.watched_names.push_back(entry.path().filename().string());
    }
    std::sort(call.watched_names.begin(), call.watched_names.end());
    calls_.push_back(std::move(call));
    co_return co_await inner_->run(std::move(command), std::move(options));
  }
  [[nodiscard]] ws::ShellFilesystemLimits shell_filesystem_limits() const override {
    return inner_->shell_filesystem_limits();
  }
  [[nodiscard]] const std::vector<Call>& calls() const { return calls_; }

 private:
  std::shared_ptr<CommandsOnly> inner_;
  std::string watched_;
  std::vector<Call> calls_;
};

// The first executable `name` on this process's PATH, or "".
std::string host_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const auto candidate = dir + "/" + name;
    if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::vector<std::string> lines_of(const std::string& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("shell filesystem: listings go through the environment's $TMPDIR and leave nothing behind",
          "[unit][workspace]") {
  TempDir dir;
  TempDir tmp;  // the environment's TMPDIR
  TempDir bin;
  // A `find` in front of the real one that logs where its output goes: the listing's temp file.
  const auto real_find = host_program("find");
  REQUIRE_FALSE(real_find.empty());
  const auto log = bin / "find.log";
  // (Not `readlink ... >> log`: dash redirects in the shell itself before running readlink.)
  std::ofstream(bin / "find") << "#!/bin/sh\nout=$(readlink /proc/$$/fd/1)\nprintf '%s\\n' \"$out\" >> "
                              << ws::shell_quote(log) << "\nexec " << ws::shell_quote(real_find) << " \"$@\"\n";
  std::filesystem::permissions(bin / "find", std::filesystem::perms(0755));
  const char* host_path = std::getenv("PATH");
  ws::Env env{{"TMPDIR", tmp.path()}, {"PATH", bin.path() + ":" + (host_path ? host_path : "/usr/bin:/bin")}};
  auto only = std::make_shared<CommandsOnly>(std::make_shared<ws::LocalBackend>(dir.path(), env));
  auto recorder = std::make_shared<Recorder>(only, tmp.path());
  ws::Workspace shell(recorder);
  for (int i = 0; i < 20; ++i) std::ofstream(dir / ("file-" + std::to_string(i))) << i;

  const auto is_listing_file = [](const std::string& name) {
    return name.rfind(".exedev-", 0) == 0 && name.size() > 13 && name.substr(name.size() - 5) == ".list";
  };
  std::vector<std::string> names;

  SECTION("an inline listing") {
    run([&](boost::asio::any_io_executor) -> Task<void> {
      CO_CHECK((co_await shell.list_dir(".")).size() == 20);
    });
    const auto written = lines_of(log);
    REQUIRE(written.size() == 1);
    CHECK(std::filesystem::path(written[0]).parent_path() == tmp.path());
    names.push_back(std::filesystem::path(written[0]).filename().string());
    CHECK(is_listing_file(names.back()));
  }

  SECTION("a paged listing") {
    ws::ShellFilesystemLimits paged;
    paged.listing_inline_bytes = 64;
    paged.read_page_bytes = 128;
    only->set_limits(paged);
    std::size_t record_bytes = 0;
    run([&](boost::asio::any_io_executor) -> Task<void> {
      const auto listing = co_await shell.list_dir(".");
      CHECK(listing.size() == 20);
      for (const auto& entry : listing) record_bytes += entry.path.size() + 2;  // flag, path, NUL
    });
    const auto written = lines_of(log);
    REQUIRE(written.size() == 1);
    CHECK(std::filesystem::path(written[0]).parent_path() == tmp.path());
    names.push_back(std::filesystem::path(written[0]).filename().string());
    CHECK(is_listing_file(names.back()));
    // Each page is read from that file by name while it sits alone in $TMPDIR.
    const auto& calls = recorder->calls();
    REQUIRE(calls.size() >= 2);
    std::size_t pages = 0;
    for (std::size_t i = 1; i < calls.size(); ++i) {
      if (calls[i].script.find("dd if=") == std::string::npos) continue;
      ++pages;
      CHECK(calls[i].script.find(names.back()) != std::string::npos);
      CHECK(calls[i].watched_names == std::vector<std::string>{names.back()});
    }
    CHECK(pages == (record_bytes + 127) / 128);
  }

  CHECK(std::filesystem::is_empty(tmp.path()));
  for (const auto& name : names) {
    CHECK_FALSE(std::filesystem::exists("/tmp/" + name));
    CHECK_FALSE(std::filesystem::exists(std::filesystem::temp_directory_path() / name));
  }
}

TEST_CASE("shell filesystem: writes keep mode bits and leave no temp files", "[unit][workspace]") {
  ShellFixture f;
  std::ofstream(f.dir / "moded") << "old";
  std::filesystem::permissions(f.dir / "moded", std::filesystem::perms(0640));
  ws::ShellFilesystemLimits small;
  small.write_chunk_chars = 1000;  // several append commands
  f.only->set_limits(small);
  const std::string data(5000, 'q');
  run([&](boost::asio::any_io_executor) -> Task<void> {
    co_await f.shell.write_bytes("moded", data);
    CO_CHECK(co_await f.native.read_bytes("moded") == data);
    co_await f.shell.write_bytes("empty", "");
    CO_CHECK((co_await f.native.stat("empty")).size == 0u);
  });
  CHECK((std::filesystem::status(f.dir / "moded").permissions() & std::filesystem::perms::all) ==
        std::filesystem::perms(0640));
  CHECK_FALSE(leftovers_in(f.dir.path()));
}

TEST_CASE("shell filesystem: a failed or cancelled write cleans up its temp files", "[unit][workspace]") {
  ShellFixture f;
  std::filesystem::create_directories(f.dir / "target");
  run([&](boost::asio::any_io_executor) -> Task<void> {
    CO_CHECK(co_await errc_of(f.shell.write_bytes("target", "x")) == std::errc::is_a_directory);
  });
  CHECK_FALSE(leftovers_in(f.dir.path()));

  // Cancel while the write is between its chunk commands.
  ws::ShellFilesystemLimits small;
  small.write_chunk_chars = 4;
  f.only->set_limits(small);
  run([&](boost::asio::any_io_executor ex) -> Task<void> {
    boost::asio::cancellation_signal cancel;
    bool done = false;
    std::exception_ptr error;
    boost::asio::co_spawn(ex, f.shell.write_bytes("cancelled", std::string(3000, 'c')),
                          boost::asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e) {
                            done = true;
                            error = e;
                          }));
    // Cancel once the first chunk has landed in the write's temporary file.
    boost::asio::steady_timer timer(ex);
    while (!done && !leftovers_in(f.dir.path())) {
      timer.expires_after(std::chrono::milliseconds(5));
      co_await timer.async_wait(boost::asio::use_awaitable);
    }
    REQUIRE_FALSE(done);
    cancel.emit(boost::asio::cancellation_type::terminal);
    while (!done) {
      timer.expires_after(std::chrono::milliseconds(20));
      co_await timer.async_wait(boost::asio::use_awaitable);
    }
    CHECK(error != nullptr);
  });
  CHECK_FALSE(std::filesystem::exists(f.dir / "cancelled"));
  CHECK_FALSE(leftovers_in(f.dir.path()));
}

TEST_CASE("shell filesystem: exists never reads a broken transport as absent", "[unit][workspace]") {
  ShellFixture f;
  for (const int code : {255, 127}) {
    f.only->set_rewrite([code](ws::CommandResult r) {
      r.exit_code = code;
      r.stderr_text = "";
      return r;
    });
    run([&](boost::asio::any_io_executor) -> Task<void> {
      const auto message = co_await error_of<ws::WorkspaceError>(f.shell.exists("x"));
      CHECK(message == "could not check whether '" + f.dir / "x" + "' exists (exit code " + std::to_string(code) + ")");
    });
  }
}

TEST_CASE("shell filesystem: remove refuses the root through a symlinked parent", "[unit][workspace]") {
  ShellFixture f;
  TempDir other;
  std::filesystem::create_directory_symlink(std::filesystem::path(f.dir.path()).parent_path(), other / "up");
  std::filesystem::create_directory_symlink(f.dir.path(), f.dir / "self_link");
  const auto root_name = std::filesystem::path(f.dir.path()).filename().string();
  run([&](boost::asio::any_io_executor) -> Task<void> {
    CO_CHECK(co_await error_of<std::invalid_argument>(f.shell.remove(other / "up/" + root_name)) ==
          "cannot remove the workspace root or its ancestor");
    co_await f.shell.remove("self_link");  // a link to the root is removed as a link
  });
  CHECK(std::filesystem::is_directory(f.dir.path()));
  CHECK_FALSE(std::filesystem::exists(f.dir / "self_link"));
}

TEST_CASE("shell filesystem: permission errors", "[unit][workspace][permissions]") {
  if (exedev::test::skip_permission_checks()) {
    WARN("skipped: running as root, which bypasses file permissions (tests/run_permission_checks.sh runs it)");
    return;
  }
  ShellFixture f;
  std::ofstream(f.dir / "locked") << "x";
  std::filesystem::permissions(f.dir / "locked", std::filesystem::perms::none);
  std::filesystem::create_directories(f.dir / "ro");
  std::filesystem::permissions(f.dir / "ro", std::filesystem::perms(0500));
  run([&](boost::asio::any_io_executor) -> Task<void> {
    CO_CHECK(co_await errc_of(f.shell.read_bytes("locked")) == std::errc::permission_denied);
    CO_CHECK(co_await errc_of(f.shell.write_bytes("locked", "y")) == std::errc::permission_denied);
    CO_CHECK(co_await errc_of(f.shell.make_dir("ro/sub")) == std::errc::permission_denied);
  });
  std::filesystem::permissions(f.dir / "ro", std::filesystem::perms(0700));
}

namespace {

// Text that compresses as source code does.
std::string source_like(std::size_t size) {
  std::string text;
  for (int i = 0; text.size() < size; ++i) {
    text += "int f" + std::to_string(i) + "(int x) { return x * " + std::to_string(i % 97) + "; }  // step " +
            std::to_string(i % 13) + "\n";
  }
  text.resize(size);
  return text;
}

ws::ConfinedTarget target_of(const std::string& path) {
  ws::ConfinedTarget target;
  target.path = path;
  target.root = "/";
  return target;
}

// The limits of a backend whose answers are wide (exe.dev's /exec): contents up to a page,
// gzip-compressed.
ws::ShellFilesystemLimits wide_answers(std::size_t page_bytes) {
  ws::ShellFilesystemLimits limits;
  limits.read_page_bytes = page_bytes;
  limits.compress = true;
  limits.confined_content_bytes = page_bytes;
  return limits;
}

}  // namespace

TEST_CASE("shell filesystem: a confined read carries content up to a read page, compressed, in one command",
          "[unit][workspace]") {
  ShellFixture f;
  f.only->set_limits(wide_answers(512 * 1024));
  const auto text = source_like(300 * 1024);
  std::ofstream(f.dir / "big.cpp") << text;
  std::ofstream(f.dir / "huge.cpp") << source_like(600 * 1024);
  run([&](boost::asio::any_io_executor) -> Task<void> {
    const auto root = co_await f.shell.working_dir();
    ws::ConfinedReadOptions what;
    what.content = true;
    const int before = f.only->commands_run();
    // Targets named, not built inside co_await (GCC 12, ADR 7).
    const auto big = target_of(root + "/big.cpp");
    const auto huge = target_of(root + "/huge.cpp");
    const auto read = co_await f.shell.confined_read(big, what);
    CHECK(f.only->commands_run() - before == 1);
    CHECK(read.status == ws::ConfinedStatus::done);
    REQUIRE(read.content);
    CHECK(*read.content == text);
    // Past the page: the entry without its content (the caller reads it by pages).
    const auto larger = co_await f.shell.confined_read(huge, what);
    CHECK(larger.status == ws::ConfinedStatus::done);
    REQUIRE(larger.entry);
    CHECK(larger.entry->size == 600u * 1024);
    CHECK_FALSE(larger.content);
  });
}

TEST_CASE("shell filesystem: a tree's contents travel up to a read page in all, and leave no temp file",
          "[unit][workspace]") {
  TempDir tmp;
  ShellFixture f(ws::Env{{"TMPDIR", tmp.path()}});
  f.only->set_limits(wide_answers(100 * 1024));
  std::filesystem::create_directories(f.dir / "tree/sub");
  for (const char* name : {"a.txt", "b.txt", "sub/c.txt"}) std::ofstream(f.dir / ("tree/" + std::string(name))) << source_like(40 * 1024);
  std::ofstream(f.dir / "tree/empty.txt").flush();
  run([&](boost::asio::any_io_executor) -> Task<void> {
    const auto root = co_await f.shell.working_dir();
    ws::ConfinedReadOptions what;
    what.children = true;
    what.tree = true;
    what.tree_contents = true;
    const auto tree = target_of(root + "/tree");
    const auto walked = co_await f.shell.confined_read(tree, what);
    CHECK(walked.status == ws::ConfinedStatus::done);
    CHECK(walked.children.size() == 5);  // sub/ too
    // Two of the three 40 KiB files fit 100 KiB; the empty one always does.
    CHECK(walked.child_contents.size() == 3);
    CHECK(walked.child_contents.count(root + "/tree/empty.txt") == 1);
    for (const auto& [path, bytes] : walked.child_contents) {
      if (path != root + "/tree/empty.txt") CHECK(bytes == source_like(40 * 1024));
    }
  });
  CHECK(std::filesystem::is_empty(tmp.path()));
}

TEST_CASE("shell filesystem: a splice applies only to the content it was made for", "[unit][workspace]") {
  ShellFixture f;
  f.only->set_limits(wide_answers(512 * 1024));
  const auto before = source_like(200 * 1024);
  auto after = before;
  after.replace(1000, 20, "the edit: inserted text\n");
  std::ofstream(f.dir / "f.cpp") << before;
  ::chmod((f.dir / "f.cpp").c_str(), 0640);
  run([&](boost::asio::any_io_executor) -> Task<void> {
    const auto root = co_await f.shell.working_dir();
    const auto file = target_of(root + "/f.cpp");
    ws::ConfinedSplice splice;
    splice.base_sha256 = ws::detail::sha256_hex(before);
    splice.offset = 1000;
    splice.length = 20;
    splice.inserted = "the edit: inserted text\n";
    splice.result_size = after.size();
    splice.result_sha256 = ws::detail::sha256_hex(after);
    int commands = f.only->commands_run();
    auto applied = co_await f.shell.confined_splice(file, splice);
    CHECK(f.only->commands_run() - commands == 1);
    CHECK(applied.status == ws::ConfinedStatus::done);
    CHECK(applied.spliced);
    CO_CHECK(co_await f.native.read_bytes("f.cpp") == after);
    // Sent again (its answer lost): the file already holds the result.
    auto again = co_await f.shell.confined_splice(file, splice);
    CHECK(again.spliced);
    CO_CHECK(co_await f.native.read_bytes("f.cpp") == after);
    // Made for content the file no longer holds: nothing changes, the content comes back.
    co_await f.native.write_bytes("f.cpp", before + "changed\n");
    commands = f.only->commands_run();
    auto refused = co_await f.shell.confined_splice(file, splice);
    CHECK(f.only->commands_run() - commands == 1);
    CHECK(refused.status == ws::ConfinedStatus::done);
    CHECK_FALSE(refused.spliced);
    REQUIRE(refused.content);
    CHECK(*refused.content == before + "changed\n");
    CO_CHECK(co_await f.native.read_bytes("f.cpp") == before + "changed\n");
  });
  struct stat info {};
  REQUIRE(::stat((f.dir / "f.cpp").c_str(), &info) == 0);
  CHECK((info.st_mode & 07777) == 0640);
  CHECK_FALSE(leftovers_in(f.dir.path()));
}

TEST_CASE("shell filesystem: confined contents must be what their sizes say, within the page", "[unit][workspace]") {
  namespace d = ws::detail;
  const auto target = target_of("/w/t");
  const auto b64 = [](const std::string& bytes) { return exedev::detail::base64_encode(bytes); };
  const std::string real = "real\n" + b64("/w/t") + "\n.\n";
  const std::string tree = real + "dir\nchild f 3 c\n" + b64("/w/t/a") + "\n.\nchild f 2 c\n" + b64("/w/t/b") +
                           "\n.\nchild f 9\n" + b64("/w/t/c") + "\n.\n";
  struct Row {
    const char* what;
    std::string output;
    bool done;
  };
  const std::vector<Row> rows = {
      {"contents split by the records' sizes", tree + "contents 5\n" + b64("abcde") + "\n.\ndone\n", true},
      {"contents as one gzip member", tree + "contents 5 gzip\n" + b64(d::gzip_compress("abcde")) + "\n.\ndone\n", true},
      {"fewer bytes than the records say", tree + "contents 4\n" + b64("abcd") + "\n.\ndone\n", false},
      {"more bytes than the records say", tree + "contents 6\n" + b64("abcdef") + "\n.\ndone\n", false},
      {"a total past the page", tree + "contents 1000\n" + b64(std::string(1000, 'x')) + "\n.\ndone\n", false},
      {"an unknown encoding", tree + "contents 5 zstd\n" + b64("abcde") + "\n.\ndone\n", false},
      {"a file's content past the page", real + "file 1000\ncontent\n" + b64(std::string(1000, 'x')) + "\n.\ndone\n", false},
      {"a file's gzip content", real + "file 5\ncontent gzip\n" + b64(d::gzip_compress("hello")) + "\n.\ndone\n", true},
      {"a gzip content of another length", real + "file 6\ncontent gzip\n" + b64(d::gzip_compress("hello")) + "\n.\ndone\n", false},
      {"spliced", real + "spliced\ndone\n", true},
  };
  d::ConfinedContent content;
  content.file_bytes = 100;
  content.total_bytes = 100;
  content.compress = true;
  for (const auto& row : rows) {
    INFO(row.what);
    const auto result = d::parse_confined_output(row.output, target, content);
    CHECK((result.status == ws::ConfinedStatus::done) == row.done);
  }
  const auto split = d::parse_confined_output(rows[0].output, target, content);
  CHECK(split.child_contents.at("/w/t/a") == "abc");
  CHECK(split.child_contents.at("/w/t/b") == "de");
  CHECK(split.child_contents.count("/w/t/c") == 0);
  CHECK(d::parse_confined_output(rows.back().output, target, content).spliced);
  // Without compression (the seed's limits), a gzip member is not an answer, and a tree's
  // contents have no total.
  d::ConfinedContent seed;
  seed.file_bytes = 100;
  CHECK(d::parse_confined_output(rows[1].output, target, seed).status == ws::ConfinedStatus::declined);
  const std::string wide = real + "dir\nchild f 60 c\n" + b64("/w/t/a") + "\n.\nchild f 60 c\n" + b64("/w/t/b") +
                           "\n.\ncontents 120\n" + b64(std::string(120, 'x')) + "\n.\ndone\n";
  CHECK(d::parse_confined_output(wide, target, seed).status == ws::ConfinedStatus::done);
  CHECK(d::parse_confined_output(wide, target, content).status == ws::ConfinedStatus::declined);
}
