#include "client/retry.hpp"

#include <catch2/catch.hpp>

using namespace exedev;
using namespace exedev::detail;
using namespace std::chrono;

TEST_CASE("only read-only commands are retryable") {
  CHECK(is_read_only("ls"));
  CHECK(is_read_only("whoami"));
  CHECK(is_read_only("help"));
  for (const auto* c : {"new", "cp", "rm", "ssh", "tag", "comment", "pause", "resume", "restart", ""}) CHECK_FALSE(is_read_only(c));
  CHECK_FALSE(is_retryable_status(429));  // the rate limit's, not the retry policy's
  CHECK(is_retryable_status(500));
  CHECK(is_retryable_status(504));
  CHECK_FALSE(is_retryable_status(422));
  CHECK_FALSE(is_retryable_status(200));
}

TEST_CASE("backoff: exponential, capped, jittered between half and all") {
  RetryPolicy p;
  p.initial_backoff = 500ms;
  p.max_backoff = 8000ms;
  CHECK(backoff_delay(p, 0, 0.0, std::nullopt) == 250ms);
  CHECK(backoff_delay(p, 0, 0.999999, std::nullopt) >= 499ms);
  CHECK(backoff_delay(p, 1, 0.0, std::nullopt) == 500ms);
  CHECK(backoff_delay(p, 3, 0.0, std::nullopt) == 2000ms);
  CHECK(backoff_delay(p, 10, 0.0, std::nullopt) == 4000ms);
  CHECK(backoff_delay(p, 10, 1.0, std::nullopt) == 8000ms);
  CHECK(backoff_delay(p, 60, 0.5, std::nullopt) == 6000ms);  // no overflow
  // Retry-After wins when longer, not when shorter.
  CHECK(backoff_delay(p, 0, 0.0, 3000ms) == 3000ms);
  CHECK(backoff_delay(p, 3, 0.0, 100ms) == 2000ms);
}

TEST_CASE("Retry-After: seconds and HTTP dates") {
  const auto now = system_clock::from_time_t(1'700'000'000);
  CHECK(parse_retry_after("3", now) == 3000ms);
  CHECK(parse_retry_after(" 0 ", now) == 0ms);
  CHECK(parse_retry_after("999999999999999999999", now) == minutes(5));
  CHECK(parse_retry_after("abc", now) == std::nullopt);
  CHECK(parse_retry_after("", now) == std::nullopt);
  // 1700000000 = Tue, 14 Nov 2023 22:13:20 GMT
  CHECK(parse_retry_after("Tue, 14 Nov 2023 22:13:30 GMT", now) == 10000ms);
  CHECK(parse_retry_after("Tue, 14 Nov 2023 22:13:00 GMT", now) == 0ms);
}
