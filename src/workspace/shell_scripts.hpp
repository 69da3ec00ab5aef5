#pragma once
// Running the workspace layer's own POSIX sh scripts on a backend (internal): through
// SupportsShellScripts when the backend has it (one exe.dev request, the arguments carried
// once), else as one SupportsCommands::run command line.

#include <string>
#include <vector>

#include <exedev/workspace/backend.hpp>

namespace exedev::workspace::detail {

/// Runs `script` with positional parameters `args` (each non-empty base64 text) through
/// `scripts` when set, else through `commands`. No timeout: the script bounds itself, and a
/// transport's duration is the transport's business.
Task<CommandResult> run_shell_script(SupportsCommands& commands, SupportsShellScripts* scripts, std::string script,
                                     std::vector<std::string> args, bool idempotent);

}  // namespace exedev::workspace::detail
