#pragma once
// Client::run's outcome mapping, sans-IO: what a run's end (RunRecovery's step, what stopping
// the command confirmed) becomes for the caller, a RunResult or an error; and what an error of
// one request means to the recovery. The coroutine in client_run.cpp only sends, waits and
// throws what these return; tests/unit/client/run_outcome_test.cpp checks every row.

#include "client/run_recovery.hpp"

#include <cstddef>
#include <exception>
#include <string>
#include <variant>
#include <vector>

#include <exedev/client/run_options.hpp>
#include <exedev/partial_output.hpp>

namespace exedev::detail {

/// What a request that threw means to the run.
enum class RequestFailure {
  final,         ///< the error as it is: a launch refused by the rate limit (429), nothing started
  deadline,      ///< waiting for the rate limit would pass the deadline of a command that may run
  unreadable,    ///< an answer could not be read (ProtocolError): RunRecovery::on_error(unreadable)
  interrupted,   ///< a cancellation or an output callback's exception: on_error(interrupted)
};

/// Classifies `error`, which a request of a run threw, by its code. `launch_unstarted`: the
/// request was the launch and no frame showed the command started.
[[nodiscard]] RequestFailure classify_request_failure(const std::exception_ptr& error, bool launch_unstarted);

/// What a run knows when it ends: what its result or error quotes.
struct RunEndContext {
  std::string vm;
  PartialOutput output;                   ///< what arrived, raw
  std::size_t max_output_bytes = 0;       ///< ClientRunOptions::max_output_bytes
  RunAnswer answer;                       ///< fail: the answer that ended the run
  std::vector<std::string> secrets;       ///< masked in exe.dev's messages (the token, env values)
  StopResult stop = StopResult::unconfirmed;  ///< stop: what stopping the command confirmed
  std::exception_ptr abort;               ///< stop: what interrupted the run (unreadable, interrupted)
};

/// The end of a run: its result when `step` finishes it, else the error to throw (a `fail`
/// step's failure, or for a `stop` step what conclude(step.reason, context.stop) says, the
/// abort nested where the conclusion quotes it). `step.kind` must not be `send`.
[[nodiscard]] std::variant<RunResult, std::exception_ptr> run_outcome(const RunStep& step, RunEndContext context);

}  // namespace exedev::detail
