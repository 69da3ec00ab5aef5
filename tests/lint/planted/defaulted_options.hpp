// A planted violation for the coawait_rule lint's WILL_FAIL twin (never compiled): a public
// function whose options argument is defaulted, a temporary of every caller's co_await.
#include <exedev/client.hpp>

exedev::Task<exedev::VMInfo> planted_new_vm(exedev::NewVMOptions options = {});
