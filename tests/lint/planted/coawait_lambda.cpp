// A planted violation for the coawait_rule lint's WILL_FAIL twin (never compiled): a lambda
// with a by-value capture inside a co_await expression, whose captures GCC 12 destroys twice.
#include <functional>
#include <string>

#include <exedev/task.hpp>

exedev::Task<int> call(std::function<int()> f);

exedev::Task<int> planted(std::string text) {
  co_return co_await call([text] { return static_cast<int>(text.size()); });
}
