#pragma once
// Client::run's recovery, sans-IO: what a run does after each of its requests ends. The
// coroutine in client_run.cpp sends the requests and streams the frames; run_outcome.hpp turns
// the run's end into its result or error; every rule about which request goes next, when a command is known not to have
// started, and what an error may claim about the command lives here, and is tested without
// sockets (tests/unit/client/run_recovery_test.cpp).
//
// The rules:
// - The launch request is the only one that can start the command, and it is sent again only
//   after an answer that proves the command did not run: exe.dev's 429 (refused before
//   anything runs, exedev-api.md §1.5), which the client's rate-limit policy re-sends before
//   this machine sees it (ADR 11); a 429 that reaches it (waiting off) is the refusal it is.
//   After any other failure the
//   run recovers from the command's record: `probe` while the command is not known to have
//   started (a missing record then becomes a tombstone, so a late launch cannot start it),
//   `follow` once it is.
// - Consecutive polls that end without an answer (a cut stream, 5xx, 429) are retried after a
//   growing delay, at most `max_poll_failures` times; then the outcome is unknown. An answer
//   that says the command is still running resets the count.
// - A deadline, an output limit, an unreadable answer or an interruption (cancellation, an
//   output callback's exception) stops the remote command first; what the error then says
//   about the command depends only on what the stop confirmed (`conclude`).

#include "client/run_protocol.hpp"

#include <chrono>
#include <compare>
#include <optional>
#include <string>

namespace exedev::detail {

/// How one run request ended.
struct RunAnswer {
  enum class Kind {
    exited,       ///< the final frame: the command exited
    running,      ///< the request's wait ended with the command still running
    lost,         ///< the VM has no record of the command
    not_created,  ///< the VM could not create the record: nothing was started
    limit,        ///< the output limit was reached; the request was abandoned
    http_error,   ///< exe.dev answered with a status other than 200
    cut,          ///< the answer ended without a final frame
  };
  Kind kind = Kind::cut;
  int exit_code = 0;    ///< exited
  char flag = '-';      ///< exited: 't' when the VM stopped the command at its timeout
  unsigned status = 0;  ///< http_error
  std::string body;     ///< http_error: exe.dev's answer (for its message)
  std::optional<std::chrono::milliseconds> retry_after;  ///< http_error: its Retry-After
  bool sent = true;     ///< cut: whether the request may have reached exe.dev
};

/// Why a run stops its remote command before reporting.
enum class StopReason {
  deadline,      ///< ClientRunOptions::timeout passed (plus the VM's grace to report it)
  output_limit,  ///< more output than ClientRunOptions::max_output_bytes
  unreadable,    ///< an answer could not be read (ProtocolError)
  interrupted,   ///< a cancellation, or an exception from an output callback
};

/// What stopping the remote command achieved.
enum class StopResult {
  stopped,        ///< the VM reported the command's end and removed its record
  never_started,  ///< no record existed: a tombstone now keeps a late launch from starting it
  unconfirmed,    ///< no readable answer within the stop's bound: the command may still run
};

/// The errors a run can end with before anything needs stopping.
enum class RunFailure {
  timed_out_on_vm,     ///< RunTimeoutError: the VM stopped the command at its timeout
  refused,             ///< the launch was refused (4xx): an APIError, nothing started
  not_started,         ///< ConnectionError (not sent): the launch failed and the probe found no record
  not_sent,            ///< ConnectionError (not sent): the launch could not be sent
  record_lost,         ///< OutcomeUnknownError: the record vanished after the command may have run
  record_not_created,  ///< ProtocolError: the record could not be created, nothing was started
  poll_refused,        ///< OutcomeUnknownError: exe.dev refused a poll with 422 (VM gone or paused)
  poll_status,         ///< OutcomeUnknownError: a poll got another 4xx
  unreachable,         ///< OutcomeUnknownError: too many polls in a row ended without an answer
};

/// What Client::run does next.
struct RunStep {
  enum class Kind {
    send,    ///< send a request in `mode` after `delay`
    finish,  ///< the command exited with `exit_code`
    fail,    ///< throw `failure`; nothing runs on the VM that needs stopping
    stop,    ///< stop the remote command, then throw what conclude(`reason`, …) says
  };
  Kind kind = Kind::send;
  ScriptMode mode = ScriptMode::launch;
  std::chrono::milliseconds delay{0};
  int exit_code = 0;
  RunFailure failure = RunFailure::unreachable;
  StopReason reason = StopReason::interrupted;
  /// The run's record is finished (or a tombstone): list it for removal by a later request.
  bool forget_record = false;
};

/// How a stopped run ends.
enum class RunConclusion {
  timeout,          ///< RunTimeoutError saying what the stop confirmed
  timeout_unknown,  ///< OutcomeUnknownError: the timeout passed and the stop was not confirmed
  output_limit,     ///< OutputLimitError saying what the stop confirmed
  unreadable,       ///< ProtocolError saying what the stop confirmed (the cause nested)
  unreadable_unknown,  ///< OutcomeUnknownError (the cause nested): the stop was not confirmed
  rethrow,          ///< the interruption, as it was
};

class RunRecovery {
 public:
  /// `poll_seconds`: how long a poll waits for the exit at most.
  explicit RunRecovery(int poll_seconds);

  /// The mode of the next request (the first is the launch).
  [[nodiscard]] ScriptMode mode() const noexcept { return mode_; }
  /// How long the next poll may wait for the exit; lowered when exe.dev cuts requests early.
  [[nodiscard]] int poll_seconds() const noexcept { return poll_seconds_; }

  /// A request ended with `answer`. `started`: whether any frame so far showed that the
  /// command started; `lasted`: how long the request took.
  [[nodiscard]] RunStep on_answer(const RunAnswer& answer, bool started, std::chrono::seconds lasted);
  /// The run's deadline passed before the request ended.
  [[nodiscard]] RunStep on_deadline() const;
  /// The request threw: `unreadable` for a ProtocolError, `interrupted` for anything else.
  [[nodiscard]] RunStep on_error(StopReason reason) const;

  /// The consecutive polls without an answer after which the outcome is unknown.
  static constexpr int max_poll_failures = 6;
  /// The delay before the poll after `failures` consecutive failures (1-based).
  [[nodiscard]] static std::chrono::milliseconds poll_retry_delay(int failures);

  /// Ordered by state, so a test can enumerate the reachable states.
  auto operator<=>(const RunRecovery&) const = default;

 private:
  RunStep retry_from_record(bool started);

  ScriptMode mode_ = ScriptMode::launch;
  int poll_seconds_;
  int failures_ = 0;
};

/// What a stopped run throws.
[[nodiscard]] RunConclusion conclude(StopReason reason, StopResult stop);

/// What the error says about the command after a stop: only what the VM confirmed.
[[nodiscard]] const char* stop_fate(StopResult stop);

}  // namespace exedev::detail
