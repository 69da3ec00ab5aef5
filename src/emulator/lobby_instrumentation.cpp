// The lobby's faults, modes and command records: what the control endpoint and the public
// Emulator API inject and read back. Nothing here has host work.
#include "emulator/lobby.hpp"
#include "emulator/lobby_internal.hpp"

namespace exedev::emulator {

std::optional<Fault> Lobby::take_fault(const std::string& command, const std::string& vm) {
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if ((!it->command.empty() && it->command != command) || (!it->vm.empty() && it->vm != vm)) continue;
    if (it->skip > 0) {
      --it->skip;
      return std::nullopt;
    }
    Fault fault = *it;
    if (--it->count == 0) faults_.erase(it);
    return fault;
  }
  return std::nullopt;
}

void Lobby::inject(Fault fault) {
  if (fault.count == 0) return;
  faults_.push_back(std::move(fault));
}

void Lobby::clear_faults() {
  faults_.clear();
}

Modes Lobby::modes() const {
  return config_.modes;
}

void Lobby::set_modes(Modes modes) {
  config_.modes = modes;
}

void Lobby::record(CommandRecord record) {
  records_.push_back(std::move(record));
}

std::vector<CommandRecord> Lobby::commands() const {
  return records_;
}

void Lobby::clear_commands() {
  records_.clear();
}

}  // namespace exedev::emulator
