#include "emulator/host_runner.hpp"

#include <utility>
#include <vector>

namespace exedev::emulator {

std::variant<Reply, SshPlan> complete_on_host(Lobby& lobby, VmHost& host, Step step, const std::function<Instant()>& now) {
  while (const auto* waiting = std::get_if<AwaitHost>(&step.answer)) {
    const std::uint64_t ticket = waiting->ticket;
    std::vector<HostResult> results;
    try {
      results = run_host_plan(host, step.plan);
    } catch (...) {
      lobby.abandon(ticket);
      throw;
    }
    step = lobby.resume(ticket, results, now());
  }
  run_host_plan(host, step.plan);
  if (auto* plan = std::get_if<SshPlan>(&step.answer)) return std::move(*plan);
  return std::get<Reply>(std::move(step.answer));
}

}  // namespace exedev::emulator
