// A planted violation for the coawait_rule lint's twin (never compiled): a co_await in an if
// condition whose branch throws, the cancellation check as it was once written in the library;
// GCC 12 never resumes the awaiting coroutine's caller after it (ADR 7's probe, rows 55-59).
#include <exedev/client.hpp>

#include <stdexcept>

exedev::Task<bool> planted_stopped();

exedev::Task<void> planted_check() {
  if (co_await planted_stopped()) throw std::runtime_error("stopped");
}
