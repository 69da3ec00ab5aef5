#include "sandbox/run_errors.hpp"

#include <exedev/errors.hpp>
#include <exedev/sandbox/errors.hpp>

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include "common/exceptions.hpp"
#include "sandbox/core.hpp"
#include "ssh/ssh_errors.hpp"

namespace exedev::detail {

namespace {

RouteFailure connection_failure(const ConnectionError& error, RouteStep step) {
  const auto cause = error.cause();
  // Before the timeouts below: it compares equal to timed_out too.
  if (ssh::is_deadline_passed(cause)) return RouteFailure::deadline_passed;
  switch (step) {
    case RouteStep::connecting: {
      if (cause == std::errc::timed_out) return RouteFailure::connect_timed_out;
      if (cause == std::errc::connection_refused) return RouteFailure::connect_refused;
      static const std::error_code not_resolved = boost::system::error_code(boost::asio::error::host_not_found);
      if (cause && &cause.category() == &not_resolved.category()) return RouteFailure::name_not_resolved;
      return RouteFailure::dropped;
    }
    case RouteStep::opening_sftp:
      return ssh::is_channel_refusal(cause) ? RouteFailure::sftp_refused : RouteFailure::dropped;
    case RouteStep::operating:
      return !error.sent() && ssh::is_channel_refusal(cause) ? RouteFailure::channel_refused : RouteFailure::dropped;
  }
  return RouteFailure::dropped;
}

RouteFailure error_failure(const Error& error, RouteStep step) {
  switch (static_cast<errc>(error.code().value())) {
    case errc::run_timeout: return RouteFailure::timed_out;
    case errc::output_limit: return RouteFailure::output_limit;
    case errc::authentication_failed:
    case errc::permission_denied: return RouteFailure::access_denied;
    case errc::command_failed: {
      const auto* refusal = dynamic_cast<const APIError*>(&error);
      return refusal != nullptr && is_scope_refusal(*refusal) ? RouteFailure::access_denied : RouteFailure::command_refused;
    }
    case errc::host_key_rejected: return RouteFailure::host_key_rejected;
    case errc::ssh_authentication_failed: return RouteFailure::auth_denied;
    case errc::ssh_key_unusable: return RouteFailure::key_unusable;
    case errc::ssh_misrouted: return RouteFailure::misrouted;
    case errc::connection_failed: {
      const auto* connection = dynamic_cast<const ConnectionError*>(&error);
      return connection != nullptr ? connection_failure(*connection, step) : RouteFailure::dropped;
    }
    default: return error.may_have_run() ? RouteFailure::outcome_unknown : RouteFailure::other;
  }
}

}  // namespace

FailureClass classify_failure(const std::exception_ptr& error, RouteStep step) {
  FailureClass result;
  if (const auto* e = exception_as<Error>(error)) {
    result.kind = error_failure(*e, step);
    result.message = e->what();
    result.may_have_run = e->may_have_run();
    if (const auto* carrier = dynamic_cast<const WithPartialOutput*>(e)) result.output = carrier->output();
    if (const auto* limit = dynamic_cast<const OutputLimitError*>(e)) result.limit = limit->limit();
  } else if (exception_as<VMNotFoundError>(error)) {
    result.kind = RouteFailure::vm_not_found;
  } else if (const auto* system_error = exception_as<boost::system::system_error>(error)) {
    if (system_error->code() == boost::asio::error::operation_aborted) result.kind = RouteFailure::cancelled;
  } else if (const auto* other = exception_as<std::exception>(error)) {
    // An output callback's exception, invalid input, a workspace error: not the route's to
    // map, only its message is kept.
    result.message = other->what();
  }
  return result;
}

}  // namespace exedev::detail
