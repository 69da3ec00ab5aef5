// B4 scale: 1,000 concurrent `run`s across 100 VMs from one client on one thread, against the
// emulator running as a separate process (so the figures are the client's alone).
// Prints the client's peak RSS and its CPU time as a share of the wall time.
// Goals: every run completes with the right output; peak RSS <= 64 MiB; CPU <= 10% of wall.

#include <exedev/client.hpp>

#include "support.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int vm_count = 100;
constexpr int run_count = 1000;

using bench::own_cpu_seconds;
using bench::peak_rss_mib;

std::string vm_name(int index) { return "scale-" + std::to_string(index); }

}  // namespace

int main() try {
  const bench::EmulatorProcess emulator(EXEDEV_BENCH_EMULATOR, {}, {"url", "ca_file", "token"});
  asio::io_context io;
  auto options = emulator.client_options();
  options.max_connections = vm_count;
  exedev::Client client(io.get_executor(), options);

  std::exception_ptr failure;
  const auto note_failure = [&](std::exception_ptr error) {
    if (error && !failure) failure = error;
  };
  const auto run_all = [&](const char* what) {
    io.run();
    io.restart();
    if (failure) {
      std::fprintf(stderr, "bench_scale: %s failed\n", what);
      std::rethrow_exception(failure);
    }
  };

  for (int i = 0; i < vm_count; ++i) {
    exedev::NewVMOptions vm;
    vm.name = vm_name(i);
    asio::co_spawn(io, client.new_vm(std::move(vm)), [&](std::exception_ptr e, exedev::VMInfo) { note_failure(e); });
  }
  run_all("creating the VMs");

  int completed = 0;
  const auto one_run = [&](int index) -> asio::awaitable<void> {
    const std::string expected = "run " + std::to_string(index) + "\n";
    const auto result = co_await client.run(vm_name(index % vm_count), "sleep 1; echo run " + std::to_string(index));
    if (result.exit_code != 0 || result.stdout_bytes != expected) throw std::runtime_error("a run's output was wrong");
    ++completed;
  };
  const double cpu_before = own_cpu_seconds();
  const auto start = Clock::now();
  for (int i = 0; i < run_count; ++i) asio::co_spawn(io, one_run(i), note_failure);
  run_all("the runs");
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = own_cpu_seconds() - cpu_before;

  std::vector<std::string> names;
  for (int i = 0; i < vm_count; ++i) names.push_back(vm_name(i));
  asio::co_spawn(io, client.remove_vms(names), [&](std::exception_ptr e, exedev::RemoveResult) { note_failure(e); });
  asio::co_spawn(io, client.close(), note_failure);
  run_all("removing the VMs");

  const double rss = peak_rss_mib();
  std::printf("B4 scale: %d concurrent runs (`sleep 1; echo`) across %d VMs, one client, one thread\n\n", run_count,
              vm_count);
  std::printf("%-28s %12s %12s\n", "measure", "value", "goal");
  std::printf("%-28s %12d %12d\n", "runs completed", completed, run_count);
  std::printf("%-28s %12.1f %12s\n", "wall seconds", wall, "-");
  std::printf("%-28s %12.1f %12s\n", "client peak RSS (MiB)", rss, "<= 64");
  std::printf("%-28s %11.1f%% %12s\n", "client CPU / wall", 100 * cpu / wall, "<= 10%");
  const bool met = completed == run_count && rss <= 64 && cpu / wall <= 0.10;
  std::printf("\ngoals %s\n", met ? "met" : "NOT met");
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "bench_scale: %s\n", error.what());
  return 1;
}
