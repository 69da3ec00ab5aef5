#pragma once
// The control endpoint (`POST /_emulator/<action>`, header X-Emulator-Control: <secret>) and the
// names of modes and faults shared by it and the command line. Sans-IO.

#include <exedev/emulator/emulator.hpp>

#include "emulator/lobby.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace exedev::emulator {

std::optional<PausedVmSsh> paused_vm_ssh_from(std::string_view name);       ///< refuse | auto-resume
std::optional<OnClientDisconnect> on_disconnect_from(std::string_view name);  ///< keep-running | kill
std::optional<Trailers> trailers_from(std::string_view name);                 ///< send | strip
std::optional<SshNonzeroExit> ssh_nonzero_exit_from(std::string_view name);   ///< stream | unprocessable
std::optional<CpResponse> cp_response_from(std::string_view name);            ///< legacy | new-like
std::optional<SshDestination> ssh_destination_from(std::string_view name);    ///< vm-plus | vm-domain
std::optional<FaultKind> fault_kind_from(std::string_view name);              ///< reset-before-run, …
/// "none", or an exit code 0-255 (Modes::cut_exit_code).
std::optional<std::optional<int>> cut_exit_code_from(std::string_view text);
/// "none", or a duration: <N>ms, <N>s, <N>m (plain N = milliseconds).
std::optional<std::optional<std::chrono::milliseconds>> duration_from(std::string_view text);

struct ServerStats {
  std::size_t connections_accepted = 0;
  std::size_t open_connections = 0;
};

/// Handles one authenticated control request at `now`. Actions: fault, faults/clear, modes,
/// token, state. Adds the host work of its change (a token's save) to `plan`, for the caller to run.
Reply control_request(Lobby& lobby, std::string_view action, std::string_view body, const ServerStats& stats,
                      Instant now, HostPlan& plan);

}  // namespace exedev::emulator
