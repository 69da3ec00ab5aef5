// GCC 12 would free this options struct twice; the guard makes it refuse to compile instead.
#include <exedev/client.hpp>

exedev::Task<exedev::VMInfo> provision(exedev::Client& client) {
  co_return co_await client.new_vm({.name = "agent-vm", .comment = std::string(64, 'c')});
}
