#include "client/run_outcome.hpp"

#include "client/api_response.hpp"
#include "common/exceptions.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include <exedev/errors.hpp>

namespace exedev::detail {

namespace {

template <typename E>
std::exception_ptr error_ptr(E error) {
  return std::make_exception_ptr(std::move(error));
}

// `error` with `cause` nested, as std::throw_with_nested inside a handler of `cause` makes it.
template <typename E>
std::exception_ptr nested_error(const std::exception_ptr& cause, E error) {
  try {
    throw_nested(cause, std::move(error));
  } catch (...) {
    return std::current_exception();
  }
}

std::string what_of(const std::exception_ptr& error) {
  const auto* e = exception_as<std::exception>(error);
  return e != nullptr ? e->what() : "an unknown exception";
}

OutcomeUnknownError unknown(const RunEndContext& c, const std::string& why, bool vm_gone = false) {
  return OutcomeUnknownError(fmt::format("run on VM \"{}\": {}; the command may have run", c.vm, why), c.output, vm_gone);
}

// The APIError of exe.dev's answer, of the type its status has.
std::exception_ptr api_error(const RunEndContext& c) {
  try {
    throw_api_error(c.answer.status, "ssh", c.answer.body, c.secrets, c.answer.retry_after);
  } catch (...) {
    return std::current_exception();
  }
}

std::exception_ptr failure_error(RunFailure failure, const RunEndContext& c) {
  switch (failure) {
    case RunFailure::timed_out_on_vm:
      return error_ptr(RunTimeoutError(fmt::format("run on VM \"{}\" passed its timeout; the command was stopped", c.vm),
                                       c.output));
    case RunFailure::refused: return api_error(c);  // not started
    case RunFailure::not_started:
      return error_ptr(ConnectionError(
          fmt::format("run on VM \"{}\": the launch request failed and the command was not started", c.vm), false));
    case RunFailure::not_sent:
      return error_ptr(
          ConnectionError(fmt::format("run on VM \"{}\": could not send the command; it was not started", c.vm), false));
    case RunFailure::record_lost: return error_ptr(unknown(c, "its record on the VM is lost"));
    case RunFailure::record_not_created:
      return error_ptr(
          ProtocolError(fmt::format("run on VM \"{}\": could not create the command's record; nothing was started", c.vm)));
    case RunFailure::poll_refused: {
      const auto message = server_message(c.answer.body, c.secrets);
      return error_ptr(unknown(c, fmt::format("exe.dev answered: {}", message), message.find("not found") != std::string::npos));
    }
    case RunFailure::poll_status: return error_ptr(unknown(c, fmt::format("polling failed with HTTP {}", c.answer.status)));
    case RunFailure::unreachable: return error_ptr(unknown(c, "the VM could not be reached to collect the result"));
  }
  throw std::logic_error("run_outcome: unknown RunFailure");
}

std::exception_ptr conclusion_error(RunConclusion conclusion, const RunEndContext& c) {
  const std::string fate = stop_fate(c.stop);
  switch (conclusion) {
    case RunConclusion::timeout:
      return error_ptr(RunTimeoutError(fmt::format("run on VM \"{}\" passed its timeout; {}", c.vm, fate), c.output));
    case RunConclusion::timeout_unknown: return error_ptr(unknown(c, "it passed its timeout and " + fate));
    case RunConclusion::output_limit:
      return error_ptr(OutputLimitError(
          fmt::format("run on VM \"{}\" wrote more than {} bytes of output; {}", c.vm, c.max_output_bytes, fate),
          c.max_output_bytes, c.output));
    case RunConclusion::unreadable_unknown:
      return nested_error(c.abort, unknown(c, fmt::format("exe.dev's answer could not be read ({})", what_of(c.abort))));
    case RunConclusion::unreadable:
      return nested_error(
          c.abort, ProtocolError(fmt::format("run on VM \"{}\": exe.dev's answer could not be read; {}", c.vm, fate)));
    case RunConclusion::rethrow: return c.abort;  // a cancellation, or an output callback's exception, as it is
  }
  throw std::logic_error("run_outcome: unknown RunConclusion");
}

}  // namespace

RequestFailure classify_request_failure(const std::exception_ptr& error, bool launch_unstarted) {
  const auto* e = exception_as<Error>(error);
  if (e == nullptr) return RequestFailure::interrupted;
  // A 429 that reaches the run is one the client's rate-limit policy would not wait for
  // (ADR 11): a launch was never sent again after it, so nothing was started.
  if (e->code() == errc::rate_limited) return launch_unstarted ? RequestFailure::final : RequestFailure::deadline;
  if (e->code() == errc::protocol_error) return RequestFailure::unreadable;
  return RequestFailure::interrupted;
}

std::variant<RunResult, std::exception_ptr> run_outcome(const RunStep& step, RunEndContext context) {
  switch (step.kind) {
    case RunStep::Kind::finish:
      return RunResult{step.exit_code, std::move(context.output.stdout_data), std::move(context.output.stderr_data)};
    case RunStep::Kind::fail: return failure_error(step.failure, context);
    case RunStep::Kind::stop: return conclusion_error(conclude(step.reason, context.stop), context);
    case RunStep::Kind::send: break;
  }
  throw std::logic_error("run_outcome: a step that sends a request ends nothing");
}

}  // namespace exedev::detail
