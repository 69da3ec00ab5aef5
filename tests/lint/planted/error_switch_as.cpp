// A planted violation for the error_classification lint's WILL_FAIL twin (never compiled):
// deciding what a captured error means by looking for one of its types.
#include <exedev/errors.hpp>

#include "common/exceptions.hpp"

bool may_retry(const std::exception_ptr& error) {
  const auto* dropped = exedev::detail::exception_as<exedev::ConnectionError>(error);
  return dropped != nullptr && !dropped->sent();
}
