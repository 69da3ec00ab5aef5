// B12: backends whose SSH endpoint takes connections and never answers (exe.dev's edge above its
// per-address connection rate, or port 22 black-holed by a firewall), transport automatic
// (issue 37). Each backend attaches to a VM of its own and runs its first command; the wall
// time of all of them is compared with one backend's, side by side in one run:
//   one          one backend alone: the connect timeout, then the command over /exec
//   shared       the backends one after another, sharing one client and one SshEndpointMemory
//                (as a Sandbox's runs do): the first pays the timeout, the others use /exec at once
//   concurrent   the same, all at once
//   separate     one after another, each with a memory of its own: each pays the timeout
//   exec         one after another with transport exec: the commands' own cost, the floor
// The emulator's SSH endpoints are silent (Modes::ssh_silent) from after provisioning on, and
// every backend shares one client (its account keys learned before the measurements). Absolute
// times depend on the machine; the ratios to `one` are what to compare.
// `bench_ssh_unanswered [--timeout=<seconds>] [--backends=<n>]`: defaults 2 s and 100.

#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/sandbox/sandbox_backend.hpp>
#include <exedev/testing/run.hpp>

#include "support.hpp"

#include "common/event.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace asio = boost::asio;
namespace ws = exedev::workspace;
using bench::Clock;
using bench::seconds_since;
using namespace std::chrono_literals;

namespace {

struct Setup {
  exedev::Client client;
  std::filesystem::path known_hosts;
  std::filesystem::path hosts;
  std::filesystem::path private_key;
  std::chrono::milliseconds timeout;
};

exedev::SandboxBackendOptions backend_options(const Setup& setup, exedev::Transport transport,
                                              std::optional<ws::WorkspaceRef> ref, exedev::SshEndpointMemory memory) {
  exedev::SandboxBackendOptions o;
  o.ref = std::move(ref);
  o.spec = exedev::VMSpec({.working_dir = "work"});
  o.client = setup.client;
  o.transport = transport;
  o.ssh.private_key_file = setup.private_key;
  o.ssh.use_agent = false;
  o.ssh.use_config = false;
  o.ssh.known_hosts_file = setup.known_hosts;
  o.ssh.hosts_file = setup.hosts;
  o.ssh.host_key_policy = exedev::HostKeyPolicy::strict;
  o.ssh.connect_timeout = setup.timeout;
  o.ssh.handshake_timeout = setup.timeout;
  o.ssh_endpoints = std::move(memory);
  o.logger = [](exedev::LogLevel, std::string_view) {};  // one fall-back line per backend: not printed
  return o;
}

// What one case measured.
struct Outcome {
  double seconds = 0;
  int over_exec = 0;  // first commands that ran, over /exec
  int failed = 0;     // first commands that threw or answered wrongly
};

// The first command of a backend attached to `ref`; counts where it ran.
asio::awaitable<void> first_command(const Setup& setup, exedev::Transport transport, ws::WorkspaceRef ref,
                                    exedev::SshEndpointMemory memory, Outcome& outcome) {
  auto backend = std::make_shared<exedev::SandboxBackend>(backend_options(setup, transport, std::move(ref), std::move(memory)));
  std::exception_ptr failure;
  try {
    auto running = backend->run(ws::Command::shell("echo ok"), ws::RunOptions{});
    const auto result = co_await std::move(running);
    const bool right = result.exit_code == 0 && result.stdout_text == "ok\n";
    outcome.failed += !right;
    outcome.over_exec += right && backend->transport_in_use() == exedev::Transport::exec;
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure) ++outcome.failed;
  co_await backend->close();
}

asio::awaitable<Outcome> one_after_another(const Setup& setup, exedev::Transport transport,
                                           const std::vector<ws::WorkspaceRef>& refs, bool share_memory) {
  Outcome outcome;
  const exedev::SshEndpointMemory shared;
  const auto start = Clock::now();
  for (const auto& ref : refs) {
    const exedev::SshEndpointMemory memory = share_memory ? shared : exedev::SshEndpointMemory();
    co_await first_command(setup, transport, ref, memory, outcome);
  }
  outcome.seconds = seconds_since(start);
  co_return outcome;
}

asio::awaitable<Outcome> all_at_once(const Setup& setup, const std::vector<ws::WorkspaceRef>& refs) {
  Outcome outcome;
  const exedev::SshEndpointMemory shared;
  const auto ex = co_await asio::this_coro::executor;
  std::size_t finished = 0;
  std::exception_ptr failure;
  exedev::detail::Event all_done;
  const auto start = Clock::now();
  for (const auto& ref : refs) {
    asio::co_spawn(ex, first_command(setup, exedev::Transport::automatic, ref, shared, outcome), [&](std::exception_ptr error) {
      if (error && !failure) failure = error;
      if (++finished == refs.size()) all_done.notify();
    });
  }
  while (finished < refs.size()) {
    co_await all_done.wait();
    const auto state = co_await asio::this_coro::cancellation_state;
    if (state.cancelled() != asio::cancellation_type::none) throw std::runtime_error("concurrent: the run's deadline passed");
  }
  outcome.seconds = seconds_since(start);
  if (failure) std::rethrow_exception(failure);
  co_return outcome;
}

void print_row(const char* name, std::size_t backends, const Outcome& outcome, double one) {
  std::printf("%-12s %9zu %10.2f %9.2f %10d %7d\n", name, backends, outcome.seconds, outcome.seconds / one, outcome.over_exec,
              outcome.failed);
}

std::size_t number_after(std::string_view argument, std::string_view flag) {
  return static_cast<std::size_t>(std::stoul(std::string(argument.substr(flag.size()))));
}

}  // namespace

int main(int argc, char** argv) try {
  std::chrono::milliseconds timeout = 2s;
  std::size_t count = 100;
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    if (argument.starts_with("--timeout=")) {
      timeout = std::chrono::seconds(number_after(argument, "--timeout="));
    } else if (argument.starts_with("--backends=")) {
      count = number_after(argument, "--backends=");
    } else {
      throw std::invalid_argument("usage: bench_ssh_unanswered [--timeout=<seconds>] [--backends=<n>]");
    }
  }
  if (count == 0 || timeout.count() == 0) throw std::invalid_argument("--timeout and --backends must be at least 1");
  const bench::SshKey key;
  exedev::emulator::Options options;
  options.ssh_authorized_keys.push_back(key.public_line());
  exedev::emulator::Emulator emulator(std::move(options));
  if (emulator.ssh_known_hosts().empty()) {
    std::printf("SKIPPED: this machine cannot serve SSH (no sshd)\n");
    return 0;
  }
  const exedev::testing::RunLimits limits{.deadline = std::chrono::minutes(60), .settle = std::chrono::seconds(10)};
  exedev::testing::run(
      [&](asio::any_io_executor ex) -> asio::awaitable<void> {
        Setup setup{exedev::Client(ex, exedev::emulator::client_options(emulator)), emulator.ssh_known_hosts(),
                          emulator.ssh_hosts_file(), key.private_key(), timeout};
        // A VM per backend, made over /exec before the endpoints go silent.
        std::vector<ws::WorkspaceRef> refs;
        for (std::size_t i = 0; i < count; ++i) {
          auto making = std::make_shared<exedev::SandboxBackend>(
              backend_options(setup, exedev::Transport::exec, std::nullopt, exedev::SshEndpointMemory()));
          co_await making->working_dir();
          refs.push_back(*making->ref());
          co_await making->close();
        }
        auto learning = setup.client.account();
        co_await std::move(learning);
        auto modes = emulator.modes();
        modes.ssh_silent = true;
        emulator.set_modes(modes);

        std::printf("B12: %zu backends, transport automatic, SSH endpoint silent, connect and handshake timeout %.0f s\n",
                    count, std::chrono::duration<double>(timeout).count());
        const std::vector<ws::WorkspaceRef> first_only{refs.front()};
        const auto one = co_await one_after_another(setup, exedev::Transport::automatic, first_only, true);
        const auto shared = co_await one_after_another(setup, exedev::Transport::automatic, refs, true);
        const auto concurrent = co_await all_at_once(setup, refs);
        const auto separate = co_await one_after_another(setup, exedev::Transport::automatic, refs, false);
        const auto exec = co_await one_after_another(setup, exedev::Transport::exec, refs, true);
        std::printf("%-12s %9s %10s %9s %10s %7s\n", "case", "backends", "wall s", "x one", "over /exec", "failed");
        print_row("one", 1, one, one.seconds);
        print_row("shared", count, shared, one.seconds);
        print_row("concurrent", count, concurrent, one.seconds);
        print_row("separate", count, separate, one.seconds);
        print_row("exec", count, exec, one.seconds);
        std::printf("shared - exec: %.2f s of waiting for SSH in all (one timeout: %.2f s)\n", shared.seconds - exec.seconds,
                    std::chrono::duration<double>(timeout).count());
        auto closing = setup.client.close();
        co_await std::move(closing);
      },
      limits);
  return 0;
} catch (const std::exception& error) {
  bench::print_error_chain("bench_ssh_unanswered", error);
  return 1;
}
