#include "sandbox/run_errors.hpp"

#include <exedev/errors.hpp>

namespace exedev::detail {

RunErrorClass classify_run_error(const std::exception_ptr& error) {
  using K = RunErrorClass::Kind;
  RunErrorClass result;
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    if (const auto* carrier = dynamic_cast<const WithPartialOutput*>(&e)) result.output = carrier->output();
    if (e.code() == errc::run_timeout) {
      result.kind = K::timeout;
    } else if (e.code() == errc::output_limit) {
      result.kind = K::output_limit;
      result.limit = static_cast<const OutputLimitError&>(e).limit();
    } else if (e.code() == errc::command_failed) {
      result.kind = K::refused;  // before it started
    } else {
      result.kind = e.may_have_run() ? K::may_have_run : K::not_run;  // not run: a transient error to retry
    }
  } catch (...) {
    // A cancellation, an output callback's exception, invalid input: not the client's to map.
  }
  return result;
}

}  // namespace exedev::detail
