// B10 trees: a generated source tree (2,000 files, 20 MiB of source-like text in 100
// directories) moved to a VM and back on the emulator, side by side:
//   - upload_tree / download_tree over SSH (the emulator's sshd),
//   - upload_tree / download_tree over /exec at the emulator's 20 ms latency, and the upload
//     under exe.dev's limiter (60 burst, 1/s, overdraft 120) with a fresh token,
//   - an unchanged second upload (only the manifest travels),
//   - file by file through the Workspace facade (write_bytes per file) over /exec.
// Goals (issue 28): /exec requests <= compressed MiB x 25 + 5; >= 20x faster than file by
// file on /exec. Results in docs/performance.md ("Trees").
#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/sandbox/sandbox_backend.hpp>
#include <exedev/testing/run.hpp>
#include <exedev/workspace/workspace.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "support.hpp"

namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace ws = exedev::workspace;
using namespace std::chrono_literals;
using bench::Clock;
using bench::seconds_since;
using bench::source_text;

constexpr std::size_t kFiles = 2000;
constexpr std::size_t kDirectories = 100;
constexpr std::size_t kTreeBytes = 20 * 1024 * 1024;
constexpr double kMiB = 1024.0 * 1024.0;

// 2,000 files of source-like text, sizes spread around 10 KiB, in 100 directories.
void generate_tree(const fs::path& root) {
  for (std::size_t i = 0; i < kFiles; ++i) {
    const fs::path dir = root / ("module_" + std::to_string(i % kDirectories)) / ("part_" + std::to_string(i % 7));
    fs::create_directories(dir);
    const std::size_t size = kTreeBytes / kFiles / 2 + (i * 7919) % (kTreeBytes / kFiles);
    std::ofstream(dir / ("file_" + std::to_string(i) + ".cpp"), std::ios::binary) << source_text(size, i);
  }
}

struct Run {
  std::string key_file;
  exedev::emulator::Emulator* emulator = nullptr;
};

std::shared_ptr<exedev::SandboxBackend> make_backend(const Run& run, exedev::Transport transport,
                                                     std::optional<std::string> token = std::nullopt) {
  exedev::SandboxBackendOptions options;
  options.spec = exedev::VMSpec({.working_dir = "work"});
  options.client_options = exedev::emulator::client_options(*run.emulator, std::move(token));
  options.transport = transport;
  options.ssh.private_key_file = run.key_file;
  options.ssh.use_agent = false;
  options.ssh.known_hosts_file = run.emulator->ssh_known_hosts();
  options.ssh.hosts_file = run.emulator->ssh_hosts_file();
  options.ssh.host_key_policy = exedev::HostKeyPolicy::strict;
  return std::make_shared<exedev::SandboxBackend>(std::move(options));
}

std::string mib(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", static_cast<double>(bytes) / kMiB);
  return text;
}

void print_row(const std::string& transport, const std::string& what, double seconds, std::size_t requests,
               const ws::TreeTransferResult* result, const std::string& note) {
  std::printf("%-6s %-24s %9.2f %9s %9s %9s  %s\n", transport.c_str(), what.c_str(), seconds,
              requests == 0 ? "-" : std::to_string(requests).c_str(),
              result ? std::to_string(result->files_sent).c_str() : "-", result ? mib(result->archive_bytes).c_str() : "-",
              note.c_str());
}

// Every file of `root` written through the facade, one write_bytes each (parents made by it).
asio::awaitable<void> upload_file_by_file(ws::Workspace& w, fs::path root, std::string remote) {
  for (const auto& item : fs::recursive_directory_iterator(root)) {
    if (!item.is_regular_file()) continue;
    std::ifstream in(item.path(), std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    co_await w.write_bytes(remote + "/" + fs::relative(item.path(), root).string(), std::move(data));
  }
}

void require_same(const fs::path& a, const fs::path& b) {
  const std::string command = "diff -r '" + a.string() + "' '" + b.string() + "' > /dev/null";
  if (std::system(command.c_str()) != 0) throw std::runtime_error("the downloaded tree differs from the source");
}

asio::awaitable<void> b9(Run run, fs::path scratch, bool file_by_file) {
  auto& emulator = *run.emulator;
  const fs::path source = scratch / "source";
  generate_tree(source);
  std::printf("B10 trees: %zu files, %.0f MiB of source-like text in %zu directories\n", kFiles, kTreeBytes / kMiB,
              kDirectories);
  std::printf("%-6s %-24s %9s %9s %9s %9s  %s\n", "via", "operation", "seconds", "requests", "files", "MiB sent", "note");
  auto modes = emulator.modes();
  modes.latency = 20ms;
  emulator.set_modes(modes);
  ws::TreeTransferOptions options;
  double exec_tree_seconds = 0;

  const char* transports[] = {"ssh", "exec"};  // (no braced lists in coroutines: GCC 12)
  for (const std::string name : transports) {
    const auto transport = *exedev::parse_transport(name);
    auto backend = make_backend(run, transport);
    ws::Workspace w(backend);
    const std::string home = co_await w.working_dir();
    const auto counted = [&] { return transport == exedev::Transport::exec ? emulator.commands().size() : 0; };

    auto before = counted();
    auto start = Clock::now();
    // Where the time goes: until the first chunk is written (this machine's listing, hashing,
    // packing and compression, and the VM's listing), the chunks, the apply.
    std::optional<Clock::time_point> first_chunk, last_chunk;
    ws::TreeTransferOptions timed = options;
    timed.on_progress = [&](const ws::TreeProgress&) {
      if (!first_chunk) first_chunk = Clock::now();
      last_chunk = Clock::now();
    };
    const auto up = co_await w.upload_tree(source.string(), home + "/tree", timed);
    const double up_seconds = seconds_since(start);
    const auto up_requests = counted() - before;
    const auto span = [](Clock::time_point from, Clock::time_point to) {
      char text[16];
      std::snprintf(text, sizeof text, "%.1f", std::chrono::duration<double>(to - from).count());
      return std::string(text);
    };
    std::string note = "to 1st chunk " + span(start, *first_chunk) + " s, chunks " + span(*first_chunk, *last_chunk) +
                       " s, apply " + span(*last_chunk, Clock::now()) + " s";
    if (transport == exedev::Transport::exec) {
      exec_tree_seconds = up_seconds;
      const double budget = static_cast<double>(up.archive_bytes) / kMiB * 25 + 5;
      note += "; goal <= " + std::to_string(static_cast<int>(budget)) + (up_requests <= budget ? ": met" : ": MISSED");
    }
    print_row(name, "upload_tree", up_seconds, up_requests, &up, note);

    before = counted();
    start = Clock::now();
    const auto again = co_await w.upload_tree(source.string(), home + "/tree", options);
    print_row(name, "upload_tree, unchanged", seconds_since(start), counted() - before, &again, "only the manifest");

    const fs::path back = scratch / ("back-" + name);
    before = counted();
    start = Clock::now();
    const auto down = co_await w.download_tree(home + "/tree", back.string(), options);
    print_row(name, "download_tree", seconds_since(start), counted() - before, &down, "");
    require_same(source, back);

    // File by file on /exec only: over SSH, each of its thousands of commands would also pay
    // this machine's login shell, which the emulator's sshd runs (not a VM's cost).
    if (transport == exedev::Transport::exec && file_by_file) {
      before = counted();
      start = Clock::now();
      co_await upload_file_by_file(w, source, home + "/files");
      const double files_seconds = seconds_since(start);
      note = "upload_tree is " + std::to_string(static_cast<int>(files_seconds / exec_tree_seconds)) +
             "x faster (goal >= 20x)";
      print_row(name, "file by file (facade)", files_seconds, counted() - before, nullptr, note);
    }
    co_await backend->close();
  }

  // Under exe.dev's limiter, a fresh token (its bucket full), as a first upload would be.
  exedev::emulator::TokenSpec spec;
  spec.cmds = std::vector<std::string>{"new", "ls", "ssh", "rm", "tag", "comment", "whoami"};
  auto limited = make_backend(run, exedev::Transport::exec, emulator.issue_token(spec));
  ws::Workspace w(limited);
  const std::string home = co_await w.working_dir();
  modes.rate_limit = {};
  modes.rate_limit.enabled = true;
  emulator.set_modes(modes);
  const auto before = emulator.commands().size();
  const auto start = Clock::now();
  const auto up = co_await w.upload_tree(source.string(), home + "/tree", options);
  const double seconds = seconds_since(start);
  std::size_t refused = 0;
  const auto records = emulator.commands();
  for (std::size_t i = before; i < records.size(); ++i) refused += records[i].http_status == 429;
  print_row("exec", "upload_tree, limiter", seconds, records.size() - before, &up, std::to_string(refused) + " refused (429)");
  modes.rate_limit.enabled = false;
  modes.latency = 0ms;
  emulator.set_modes(modes);
  co_await limited->close();
}

}  // namespace

// `--trees-only` leaves out the file-by-file upload (about 11 minutes on a loaded machine).
int main(int argc, char** argv) try {
  const bool file_by_file = !(argc > 1 && std::string(argv[1]) == "--trees-only");
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const fs::path scratch = fs::temp_directory_path() / ("exedev-bench-trees-" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  // A key of its own, registered at the emulator, for the SSH transport.
  const bench::SshKey ssh_key;
  const std::string key = ssh_key.private_key().string();
  exedev::emulator::Options options;
  options.ssh_authorized_keys.push_back(ssh_key.public_line());
  int status = 0;
  {
    exedev::emulator::Emulator emulator(options);
    const exedev::testing::RunLimits limits{.deadline = std::chrono::minutes(60), .settle = std::chrono::seconds(5)};
    Run run{key, &emulator};
    exedev::testing::run([&](asio::any_io_executor) -> asio::awaitable<void> { co_await b9(run, scratch, file_by_file); }, limits);
  }
  fs::remove_all(scratch);
  return status;
} catch (const std::exception& error) {
  std::fprintf(stderr, "bench_trees: %s\n", error.what());
  return 1;
}
