// A planted violation for the error_classification lint's WILL_FAIL twin (never compiled):
// deciding what an error means by rethrowing it and switching on its type.
#include <exedev/errors.hpp>

bool may_retry(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const exedev::ConnectionError& e) {
    return !e.sent();
  } catch (...) {
    return false;
  }
}
