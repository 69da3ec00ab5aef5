#pragma once
// Runs the lobby's plans on a VmHost (vm_host.hpp): the host half of the exchange lobby.hpp
// describes. The server calls it on its one thread, the lobby's strand, so plans run in the order
// the lobby made them; the unit tests call it on a fake host with the time they choose.

#include "emulator/instant.hpp"
#include "emulator/lobby.hpp"
#include "emulator/vm_host.hpp"

#include <functional>
#include <variant>

namespace exedev::emulator {

/// Runs the step's plan on `host` and, while the lobby awaits the results, feeds them back
/// (Lobby::resume, at `now()`) and runs the plan of the step that follows; returns the command's
/// answer. Blocking. When the host throws, the lobby forgets the waiting command
/// (Lobby::abandon) and the exception propagates.
std::variant<Reply, SshPlan> complete_on_host(Lobby& lobby, VmHost& host, Step step, const std::function<Instant()>& now);

}  // namespace exedev::emulator
