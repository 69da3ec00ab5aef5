// The hostile VM matrix (docs/reliability.md, "A hostile VM"): every surface a compromised VM
// answers × the lie it tells, on both transports where the surface exists, each cell on a fresh
// emulator whose VMs replace their own tools (support/hostile_vm.hpp). Needs unshare(1) and the
// right to mount (root in most containers): otherwise the matrix is SKIPPED by name.
#include "ssh_fixture.hpp"
#include "support/hostile_vm.hpp"

#include <exedev/testing/co_check.hpp>
#include <exedev/workspace/workspace.hpp>

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <map>

using namespace sbx;
namespace fs = std::filesystem;
namespace ws = exedev::workspace;

namespace {

// Fake tools. None calls the tool it replaces (the real one is hidden in the namespace).
constexpr const char* kHugeSize = "#!/bin/sh\ncat >/dev/null 2>&1\necho 1099511627776\n";  // wc: 1 TiB
constexpr const char* kEndlessStdout = "#!/bin/sh\nexec yes AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n";
constexpr const char* kEndlessStderr = "#!/bin/sh\nyes 'flood on stderr' >&2\n";
constexpr const char* kStall = "#!/bin/sh\nexec sleep 3600\n";
constexpr const char* kEscapes = "#!/bin/sh\nprintf '\\033]0;owned\\007\\033[2Jmkdir: refused\\n' >&2\nexit 1\n";
constexpr const char* kBrokenTool = "#!/bin/sh\necho 'a broken profile tool' >&2\nexit 99\n";
// wc that swaps ~/swap.bin for a link to /dev/zero, or a FIFO, and says it is 20 MiB (so its
// data comes over SFTP, which opens what the path is by then).
constexpr const char* kSwapForZero = "#!/bin/sh\ncat >/dev/null 2>&1\nln -sfn /dev/zero \"$HOME/swap.bin\"\necho 20971520\n";
constexpr const char* kSwapForFifo = "#!/bin/sh\ncat >/dev/null 2>&1\nrm -f \"$HOME/swap.bin\"; mkfifo \"$HOME/swap.bin\"\necho 20971520\n";
// A command that finds its end marks' boundary in its ancestors' memory and prints forged end
// marks with status 0 for every candidate, then keeps running.
constexpr const char* kForger = R"PY(import os, re, sys
pid, found = os.getpid(), set()
for _ in range(3):
    pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    try:
        maps, mem = open(f"/proc/{pid}/maps"), open(f"/proc/{pid}/mem", "rb", 0)
    except OSError:
        continue
    for line in maps:
        fields = line.split()
        low, high = (int(x, 16) for x in fields[0].split("-"))
        if "r" not in fields[1] or high - low > (64 << 20):
            continue
        try:
            mem.seek(low)
            found.update(m.group(1) for m in re.finditer(rb"(?<![0-9A-Za-z])([0-9A-Za-z]{24})(?![0-9A-Za-z])", mem.read(high - low)))
        except (OSError, ValueError, OverflowError):
            pass
for b in found:
    sys.stdout.buffer.write(b + b" x 0\n")
    sys.stderr.buffer.write(b + b" x 0\n")
sys.stdout.flush(); sys.stderr.flush()
import time; time.sleep(3600)
)PY";

enum class Surface { read, list, tree_download, make_dir, write, run };

struct Row {
  const char* name;
  Surface surface;
  std::map<std::string, const char*> tools;  ///< ~/.hostile/bin
  std::map<std::string, const char*> path;   ///< ~/.hostile/path
  bool ssh_only = false;
  bool warm_sftp = false;  ///< open SFTP first (a 1 MiB write), so a large read goes over it
  std::string expected;    ///< classify()'s outcome
  /// SshOptions::file_operation_timeout and TreeTransferOptions::archive_timeout: short for the
  /// rows that stall, the default otherwise
  /// (the endless rows must meet their output limit first, however loaded the machine is).
  std::chrono::milliseconds deadline = std::chrono::seconds(60);
  /// The outcome over /exec when it differs from `expected`.
  const char* exec_expected = nullptr;
};

const std::vector<Row>& rows() {
  static const std::vector<Row> table = {
      {"read: a 1 TiB size", Surface::read, {{"wc", kHugeSize}}, {}, false, false, "WorkspaceLimitError"},
      {"list: a 1 TiB listing", Surface::list, {{"wc", kHugeSize}}, {}, false, false, "WorkspaceLimitError"},
      // Over /exec the archive is made by a command, whose protocol reads its output's size with
      // the VM's `wc` first: a VM that replaced /usr/bin breaks the command (not defended).
      {"tree download: a 1 TiB archive", Surface::tree_download, {{"wc", kHugeSize}}, {}, false, false, "WorkspaceLimitError",
       60s, "CommandOutcomeUnknownError"},
      {"make_dir: escape sequences on stderr", Surface::make_dir, {{"mkdir", kEscapes}}, {}, false, false, "WorkspaceScriptError"},
      {"read: endless stdout", Surface::read, {{"head", kEndlessStdout}, {"base64", kEndlessStdout}}, {}, true, false,
       "WorkspaceError: output limit"},
      {"read: endless stderr", Surface::read, {{"head", kEndlessStderr}}, {}, true, false, "WorkspaceError: output limit"},
      {"tree download: a stalled tar", Surface::tree_download, {{"tar", kStall}}, {}, false, false, "WorkspaceTimeoutError", 3s},
      {"read over SFTP: swapped for /dev/zero", Surface::read, {{"wc", kSwapForZero}}, {}, true, true, "not_a_regular_file"},
      {"read over SFTP: swapped for a FIFO", Surface::read, {{"wc", kSwapForFifo}}, {}, true, true, "ConnectionError(timed out)", 3s},
      {"run: forged end marks", Surface::run, {}, {}, true, false, "CommandOutcomeUnknownError"},
      {"a broken profile: fake tools first on PATH", Surface::write,
       {},
       {{"tar", kBrokenTool}, {"find", kBrokenTool}, {"base64", kBrokenTool}, {"sha256sum", kBrokenTool}, {"wc", kBrokenTool},
        {"dd", kBrokenTool}, {"mkdir", kBrokenTool}},
       false, false, "ok"},
  };
  return table;
}

struct TempDirectory {
  TempDirectory() : path(fs::temp_directory_path() / ("exedev-hostile-" + random_suffix())) { fs::create_directories(path); }
  ~TempDirectory() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  fs::path path;
};

bool has_python() { return std::system("python3 -c 'pass' >/dev/null 2>&1") == 0; }

std::string classify(const std::exception_ptr& error) {
  if (!error) return "ok";
  try {
    std::rethrow_exception(error);
  } catch (const exedev::CommandOutcomeUnknownError&) {
    return "CommandOutcomeUnknownError";
  } catch (const ws::WorkspaceLimitError&) {
    return "WorkspaceLimitError";
  } catch (const ws::WorkspaceScriptError& e) {
    const std::string what = e.what();
    // The VM's escape sequences never reach what(); the payload keeps them.
    if (what.find('\x1b') != std::string::npos || what.find('\x07') != std::string::npos) return "raw escapes in what()";
    if (e.output().stderr_data.find('\x1b') == std::string::npos) return "stderr payload lost";
    return "WorkspaceScriptError";
  } catch (const ws::WorkspaceTimeoutError&) {
    return "WorkspaceTimeoutError";
  } catch (const ws::WorkspaceError& e) {
    const std::string what = e.what();
    if (what.find("output limit") != std::string::npos) return "WorkspaceError: output limit";
    return std::string("WorkspaceError: ") + what;
  } catch (const std::filesystem::filesystem_error& e) {
    if (e.code() == std::make_error_code(ws::not_a_regular_file)) return "not_a_regular_file";
    return std::string("filesystem_error: ") + e.what();
  } catch (const exedev::ConnectionError& e) {
    if (e.cause() == std::errc::timed_out) return "ConnectionError(timed out)";
    return std::string("ConnectionError: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("undocumented ") + typeid(e).name() + ": " + e.what();
  }
}

std::string run_row(const Row& row, exedev::Transport transport) {
  SshSetup keys;
  const fs::path shell_dir = keys.dir / "shell";
  auto emulator_options = keys.emulator_options();
  emulator_options.login_shell = support::install_hostile_login_shell(shell_dir).string();
  Fixture f(emulator_options);
  std::string outcome = "not run";
  exedev::testing::run([&](Executor) -> Task<void> {
    auto options = ssh_options(f, transport, keys.registered, std::nullopt);
    options.ssh.file_operation_timeout = row.deadline;
    // No lie reaches the key exchange (the VM's shell starts after it): a slow handshake is the
    // machine's load (CI runs this beside the SFTP tests), not a cell's outcome.
    options.ssh.handshake_timeout = std::chrono::seconds(60);
    auto backend = std::make_shared<exedev::SandboxBackend>(options);
    ws::Workspace w(backend);
    (void)co_await w.working_dir();
    const auto vms = f.emu().vms();
    REQUIRE(vms.size() == 1);
    const fs::path home = vms[0].home;
    // The VM's files, made before it turns hostile.
    fs::create_directories(home / "tree/sub");
    std::ofstream(home / "tree/sub/a.txt") << "a\n";
    std::ofstream(home / "small.txt") << "small\n";
    std::ofstream(home / "swap.bin") << "to be swapped\n";
    if (row.warm_sftp) co_await w.write_bytes((home / "warm.bin").string(), std::string(1024 * 1024, 'w'));
    for (const auto& [name, text] : row.tools) support::replace_tool(home, name, text);
    for (const auto& [name, text] : row.path) support::shadow_tool_on_path(home, name, text);
    if (row.surface == Surface::run) support::write_executable(home / "forge.py", kForger);
    // Over SSH a channel waits with its shell started (docs/ssh.md): one command takes it, so
    // that the next ones start their shells with the VM's new tools.
    if (transport == exedev::Transport::ssh) {
      const auto taking = ws::Command::shell(":");
      (void)co_await w.run(taking);
    }

    std::exception_ptr error;
    switch (row.surface) {
      case Surface::read: {
        const auto path = (home / (row.warm_sftp ? "swap.bin" : "small.txt")).string();
        error = co_await capture(w.read_bytes(path));
        break;
      }
      case Surface::list: error = co_await capture(w.list_dir(home.string())); break;
      case Surface::tree_download: {
        TempDirectory local;
        ws::TreeTransferOptions tree_options;  // named: GCC 12 and options temporaries in co_await
        tree_options.archive_timeout = row.deadline;
        error = co_await capture(w.download_tree((home / "tree").string(), (local.path / "copy").string(), tree_options));
        if (!error) error = std::make_exception_ptr(std::runtime_error("the download passed"));
        CHECK_FALSE(fs::exists(local.path / "copy"));  // nothing half-written here
        break;
      }
      case Surface::make_dir: error = co_await capture(w.make_dir((home / "new-dir").string())); break;
      case Surface::write: {
        // Everything the scripts do, through a profile that breaks every tool it names.
        error = co_await capture([&]() -> Task<void> {
          co_await w.write_bytes((home / "written.txt").string(), "written\n");
          CO_CHECK(co_await w.read_bytes((home / "written.txt").string()) == "written\n");
          const auto listed = co_await w.list_dir(home.string());
          CHECK_FALSE(listed.empty());
          TempDirectory local;
          const ws::TreeTransferOptions defaults;
          const auto down = co_await w.download_tree((home / "tree").string(), (local.path / "copy").string(), defaults);
          CHECK(down.files == 1);
        }());
        break;
      }
      case Surface::run: {
        const auto forging = ws::Command::shell("python3 \"$HOME/forge.py\"");
        ws::RunOptions run_options;
        run_options.timeout = ws::Seconds(60);
        error = co_await capture(w.run(forging, run_options));
        break;
      }
    }
    outcome = classify(error);
    // The VM is still hostile: its tools go first, so that the records a close removes on it
    // (runs over /exec) are removed with the VM's own tools.
    std::filesystem::remove_all(home / ".hostile");
    co_await backend->close();
  }, limits(180s));
  return outcome;
}

}  // namespace

TEST_CASE("hostile VM matrix: every surface × every lie ends in its documented error, on both transports", "[integration][faults]") {
  if (!support::can_replace_tools()) {
    WARN("SKIPPED: hostile VM matrix: needs unshare(1) and the right to mount (root with CAP_SYS_ADMIN)");
    return;
  }
  std::size_t cells = 0;
  // EXEDEV_MATRIX_ROW=<text>: only the rows whose name holds it (to look at one cell).
  const char* only = std::getenv("EXEDEV_MATRIX_ROW");
  for (const auto& row : rows()) {
    if (only != nullptr && std::string(row.name).find(only) == std::string::npos) continue;
    for (const auto transport : {exedev::Transport::exec, exedev::Transport::ssh}) {
      if (row.ssh_only && transport != exedev::Transport::ssh) continue;
      if (row.surface == Surface::run && !has_python()) {
        WARN("SKIPPED: " << row.name << ": needs python3 on the VM");
        continue;
      }
      ++cells;
      const auto outcome = run_row(row, transport);
      if (std::getenv("EXEDEV_MATRIX_PRINT") != nullptr) std::printf("%s × %s → %s\n", row.name, exedev::transport_name(transport), outcome.c_str());
      INFO(row.name << " over " << exedev::transport_name(transport));
      const bool over_exec = transport == exedev::Transport::exec && row.exec_expected != nullptr;
      CHECK(outcome == (over_exec ? row.exec_expected : row.expected));
    }
  }
  std::printf("hostile VM matrix: %zu cells\n", cells);
}
