// A planted violation for the coawait_rule lint's twin (never compiled): a conditional inside a
// co_await expression that yields a std::optional<std::string> temporary, which GCC 12 destroys
// twice (ADR 7's probe, the shape that once crashed provision.cpp).
#include <exedev/client.hpp>

#include <optional>
#include <string>

exedev::Task<int> planted(bool scoped, const std::optional<std::string>& tag);

exedev::Task<int> planted_caller(bool scoped, const std::optional<std::string>& tag) {
  co_return co_await planted(scoped, scoped ? tag : std::optional<std::string>());
}
