// The rate-limit model (ADR 11) against exe.dev's bucket, on an injected clock.
#include "client/rate_limit.hpp"

#include <catch2/catch.hpp>

#include <stdexcept>

using namespace exedev::detail;
using namespace std::chrono_literals;
using Clock = RateLimitModel::Clock;

namespace {

const Clock::time_point t0 = Clock::time_point{} + 1h;
constexpr RateLimitNumbers exe_dev{60, 1, 120};

// Sends `n` requests at `now` (each must be allowed through), answered at once.
void send_all(RateLimitModel& model, int n, Clock::time_point now) {
  for (int i = 0; i < n; ++i) {
    REQUIRE(model.try_take(now) == Clock::duration::zero());
    model.on_answered(now, 200);
  }
}

// Sends `n` requests at `now` that stay in flight.
void send_in_flight(RateLimitModel& model, int n, Clock::time_point now) {
  for (int i = 0; i < n; ++i) REQUIRE(model.try_take(now) == Clock::duration::zero());
}

}  // namespace

TEST_CASE("rate limit: uncalibrated, nothing waits; the first 429 calibrates at -1") {
  RateLimitModel model(exe_dev, false, t0);
  send_all(model, 200, t0);  // more than the burst: the model does not know the server's state
  CHECK_FALSE(model.calibrated());
  const auto sent = t0;
  (void)model.try_take(sent);
  model.on_refused(t0, sent, std::nullopt);
  CHECK(model.calibrated());
  // -1 after the refusal: a whole token 2 s later.
  CHECK(model.try_take(t0) == 2s);
  CHECK(model.try_take(t0 + 1500ms) == 500ms);
  CHECK(model.try_take(t0 + 2s) == 0s);
  // Then paced at the refill rate.
  CHECK(model.try_take(t0 + 2s) == 1s);
  CHECK(model.try_take(t0 + 3s) == 0s);
}

TEST_CASE("rate limit: paced from the start, a full bucket then one request per second") {
  RateLimitModel model(exe_dev, true, t0);
  send_all(model, 60, t0);
  CHECK(model.try_take(t0) == 1s);
  CHECK(model.try_take(t0 + 1s) == 0s);
  CHECK(model.try_take(t0 + 1s) == 1s);
  // Refills up to the burst, never beyond.
  CHECK(model.full(t0 + 61s));
  send_all(model, 60, t0 + 1h);
  CHECK(model.try_take(t0 + 1h) > 0s);
}

TEST_CASE("rate limit: refusals in a row deepen the assumed debt (the overdraft), bounded") {
  RateLimitModel model(exe_dev, false, t0);
  auto now = t0;
  std::vector<Clock::duration> waits;
  for (int i = 0; i < 10; ++i) {
    // Wait as the model says, send, be refused again: each refusal took a token on the server.
    for (auto w = model.try_take(now); w > 0s; w = model.try_take(now)) now += w;
    const auto sent = now;
    now += 10ms;
    model.on_refused(now, sent, std::nullopt);
    waits.push_back(model.try_take(now));
  }
  // -1, -2, -4, … tokens (each wait a second more than the debt), capped at the overdraft.
  CHECK(waits[0] == 2s);
  CHECK(waits[1] == 3s);
  CHECK(waits[2] == 5s);
  CHECK(waits[3] == 9s);
  CHECK(waits.back() == 121s);
  // An accepted request ends the run: the next refusal assumes -1 again.
  for (auto w = model.try_take(now); w > 0s; w = model.try_take(now)) now += w;
  model.on_answered(now, 200);
  const auto sent = now;
  (void)model.try_take(now);
  model.on_refused(now, sent, std::nullopt);
  CHECK(model.try_take(now) == 2s);
}

TEST_CASE("rate limit: requests in flight together are refused together, one token of debt each") {
  RateLimitModel model(exe_dev, false, t0);
  send_in_flight(model, 4, t0);
  model.on_refused(t0 + 100ms, t0, std::nullopt);
  model.on_refused(t0 + 110ms, t0, std::nullopt);
  model.on_refused(t0 + 120ms, t0, std::nullopt);
  model.on_refused(t0 + 130ms, t0, std::nullopt);
  // The first refusal assumed -1, and -1 more for each of the three still in flight (-4); their
  // refusals were counted then.
  const auto wait = model.try_take(t0 + 130ms);
  CHECK(wait > 4900ms);
  CHECK(wait < 5s);
  // One of them accepted after all: one token less of debt.
  RateLimitModel other(exe_dev, false, t0);
  send_in_flight(other, 2, t0);
  other.on_refused(t0 + 10ms, t0, std::nullopt);
  other.on_answered(t0, 200);
  CHECK(other.try_take(t0 + 10ms) == 2s);
}

TEST_CASE("rate limit: answers decided before the limit (401, 403) took no token") {
  RateLimitModel model(exe_dev, true, t0);
  for (int i = 0; i < 100; ++i) {
    REQUIRE(model.try_take(t0) == 0s);
    model.on_answered(t0, 401);
  }
  send_all(model, 60, t0);
  CHECK(model.try_take(t0) == 1s);
}

TEST_CASE("rate limit: a Retry-After is exe.dev's word for when a token is back") {
  RateLimitModel model(exe_dev, false, t0);
  (void)model.try_take(t0);
  model.on_refused(t0, t0, 7000ms);
  CHECK(model.try_take(t0) == 7s);
  CHECK(model.try_take(t0 + 7s) == 0s);
  // Deeper than the overdraft is impossible: clamped.
  (void)model.try_take(t0 + 7s);
  model.on_refused(t0 + 7s, t0 + 7s, 1000s);
  CHECK(model.try_take(t0 + 7s) == 121s);
}

TEST_CASE("rate limit: a wait past the deadline gives up, saying the wait it needed") {
  RateLimitModel model(exe_dev, false, t0);
  (void)model.try_take(t0);
  model.on_refused(t0, t0, 30000ms);
  auto step = next_rate_limit_step(model, t0, t0 + 10s);
  CHECK(step.kind == RateLimitStep::Kind::give_up);
  CHECK(step.wait == 30s);
  step = next_rate_limit_step(model, t0, std::nullopt);
  CHECK(step.kind == RateLimitStep::Kind::wait);
  CHECK(step.wait == 30s);
  step = next_rate_limit_step(model, t0 + 20s, t0 + 31s);
  CHECK(step.kind == RateLimitStep::Kind::wait);
  CHECK(step.wait == 10s);
  step = next_rate_limit_step(model, t0 + 30s, t0 + 31s);
  CHECK(step.kind == RateLimitStep::Kind::send);
}

TEST_CASE("rate limit: one model per token and endpoint in the process; bad numbers refused") {
  const auto a = shared_rate_limit_model(rate_limit_key("https://exe.dev", "token-a"), exe_dev, false);
  const auto a2 = shared_rate_limit_model(rate_limit_key("https://exe.dev", "token-a"), exe_dev, false);
  const auto b = shared_rate_limit_model(rate_limit_key("https://exe.dev", "token-b"), exe_dev, false);
  const auto other_host = shared_rate_limit_model(rate_limit_key("http://127.0.0.1:9", "token-a"), exe_dev, false);
  CHECK(a == a2);
  CHECK(a != b);
  CHECK(a != other_host);
  CHECK_THROWS_AS(RateLimitModel(RateLimitNumbers{0.5, 1, 0}, false, t0), std::invalid_argument);
  CHECK_THROWS_AS(RateLimitModel(RateLimitNumbers{60, 0, 0}, false, t0), std::invalid_argument);
  CHECK_THROWS_AS(RateLimitModel(RateLimitNumbers{60, 1, -1}, false, t0), std::invalid_argument);
}
