#pragma once
// The retry policy, sans-IO: which requests may be re-sent and how long to wait in between.

#include <exedev/client.hpp>

#include <chrono>
#include <optional>
#include <string_view>

namespace exedev::detail {

/// Commands that change nothing: `ls`, `whoami`, `help`. Only these are ever retried.
[[nodiscard]] bool is_read_only(std::string_view command);

/// 5xx: the failures a read-only command (or an idempotent script) is sent again after. A 429 is
/// the rate limit's (rate_limit.hpp), never the retry policy's.
[[nodiscard]] bool is_retryable_status(unsigned status);

/// A Retry-After value: delay-seconds or an HTTP date (relative to `now`). nullopt when
/// unreadable. Capped at five minutes.
[[nodiscard]] std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now);

/// The wait before retry number `attempt` (0-based): exponential from initial_backoff, capped at
/// max_backoff, with "equal jitter" (between half and all of it; `random01` in [0, 1)).
/// A Retry-After from the server (a 503's), when longer, wins.
[[nodiscard]] std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int attempt, double random01,
                                                      std::optional<std::chrono::milliseconds> retry_after);

}  // namespace exedev::detail
