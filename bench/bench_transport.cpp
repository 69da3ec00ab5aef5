// The two transports of SandboxBackend side by side in one run (issue 24): commands and files
// over SSH to the VM (SFTP for file data) against exe.dev's /exec API.
//   cpu       CPU per short command (`echo ok`, sequential) on each transport, and
//   scale     1,000 concurrent commands over SSH under MaxSessions 10 on one VM: all complete,
//             the process's peak RSS and CPU; both against the emulator as a process of its
//             own, so this process's figures are the client's alone (they run first, before the
//             sections below allocate their payloads, for the same reason).
//   files     8 MiB random and 8 MiB text write + read through the Workspace facade, both
//             transports at emulator latency 20 ms, median of 3 rounds.
//   limiter   the same 8 MiB writes under the emulator's limiter at exe.dev's numbers (60 burst,
//             1/s, overdraft 120), a fresh token each, the rate limit waited for (the default).
//   local     64 MiB write + read over SSH against LocalBackend, no latency (fastest of 3).
//   session   /exec requests of the scripted agent session (B8) after provisioning.
//   interactive  write -> echo round trips through a process session (`cat` on a pseudo-terminal)
//             on both transports at emulator latency 20 ms: latency and /exec requests per trip.
// The in-process emulator's request records count /exec requests. Absolute times depend on the
// machine; the ratios are what to compare. Each goal is printed as met or not met from the
// measured numbers. `bench_transport files local` runs a subset.

#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/sandbox/sandbox_backend.hpp>
#include <exedev/testing/run.hpp>
#include <exedev/workspace/local_backend.hpp>
#include <exedev/workspace/workspace.hpp>

#include "support.hpp"

#include "common/event.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

namespace asio = boost::asio;
namespace ws = exedev::workspace;
using bench::Clock;
using bench::kMiB;
using bench::seconds_since;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t kSize = 8 * kMiB;
constexpr std::size_t kLargeSize = 64 * kMiB;
constexpr int kFileRounds = 3;  // files: a median of three, so that one noisy round does not decide a ratio
constexpr int kSequentialCommands = 20;
constexpr int kConcurrentCommands = 1000;

// Each goal as measured, printed together at the end.
struct Goal {
  std::string what;
  std::string measured;
  bool met = false;
};

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

// Where the VMs are and which key logs in to their SSH endpoints.
struct Target {
  exedev::ClientOptions client_options;
  std::filesystem::path known_hosts;
  std::filesystem::path hosts;  // the emulator's SSH names (SshOptions::hosts_file)
  std::filesystem::path private_key;
};

bench::Subject make_subject(const Target& target, exedev::Transport transport,
                            std::optional<std::string> token = std::nullopt) {
  exedev::SandboxBackendOptions options;
  options.spec = exedev::VMSpec({.working_dir = "work"});
  options.client_options = target.client_options;
  if (token) options.client_options.token = std::move(token);
  options.transport = transport;
  options.ssh.private_key_file = target.private_key;
  options.ssh.use_agent = false;
  options.ssh.known_hosts_file = target.known_hosts;
  options.ssh.hosts_file = target.hosts;
  options.ssh.host_key_policy = exedev::HostKeyPolicy::strict;
  auto backend = std::make_shared<exedev::SandboxBackend>(std::move(options));
  return {exedev::transport_name(transport), backend, std::make_shared<ws::Workspace>(backend)};
}

// Provisions outside the measurements and checks the transport is the one asked for.
asio::awaitable<void> provision(bench::Subject& subject, exedev::Transport transport) {
  co_await subject.workspace->working_dir();
  if (subject.backend->transport_in_use() != transport) {
    throw std::runtime_error(subject.name + ": the backend did not choose the transport it was given");
  }
}

void set_latency(exedev::emulator::Emulator& emulator, std::chrono::milliseconds latency) {
  auto modes = emulator.modes();
  modes.latency = latency;
  emulator.set_modes(modes);
}

void set_rate_limit(exedev::emulator::Emulator& emulator, bool enabled) {
  auto modes = emulator.modes();
  modes.rate_limit = {};
  modes.rate_limit.enabled = enabled;
  emulator.set_modes(modes);
}

std::vector<std::pair<std::string, ws::Bytes>> payloads() {
  std::vector<std::pair<std::string, ws::Bytes>> list;
  list.emplace_back("random", bench::random_bytes(kSize));
  list.emplace_back("text", bench::source_text(kSize));
  return list;
}

// ---- cpu and scale: the emulator in a process of its own --------------------------------------

asio::awaitable<void> cpu_per_command(const Target& target) {
  std::printf("cpu: %d sequential `echo ok` per transport (after one to warm up), this process's CPU\n",
              kSequentialCommands);
  std::printf("%-10s %12s %12s\n", "transport", "CPU ms/cmd", "wall ms/cmd");
  const exedev::Transport transports[] = {exedev::Transport::exec, exedev::Transport::ssh};
  double per_transport[2] = {0, 0};
  int index = 0;
  for (const auto transport : transports) {
    auto subject = make_subject(target, transport);
    co_await provision(subject, transport);
    auto warming = subject.workspace->run(ws::Command::shell("echo ok"));
    co_await std::move(warming);
    const double cpu_before = bench::own_cpu_seconds();
    const auto start = Clock::now();
    for (int i = 0; i < kSequentialCommands; ++i) {
      auto running = subject.workspace->run(ws::Command::shell("echo ok"));
      const auto result = co_await std::move(running);
      if (result.exit_code != 0 || result.stdout_text != "ok\n") throw std::runtime_error(subject.name + ": echo failed");
    }
    const double wall = seconds_since(start);
    const double cpu = bench::own_cpu_seconds() - cpu_before;
    per_transport[index++] = 1000 * cpu / kSequentialCommands;
    std::printf("%-10s %12.2f %12.1f\n", subject.name.c_str(), 1000 * cpu / kSequentialCommands,
                1000 * wall / kSequentialCommands);
    co_await subject.backend->close();
  }
  std::printf("ssh / exec CPU per command: %.2f (no goal: the issue asks for the figures)\n\n",
              per_transport[1] / per_transport[0]);
}

asio::awaitable<void> scale(const Target& target, std::vector<Goal>& goals) {
  auto subject = make_subject(target, exedev::Transport::ssh);
  co_await provision(subject, exedev::Transport::ssh);
  std::printf("scale: %d concurrent `echo run N` over SSH on one VM (one connection, MaxSessions 10)\n",
              kConcurrentCommands);
  int completed = 0;
  int wrong = 0;
  std::exception_ptr failure;
  int finished = 0;
  exedev::detail::Event all_done;
  const auto ex = co_await asio::this_coro::executor;
  const double cpu_before = bench::own_cpu_seconds();
  const auto start = Clock::now();
  for (int i = 0; i < kConcurrentCommands; ++i) {
    auto one = [](std::shared_ptr<ws::Workspace> workspace, int index, int& completed, int& wrong) -> asio::awaitable<void> {
      auto running = workspace->run(ws::Command::shell("echo run " + std::to_string(index)));
      const auto result = co_await std::move(running);
      if (result.exit_code == 0 && result.stdout_text == "run " + std::to_string(index) + "\n") {
        ++completed;
      } else {
        ++wrong;
      }
    };
    asio::co_spawn(ex, one(subject.workspace, i, completed, wrong), [&](std::exception_ptr error) {
      if (error && !failure) failure = error;
      if (++finished == kConcurrentCommands) all_done.notify();
    });
  }
  while (finished < kConcurrentCommands) {
    co_await all_done.wait();
    const auto state = co_await asio::this_coro::cancellation_state;
    if (state.cancelled() != asio::cancellation_type::none) throw std::runtime_error("scale: the run's deadline passed");
  }
  const double wall = seconds_since(start);
  const double cpu = bench::own_cpu_seconds() - cpu_before;
  co_await subject.backend->close();
  if (failure) std::rethrow_exception(failure);
  const double rss = bench::peak_rss_mib();
  std::printf("%-28s %12s %12s\n", "measure", "value", "goal");
  std::printf("%-28s %12d %12d\n", "commands completed", completed, kConcurrentCommands);
  std::printf("%-28s %12d %12s\n", "wrong output", wrong, "0");
  std::printf("%-28s %12.1f %12s\n", "wall seconds", wall, "-");
  std::printf("%-28s %12.1f %12s\n", "CPU seconds", cpu, "-");
  std::printf("%-28s %11.1f%% %12s\n", "CPU / wall", 100 * cpu / wall, "-");
  std::printf("%-28s %12.1f %12s\n", "process peak RSS (MiB)", rss, "<= 64");
  std::printf("\n");
  goals.push_back({"1,000 concurrent SSH commands: all complete, peak RSS <= 64 MiB",
                   std::to_string(completed) + " of " + std::to_string(kConcurrentCommands) + ", " + format("%.1f", rss) +
                       " MiB",
                   completed == kConcurrentCommands && rss <= 64});
}

// ---- files, limiter, local, session: the emulator in this process -------------------------------

asio::awaitable<void> files(exedev::emulator::Emulator& emulator, const Target& target, std::vector<Goal>& goals) {
  set_latency(emulator, 20ms);
  std::vector<bench::Subject> subjects;
  subjects.push_back(make_subject(target, exedev::Transport::exec));
  subjects.push_back(make_subject(target, exedev::Transport::ssh));
  co_await provision(subjects[0], exedev::Transport::exec);
  co_await provision(subjects[1], exedev::Transport::ssh);
  std::printf("files: 8 MiB write + read through the Workspace facade, emulator latency 20 ms on both transports;\n"
              "%d rounds, each /exec then SSH; a row is its transport's median round (by total), the ratio the\n"
              "median /exec total over the median SSH total\n",
              kFileRounds);
  std::printf("%-8s %-6s %9s %9s %9s %10s %12s  %s\n", "data", "via", "write s", "read s", "total s", "/exec req",
              "x exec total", "each round's total s (x exec)");
  double slowest_ratio = 1e9;
  for (const auto& payload : payloads()) {
    struct Round {
      double write = 0, read = 0;
      std::size_t requests = 0;
      [[nodiscard]] double total() const { return write + read; }
    };
    std::vector<std::vector<Round>> rounds(subjects.size());
    for (int round = 0; round < kFileRounds; ++round) {
      for (std::size_t s = 0; s < subjects.size(); ++s) {
        auto& subject = subjects[s];
        const auto path = "files-" + payload.first + ".bin";
        const auto before = emulator.commands().size();
        Round measured;
        auto start = Clock::now();
        co_await subject.workspace->write_bytes(path, payload.second);
        measured.write = seconds_since(start);
        start = Clock::now();
        const auto back = co_await subject.workspace->read_bytes(path);
        measured.read = seconds_since(start);
        measured.requests = emulator.commands().size() - before;
        if (back != payload.second) throw std::runtime_error(subject.name + ": the file did not round-trip");
        co_await subject.workspace->remove(path);
        rounds[s].push_back(measured);
      }
    }
    const auto median = [](std::vector<Round> list) {
      std::sort(list.begin(), list.end(), [](const Round& a, const Round& b) { return a.total() < b.total(); });
      return list[list.size() / 2];
    };
    const auto exec_median = median(rounds[0]);
    for (std::size_t s = 0; s < subjects.size(); ++s) {
      const auto row = median(rounds[s]);
      const double ratio = exec_median.total() / row.total();
      if (s != 0) slowest_ratio = std::min(slowest_ratio, ratio);
      std::string each;
      for (std::size_t r = 0; r < rounds[s].size(); ++r) {
        each += format(" %.2f", rounds[s][r].total());
        if (s != 0) each += format(" (%.1f)", rounds[0][r].total() / rounds[s][r].total());
      }
      std::printf("%-8s %-6s %9.2f %9.2f %9.2f %10zu %12.1f %s\n", payload.first.c_str(), subjects[s].name.c_str(),
                  row.write, row.read, row.total(), row.requests, ratio, each.c_str());
    }
  }
  // Where the SSH figures go: the facade's write and read are scripts on exec channels (resolve,
  // check, commit) around the data, which travels over SFTP. A fresh backend, as the rows above
  // began with: its first upload is the connection's first (sshd's channel buffer first grows
  // then) and asks for the second SFTP session, which the next ones share the data with.
  auto fresh = make_subject(target, exedev::Transport::ssh);
  co_await provision(fresh, exedev::Transport::ssh);
  const auto data = bench::random_bytes(kSize);
  double upload_seconds[3] = {0, 0, 0};
  for (auto& seconds : upload_seconds) {
    const auto start = Clock::now();
    auto uploading = fresh.backend->upload("sftp-only.bin", data);
    co_await std::move(uploading);
    seconds = seconds_since(start);
  }
  auto start = Clock::now();
  auto downloading = fresh.backend->download("sftp-only.bin", data.size());
  const auto back = co_await std::move(downloading);
  const double download_seconds = seconds_since(start);
  if (back != data) throw std::runtime_error("ssh: SFTP did not round-trip");
  start = Clock::now();
  auto running = fresh.workspace->run(ws::Command::shell("true"));
  co_await std::move(running);
  const double command_seconds = seconds_since(start);
  co_await fresh.backend->close();
  std::printf("of which, on ssh (a fresh backend): SFTP alone 8 MiB up %.2f s (the connection's first, on one SFTP "
              "session), %.2f s (again, in halves on two: the second's first), %.2f s (again), down %.2f s; one command "
              "(`true`) %.2f s\n",
              upload_seconds[0], upload_seconds[1], upload_seconds[2], download_seconds, command_seconds);
  for (auto& subject : subjects) co_await subject.backend->close();
  set_latency(emulator, 0ms);
  std::printf("\n");
  goals.push_back({"8 MiB write + read at 20 ms: ssh >= 10x faster than exec (random and text)",
                   format("%.1f", slowest_ratio) + "x (the smaller of the two)", slowest_ratio >= 10});
}

asio::awaitable<void> limiter(exedev::emulator::Emulator& emulator, const Target& target, std::vector<Goal>& goals) {
  set_latency(emulator, 20ms);
  std::printf("limiter: 8 MiB write under the emulator's limiter at exe.dev's numbers (60 burst, 1/s, overdraft 120), "
              "latency 20 ms, a fresh token each\n");
  std::printf("%-8s %-6s %9s %10s %6s %12s  %s\n", "data", "via", "seconds", "/exec req", "429s", "x exec", "outcome");
  double random_ratio = 0;
  for (const auto& payload : payloads()) {
    double exec_seconds = 0;
    const exedev::Transport transports[] = {exedev::Transport::exec, exedev::Transport::ssh};
    for (const auto transport : transports) {
      auto subject = make_subject(target, transport, bench::fresh_token(emulator));
      co_await provision(subject, transport);
      set_rate_limit(emulator, true);
      const auto before = emulator.commands().size();
      const auto start = Clock::now();
      std::string outcome = "finished";
      try {
        co_await subject.workspace->write_bytes("limiter.bin", payload.second);
      } catch (const std::exception& error) {
        outcome = std::string("failed: ") + error.what();
      }
      const double seconds = seconds_since(start);
      const auto requests = emulator.commands().size() - before;
      const auto refused = bench::count_status(emulator, before, 429);
      set_rate_limit(emulator, false);
      if (transport == exedev::Transport::exec) exec_seconds = seconds;
      const double ratio = exec_seconds / seconds;
      if (transport == exedev::Transport::ssh && payload.first == "random" && outcome == "finished") random_ratio = ratio;
      std::printf("%-8s %-6s %9.2f %10zu %6zu %12.1f  %s\n", payload.first.c_str(), subject.name.c_str(), seconds,
                  requests, refused, ratio, outcome.c_str());
      co_await subject.backend->close();
    }
  }
  set_latency(emulator, 0ms);
  std::printf("\n");
  goals.push_back({"8 MiB random write under exe.dev's limiter: ssh >= 50x faster than exec",
                   format("%.1f", random_ratio) + "x", random_ratio >= 50});
}

asio::awaitable<void> local(const Target& target, std::vector<Goal>& goals) {
  const auto directory = std::filesystem::temp_directory_path() / ("exedev-bench-transport-" + std::to_string(::getpid()));
  std::filesystem::create_directories(directory);
  std::vector<bench::Subject> subjects;
  auto local_backend = std::make_shared<ws::LocalBackend>(directory.string());
  subjects.push_back({"local", nullptr, std::make_shared<ws::Workspace>(local_backend)});
  subjects.push_back(make_subject(target, exedev::Transport::ssh));
  co_await provision(subjects[1], exedev::Transport::ssh);
  const auto data = bench::random_bytes(kLargeSize);
  std::printf("local: 64 MiB random write + read, no latency, fastest of 3\n");
  std::printf("%-8s %9s %9s %9s %10s %9s\n", "via", "write s", "read s", "total s", "MiB/s", "x local");
  double local_total = 0;
  double ratio = 0;
  for (auto& subject : subjects) {
    double best_write = 1e9, best_read = 1e9, best_total = 1e9;
    for (int attempt = 0; attempt < 3; ++attempt) {
      auto start = Clock::now();
      co_await subject.workspace->write_bytes("large.bin", data);
      const double write_seconds = seconds_since(start);
      start = Clock::now();
      const auto back = co_await subject.workspace->read_bytes("large.bin");
      const double read_seconds = seconds_since(start);
      if (back != data) throw std::runtime_error(subject.name + ": the file did not round-trip");
      co_await subject.workspace->remove("large.bin");
      best_write = std::min(best_write, write_seconds);
      best_read = std::min(best_read, read_seconds);
      best_total = std::min(best_total, write_seconds + read_seconds);
    }
    if (subject.name == "local") local_total = best_total;
    else ratio = best_total / local_total;
    std::printf("%-8s %9.3f %9.3f %9.3f %10.1f %9.1f\n", subject.name.c_str(), best_write, best_read, best_total,
                2 * 64 / best_total, best_total / local_total);
  }
  co_await subjects[1].backend->close();
  std::filesystem::remove_all(directory);
  std::printf("\n");
  goals.push_back({"64 MiB write + read over SSH within 5x LocalBackend (no latency)", format("%.1f", ratio) + "x",
                   ratio > 0 && ratio <= 5});
}

asio::awaitable<void> session(exedev::emulator::Emulator& emulator, const Target& target, std::vector<Goal>& goals) {
  std::printf("session: the scripted agent session of B8 (30 FileSystem and Shell tool calls), /exec requests "
              "after provisioning\n");
  std::printf("%-10s %10s %10s %10s %10s\n", "transport", "seeding", "session", "failed", "seconds");
  const exedev::Transport transports[] = {exedev::Transport::exec, exedev::Transport::ssh};
  std::size_t ssh_requests = 0;
  std::size_t ssh_failed = 0;
  for (const auto transport : transports) {
    auto subject = make_subject(target, transport);
    co_await provision(subject, transport);
    const auto provisioned = emulator.commands().size();
    co_await bench::seed_project(subject);
    const auto seeding = emulator.commands().size() - provisioned;
    const auto result = co_await bench::run_session(emulator, subject);
    if (transport == exedev::Transport::ssh) {
      ssh_requests = seeding + result.requests;
      ssh_failed = result.failed;
    }
    std::printf("%-10s %10zu %10zu %10zu %10.1f  %s\n", subject.name.c_str(), seeding, result.requests, result.failed,
                result.seconds, result.first_failure.c_str());
    co_await subject.backend->close();
  }
  std::printf("\n");
  goals.push_back({"/exec requests of the agent session over SSH after provisioning: 0 (and no failed call)",
                   std::to_string(ssh_requests) + " requests, " + std::to_string(ssh_failed) + " failed calls",
                   ssh_requests == 0 && ssh_failed == 0});
}

}  // namespace

// ---- interactive: process sessions (issue 42) ----------------------------------------------------

constexpr int kRoundTrips = 10;

// One write -> echo round trip: the line written, then reads (each waiting up to 5 s) until its
// echo has come back. Returns the offset after the echo.
asio::awaitable<std::uint64_t> round_trip(ws::Workspace& workspace, const std::string& name, const std::string& marker,
                                          std::uint64_t offset) {
  const ws::Bytes line = marker + "\n";
  co_await workspace.write_stdin(name, line);
  std::string seen;
  while (seen.find(marker) == std::string::npos) {
    const auto output = co_await workspace.read_output(name, offset, ws::SupportsProcessSessions::max_read_bytes, 5000ms);
    if (output.complete) throw std::runtime_error("interactive: the session ended before its echo came back");
    if (output.data.empty()) throw std::runtime_error("interactive: no echo within 5 s");
    seen += output.data;
    offset = output.next_offset;
  }
  co_return offset;
}

asio::awaitable<void> interactive(exedev::emulator::Emulator& emulator, const Target& target, std::vector<Goal>& goals) {
  set_latency(emulator, 20ms);
  std::printf("interactive: write -> echo round trips through a process session (`cat` on a pseudo-terminal), "
              "emulator latency 20 ms;\n%d trips per transport after one to warm up; a trip is one write_stdin and the "
              "read_output calls until the echo is seen\n",
              kRoundTrips);
  std::printf("%-12s %12s %12s %12s %18s\n", "via", "median ms", "fastest ms", "slowest ms", "/exec req per trip");
  struct Variant {
    exedev::Transport transport;
    bool attached;
  };
  // Over /exec, attach_session says no: the /exec row is the same either way.
  const Variant variants[] = {{exedev::Transport::exec, false}, {exedev::Transport::ssh, false}, {exedev::Transport::ssh, true}};
  double medians[3] = {0, 0, 0};
  double requests_per_trip[3] = {0, 0, 0};
  for (int t = 0; t < 3; ++t) {
    auto subject = make_subject(target, variants[t].transport);
    co_await provision(subject, variants[t].transport);
    const std::string name = "bench-echo";
    ws::ProcessSessionSpec spec;
    spec.command = ws::Command::argv({"cat"});
    spec.pty = true;
    co_await subject.workspace->start_session(name, spec);
    if (variants[t].attached) {
      const bool attached = co_await subject.workspace->attach_session(name, 0);
      if (!attached) throw std::runtime_error("interactive: the session did not attach over SSH");
    }
    const std::string warming = "warm-up";
    std::uint64_t offset = co_await round_trip(*subject.workspace, name, warming, 0);
    std::vector<double> trips;
    const auto before = emulator.commands().size();
    for (int i = 0; i < kRoundTrips; ++i) {
      const std::string marker = "trip-" + std::to_string(i);
      const auto start = Clock::now();
      offset = co_await round_trip(*subject.workspace, name, marker, offset);
      trips.push_back(1000 * seconds_since(start));
    }
    requests_per_trip[t] = static_cast<double>(emulator.commands().size() - before) / kRoundTrips;
    co_await subject.workspace->remove_session(name);
    co_await subject.backend->close();
    std::sort(trips.begin(), trips.end());
    medians[t] = trips[trips.size() / 2];
    const auto via = subject.name + (variants[t].attached ? " attached" : "");
    std::printf("%-12s %12.0f %12.0f %12.0f %18.1f\n", via.c_str(), medians[t], trips.front(), trips.back(),
                requests_per_trip[t]);
  }
  std::printf("/exec median / SSH median: %.1f; SSH median / SSH attached median: %.1f\n\n", medians[0] / medians[1],
              medians[1] / medians[2]);
  goals.push_back({"a process session's write -> echo on /exec takes at most 2 requests (one write, one read)",
                   format("%.1f requests per trip", requests_per_trip[0]), requests_per_trip[0] <= 2.0});
  set_latency(emulator, 0ms);
}

int main(int argc, char** argv) try {
  const std::set<std::string> wanted(argv + 1, argv + argc);
  const auto want = [&](const char* name) { return wanted.empty() || wanted.count(name) > 0; };
  const bench::SshKey key;
  std::vector<Goal> goals;
  const exedev::testing::RunLimits limits{.deadline = std::chrono::minutes(60), .settle = std::chrono::seconds(10)};
  if (want("cpu") || want("scale")) {
    const bench::EmulatorProcess emulator(EXEDEV_BENCH_EMULATOR, {"--ssh-key=" + key.public_key().string()},
                                          {"url", "ca_file", "token", "ssh_known_hosts", "ssh_hosts"});
    const Target target{emulator.client_options(), emulator.setting("ssh_known_hosts"), emulator.setting("ssh_hosts"),
                        key.private_key()};
    exedev::testing::run(
        [&](asio::any_io_executor) -> asio::awaitable<void> {
          if (want("cpu")) co_await cpu_per_command(target);
          if (want("scale")) co_await scale(target, goals);
        },
        limits);
  }
  if (want("files") || want("limiter") || want("local") || want("session") || want("interactive")) {
    exedev::emulator::Options options;
    options.ssh_authorized_keys.push_back(key.public_line());
    exedev::emulator::Emulator emulator(std::move(options));
    if (emulator.ssh_known_hosts().empty()) throw std::runtime_error("this machine cannot serve SSH (no sshd)");
    const Target target{exedev::emulator::client_options(emulator), emulator.ssh_known_hosts(), emulator.ssh_hosts_file(),
                        key.private_key()};
    exedev::testing::run(
        [&](asio::any_io_executor) -> asio::awaitable<void> {
          if (want("files")) co_await files(emulator, target, goals);
          if (want("limiter")) co_await limiter(emulator, target, goals);
          if (want("local")) co_await local(target, goals);
          if (want("session")) co_await session(emulator, target, goals);
          if (want("interactive")) co_await interactive(emulator, target, goals);
        },
        limits);
  }
  std::printf("goals\n");
  for (const auto& goal : goals) {
    std::printf("  %-9s %s: %s\n", goal.met ? "met" : "NOT met", goal.what.c_str(), goal.measured.c_str());
  }
  return 0;
} catch (const std::exception& error) {
  bench::print_error_chain("bench_transport", error);
  return 1;
}
