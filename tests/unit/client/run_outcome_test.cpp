// Client::run's outcome mapping without sockets: every failure and every conclusion of a run,
// one row each, with the result or the error it becomes (code, what it claims about the
// command, its output, its message, what it nests); and how a request's error reads to the run.
#include "client/run_outcome.hpp"

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <exedev/errors.hpp>

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

using namespace exedev;
using namespace exedev::detail;
using namespace std::chrono_literals;

namespace {

const PartialOutput arrived{"out bytes", "err bytes"};

RunStep fail(RunFailure failure) {
  RunStep step;
  step.kind = RunStep::Kind::fail;
  step.failure = failure;
  return step;
}

RunStep stop(StopReason reason) {
  RunStep step;
  step.kind = RunStep::Kind::stop;
  step.reason = reason;
  return step;
}

RunAnswer http(unsigned status, std::string body) {
  RunAnswer answer;
  answer.kind = RunAnswer::Kind::http_error;
  answer.status = status;
  answer.body = std::move(body);
  answer.retry_after = 2000ms;
  return answer;
}

std::exception_ptr unreadable_answer() { return std::make_exception_ptr(ProtocolError("frames out of order")); }
std::exception_ptr cancellation() {
  return std::make_exception_ptr(boost::system::system_error(boost::asio::error::operation_aborted));
}

// What an error of the mapping says, read through exedev::Error only.
struct Seen {
  errc code{};
  bool may_have_run = false;
  bool vm_gone = false;
  std::optional<PartialOutput> output;
  std::string message;
  bool nests_the_abort = false;
};

Seen see(const std::exception_ptr& error) {
  Seen seen;
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    seen.code = static_cast<errc>(e.code().value());
    seen.may_have_run = e.may_have_run();
    seen.message = e.what();
    if (const auto* carrier = dynamic_cast<const WithPartialOutput*>(&e)) seen.output = carrier->output();
    if (const auto* unknown = dynamic_cast<const OutcomeUnknownError*>(&e)) seen.vm_gone = unknown->vm_gone();
    try {
      std::rethrow_if_nested(e);
    } catch (const ProtocolError& nested) {
      seen.nests_the_abort = std::string(nested.what()) == "frames out of order";
    }
  }
  return seen;
}

}  // namespace

TEST_CASE("run outcome: every failure and conclusion becomes its result or error") {
  struct Row {
    std::string name;
    RunStep step;
    StopResult stop = StopResult::unconfirmed;
    RunAnswer answer{};
    std::exception_ptr abort{};
    errc code{};
    bool may_have_run = false;
    bool vm_gone = false;
    bool keeps_output = false;
    std::string says;
    bool nests_the_abort = false;
  };
  const std::vector<Row> rows = {
      {"the VM stopped it at its timeout", fail(RunFailure::timed_out_on_vm), {}, {}, {}, errc::run_timeout, true, false,
       true, "passed its timeout; the command was stopped"},
      {"the launch refused", fail(RunFailure::refused), {}, http(403, R"({"error":"no"})"), {}, errc::permission_denied,
       false, false, false, "HTTP 403: no"},
      {"the launch rate-limited", fail(RunFailure::refused), {}, http(429, R"({"error":"slow down"})"), {},
       errc::rate_limited, false, false, false, "HTTP 429"},
      {"the launch failed, no record", fail(RunFailure::not_started), {}, {}, {}, errc::connection_failed, false, false,
       false, "the command was not started"},
      {"the launch not sent", fail(RunFailure::not_sent), {}, {}, {}, errc::connection_failed, false, false, false,
       "could not send the command"},
      {"the record lost", fail(RunFailure::record_lost), {}, {}, {}, errc::outcome_unknown, true, false, true,
       "its record on the VM is lost; the command may have run"},
      {"the record not created", fail(RunFailure::record_not_created), {}, {}, {}, errc::protocol_error, true, false,
       false, "nothing was started"},
      {"a poll refused: VM gone", fail(RunFailure::poll_refused), {}, http(422, R"({"error":"vm \"v\" not found"})"), {},
       errc::outcome_unknown, true, true, true, "exe.dev answered: vm \"v\" not found"},
      {"a poll refused: VM paused", fail(RunFailure::poll_refused), {}, http(422, R"({"error":"vm is paused"})"), {},
       errc::outcome_unknown, true, false, true, "exe.dev answered: vm is paused"},
      {"a poll with another status", fail(RunFailure::poll_status), {}, http(404, "{}"), {}, errc::outcome_unknown, true,
       false, true, "polling failed with HTTP 404"},
      {"the VM unreachable", fail(RunFailure::unreachable), {}, {}, {}, errc::outcome_unknown, true, false, true,
       "could not be reached"},
      {"deadline, stopped", stop(StopReason::deadline), StopResult::stopped, {}, {}, errc::run_timeout, true, false, true,
       "passed its timeout; the command was stopped"},
      {"deadline, never started", stop(StopReason::deadline), StopResult::never_started, {}, {}, errc::run_timeout, true,
       false, true, "the command was never started"},
      {"deadline, unconfirmed", stop(StopReason::deadline), StopResult::unconfirmed, {}, {}, errc::outcome_unknown, true,
       false, true, "it passed its timeout and the VM did not confirm"},
      {"output limit, stopped", stop(StopReason::output_limit), StopResult::stopped, {}, {}, errc::output_limit, true,
       false, true, "wrote more than 1000 bytes of output; the command was stopped"},
      {"output limit, unconfirmed", stop(StopReason::output_limit), StopResult::unconfirmed, {}, {}, errc::output_limit,
       true, false, true, "it may still be running"},
      {"unreadable, stopped", stop(StopReason::unreadable), StopResult::stopped, {}, unreadable_answer(),
       errc::protocol_error, true, false, false, "answer could not be read; the command was stopped", true},
      {"unreadable, unconfirmed", stop(StopReason::unreadable), StopResult::unconfirmed, {}, unreadable_answer(),
       errc::outcome_unknown, true, false, true, "could not be read (frames out of order)", true},
  };
  for (const auto& row : rows) {
    SECTION(row.name) {
      RunEndContext context;
      context.vm = "v";
      context.output = arrived;
      context.max_output_bytes = 1000;
      context.answer = row.answer;
      context.stop = row.stop;
      context.abort = row.abort;
      auto outcome = run_outcome(row.step, context);
      REQUIRE(outcome.index() == 1);
      const auto seen = see(std::get<1>(outcome));
      CHECK(seen.code == row.code);
      CHECK(seen.may_have_run == row.may_have_run);
      CHECK(seen.vm_gone == row.vm_gone);
      CHECK(seen.output.has_value() == row.keeps_output);
      if (seen.output) CHECK(*seen.output == arrived);
      CHECK_THAT(seen.message, Catch::Contains(row.says));
      CHECK(seen.nests_the_abort == row.nests_the_abort);
    }
  }
}

TEST_CASE("run outcome: an exit is the result, with what arrived") {
  RunStep step;
  step.kind = RunStep::Kind::finish;
  step.exit_code = 3;
  RunEndContext context;
  context.output = arrived;
  auto outcome = run_outcome(step, context);
  REQUIRE(outcome.index() == 0);
  const auto& result = std::get<0>(outcome);
  CHECK(result.exit_code == 3);
  CHECK(result.stdout_bytes == "out bytes");
  CHECK(result.stderr_bytes == "err bytes");
}

TEST_CASE("run outcome: an interruption is raised as it was, whatever the stop confirmed") {
  for (const auto stop_result : {StopResult::stopped, StopResult::never_started, StopResult::unconfirmed}) {
    RunEndContext context;
    context.stop = stop_result;
    context.abort = cancellation();
    auto outcome = run_outcome(stop(StopReason::interrupted), context);
    REQUIRE(outcome.index() == 1);
    CHECK(std::get<1>(outcome) == context.abort);
  }
}

TEST_CASE("run outcome: exe.dev's message is masked of the run's secrets") {
  RunEndContext context;
  context.vm = "v";
  context.answer = http(422, R"({"error":"env value hunter2 refused"})");
  context.secrets = {"hunter2"};
  auto outcome = run_outcome(fail(RunFailure::poll_refused), context);
  REQUIRE(outcome.index() == 1);
  CHECK(see(std::get<1>(outcome)).message.find("hunter2") == std::string::npos);
}

TEST_CASE("run outcome: what a request's error means to the run, by its code") {
  struct Row {
    std::string name;
    std::exception_ptr error;
    bool launch_unstarted;
    RequestFailure means;
  };
  const std::vector<Row> rows = {
      {"429 at an unstarted launch", std::make_exception_ptr(RateLimitedError("ssh", "slow")), true, RequestFailure::final},
      {"429 once the command may run", std::make_exception_ptr(RateLimitedError("ssh", "slow")), false,
       RequestFailure::deadline},
      {"an unreadable answer", unreadable_answer(), false, RequestFailure::unreadable},
      {"an unreadable answer at the launch", unreadable_answer(), true, RequestFailure::unreadable},
      {"a cancellation", cancellation(), true, RequestFailure::interrupted},
      {"a dropped connection", std::make_exception_ptr(ConnectionError("reset", true)), false,
       RequestFailure::interrupted},
      {"an output callback's exception", std::make_exception_ptr(std::runtime_error("callback")), false,
       RequestFailure::interrupted},
  };
  for (const auto& row : rows) {
    SECTION(row.name) { CHECK(classify_request_failure(row.error, row.launch_unstarted) == row.means); }
  }
}
