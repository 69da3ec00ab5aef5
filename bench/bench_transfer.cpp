// Moves files and runs commands through three backends side by side, in one run:
//   local      LocalBackend's native file operations
//   local-sh   the same directory through the shell-derived filesystem (commands only)
//   exedev     SandboxBackend on the bundled emulator (real TLS on loopback)
// and prints throughput, /exec requests per MiB or per command, and each backend's time as a ratio
// of local's.
// Absolute numbers depend on the machine; the ratios are what to compare between versions.

#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/sandbox/sandbox_backend.hpp>
#include <exedev/testing/commands_only.hpp>
#include <exedev/testing/run.hpp>
#include <exedev/workspace/local_backend.hpp>
#include <exedev/workspace/workspace.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

namespace asio = boost::asio;
namespace ws = exedev::workspace;
using Clock = std::chrono::steady_clock;

namespace {

struct Subject {
  std::string name;
  std::shared_ptr<ws::Workspace> workspace;
};

struct Sample {
  double seconds = 0;
  std::size_t requests = 0;
};

ws::Bytes payload(std::size_t size) {
  ws::Bytes data(size, '\0');
  for (std::size_t i = 0; i < size; ++i) data[i] = static_cast<char>((i * 131 + 7) & 0xff);
  return data;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string per_unit(const std::string& backend, std::size_t requests, double units) {
  if (backend != "exedev") return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", static_cast<double>(requests) / units);
  return text;
}

}  // namespace

int main() try {
  exedev::emulator::Emulator emulator;
  const auto work = std::filesystem::temp_directory_path() / ("exedev-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(work);

  auto local = std::make_shared<ws::LocalBackend>(work.string());
  exedev::SandboxBackendOptions sandbox_options{.spec = exedev::VMSpec({.name = "bench-vm", .working_dir = "work"}),
                                                .client_options = exedev::emulator::client_options(emulator)};
  auto sandbox = std::make_shared<exedev::SandboxBackend>(std::move(sandbox_options));

  std::vector<Subject> subjects{
      {"local", std::make_shared<ws::Workspace>(local)},
      {"local-sh", std::make_shared<ws::Workspace>(std::make_shared<exedev::testing::CommandsOnly>(local))},
      {"exedev", std::make_shared<ws::Workspace>(sandbox)},
  };
  const auto requests = [&] { return emulator.commands().size(); };

  const exedev::testing::RunLimits limits{.deadline = std::chrono::minutes(10), .settle = std::chrono::seconds(5)};
  exedev::testing::run(
      [&](asio::any_io_executor) -> asio::awaitable<void> {
        co_await sandbox->working_dir();  // provision outside the measurements

        std::printf("req/unit: /exec requests per MiB moved (write+read) or per command (run)\n\n");
        std::printf("%-22s %-9s %10s %10s %12s %9s\n", "operation", "backend", "seconds", "MiB/s", "req/unit",
                    "x local");
        for (std::size_t size : {64u * 1024u, 1024u * 1024u, 8u * 1024u * 1024u}) {
          const auto data = payload(size);
          const double mib = static_cast<double>(size) / (1024.0 * 1024.0);
          double local_seconds = 0;
          for (auto& subject : subjects) {
            const auto before = requests();
            const auto start = Clock::now();
            const std::string path = "bench-" + std::to_string(size) + ".bin";
            co_await subject.workspace->write_bytes(path, data);
            auto back = co_await subject.workspace->read_bytes(path);
            const double seconds = seconds_since(start);
            if (back != data) throw std::runtime_error(subject.name + ": the file did not round-trip");
            const auto used = requests() - before;
            co_await subject.workspace->remove(path);
            if (subject.name == "local") local_seconds = seconds;
            std::printf("%-22s %-9s %10.4f %10.2f %12s %9.1f\n",
                        ("write+read " + std::to_string(size / 1024) + " KiB").c_str(), subject.name.c_str(), seconds,
                        2 * mib / seconds, per_unit(subject.name, used, 2 * mib).c_str(), seconds / local_seconds);
          }
        }

        constexpr int command_count = 50;
        double local_seconds = 0;
        for (auto& subject : subjects) {
          if (subject.name == "local-sh") continue;  // same commands as local
          const auto before = requests();
          const auto start = Clock::now();
          for (int i = 0; i < command_count; ++i) {
            auto result = co_await subject.workspace->run(ws::Command::shell("echo ok"));
            if (result.exit_code != 0 || result.stdout_text != "ok\n")
              throw std::runtime_error(subject.name + ": echo failed");
          }
          const double seconds = seconds_since(start);
          if (subject.name == "local") local_seconds = seconds;
          std::printf("%-22s %-9s %10.4f %10s %12s %9.1f   (%.1f ms/command)\n",
                      ("run x" + std::to_string(command_count)).c_str(), subject.name.c_str(), seconds, "-",
                      per_unit(subject.name, requests() - before, command_count).c_str(), seconds / local_seconds,
                      1000 * seconds / command_count);
        }
        co_await sandbox->close();
      },
      limits);
  std::printf("emulator connections accepted: %zu\n", emulator.connections_accepted());
  std::filesystem::remove_all(work);
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "bench_transfer: %s\n", error.what());
  return 1;
}
