#include "workspace/shell_scripts.hpp"

namespace exedev::workspace::detail {

Task<CommandResult> run_shell_script(SupportsCommands& commands, SupportsShellScripts* scripts, std::string script,
                                     std::vector<std::string> args, bool idempotent) {
  if (scripts) co_return co_await scripts->run_script(std::move(script), std::move(args), idempotent, {});
  // No fixed PATH (common/script_path.hpp): run() is the backend's own command line (LocalBackend's
  // `sh -c` reads no profile); SupportsShellScripts' channels put it first where a login shell runs.
  std::string line;
  if (!args.empty()) {
    line = "set --";
    for (const auto& arg : args) line += " " + shell_quote(arg);
    line += "\n";
  }
  line += script;
  const RunOptions no_options;  // named: GCC 12 miscompiles an options temporary in co_await
  co_return co_await commands.run(Command::shell(std::move(line)), no_options);
}

}  // namespace exedev::workspace::detail
