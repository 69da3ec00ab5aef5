// A planted violation for the coawait_rule lint's twin (never compiled): a co_await inside a
// Catch2 assertion, which GCC 12 evaluates more than once (Catch2's __builtin_constant_p).
#include <catch2/catch.hpp>

#include <exedev/client.hpp>

exedev::Task<int> planted_count();

exedev::Task<void> planted_assertion() {
  CHECK(co_await planted_count() == 1);
}
