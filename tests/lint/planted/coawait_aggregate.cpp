// A planted violation for the coawait_rule lint's WILL_FAIL twin (never compiled): an options
// struct built inside a co_await expression, which GCC 12 destroys twice.
#include <exedev/client.hpp>

exedev::Task<void> planted(exedev::Client client) {
  co_await client.new_vm({.name = "planted"});
}
