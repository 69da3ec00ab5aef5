#include "emulator/rate_limiter.hpp"

#include <catch2/catch.hpp>

using namespace exedev::emulator;
using namespace std::chrono_literals;

TEST_CASE("rate limiter: burst, refill and overdraft", "[rate]") {
  RateLimiter limiter;
  const RateLimit limits{true, 3, 1, 2};
  const auto t0 = RateLimiter::Clock::time_point{} + 1000s;

  for (int i = 0; i < 3; ++i) CHECK(limiter.allow(limits, "k", t0));
  CHECK_FALSE(limiter.allow(limits, "k", t0));  // bucket at -1
  CHECK_FALSE(limiter.allow(limits, "k", t0));  // -2: the overdraft floor
  CHECK_FALSE(limiter.allow(limits, "k", t0));  // stays at -2
  // Other keys have their own bucket.
  CHECK(limiter.allow(limits, "other", t0));
  // 2 s refill only brings the debt back to 0: still refused (and back to -1).
  CHECK_FALSE(limiter.allow(limits, "k", t0 + 2s));
  // 2 more seconds: -1 + 2 = 1 token.
  CHECK(limiter.allow(limits, "k", t0 + 4s));
  // Refill never exceeds the burst.
  int allowed = 0;
  for (int i = 0; i < 10; ++i) allowed += limiter.allow(limits, "k", t0 + 1000s) ? 1 : 0;
  CHECK(allowed == 3);
}
