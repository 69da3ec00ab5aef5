// How the shell-derived filesystem moves data (issue 11), on a real local /bin/sh with its own
// gzip and sha256sum: compression both ways when it pays, never for random bytes; a damaged gzip
// stream or a temp file that differs from what was sent is an error and the target is kept;
// an environment without gzip or sha256sum. The same paths run through the emulator in
// tests/integration/sandbox/transfer_test.cpp.
#include <catch2/catch.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exedev/testing/co_check.hpp>
#include <exedev/testing/run.hpp>
#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/local_backend.hpp>
#include <exedev/workspace/workspace.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <sstream>

#include "unit/workspace/support.hpp"
#include "workspace/data_codec.hpp"
#include "workspace/shell_filesystem.hpp"

namespace ws = exedev::workspace;

using exedev::test::error_of;
using exedev::test::TempDir;
using exedev::testing::run;
using ws::Task;

namespace {

// A commands-only view of a LocalBackend that records scripts and their outputs, lets a test
// act just before a script runs (to damage a temp file) or change it (to damage its data on the
// way), and remembers a missing gzip as SandboxBackend does.
class Transport : public ws::WorkspaceBackend, public ws::SupportsCommands {
 public:
  struct Call {
    std::string script;
    ws::CommandResult result;
  };

  Transport(std::string dir, ws::Env env) : local_(std::make_shared<ws::LocalBackend>(std::move(dir), std::move(env))) {
    limits_.write_chunk_chars = 8 * 1024;  // small, so that a 100 KB file takes many commands
    limits_.read_page_bytes = 64 * 1024;
    limits_.write_window = 2;
    limits_.compress = true;
  }

  [[nodiscard]] std::optional<ws::WorkspaceRef> ref() const override { return local_->ref(); }
  Task<std::string> working_dir() override { return local_->working_dir(); }
  Task<ws::CommandResult> run(ws::Command command, ws::RunOptions options) override {
    std::string line = command.line();
    if (before_run) before_run(line);
    auto result = co_await local_->run(ws::Command::shell(line), std::move(options));
    if (after_run) result = after_run(std::move(result));
    calls.push_back(Call{line, result});
    co_return result;
  }
  [[nodiscard]] ws::ShellFilesystemLimits shell_filesystem_limits() const override { return limits_; }
  /// As a backend whose scripts' stdout is raw (SandboxBackend over SSH) says.
  void set_raw_read_bytes(std::size_t bytes) { limits_.raw_read_bytes = bytes; }
  /// As SandboxBackend's reference mode says.
  void set_confined_block_writes(bool on) { limits_.confined_block_writes = on; }
  [[nodiscard]] std::size_t write_chunk_chars() const { return limits_.write_chunk_chars; }
  void note_gzip_missing() override {
    ++gzip_missing_notes;
    limits_.compress = false;
  }

  [[nodiscard]] std::size_t scripts_containing(const std::string& text) const {
    return static_cast<std::size_t>(std::count_if(calls.begin(), calls.end(), [&](const Call& call) {
      return call.script.find(text) != std::string::npos;
    }));
  }

  /// Called with each script line before it runs; may change it.
  std::function<void(std::string&)> before_run;
  std::function<ws::CommandResult(ws::CommandResult)> after_run;
  std::vector<Call> calls;
  int gzip_missing_notes = 0;

 private:
  std::shared_ptr<ws::LocalBackend> local_;
  ws::ShellFilesystemLimits limits_;
};

// The same with a file transfer channel over the local files, as SandboxBackend has one over
// SFTP: it counts its uploads and downloads, can be switched off, and can cut an upload short.
// An upload opens as sftp-server does (a new file gets 0600, before the umask; a refused path
// is a filesystem_error).
class TransferringTransport final : public Transport, public ws::SupportsFileTransfer {
 public:
  using Transport::Transport;
  Task<bool> file_transfer_available() override { co_return available; }
  [[nodiscard]] bool file_transfer_open() const noexcept override { return available; }
  Task<void> upload(std::string path, std::string_view data) override {
    ++uploads;
    if (cut_uploads) data = data.substr(0, data.size() / 2);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) throw std::filesystem::filesystem_error("upload", path, std::error_code(errno, std::generic_category()));
    const auto written = ::write(fd, data.data(), data.size());
    ::close(fd);
    if (written != static_cast<ssize_t>(data.size())) throw std::runtime_error("short upload");
    co_return;
  }
  Task<ws::Bytes> download(std::string path, std::uint64_t size) override {
    ++downloads;
    std::ifstream in(path, std::ios::binary);
    ws::Bytes data(static_cast<std::size_t>(size) + 1, '\0');  // the test's own file: a size it made
    in.read(data.data(), static_cast<std::streamsize>(data.size()));
    data.resize(static_cast<std::size_t>(in.gcount()));
    co_return data;
  }

  bool available = true;
  bool cut_uploads = false;
  int uploads = 0;
  int downloads = 0;
};

// Marks of the scripts: the commit unpacks a gzip member; a compressed write checks for gzip.
constexpr const char* kUnpacksGzip = "gzip -dc";
constexpr const char* kChecksForGzip = "command -v gzip >/dev/null 2>&1 || exit";
// A commit of a chunked write (a whole write decodes its data, $1, in the same script).
bool is_chunked_commit(const std::string& script) {
  return script.find("sha256sum") != std::string::npos && script.find("base64 -d") == std::string::npos;
}

std::string random_bytes(std::size_t size) { return exedev::test::random_bytes(size, 17); }

std::string source_text(std::size_t size) {
  std::mt19937_64 engine{23};
  const char* words[] = {"const ", "auto ", "result", " = ", "co_await ", "std::string ", ";\n", "if (", ") {\n",
                         "}\n", "options", ".size()"};
  std::string out;
  while (out.size() < size) {
    out += words[engine() % std::size(words)];
    if (engine() % 7 == 0) out += std::to_string(engine() % 1000);
  }
  out.resize(size);
  return out;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool temp_files_in(const std::string& dir) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind(".exedev-", 0) == 0) return true;
  }
  return false;
}

// Flips a byte in the middle of the write's temp file (the only .exedev-*.tmp in `dir`).
void damage_temp_file(const std::string& dir) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const auto name = entry.path().filename().string();
    if (name.rfind(".exedev-", 0) != 0 || !name.ends_with(".tmp")) continue;
    std::fstream file(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
    const auto middle = static_cast<std::streamoff>(std::filesystem::file_size(entry.path()) / 2);
    file.seekg(middle);
    const char byte = static_cast<char>(file.get() ^ 0x20);
    file.seekp(middle);
    file.put(byte);
    return;
  }
  FAIL("no temp file to damage in " << dir);
}

// A PATH of links to this machine's tools, without those in `missing`.
class ToolDir {
 public:
  explicit ToolDir(const std::vector<std::string>& missing) {
    const char* host = std::getenv("PATH");
    for (const char* tool : {"base64", "cat", "cp", "dd", "find", "gzip", "head", "mkdir", "mv", "readlink", "rm",
                             "sha256sum", "wc"}) {
      if (std::find(missing.begin(), missing.end(), tool) != missing.end()) continue;
      std::istringstream dirs(host ? host : "/usr/bin:/bin");
      for (std::string dir; std::getline(dirs, dir, ':');) {
        const auto candidate = dir + "/" + tool;
        if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) {
          std::filesystem::create_symlink(candidate, bin_ / tool);
          break;
        }
      }
    }
  }
  [[nodiscard]] ws::Env env() const { return {{"PATH", bin_.path()}}; }

 private:
  TempDir bin_;
};

}  // namespace

TEST_CASE("shell transfers: data that compresses travels as gzip both ways, random data never",
          "[unit][workspace]") {
  TempDir dir;
  auto transport = std::make_shared<Transport>(dir.path(), ws::Env{});
  ws::Workspace workspace(transport);
  const auto text = source_text(100 * 1024);
  const auto noise = random_bytes(100 * 1024);
  run([&](boost::asio::any_io_executor) -> Task<void> {
    co_await workspace.write_bytes("text.cpp", text);
    const auto text_commands = transport->calls.size();
    CHECK(transport->scripts_containing(kUnpacksGzip) == 1);
    CHECK(file_bytes(dir / "text.cpp") == text);

    transport->calls.clear();
    co_await workspace.write_bytes("noise.bin", noise);
    const auto noise_commands = transport->calls.size();
    CHECK(transport->scripts_containing(kUnpacksGzip) == 0);
    CHECK(transport->scripts_containing(kChecksForGzip) == 0);
    CHECK(file_bytes(dir / "noise.bin") == noise);
    // 100 KB is 17 raw chunks of 8 KiB characters; the text packs into a few.
    CHECK(text_commands * 2 < noise_commands);

    // A small file fits one command as it is: nothing to gain.
    transport->calls.clear();
    co_await workspace.write_bytes("small.cpp", text.substr(0, 4000));
    CHECK(transport->calls.size() == 1);
    CHECK(transport->scripts_containing(kChecksForGzip) == 0);

    transport->calls.clear();
    const auto text_back = co_await workspace.read_bytes("text.cpp");
    CHECK(text_back == text);
    REQUIRE(transport->calls.size() == 2);  // two 64 KiB pages
    CHECK(transport->calls[0].result.stdout_text.find("\ngzip\n") != std::string::npos);
    CHECK(transport->calls[1].result.stdout_text.starts_with("gzip\n"));

    transport->calls.clear();
    const auto noise_back = co_await workspace.read_bytes("noise.bin");
    CHECK(noise_back == noise);
    REQUIRE(transport->calls.size() == 2);
    CHECK(transport->calls[0].result.stdout_text.find("\nraw\n") != std::string::npos);
    CHECK(transport->calls[1].result.stdout_text.starts_with("raw\n"));
  });
}

TEST_CASE("shell transfers: a damaged gzip stream is an error, never wrong bytes", "[unit][workspace]") {
  TempDir dir;
  auto transport = std::make_shared<Transport>(dir.path(), ws::Env{});
  ws::Workspace workspace(transport);
  const auto old_text = source_text(20 * 1024);
  std::ofstream(dir / "kept.cpp") << old_text;
  const std::string damaged_write = "did not arrive intact";

  SECTION("chunked: the temp file is damaged before the commit") {
    transport->before_run = [&](std::string& script) {
      if (script.find(kUnpacksGzip) != std::string::npos) damage_temp_file(dir.path());
    };
    run([&](boost::asio::any_io_executor) -> Task<void> {
      const auto error = co_await error_of<ws::WorkspaceError>(workspace.write_bytes("kept.cpp", source_text(100 * 1024)));
      REQUIRE(error);
      CHECK(error->find(damaged_write) != std::string::npos);
    });
  }

  SECTION("whole: the data is damaged on its way") {
    // 16 KB of text: 21 KiB of base64 raw, less than one 8 KiB chunk compressed.
    transport->before_run = [&](std::string& script) {
      if (script.find(kChecksForGzip) == std::string::npos) return;
      // The data is the word after `set --` (base64 needs no quotes).
      const auto set = script.find("set -- ");
      REQUIRE(set != std::string::npos);
      const auto data = set + 7;
      const auto end = script.find('\n', data);
      char& middle = script[(data + end) / 2];
      middle = middle == 'A' ? 'B' : 'A';
    };
    run([&](boost::asio::any_io_executor) -> Task<void> {
      const auto error = co_await error_of<ws::WorkspaceError>(workspace.write_bytes("kept.cpp", source_text(16 * 1024)));
      REQUIRE(error);
      CHECK(error->find(damaged_write) != std::string::npos);
      const auto& whole = transport->calls.front().script;  // the write itself (a cleanup follows)
      CHECK(whole.find(kChecksForGzip) != std::string::npos);
      CHECK(whole.find(kUnpacksGzip) != std::string::npos);
    });
  }

  SECTION("read: a gzip page is damaged on its way back") {
    const auto text = source_text(100 * 1024);
    std::ofstream(dir / "read.cpp") << text;
    transport->after_run = [](ws::CommandResult result) {
      const auto page = result.stdout_text.find("gzip\n");
      if (page != std::string::npos) {
        char& middle = result.stdout_text[(page + result.stdout_text.size()) / 2];
        middle = middle == 'A' ? 'B' : 'A';
      }
      return result;
    };
    run([&](boost::asio::any_io_executor) -> Task<void> {
      const auto error = co_await error_of<ws::WorkspaceError>(workspace.read_bytes("read.cpp"));
      REQUIRE(error);
      CHECK(error->find("damaged or incomplete output") != std::string::npos);
      transport->after_run = nullptr;
      const auto intact = co_await workspace.read_bytes("read.cpp");
      CHECK(intact == text);
    });
  }
  CHECK(file_bytes(dir / "kept.cpp") == old_text);
  CHECK_FALSE(temp_files_in(dir.path()));
}

TEST_CASE("shell transfers: the final request checks the SHA-256 digest, or the size without sha256sum",
          "[unit][workspace]") {
  TempDir dir;
  const auto old_data = random_bytes(10 * 1024);
  std::ofstream(dir / "target.bin", std::ios::binary) << old_data;
  const auto new_data = random_bytes(30 * 1024);  // random: sent raw, in chunks

  SECTION("a temp file of the right size but other bytes is refused") {
    auto transport = std::make_shared<Transport>(dir.path(), ws::Env{});
    ws::Workspace workspace(transport);
    transport->before_run = [&](std::string& script) {
      if (is_chunked_commit(script)) damage_temp_file(dir.path());
    };
    run([&](boost::asio::any_io_executor) -> Task<void> {
      const auto error = co_await error_of<ws::WorkspaceError>(workspace.write_bytes("target.bin", new_data));
      REQUIRE(error);
      CHECK(error->find("did not arrive intact") != std::string::npos);
    });
    CHECK(file_bytes(dir / "target.bin") == old_data);
  }

  SECTION("without sha256sum the size is still checked") {
    ToolDir tools({"sha256sum"});
    auto transport = std::make_shared<Transport>(dir.path(), tools.env());
    ws::Workspace workspace(transport);
    run([&](boost::asio::any_io_executor) -> Task<void> {
      co_await workspace.write_bytes("target.bin", new_data);
      CHECK(file_bytes(dir / "target.bin") == new_data);
      transport->before_run = [&](std::string& script) {
        if (!is_chunked_commit(script)) return;
        for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
          if (entry.path().filename().string().ends_with(".tmp")) std::filesystem::resize_file(entry.path(), 100);
        }
      };
      const auto error = co_await error_of<ws::WorkspaceError>(workspace.write_bytes("target.bin", old_data));
      REQUIRE(error);
      CHECK(error->find("did not arrive intact") != std::string::npos);
    });
    CHECK(file_bytes(dir / "target.bin") == new_data);
  }
  CHECK_FALSE(temp_files_in(dir.path()));
}

TEST_CASE("shell transfers: over a file transfer channel large data moves whole, with no digest and no first page",
          "[unit][workspace]") {
  TempDir dir;
  auto transport = std::make_shared<TransferringTransport>(dir.path(), ws::Env{});
  ws::Workspace workspace(transport);
  const auto data = random_bytes(200 * 1024);
  run([&](boost::asio::any_io_executor) -> Task<void> {
    co_await workspace.write_bytes("big.bin", data);
    CHECK(file_bytes(dir / "big.bin") == data);
    CHECK(transport->uploads == 1);
    CHECK(transport->scripts_containing("sha256sum") == 0);  // the transfer's own integrity covers it
    // The read's first script sends no page of a file the transfer will carry.
    CO_CHECK(co_await workspace.read_bytes("big.bin") == data);
    CHECK(transport->downloads == 1);
    CHECK(transport->scripts_containing("printf 'none") == 1);
    const auto first_script = std::find_if(transport->calls.begin(), transport->calls.end(), [](const auto& call) {
      return call.script.find("printf 'none") != std::string::npos;
    });
    REQUIRE(first_script != transport->calls.end());
    CHECK(first_script->result.stdout_text == "204800\nnone\n");
    // Without the channel, the first script sends the first page and the rest follows in pages.
    transport->available = false;
    CO_CHECK(co_await workspace.read_bytes("big.bin") == data);
    CHECK(transport->downloads == 1);
    CHECK(transport->scripts_containing("printf 'none") == 1);
    // An upload cut short fails the size check; the file is kept.
    transport->available = true;
    transport->cut_uploads = true;
    const auto error = co_await error_of<ws::WorkspaceError>(workspace.write_bytes("big.bin", random_bytes(100 * 1024)));
    REQUIRE(error);
    CHECK(error->find("did not arrive intact") != std::string::npos);
    CHECK(transport->uploads == 2);
  });
  CHECK(file_bytes(dir / "big.bin") == data);
  CHECK_FALSE(temp_files_in(dir.path()));
}

TEST_CASE("shell transfers: where scripts' stdout is raw, a file up to raw_read_bytes comes whole with its first script",
          "[unit][workspace]") {
  TempDir dir;
  auto transport = std::make_shared<TransferringTransport>(dir.path(), ws::Env{});
  transport->set_raw_read_bytes(256 * 1024);
  ws::Workspace workspace(transport);
  const auto text = source_text(200 * 1024);  // several pages of 64 KiB
  std::ofstream(dir / "text.txt", std::ios::binary) << text;
  run([&](boost::asio::any_io_executor) -> Task<void> {
    const auto before = transport->calls.size();
    CO_CHECK(co_await workspace.read_bytes("text.txt") == text);
    CHECK(transport->calls.size() == before + 1);  // one script, no download, no pages
    CHECK(transport->downloads == 0);
    CHECK(transport->calls.back().result.stdout_text.starts_with("204800\nbytes\n"));
    // An empty file too.
    std::ofstream(dir / "empty.txt", std::ios::binary).flush();
    CO_CHECK(co_await workspace.read_bytes("empty.txt") == "");
    // A larger file comes by the transfer, as before.
    const auto larger = source_text(300 * 1024);
    std::ofstream(dir / "larger.txt", std::ios::binary) << larger;
    CO_CHECK(co_await workspace.read_bytes("larger.txt") == larger);
    CHECK(transport->downloads == 1);
    // Bytes cut on the way are a damaged read (tried again, then reported), never a short file.
    transport->after_run = [](ws::CommandResult result) {
      if (result.stdout_text.find("\nbytes\n") != std::string::npos) result.stdout_text.pop_back();
      return result;
    };
    const auto damaged = co_await error_of<ws::WorkspaceError>(workspace.read_bytes("text.txt"));
    REQUIRE(damaged);
    CHECK(damaged->find("damaged or incomplete output") != std::string::npos);
  });
}

TEST_CASE("shell transfers: the upload runs beside the first script, into the temp file beside the path as given",
          "[unit][workspace]") {
  TempDir dir;
  auto transport = std::make_shared<TransferringTransport>(dir.path(), ws::Env{});
  ws::Workspace workspace(transport);
  const auto data = random_bytes(100 * 1024);
  const mode_t umask_now = ::umask(022);
  ::umask(umask_now);
  const auto mode_of = [](const std::filesystem::path& path) {
    struct stat st {};
    ::stat(path.c_str(), &st);
    return st.st_mode & 07777;
  };
  std::filesystem::create_directory(dir / "real");
  std::filesystem::create_directory_symlink(dir / "real", dir / "linked");
  std::ofstream(dir / "file") << "a file, not a directory";
  run([&](boost::asio::any_io_executor) -> Task<void> {
    // A new file: one upload, beside the script; the file has the mode a file the shell creates
    // has, not the upload's 0600.
    co_await workspace.write_bytes("fresh.bin", data);
    CHECK(file_bytes(dir / "fresh.bin") == data);
    CHECK(transport->uploads == 1);
    CHECK(mode_of(dir / "fresh.bin") == (0666 & ~umask_now));
    // An existing file keeps its mode.
    std::filesystem::permissions(dir / "fresh.bin", static_cast<std::filesystem::perms>(0750));
    co_await workspace.write_bytes("fresh.bin", data + "more");
    CHECK(file_bytes(dir / "fresh.bin") == data + "more");
    CHECK(transport->uploads == 2);
    CHECK(mode_of(dir / "fresh.bin") == 0750);
    // Through a symlinked directory the destination is elsewhere: the data goes again, beside it.
    co_await workspace.write_bytes("linked/deep.bin", data);
    CHECK(file_bytes(dir / "real/deep.bin") == data);
    CHECK(transport->uploads == 4);
    // Parents that do not exist yet: the upload beside the script is refused unless the script
    // has made them by then (which runs first is the scheduler's choice); a refused one goes
    // again once the script has, and lands.
    co_await workspace.write_bytes("missing/parents/new.bin", data);
    CHECK(file_bytes(dir / "missing/parents/new.bin") == data);
    CHECK(transport->uploads >= 5);
    CHECK(transport->uploads <= 6);
    // The script refuses the path (a parent is a file): the write fails with its error.
    const auto error = co_await error_of<std::filesystem::filesystem_error>(workspace.write_bytes("file/x.bin", data));
    REQUIRE(error);
    CHECK(error->find("Not a directory") != std::string::npos);
    // A small file's read, with the channel open, comes from the first script's page.
    co_await workspace.write_text("small.txt", "small");
    CO_CHECK(co_await workspace.read_text("small.txt") == "small");
  });
  CHECK_FALSE(temp_files_in(dir.path()));
  CHECK_FALSE(temp_files_in(dir / "real"));
  CHECK_FALSE(temp_files_in(dir / "missing/parents"));
}

TEST_CASE("shell transfers: without gzip a compressed write is refused once, sent as it is, and remembered",
          "[unit][workspace]") {
  TempDir dir;
  ToolDir tools({"gzip"});
  auto transport = std::make_shared<Transport>(dir.path(), tools.env());
  ws::Workspace workspace(transport);
  const auto text = source_text(100 * 1024);
  run([&](boost::asio::any_io_executor) -> Task<void> {
    // The VM-side choice for reads: no gzip, so pages come back raw.
    std::ofstream(dir / "read.cpp") << text;
    const auto back = co_await workspace.read_bytes("read.cpp");
    CHECK(back == text);
    CHECK(transport->calls.back().result.stdout_text.starts_with("raw\n"));

    transport->calls.clear();
    co_await workspace.write_bytes("a.cpp", text);
    CHECK(file_bytes(dir / "a.cpp") == text);
    CHECK(transport->gzip_missing_notes == 1);
    REQUIRE_FALSE(transport->calls.empty());
    CHECK(transport->calls.front().result.exit_code == 108);  // refused before writing anything
    CHECK(transport->scripts_containing(kChecksForGzip) == 1);

    transport->calls.clear();
    co_await workspace.write_bytes("b.cpp", text);
    CHECK(file_bytes(dir / "b.cpp") == text);
    CHECK(transport->scripts_containing(kChecksForGzip) == 0);
    CHECK(transport->gzip_missing_notes == 1);
  });
  CHECK_FALSE(temp_files_in(dir.path()));
}

namespace {

ws::ConfinedTarget target_of(const std::string& path) {
  ws::ConfinedTarget target;
  target.path = path;
  target.root = "/";
  return target;
}

// The data word of a script line (after `set -- `; base64 needs no quotes), empty without one.
std::string data_of(const std::string& line) {
  if (!line.starts_with("set -- ")) return {};
  return line.substr(7, line.find('\n') - 7);
}

// The scripts of a confined write in blocks: the first runs the confined checks, the last
// commits (sha256sum), the others only write a block.
bool is_first_block(const std::string& line) { return line.find("declined()") != std::string::npos; }
bool is_last_block(const std::string& line) { return line.find("sha256sum") != std::string::npos && !is_first_block(line); }
bool is_middle_block(const std::string& line) {
  return line.find("dd of=") != std::string::npos && !is_first_block(line) && !is_last_block(line);
}

}  // namespace

TEST_CASE("shell transfers: confined write blocks start on their quantum and fill their requests", "[unit][workspace]") {
  namespace d = ws::detail;
  struct Row {
    const char* what;
    std::size_t chars, first, room, last_room, quantum;
    std::vector<std::size_t> starts;
  };
  const std::vector<Row> rows = {
      {"the first and the last", 250, 96, 256, 200, 32, {0, 96}},
      {"middle blocks carry what the last cannot, to the quantum", 1000, 96, 256, 200, 32, {0, 96, 352, 608, 800}},
      {"no room in the last: the commit alone", 1000, 96, 256, 20, 32, {0, 96, 352, 608, 864, 1000}},
  };
  for (const auto& row : rows) {
    INFO(row.what);
    const auto blocks = d::confined_write_blocks(row.chars, row.first, row.room, row.last_room, row.quantum);
    CHECK(blocks.starts == row.starts);
    CHECK(blocks.granule_bytes == 24);
  }
  // At exe.dev's sizes (a 64 KiB body less the checks' room and the commit's): every block
  // starts at a multiple of the quantum (a dd block), no block is past its room, the blocks
  // hold the text, and the requests are the floor or one more.
  const std::size_t chunk = 65'400;
  const std::size_t quantum = d::confined_block_quantum(chunk);
  CHECK(quantum == 128);
  for (std::size_t chars = 62'000; chars < 4'000'000; chars = (chars * 3 / 2 + 4) / 4 * 4) {  // base64: by 4
    for (const std::size_t last_room : {std::size_t{60'000}, std::size_t{64}, std::size_t{0}}) {
      INFO(chars << " characters, " << last_room << " for the last");
      const auto blocks = d::confined_write_blocks(chars, 61'952, chunk, last_room, quantum);
      std::size_t held = 0;
      for (std::size_t block = 0; block < blocks.count(); ++block) {
        held += blocks.length(block);
        if (blocks.length(block) == 0) {  // only the last, when the commit travels alone
          CHECK((block + 1 == blocks.count() && last_room < quantum));
          continue;
        }
        CHECK(blocks.starts[block] % quantum == 0);
        CHECK(blocks.dd_index(block) * blocks.granule_bytes == blocks.starts[block] / 4 * 3);
        CHECK(blocks.length(block) <= (block + 1 == blocks.count() ? last_room : chunk));
      }
      CHECK(held == chars);
      const std::size_t floor = (chars + chunk - 1) / chunk;
      CHECK(blocks.count() <= floor + (last_room >= quantum ? 1 : 2));
    }
  }
  const auto uniform = d::uniform_write_blocks(10'000, 4'000);
  CHECK(uniform.starts == std::vector<std::size_t>{0, 4'000, 8'000});
  CHECK(uniform.length(2) == 2'000);
  CHECK(uniform.dd_index(2) == 2);
}

TEST_CASE("shell transfers: a confined write past one command goes in blocks, the checks with the first, the commit with the last",
          "[unit][workspace]") {
  TempDir dir;
  auto transport = std::make_shared<Transport>(dir.path(), ws::Env{});
  ws::Workspace workspace(transport);
  const std::size_t chunk = transport->write_chunk_chars();
  const auto text = source_text(300 * 1024);  // travels as a gzip member
  const auto noise = random_bytes(100 * 1024);  // raw
  std::ofstream(dir / "kept.bin") << "old";
  std::filesystem::permissions(dir / "kept.bin", static_cast<std::filesystem::perms>(0640));
  // A destination whose commit script fills the last request's room (of these small 8 KiB
  // ones): the commit travels alone, and the checks' room in the first is large too.
  const auto deep = dir / (std::string(200, 'd') + "/" + std::string(200, 'e'));
  std::filesystem::create_directories(deep);
  struct Write {
    std::string path;
    std::string data;
    std::size_t chars;
    std::size_t most_over_floor;
  };
  std::vector<Write> writes;
  writes.push_back({dir / "text.cpp", text, (ws::detail::gzip_compress(text).size() + 2) / 3 * 4, 1});
  writes.push_back({dir / "kept.bin", noise, (noise.size() + 2) / 3 * 4, 1});
  writes.push_back({deep + "/noise.bin", noise, (noise.size() + 2) / 3 * 4, 2});
  run([&](boost::asio::any_io_executor) -> Task<void> {
    for (const auto& write : writes) {
      INFO(write.path.substr(dir.path().size()));
      transport->calls.clear();
      const auto target = target_of(write.path);
      const auto result = co_await workspace.confined_write(target, write.data, "");
      CHECK(result.status == ws::ConfinedStatus::done);
      CHECK(result.real == write.path);
      CHECK(file_bytes(write.path) == write.data);
      REQUIRE(transport->calls.size() >= 2);
      CHECK(is_first_block(transport->calls.front().script));
      CHECK(is_last_block(transport->calls.back().script));
      std::size_t sent = 0;
      for (std::size_t i = 0; i < transport->calls.size(); ++i) {
        const auto& line = transport->calls[i].script;
        CHECK((i == 0 || i + 1 == transport->calls.size() || is_middle_block(line)));
        CHECK(data_of(line).size() <= chunk);
        sent += data_of(line).size();
      }
      CHECK(sent == write.chars);
      const std::size_t floor = (write.chars + chunk - 1) / chunk;
      CHECK(transport->calls.size() >= floor);
      CHECK(transport->calls.size() <= floor + write.most_over_floor);
    }
    // The deep one's commit went alone: its room was taken by the script.
    CHECK(data_of(transport->calls.back().script).empty());
  });
  CHECK((std::filesystem::status(dir / "kept.bin").permissions() & std::filesystem::perms::all) ==
        static_cast<std::filesystem::perms>(0640));
  CHECK_FALSE(temp_files_in(dir.path()));
  CHECK_FALSE(temp_files_in(deep));
}

TEST_CASE("shell transfers: a confined write in blocks survives a resent block and refuses a damaged one",
          "[unit][workspace]") {
  TempDir dir;
  auto transport = std::make_shared<Transport>(dir.path(), ws::Env{});
  ws::Workspace workspace(transport);
  const auto old_text = source_text(20 * 1024);
  std::ofstream(dir / "kept.cpp") << old_text;
  const auto target = target_of(dir / "kept.cpp");
  auto kept = old_text;  // what the file holds at the end

  SECTION("a middle block sent again after the later ones (its answer lost) writes the same bytes") {
    const auto data = random_bytes(100 * 1024);
    kept = data;
    std::string first_middle;
    transport->before_run = [&](std::string& line) {
      if (is_middle_block(line) && first_middle.empty()) first_middle = line;
      // Its own `set --` line sets $1 again: the block, then the last request as it was.
      if (is_last_block(line)) line = first_middle + "\n" + line;
    };
    run([&](boost::asio::any_io_executor) -> Task<void> {
      const auto result = co_await workspace.confined_write(target, data, ws::detail::sha256_hex(old_text));
      CHECK(result.status == ws::ConfinedStatus::done);
    });
    CHECK_FALSE(first_middle.empty());
  }

  SECTION("a block damaged on its way is refused by the commit") {
    for (const bool compressed : {true, false}) {
      INFO((compressed ? "gzip" : "raw"));
      bool damaged = false;
      transport->before_run = [&](std::string& line) {
        if (!is_middle_block(line) || damaged) return;
        damaged = true;
        char& middle = line[7 + data_of(line).size() / 2];
        middle = middle == 'A' ? 'B' : 'A';
      };
      run([&](boost::asio::any_io_executor) -> Task<void> {
        const auto data = compressed ? source_text(300 * 1024) : random_bytes(100 * 1024);
        const auto error = co_await error_of<ws::WorkspaceError>(workspace.confined_write(target, data, ""));
        REQUIRE(error);
        CHECK(error->find("did not arrive intact") != std::string::npos);
      });
      CHECK(damaged);
    }
  }

  SECTION("a first block that does not decode is declined") {
    transport->before_run = [&](std::string& line) {
      if (is_first_block(line)) line[7] = '*';
    };
    run([&](boost::asio::any_io_executor) -> Task<void> {
      const auto result = co_await workspace.confined_write(target, random_bytes(100 * 1024), "");
      CHECK(result.status == ws::ConfinedStatus::declined);
    });
  }

  SECTION("a middle block that fails (its data written) ends the write, and its temp file goes") {
    transport->before_run = [&](std::string& line) {
      if (is_middle_block(line)) line += "\nexit 1";
    };
    run([&](boost::asio::any_io_executor) -> Task<void> {
      const auto error = co_await error_of<ws::WorkspaceError>(workspace.confined_write(target, random_bytes(100 * 1024), ""));
      CHECK(error);
    });
  }

  SECTION("cancelled between its blocks, it leaves nothing") {
    run([&](boost::asio::any_io_executor ex) -> Task<void> {
      boost::asio::cancellation_signal cancel;
      transport->before_run = [&](std::string& line) {
        if (is_middle_block(line)) cancel.emit(boost::asio::cancellation_type::terminal);
      };
      // Woken by the write's end: the timer never expires on its own.
      boost::asio::steady_timer ended(ex, boost::asio::steady_timer::time_point::max());
      std::exception_ptr error;
      boost::asio::co_spawn(ex, workspace.confined_write(target, random_bytes(100 * 1024), ""),
                            boost::asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, ws::ConfinedResult) {
                              error = e;
                              ended.cancel();
                            }));
      boost::system::error_code waited;
      co_await ended.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, waited));
      CHECK(error != nullptr);
    });
  }

  SECTION("another content than the expected one is declined before anything is written") {
    run([&](boost::asio::any_io_executor) -> Task<void> {
      const auto result = co_await workspace.confined_write(target, random_bytes(100 * 1024), std::string(64, '0'));
      CHECK(result.status == ws::ConfinedStatus::declined);
    });
  }

  SECTION("off (the seed's design), it declines without a command") {
    transport->set_confined_block_writes(false);
    run([&](boost::asio::any_io_executor) -> Task<void> {
      const auto result = co_await workspace.confined_write(target, random_bytes(100 * 1024), "");
      CHECK(result.status == ws::ConfinedStatus::declined);
    });
    CHECK(transport->calls.empty());
  }
  CHECK(file_bytes(dir / "kept.cpp") == kept);
  CHECK_FALSE(temp_files_in(dir.path()));
}
