#pragma once
// Running commands and scripts on a VM over its SSH connection, with the contracts Client::run
// and Client::run_script have on /exec, so SandboxBackend's one recovery (route_recovery.hpp,
// run_errors.hpp) serves both transports. The programs each channel carries are in
// ssh_commands.hpp; the connection itself in src/ssh/.

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <exedev/client.hpp>
#include <exedev/workspace/command_stream.hpp>
#include <exedev/workspace/types.hpp>

#include "ssh/connection.hpp"

namespace exedev::detail {

/// Where a VM's SSH endpoint is, from exe.dev's description of it: ssh_host, ssh_port and
/// ssh_user, else ssh_dest split at `@`. A port or user it does not name is left out (0, empty)
/// for the SSH layer to settle: ssh_config's Port, else 22; ssh_config's User, else the local
/// login name. nullopt when it names no host.
[[nodiscard]] std::optional<ssh::Endpoint> ssh_endpoint(const VMInfo& vm);

/// A command with Client::run's contract: the login shell, env, working_dir, exact output, the
/// exit code (128+N for signal N), live callbacks, max_output_bytes and timeout (the command's
/// process group is stopped from a second channel, TERM then KILL after 5 s). Throws
/// RunTimeoutError / OutputLimitError with what arrived, OutcomeUnknownError when the connection
/// dropped while it ran or a stop could not be confirmed, ConnectionError (sent() false) when no
/// channel could be opened. Cancellation: the process group is stopped (shielded, bounded), then
/// operation_aborted is raised.
Task<RunResult> ssh_run(std::shared_ptr<ssh::Connection> connection, std::string shell_line, ClientRunOptions options);

/// Bytes of a script's stderr kept, as on /exec (client/script_exec.cpp); more is counted
/// against the output limit and dropped.
inline constexpr std::size_t ssh_script_stderr_bytes = 64 * 1024;

/// A script with Client::run_script's contract (positional base64 args, stdin at EOF, stdout
/// streamed to on_stdout from offset 0, max_output_bytes). Throws OutputLimitError as soon as
/// stdout passes max_output_bytes or stdout and stderr together pass it plus
/// ssh_script_stderr_bytes (the channel is closed then, without waiting for the VM to stop
/// sending), ConnectionError (sent() true) when the connection dropped while it ran. With a
/// positive `timeout` (SshOptions::file_operation_timeout), a script still running then has its
/// process group stopped (TERM, KILL after 5 s) and its channel closed: RunTimeoutError, or
/// OutcomeUnknownError when the stop could not be confirmed. Output past the limit stops the
/// group too. Cancellation closes its channel (the script is short and bounded, as on /exec).
Task<RunResult> ssh_run_script(std::shared_ptr<ssh::Connection> connection, std::string script, ScriptOptions options,
                               std::chrono::milliseconds timeout);

/// A command stream (workspace::CommandStream) on a session channel of `connection`: `script`
/// with positional `args` (run_script's), its program carried on the channel's first line of
/// stdin (ssh_stream_command). The channel holds one of the connection's session slots until the
/// stream is closed. nullptr while the connection has its most streams open (max_streams()). Throws ConnectionError (sent() false) when no channel could be opened; the
/// stream's own failures are WorkspaceError. Cancellation: the channel is closed in the
/// background.
Task<std::unique_ptr<workspace::CommandStream>> ssh_open_command_stream(std::shared_ptr<ssh::Connection> connection,
                                                                       std::string script, std::vector<std::string> args);

}  // namespace exedev::detail
