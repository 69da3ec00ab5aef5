#include "client/rate_limit.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <stdexcept>

namespace exedev::detail {

namespace {

using Seconds = std::chrono::duration<double>;

RateLimitModel::Clock::duration seconds(double s) {
  return std::chrono::duration_cast<RateLimitModel::Clock::duration>(Seconds(std::max(s, 0.0)));
}

}  // namespace

RateLimitModel::RateLimitModel(RateLimitNumbers numbers, bool calibrated, Clock::time_point now)
    : numbers_(numbers), calibrated_(calibrated), tokens_(numbers.burst), updated_(now) {
  if (!(numbers.burst >= 1) || !(numbers.per_second > 0) || !(numbers.overdraft >= 0)) {
    throw std::invalid_argument("the rate limit needs a burst of at least 1, a positive rate and an overdraft of at least 0");
  }
}

void RateLimitModel::refill(Clock::time_point now) {
  if (now <= updated_) return;
  tokens_ = std::min(numbers_.burst, tokens_ + Seconds(now - updated_).count() * numbers_.per_second);
  updated_ = now;
}

RateLimitModel::Clock::duration RateLimitModel::try_take(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  refill(now);
  if (tokens_ >= 1 || !calibrated_) {
    // Uncalibrated, the count still runs (never below the overdraft), so that the first refusal
    // meets a model that knows what this process took.
    tokens_ = std::max(-numbers_.overdraft, tokens_ - 1);
    ++in_flight_;
    return Clock::duration::zero();
  }
  // At least a millisecond: a wait that rounds to nothing would spin.
  return std::max<Clock::duration>(seconds((1 - tokens_) / numbers_.per_second), std::chrono::milliseconds(1));
}

void RateLimitModel::on_refused(Clock::time_point now, Clock::time_point sent_at,
                                std::optional<std::chrono::milliseconds> retry_after) {
  std::lock_guard lock(mutex_);
  refill(now);
  calibrated_ = true;
  in_flight_ = std::max(in_flight_ - 1, 0);
  const bool counted_before = last_refusal_ && sent_at < *last_refusal_;
  last_refusal_ = now;
  // The requests still in flight will arrive at a bucket in debt: one token each.
  const double others = in_flight_;
  if (retry_after) {
    // exe.dev's word: a whole token in `retry_after`.
    tokens_ = 1 - Seconds(*retry_after).count() * numbers_.per_second - others;
  } else if (!counted_before) {
    // The bucket was below one token when the request arrived and the refusal took one (the one
    // try_take counted): -1 at best; deeper with each refusal in a row (-1, -2, -4, …).
    ++refusals_in_a_row_;
    const double debt = std::ldexp(1.0, std::min(refusals_in_a_row_ - 1, 16));
    const double settled = tokens_ + 1 + others;  // without this request and those in flight
    tokens_ = std::min(settled, 0.0) - debt - others;
  }
  tokens_ = std::clamp(tokens_, -numbers_.overdraft, numbers_.burst);
}

void RateLimitModel::on_answered(Clock::time_point sent_at, unsigned status) {
  std::lock_guard lock(mutex_);
  in_flight_ = std::max(in_flight_ - 1, 0);
  if (status == 401 || status == 403) {
    tokens_ = std::min(numbers_.burst, tokens_ + 1);
    return;
  }
  refusals_in_a_row_ = 0;
  if (last_refusal_ && sent_at < *last_refusal_) {
    // Counted as debt when a refusal was learned while it was in flight: it was not.
    tokens_ = std::min(numbers_.burst, tokens_ + 1);
  } else {
    // The bucket held a token when it arrived; only requests in flight since may have taken more.
    tokens_ = std::max(tokens_, -static_cast<double>(in_flight_));
  }
}

void RateLimitModel::on_lost() {
  std::lock_guard lock(mutex_);
  in_flight_ = std::max(in_flight_ - 1, 0);
}

bool RateLimitModel::calibrated() const {
  std::lock_guard lock(mutex_);
  return calibrated_;
}

bool RateLimitModel::full(Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  const double elapsed = now > updated_ ? Seconds(now - updated_).count() : 0;
  return tokens_ + elapsed * numbers_.per_second >= numbers_.burst;
}

RateLimitStep next_rate_limit_step(RateLimitModel& model, RateLimitModel::Clock::time_point now,
                                   std::optional<RateLimitModel::Clock::time_point> deadline) {
  RateLimitStep step;
  step.wait = model.try_take(now);
  if (step.wait == RateLimitModel::Clock::duration::zero()) return step;
  step.kind = deadline && now + step.wait > *deadline ? RateLimitStep::Kind::give_up : RateLimitStep::Kind::wait;
  return step;
}

std::size_t rate_limit_key(const std::string& endpoint, const std::string& token) {
  return std::hash<std::string>{}(endpoint + '\n' + token);
}

std::shared_ptr<RateLimitModel> shared_rate_limit_model(std::size_t token_key, RateLimitNumbers numbers, bool calibrated) {
  static std::mutex mutex;
  static std::map<std::size_t, std::shared_ptr<RateLimitModel>> models;
  std::lock_guard lock(mutex);
  const auto now = RateLimitModel::Clock::now();
  std::erase_if(models, [&](const auto& entry) {
    return entry.first != token_key && entry.second.use_count() == 1 && entry.second->full(now);
  });
  auto& model = models[token_key];
  if (!model) model = std::make_shared<RateLimitModel>(numbers, calibrated, now);
  return model;
}

}  // namespace exedev::detail
