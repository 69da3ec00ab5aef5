#pragma once
// Doubling delays with a cap: retries and polls that back off. Internal, sans-IO.

#include <algorithm>
#include <chrono>

namespace exedev::detail {

/// The delay before attempt `attempt` (0-based): `first` doubled `attempt` times, at most `cap`
/// (a negative `first` or `cap` counts as 0). Never overflows, whatever the cap.
template <typename Rep, typename Period>
[[nodiscard]] std::chrono::duration<Rep, Period> doubled_delay(std::chrono::duration<Rep, Period> first, int attempt,
                                                               std::chrono::duration<Rep, Period> cap) {
  using Duration = std::chrono::duration<Rep, Period>;
  cap = std::max(cap, Duration::zero());
  Duration delay = std::clamp(first, Duration::zero(), cap);
  for (int i = 0; i < attempt && delay < cap; ++i) delay = delay > cap / 2 ? cap : delay * 2;
  return delay;
}

/// A poll interval that doubles after each idle round up to `cap`, and starts again from
/// `first` after a round that made progress.
class Backoff {
 public:
  using Duration = std::chrono::steady_clock::duration;
  Backoff(Duration first, Duration cap) : first_(first), cap_(cap), current_(first) {}
  /// The delay to wait now.
  [[nodiscard]] Duration current() const { return current_; }
  /// After a round: the delay doubles, or starts again from `first` after progress.
  void advance(bool progress = false) { current_ = progress ? first_ : doubled_delay(current_, 1, cap_); }

 private:
  Duration first_;
  Duration cap_;
  Duration current_;
};

}  // namespace exedev::detail
