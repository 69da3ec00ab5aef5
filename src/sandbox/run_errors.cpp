#include "sandbox/run_errors.hpp"

#include <exedev/errors.hpp>

namespace exedev::detail {

RunErrorClass classify_run_error(const std::exception_ptr& error) {
  using K = RunErrorClass::Kind;
  RunErrorClass result;
  const auto with_output = [&](K kind, const std::string& out, const std::string& err) {
    result.kind = kind;
    result.stdout_bytes = out;
    result.stderr_bytes = err;
    return result;
  };
  try {
    std::rethrow_exception(error);
  } catch (const RunTimeoutError& e) {
    return with_output(K::timeout, e.stdout_bytes(), e.stderr_bytes());
  } catch (const OutputLimitError& e) {
    result.limit = e.limit();
    return with_output(K::output_limit, e.stdout_bytes(), e.stderr_bytes());
  } catch (const OutcomeUnknownError& e) {
    return with_output(K::may_have_run, e.stdout_bytes(), e.stderr_bytes());
  } catch (const ConnectionError& e) {
    result.kind = e.sent() ? K::may_have_run : K::not_run;  // not sent: a transient error to retry
  } catch (const ProtocolError&) {
    result.kind = K::may_have_run;
  } catch (const CommandFailedError&) {
    result.kind = K::refused;  // before it started
  } catch (const APIError& e) {
    result.kind = e.status() >= 500 ? K::may_have_run : K::not_run;
  } catch (...) {
    // A cancellation, an output callback's exception, invalid input: not the client's to map.
  }
  return result;
}

}  // namespace exedev::detail
