// Client::run's recovery rules, checked without sockets: a walk over every reachable state of
// the machine with every event, then the sequences the rules are written for.
#include "client/run_recovery.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <tuple>
#include <vector>

using namespace exedev::detail;
using namespace std::chrono_literals;
using K = RunAnswer::Kind;

namespace {

struct Event {
  enum class Type { answer, deadline, unreadable, interrupted } type = Type::answer;
  RunAnswer answer;
  bool starts = false;             ///< frames of this request showed the command started
  std::chrono::seconds lasted{0};  ///< how long the request took
  std::string name;
};

Event answer(std::string name, K kind, bool starts = false) {
  Event e;
  e.answer.kind = kind;
  e.starts = starts;
  e.name = std::move(name);
  return e;
}

std::vector<Event> every_event() {
  std::vector<Event> events;
  for (const bool starts : {false, true}) {
    const std::string tag = starts ? " (started)" : "";
    events.push_back(answer("exited 0" + tag, K::exited, starts));
    auto failed = answer("exited 3" + tag, K::exited, starts);
    failed.answer.exit_code = 3;
    events.push_back(failed);
    auto timed_out = answer("exited on VM timeout" + tag, K::exited, starts);
    timed_out.answer.flag = 't';
    events.push_back(timed_out);
    events.push_back(answer("running" + tag, K::running, starts));
    events.push_back(answer("lost" + tag, K::lost, starts));
    events.push_back(answer("not created" + tag, K::not_created, starts));
    events.push_back(answer("output limit" + tag, K::limit, starts));
    for (const unsigned status : {400u, 404u, 422u, 429u, 500u, 502u, 504u}) {
      auto e = answer("HTTP " + std::to_string(status) + tag, K::http_error, starts);
      e.answer.status = status;
      events.push_back(e);
    }
    auto quick_cut = answer("cut at once" + tag, K::cut, starts);
    events.push_back(quick_cut);
    auto late_cut = answer("cut after 9 s" + tag, K::cut, starts);
    late_cut.lasted = 9s;
    events.push_back(late_cut);
    auto unsent = answer("not sent" + tag, K::cut, starts);
    unsent.answer.sent = false;
    events.push_back(unsent);
  }
  for (const auto type : {Event::Type::deadline, Event::Type::unreadable, Event::Type::interrupted}) {
    Event e;
    e.type = type;
    e.name = type == Event::Type::deadline ? "deadline" : type == Event::Type::unreadable ? "unreadable" : "interrupted";
    events.push_back(e);
  }
  return events;
}

RunStep apply(RunRecovery& machine, const Event& e, bool started) {
  switch (e.type) {
    case Event::Type::answer: return machine.on_answer(e.answer, started, e.lasted);
    case Event::Type::deadline: return machine.on_deadline();
    case Event::Type::unreadable: return machine.on_error(StopReason::unreadable);
    case Event::Type::interrupted: break;
  }
  return machine.on_error(StopReason::interrupted);
}

// A state of the walk: the machine and what the requests so far proved.
struct Walk {
  RunRecovery machine;
  bool started = false;       ///< a frame showed the command started
  bool may_have_run = false;  ///< a request that can start the command may have reached the VM
  auto operator<=>(const Walk&) const = default;
};

}  // namespace

TEST_CASE("run recovery: every event in every reachable state keeps the rules") {
  const auto events = every_event();
  std::set<Walk> seen;
  std::vector<Walk> frontier{Walk{RunRecovery(20)}};
  seen.insert(frontier.front());
  std::size_t transitions = 0;
  while (!frontier.empty()) {
    const Walk from = frontier.back();
    frontier.pop_back();
    for (const auto& e : events) {
      INFO("state: mode " << static_cast<int>(from.machine.mode()) << ", started " << from.started
                          << ", may have run " << from.may_have_run << "; event: " << e.name);
      Walk to = from;
      to.started = from.started || e.starts;
      const bool launching = from.machine.mode() == ScriptMode::launch;
      const bool answered = e.type == Event::Type::answer;
      const bool refused_before_running = answered && e.answer.kind == K::http_error &&
                                          (e.answer.status == 429 || e.answer.status < 500);
      const bool not_sent = answered && e.answer.kind == K::cut && !e.answer.sent;
      if (launching && !refused_before_running && !not_sent) to.may_have_run = true;
      const RunStep step = apply(to.machine, e, to.started);
      ++transitions;

      // Deadlines, unreadable answers, interruptions and the output limit stop the command.
      const bool must_stop = !answered || e.answer.kind == K::limit;
      CHECK((step.kind == RunStep::Kind::stop) == must_stop);
      // Only an exit finishes, and a finished (or tombstoned) record is always listed.
      if (step.kind == RunStep::Kind::finish) {
        CHECK((answered && e.answer.kind == K::exited && e.answer.flag != 't'));
        CHECK(step.exit_code == e.answer.exit_code);
      }
      if (answered && e.answer.kind == K::exited) CHECK(step.forget_record);
      if (step.forget_record) {
        CHECK((e.answer.kind == K::exited || (step.kind == RunStep::Kind::fail && step.failure == RunFailure::not_started)));
      }
      if (step.kind == RunStep::Kind::fail) {
        switch (step.failure) {
          case RunFailure::not_sent:
          case RunFailure::not_started:
          case RunFailure::refused:
          case RunFailure::record_not_created:
            // Errors that say nothing ran: never after a frame showed the command started, and
            // never once a launch may have run unless the VM's record proves otherwise.
            CHECK_FALSE(to.started);
            if (step.failure == RunFailure::not_started) CHECK(from.machine.mode() == ScriptMode::probe);
            if (step.failure == RunFailure::not_sent || step.failure == RunFailure::refused) {
              CHECK_FALSE(from.may_have_run);
              CHECK(launching);
            }
            break;
          default: break;
        }
      }
      if (step.kind == RunStep::Kind::send) {
        // The launch is never sent again by the machine (a 429 is the client's rate-limit policy's).
        CHECK(step.mode != ScriptMode::launch);
        CHECK(step.mode == to.machine.mode());
        // A command known to have started is followed, never probed (a probe would tombstone it).
        if (to.started) CHECK(step.mode != ScriptMode::probe);
        CHECK(step.delay <= 4000ms);
        CHECK(to.machine.poll_seconds() >= 1);
        CHECK(to.machine.poll_seconds() <= from.machine.poll_seconds());
        if (seen.insert(to).second) frontier.push_back(to);
      }
    }
  }
  // The walk is finite and covers more than the happy path.
  CHECK(seen.size() > 20);
  CHECK(transitions == seen.size() * events.size());
}

TEST_CASE("run recovery: polls that keep failing end as unknown after max_poll_failures") {
  for (const unsigned status : {0u, 429u, 500u, 502u, 504u}) {
    INFO("failure: " << (status == 0 ? std::string("cut") : "HTTP " + std::to_string(status)));
    RunRecovery machine(20);
    RunAnswer failure;
    failure.kind = status == 0 ? K::cut : K::http_error;
    failure.status = status;
    RunAnswer running;
    running.kind = K::running;
    (void)machine.on_answer(running, true, 0s);  // the launch: started, still running
    std::vector<std::chrono::milliseconds> delays;
    RunStep step;
    for (;;) {
      step = machine.on_answer(failure, true, 0s);
      if (step.kind != RunStep::Kind::send) break;
      CHECK(step.mode == ScriptMode::follow);
      delays.push_back(step.delay);
      REQUIRE(delays.size() <= RunRecovery::max_poll_failures);
    }
    CHECK(step.kind == RunStep::Kind::fail);
    CHECK(step.failure == RunFailure::unreachable);
    CHECK(delays == std::vector<std::chrono::milliseconds>{500ms, 1000ms, 2000ms, 4000ms, 4000ms, 4000ms});
  }
}

TEST_CASE("run recovery: an answer that the command still runs resets the failure count") {
  RunRecovery machine(20);
  RunAnswer cut;
  RunAnswer running;
  running.kind = K::running;
  for (int round = 0; round < 3 * RunRecovery::max_poll_failures; ++round) {
    for (int i = 0; i < RunRecovery::max_poll_failures; ++i) {
      REQUIRE(machine.on_answer(cut, true, 0s).kind == RunStep::Kind::send);
    }
    const auto step = machine.on_answer(running, true, 0s);
    CHECK(step.kind == RunStep::Kind::send);
    CHECK(step.delay == 0ms);
  }
}

TEST_CASE("run recovery: a launch refused with 429 that reaches the machine is reported as refused") {
  // (With RateLimitOptions::wait, the client re-sends a 429 before the machine sees it.)
  RunAnswer limited;
  limited.kind = K::http_error;
  limited.status = 429;
  RunRecovery machine(20);
  auto step = machine.on_answer(limited, false, 0s);
  CHECK((step.kind == RunStep::Kind::fail && step.failure == RunFailure::refused));

  // A 429 on a poll is a failed poll, never a new launch.
  RunRecovery polling(20);
  RunAnswer cut;
  (void)polling.on_answer(cut, false, 0s);
  step = polling.on_answer(limited, false, 0s);
  CHECK((step.kind == RunStep::Kind::send && step.mode == ScriptMode::probe));
}

TEST_CASE("run recovery: a launch whose outcome is unknown is probed, and a missing record means not started") {
  RunRecovery machine(20);
  RunAnswer cut;
  auto step = machine.on_answer(cut, false, 0s);
  CHECK((step.kind == RunStep::Kind::send && step.mode == ScriptMode::probe && step.delay == 500ms));
  RunAnswer lost;
  lost.kind = K::lost;
  step = machine.on_answer(lost, false, 0s);
  CHECK((step.kind == RunStep::Kind::fail && step.failure == RunFailure::not_started && step.forget_record));

  // The same record missing once the command was seen to start: the outcome is unknown.
  RunRecovery started(20);
  (void)started.on_answer(cut, true, 0s);
  CHECK(started.mode() == ScriptMode::follow);
  step = started.on_answer(lost, true, 0s);
  CHECK((step.kind == RunStep::Kind::fail && step.failure == RunFailure::record_lost && !step.forget_record));

  // A launch that was never sent fails at once, and says so.
  RunRecovery unsent(20);
  RunAnswer not_sent;
  not_sent.sent = false;
  step = unsent.on_answer(not_sent, false, 0s);
  CHECK((step.kind == RunStep::Kind::fail && step.failure == RunFailure::not_sent));
}

TEST_CASE("run recovery: a request cut after a while lowers the poll's wait below it") {
  RunRecovery machine(20);
  RunAnswer cut;
  (void)machine.on_answer(cut, true, 9s);
  CHECK(machine.poll_seconds() == 8);
  (void)machine.on_answer(cut, true, 15s);  // never raised again
  CHECK(machine.poll_seconds() == 8);
  (void)machine.on_answer(cut, true, 1s);  // a quick cut says nothing about the limit
  CHECK(machine.poll_seconds() == 8);
  RunAnswer unsent;
  unsent.sent = false;
  (void)machine.on_answer(unsent, true, 5s);  // nor does a request that never left
  CHECK(machine.poll_seconds() == 8);
}

TEST_CASE("run recovery: a stopped run claims only what the stop confirmed") {
  using R = RunConclusion;
  const std::vector<std::tuple<StopReason, StopResult, R>> table{
      {StopReason::deadline, StopResult::stopped, R::timeout},
      {StopReason::deadline, StopResult::never_started, R::timeout},
      {StopReason::deadline, StopResult::unconfirmed, R::timeout_unknown},
      {StopReason::output_limit, StopResult::stopped, R::output_limit},
      {StopReason::output_limit, StopResult::never_started, R::output_limit},
      {StopReason::output_limit, StopResult::unconfirmed, R::output_limit},
      {StopReason::unreadable, StopResult::stopped, R::unreadable},
      {StopReason::unreadable, StopResult::never_started, R::unreadable},
      {StopReason::unreadable, StopResult::unconfirmed, R::unreadable_unknown},
      {StopReason::interrupted, StopResult::stopped, R::rethrow},
      {StopReason::interrupted, StopResult::never_started, R::rethrow},
      {StopReason::interrupted, StopResult::unconfirmed, R::rethrow},
  };
  for (const auto& [reason, stop, expected] : table) {
    INFO("reason " << static_cast<int>(reason) << ", stop " << static_cast<int>(stop));
    CHECK(conclude(reason, stop) == expected);
  }
  const std::string stopped = stop_fate(StopResult::stopped);
  const std::string never = stop_fate(StopResult::never_started);
  const std::string unconfirmed = stop_fate(StopResult::unconfirmed);
  CHECK(stopped == "the command was stopped");
  CHECK(never == "the command was never started");
  CHECK(unconfirmed.find("may still be running") != std::string::npos);
  CHECK(unconfirmed.find("was stopped") == std::string::npos);
}
