#pragma once
// Turning a caller's timeout (seconds as a double) into a steady_clock deadline without
// overflow. Internal, header-only, never installed.

#include <chrono>
#include <optional>

namespace exedev::detail {

/// A finite timeout this long is no practical limit: it sets no deadline. Converting a longer
/// one would overflow steady_clock's int64 nanoseconds (~292 years), which is undefined
/// behaviour and in practice a deadline in the past.
inline constexpr std::chrono::duration<double> no_practical_limit = std::chrono::hours(24 * 365 * 100);

/// `now + timeout`, or nullopt for no timeout or one of at least no_practical_limit.
inline std::optional<std::chrono::steady_clock::time_point> deadline_after(
    const std::optional<std::chrono::duration<double>>& timeout) {
  using Clock = std::chrono::steady_clock;
  if (!timeout || *timeout >= no_practical_limit) return std::nullopt;
  const auto span = std::chrono::duration_cast<Clock::duration>(*timeout);  // under 100 years: fits
  const auto now = Clock::now();
  if (now > Clock::time_point::max() - span) return std::nullopt;  // a clock whose epoch is far back
  return now + span;
}

}  // namespace exedev::detail
