// B11 hostile VM: this process's peak RSS while a compromised VM answers each lie of issue 39
// with 1 GiB or endless output (docs/reliability.md, "A hostile VM"; results in
// docs/performance.md). The VM replaces its own tools (tests/support/hostile_vm.hpp); the
// emulator runs in this process, so its own buffers count too. Each lie must end in the
// library's error; the peak after each is printed, and the run fails past the documented bound.
// Then genuine trees of 64 MiB and 1 GiB (random bytes, and source text that the VM gzips)
// are downloaded over both transports, the peak RSS of each download measured from a reset:
// the ratio of the 1 GiB peak to the 64 MiB one shows memory independent of the tree's size.
#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/sandbox/sandbox_backend.hpp>
#include <exedev/testing/run.hpp>
#include <exedev/workspace/workspace.hpp>

#include <boost/asio/awaitable.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "support.hpp"
#include "support/hostile_vm.hpp"

namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace ws = exedev::workspace;
namespace support = exedev::test_support;

// The bound the documentation promises for this run (docs/reliability.md).
constexpr double kRssBoundMiB = 256;
constexpr const char* kGiB = "1073741824";

// A wc that lies once (the first number it is asked for), then counts: an archive's tar size
// that is 1 GiB while its gzip member is real, so the unpacking is told to expect 1 GiB.
constexpr const char* kLyingOnce = R"SH(#!/bin/sh
if [ ! -e "$HOME/.wc-lied" ]; then : > "$HOME/.wc-lied"; cat > /dev/null; echo 1073741824; exit 0; fi
dd of=/dev/null 2>&1 | sed -n 's/^\([0-9]*\) bytes.*/\1/p'
)SH";

struct Lie {
  const char* name;
  std::vector<std::string> tools;  ///< replaced by `text`
  std::string text;
  enum class Op { read, read_sparse, list, tree } op;
};

std::shared_ptr<exedev::SandboxBackend> make_backend(exedev::emulator::Emulator& emulator, const std::string& key,
                                                     exedev::Transport transport,
                                                     std::chrono::seconds file_operation_timeout = std::chrono::seconds(30)) {
  exedev::SandboxBackendOptions options;
  options.spec = exedev::VMSpec({.working_dir = "work"});
  options.client_options = exedev::emulator::client_options(emulator);
  options.transport = transport;
  options.ssh.private_key_file = key;
  options.ssh.use_agent = false;
  options.ssh.known_hosts_file = emulator.ssh_known_hosts();
  options.ssh.hosts_file = emulator.ssh_hosts_file();  // its SSH names, resolved to 127.0.0.1
  options.ssh.host_key_policy = exedev::HostKeyPolicy::strict;
  options.ssh.file_operation_timeout = file_operation_timeout;
  return std::make_shared<exedev::SandboxBackend>(std::move(options));
}

std::string outcome_of(const std::exception_ptr& error) {
  if (!error) return "no error (a lie was believed)";
  try {
    std::rethrow_exception(error);
  } catch (const ws::WorkspaceLimitError&) {
    return "WorkspaceLimitError";
  } catch (const ws::WorkspaceError& e) {
    return std::string("WorkspaceError: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("other: ") + e.what();
  }
}

asio::awaitable<void> b11(exedev::emulator::Emulator& emulator, std::string key, fs::path scratch, bool* within) {
  const std::string endless = "#!/bin/sh\nexec yes AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n";
  const std::string huge = std::string("#!/bin/sh\ncat >/dev/null 2>&1\necho ") + kGiB + "\n";
  const Lie lies[] = {
      {"a 1 GiB sparse file (no disk on the VM)", {}, "", Lie::Op::read_sparse},
      {"a 1 GiB size for a small file", {"wc"}, huge, Lie::Op::read},
      {"a 1 GiB listing", {"wc"}, huge, Lie::Op::list},
      {"endless output for a read", {"dd", "head"}, endless, Lie::Op::read},  // pages (/exec), a whole small file (SSH)
      {"a false gzip size (1 GiB) in a tree", {"wc"}, kLyingOnce, Lie::Op::tree},
  };
  std::printf("B11 hostile VM: peak RSS of this process (emulator included) after each lie, bound %.0f MiB\n", kRssBoundMiB);
  std::printf("%-6s %-42s %10s  %s\n", "via", "lie", "peak MiB", "outcome");
  const char* transports[] = {"ssh", "exec"};  // (no braced lists in coroutines: GCC 12)
  for (const std::string name : transports) {
    const auto transport = *exedev::parse_transport(name);
    for (const auto& lie : lies) {
      auto backend = make_backend(emulator, key, transport);
      ws::Workspace w(backend);
      const std::string working = co_await w.working_dir();
      const fs::path home = fs::path(working).parent_path();
      fs::remove_all(home / ".hostile");
      fs::remove(home / ".wc-lied");
      fs::create_directories(home / "tree");
      std::ofstream(home / "small.txt") << "small\n";
      for (int i = 0; i < 64; ++i) std::ofstream(home / "tree" / ("f" + std::to_string(i))) << bench::source_text(4096, i);
      if (lie.op == Lie::Op::read_sparse) {
        std::ofstream(home / "sparse.bin").close();
        fs::resize_file(home / "sparse.bin", std::uintmax_t{1} << 30);
      }
      for (const auto& tool : lie.tools) support::replace_tool(home, tool, lie.text);
      const auto taking = ws::Command::shell(":");
      if (transport == exedev::Transport::ssh) (void)co_await w.run(taking);  // the waiting channel's shell predates the lie
      std::exception_ptr error;
      try {
        switch (lie.op) {
          case Lie::Op::read: (void)co_await w.read_bytes((home / "small.txt").string()); break;
          case Lie::Op::read_sparse: (void)co_await w.read_bytes((home / "sparse.bin").string()); break;
          case Lie::Op::list: (void)co_await w.list_dir(home.string()); break;
          case Lie::Op::tree: {
            ws::TreeTransferOptions options;
            options.max_download_bytes = 2ull << 30;
      options.archive_timeout = std::chrono::minutes(10);  // let the 1 GiB claim through to the unpacking
            (void)co_await w.download_tree((home / "tree").string(), (scratch / ("copy-" + name)).string(), options);
            break;
          }
        }
      } catch (...) {
        error = std::current_exception();
      }
      fs::remove_all(home / ".hostile");
      fs::remove(home / "sparse.bin");
      // A lie the client stopped listening to may still be writing on the VM (an endless
      // `yes` behind an /exec request the client ended): stopped, so it does not load the
      // machine for the rows after it.
      for (const int pid : emulator.vm_processes(exedev::VMTarget(*backend->ref()).name())) ::kill(pid, SIGKILL);
      const double peak = bench::peak_rss_mib();
      *within = *within && peak <= kRssBoundMiB && error != nullptr;
      std::printf("%-6s %-42s %10.1f  %s\n", name.c_str(), lie.name, peak, outcome_of(error).c_str());
      co_await backend->close();
    }
  }
}

// Files of kTreeFileBytes under `root` making `bytes` in all: random bytes, or source text.
void make_tree(const fs::path& root, std::uint64_t bytes, bool text) {
  constexpr std::size_t kTreeFileBytes = 16 * bench::kMiB;
  fs::remove_all(root);
  fs::create_directories(root / "sub");
  const std::string data = text ? bench::source_text(kTreeFileBytes) : bench::random_bytes(kTreeFileBytes);
  for (std::uint64_t i = 0; i * kTreeFileBytes < bytes; ++i) {
    std::ofstream(root / (i % 2 ? "sub" : ".") / ("f" + std::to_string(i)), std::ios::binary) << data;
  }
}

// Whether `copy` holds the files of `original` with their sizes, and the last one byte for byte.
bool same_tree(const fs::path& original, const fs::path& copy) {
  std::size_t files = 0;
  fs::path last;
  for (const auto& entry : fs::recursive_directory_iterator(original)) {
    if (!entry.is_regular_file()) continue;
    const auto relative = fs::relative(entry.path(), original);
    if (!fs::is_regular_file(copy / relative) || fs::file_size(copy / relative) != entry.file_size()) return false;
    ++files;
    last = relative;
  }
  if (files == 0) return false;
  std::ifstream a(original / last, std::ios::binary), b(copy / last, std::ios::binary);
  return std::equal(std::istreambuf_iterator<char>(a), {}, std::istreambuf_iterator<char>(b), {});
}

asio::awaitable<void> b11_genuine_trees(exedev::emulator::Emulator& emulator, std::string key, fs::path scratch, bool* within) {
  std::printf("\nB11 genuine trees: peak RSS of each download from a reset (emulator included)\n");
  if (!bench::reset_peak_rss()) {
    std::printf("B11 genuine trees: SKIPPED: /proc/self/clear_refs cannot reset the peak RSS here\n");
    co_return;
  }
  std::printf("%-6s %-8s %9s %12s %9s %10s %10s\n", "via", "data", "tree MiB", "archive MiB", "seconds", "peak MiB", "vs 64 MiB");
  const char* transports[] = {"ssh", "exec"};  // (no braced lists in coroutines: GCC 12)
  for (const std::string name : transports) {
    // Archiving 1 GiB on the VM takes longer than the lies' 30 s steps (file steps over SSH; the archive has archive_timeout).
    auto backend = make_backend(emulator, key, *exedev::parse_transport(name), std::chrono::minutes(10));
    ws::Workspace w(backend);
    const std::string working = co_await w.working_dir();
    const fs::path home = fs::path(working).parent_path();
    double small_peak = 0;
    for (int shape = 0; shape < 3; ++shape) {
      const bool text = shape == 2;
      const std::uint64_t bytes = shape == 0 ? 64 * bench::kMiB : 1024 * bench::kMiB;
      make_tree(home / "genuine", bytes, text);
      const fs::path copy = scratch / ("genuine-" + name);
      ws::TreeTransferOptions options;
      options.max_download_bytes = 2ull << 30;
      options.archive_timeout = std::chrono::minutes(10);
      bench::reset_peak_rss();
      const auto start = bench::Clock::now();
      const auto result = co_await w.download_tree((home / "genuine").string(), copy.string(), options);
      const double seconds = bench::seconds_since(start);
      const double peak = bench::peak_rss_since_reset_mib();
      const bool same = same_tree(home / "genuine", copy);
      if (shape == 0) small_peak = peak;
      *within = *within && same && peak <= kRssBoundMiB;
      std::printf("%-6s %-8s %9.0f %12.1f %9.1f %10.1f %9.2fx%s\n", name.c_str(), text ? "text" : "random",
                  static_cast<double>(bytes) / bench::kMiB, static_cast<double>(result.archive_bytes) / bench::kMiB, seconds,
                  peak, peak / small_peak, same ? "" : "  (the copy differs)");
      fs::remove_all(copy);
      fs::remove_all(home / "genuine");
    }
    co_await backend->close();
  }
}

}  // namespace

int main() try {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const bool lies = support::can_replace_tools();
  if (!lies) std::printf("B11 hostile VM: SKIPPED: needs unshare(1) and the right to mount\n");
  const fs::path scratch = fs::temp_directory_path() / ("exedev-bench-hostile-" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  const bench::SshKey ssh_key;
  const std::string key = ssh_key.private_key().string();
  exedev::emulator::Options options;
  options.ssh_authorized_keys.push_back(ssh_key.public_line());
  if (lies) options.login_shell = support::install_hostile_login_shell(scratch).string();
  bool within = true;
  {
    exedev::emulator::Emulator emulator(options);
    const exedev::testing::RunLimits limits{.deadline = std::chrono::minutes(40), .settle = std::chrono::seconds(5)};
    exedev::testing::run(
        [&](asio::any_io_executor) -> asio::awaitable<void> {
          if (lies) co_await b11(emulator, key, scratch, &within);
          co_await b11_genuine_trees(emulator, key, scratch, &within);
        },
        limits);
  }
  fs::remove_all(scratch);
  std::printf("B11: peak RSS %.1f MiB, %s\n", bench::peak_rss_mib(), within ? "within the bound, every lie refused" : "FAILED");
  return within ? 0 : 1;
} catch (const std::exception& error) {
  std::fprintf(stderr, "bench_hostile: %s\n", error.what());
  return 1;
}
