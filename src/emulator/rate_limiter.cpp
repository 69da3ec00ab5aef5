#include "emulator/rate_limiter.hpp"

#include <algorithm>

namespace exedev::emulator {

bool RateLimiter::allow(const RateLimit& limits, const std::string& key, Clock::time_point now) {
  auto it = buckets_.find(key);
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_keys) {
      buckets_.erase(order_.front());
      order_.pop_front();
    }
    order_.push_back(key);
    it = buckets_.emplace(key, Bucket{limits.burst, now, std::prev(order_.end())}).first;
  } else {
    order_.splice(order_.end(), order_, it->second.position);
  }
  Bucket& bucket = it->second;
  const double elapsed = std::chrono::duration<double>(now - bucket.updated).count();
  bucket.tokens = std::min(limits.burst, bucket.tokens + std::max(0.0, elapsed) * limits.refill_per_second);
  bucket.updated = now;
  if (bucket.tokens >= 1) {
    bucket.tokens -= 1;
    return true;
  }
  bucket.tokens = std::max(-limits.overdraft, bucket.tokens - 1);
  return false;
}

double RateLimiter::seconds_until_token(const RateLimit& limits, const std::string& key) const {
  const auto it = buckets_.find(key);
  if (it == buckets_.end() || it->second.tokens >= 1 || limits.refill_per_second <= 0) return 0;
  return (1 - it->second.tokens) / limits.refill_per_second;
}

}  // namespace exedev::emulator
