#pragma once
// The retry policy, sans-IO: which requests may be re-sent and how long to wait in between.

#include <exedev/client.hpp>

#include <chrono>
#include <optional>
#include <string_view>

namespace exedev::detail {

/// Commands that change nothing: `ls`, `whoami`, `help`. Only these are ever retried.
[[nodiscard]] bool is_read_only(std::string_view command);

/// 429 and 5xx.
[[nodiscard]] bool is_retryable_status(unsigned status);

/// A Retry-After value: delay-seconds or an HTTP date (relative to `now`). nullopt when
/// unreadable. Capped at five minutes.
[[nodiscard]] std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now);

/// The wait before retry number `attempt` (0-based): exponential from initial_backoff, capped at
/// max_backoff, with "equal jitter" (between half and all of it; `random01` in [0, 1)).
/// A Retry-After from the server, when longer, wins.
[[nodiscard]] std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int attempt, double random01,
                                                      std::optional<std::chrono::milliseconds> retry_after);

/// Client-side pacing (PacingOptions), sans-IO: a token bucket that starts full. A request that
/// finds it empty reserves the next token, so concurrent callers queue in order.
class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;
  /// Throws std::invalid_argument unless burst >= 1 and per_second > 0.
  TokenBucket(double burst, double per_second, Clock::time_point now);
  /// Takes a token; returns how long to wait before sending (zero when one was there).
  [[nodiscard]] Clock::duration take(Clock::time_point now);

 private:
  double burst_;
  double per_second_;
  double tokens_;
  Clock::time_point last_;
};

}  // namespace exedev::detail
