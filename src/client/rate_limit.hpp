#pragma once
// The rate-limit policy's model of exe.dev's token bucket (ADR 11), sans-IO.
//
// exe.dev limits /exec per key with a token bucket (exedev-api.md §6): `burst` tokens, refilled
// at `per_second`; a request takes one; a request that finds less than one is refused with 429
// before anything runs and still takes one, down to `-overdraft`, so re-sending at once makes
// the debt deeper. The model mirrors that bucket for one token:
// - It is learned, not assumed: until exe.dev first refuses a request of this token (or
//   RateLimitOptions::pace_from_start), nothing waits, because the client cannot know how much
//   other processes or earlier runs took from the bucket.
// - A 429 calibrates it: the server was below one token when the request arrived and the refusal
//   took one more, so the bucket is at -1 at best (a Retry-After says exactly where it is).
//   Requests sent after the model learned a refusal and refused again, with no accepted request
//   in between, mean a deeper debt than assumed: the assumed debt doubles each time (bounded by
//   the overdraft), so blind re-sends stay few. Requests that were in flight together are
//   refused together; each adds one token of debt, as on the server.
// - Once calibrated, a request waits until the model holds a whole token, then takes it: the
//   client paces at exe.dev's rate instead of collecting refusals.

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace exedev::detail {

struct RateLimitNumbers {
  double burst = 60;
  double per_second = 1;
  double overdraft = 120;
};

class RateLimitModel {
 public:
  using Clock = std::chrono::steady_clock;
  /// Throws std::invalid_argument unless burst >= 1, per_second > 0 and overdraft >= 0.
  RateLimitModel(RateLimitNumbers numbers, bool calibrated, Clock::time_point now);

  /// Takes a token when the model holds one (or is not calibrated yet) and returns zero: send
  /// now, then report how it went (on_refused, on_answered or on_lost). Otherwise takes nothing
  /// and returns how long until it holds one: wait, then ask again (so waiters see what
  /// refusals meanwhile taught the model).
  [[nodiscard]] Clock::duration try_take(Clock::time_point now);
  /// exe.dev refused with 429 a request sent (its token taken) at `sent_at`; `retry_after` is
  /// its Retry-After, when it sent one. Requests still in flight are assumed refused too (each
  /// takes a token of debt on the server); a request that was in flight when an earlier refusal
  /// was learned was counted then.
  void on_refused(Clock::time_point now, Clock::time_point sent_at, std::optional<std::chrono::milliseconds> retry_after);
  /// exe.dev answered a request sent at `sent_at` with `status`, anything but 429. 401 and 403
  /// are decided before the rate limit (exedev-api.md §1.5) and took no token; any other
  /// answer proves the bucket held one when the request arrived.
  void on_answered(Clock::time_point sent_at, unsigned status);
  /// A request ended without an answer (connection lost, cancelled): its token stays taken, as
  /// it may have reached exe.dev.
  void on_lost();

  [[nodiscard]] bool calibrated() const;
  /// The whole bucket is back (refilled to `burst`): the model knows nothing a fresh one would not.
  [[nodiscard]] bool full(Clock::time_point now) const;

 private:
  void refill(Clock::time_point now);

  mutable std::mutex mutex_;  // clients of one token may run on different threads
  RateLimitNumbers numbers_;
  bool calibrated_;
  double tokens_;
  Clock::time_point updated_;
  int refusals_in_a_row_ = 0;
  int in_flight_ = 0;
  std::optional<Clock::time_point> last_refusal_;
};

/// What a request does next under the policy: send now (a token was taken), wait `wait` and ask
/// again, or give up because the wait would end after `deadline` (`wait`: the wait it needed).
struct RateLimitStep {
  enum class Kind { send, wait, give_up };
  Kind kind = Kind::send;
  RateLimitModel::Clock::duration wait{};
};
[[nodiscard]] RateLimitStep next_rate_limit_step(RateLimitModel& model, RateLimitModel::Clock::time_point now,
                                                 std::optional<RateLimitModel::Clock::time_point> deadline);

/// The model of the token `token_key` identifies (a hash of endpoint and token: never the
/// token), shared by every Client of that key in the process. The first client's numbers make
/// it. Models that are full again and unused are forgotten (a new one would be the same).
[[nodiscard]] std::shared_ptr<RateLimitModel> shared_rate_limit_model(std::size_t token_key, RateLimitNumbers numbers,
                                                                      bool calibrated);

/// The key of a token at an endpoint, for shared_rate_limit_model.
[[nodiscard]] std::size_t rate_limit_key(const std::string& endpoint, const std::string& token);

}  // namespace exedev::detail
