// GCC 12 would use this options struct's environment after freeing it; the guard makes it
// refuse to compile instead.
#include <exedev/workspace/workspace.hpp>

exedev::workspace::Task<exedev::workspace::CommandResult> build(exedev::workspace::Workspace& workspace,
                                                                 const exedev::workspace::Env& env) {
  co_return co_await workspace.run(exedev::workspace::Command::shell("make"),
                                   exedev::workspace::RunOptions{.env = env});
}
