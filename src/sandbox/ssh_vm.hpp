#pragma once
// Running commands and scripts on a VM over its SSH connection, with the contracts Client::run
// and Client::run_script have on /exec, so SandboxBackend's one recovery (route_recovery.hpp,
// run_errors.hpp) serves both transports. The programs each channel carries are in
// ssh_commands.hpp; the connection itself in src/ssh/.

#include <memory>
#include <optional>
#include <string>

#include <exedev/client.hpp>
#include <exedev/workspace/types.hpp>

#include "ssh/connection.hpp"

namespace exedev::detail {

/// Where a VM's sshd answers, from exe.dev's description of it: ssh_host, ssh_port and ssh_user,
/// else ssh_dest split at `@`; port 22 and user `root` when it names none. nullopt when it names
/// no host.
[[nodiscard]] std::optional<ssh::Endpoint> ssh_endpoint(const VMInfo& vm);

/// A command with Client::run's contract: the login shell, env, working_dir, exact output, the
/// exit code (128+N for signal N), live callbacks, max_output_bytes and timeout (the command's
/// process group is stopped from a second channel, TERM then KILL after 5 s). Throws
/// RunTimeoutError / OutputLimitError with what arrived, OutcomeUnknownError when the connection
/// dropped while it ran or a stop could not be confirmed, ConnectionError (sent() false) when no
/// channel could be opened. Cancellation: the process group is stopped (shielded, bounded), then
/// operation_aborted is raised.
Task<RunResult> ssh_run(std::shared_ptr<ssh::Connection> connection, std::string shell_line, ClientRunOptions options);

/// A script with Client::run_script's contract (positional base64 args, stdin at EOF, stdout
/// streamed to on_stdout from offset 0, max_output_bytes). Throws OutputLimitError past the
/// limit, ConnectionError (sent() true) when the connection dropped while it ran. Cancellation
/// closes its channel (the script is short and bounded, as on /exec).
Task<RunResult> ssh_run_script(std::shared_ptr<ssh::Connection> connection, std::string script, ScriptOptions options);

}  // namespace exedev::detail
