#pragma once
// exe.dev's /exec rate limiter (spec §6): one token bucket per key. The bucket holds at most
// `burst` tokens and refills at `refill_per_second`. A request takes one token; a request that
// finds less than one is refused and still takes one, down to -overdraft, so a client that keeps
// hammering stays locked out longer. At most 10 000 keys are tracked (the oldest is forgotten).

#include <exedev/emulator/emulator.hpp>

#include <chrono>
#include <list>
#include <map>
#include <string>

namespace exedev::emulator {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::size_t max_keys = 10000;

  /// True if the request may proceed.
  bool allow(const RateLimit& limits, const std::string& key, Clock::time_point now);
  /// Seconds until `key`'s bucket holds a whole token again, as of its last allow() (0 for an
  /// unknown key or a full enough bucket).
  double seconds_until_token(const RateLimit& limits, const std::string& key) const;
  void clear() { buckets_.clear(); order_.clear(); }

 private:
  struct Bucket {
    double tokens = 0;
    Clock::time_point updated;
    std::list<std::string>::iterator position;
  };
  std::map<std::string, Bucket> buckets_;
  std::list<std::string> order_;  // least recently used first
};

}  // namespace exedev::emulator
