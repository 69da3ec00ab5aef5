#include "client/retry.hpp"

#include "common/backoff.hpp"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <string>

namespace exedev::detail {

using namespace std::chrono;

bool is_read_only(std::string_view command) {
  return command == "ls" || command == "whoami" || command == "help";
}

bool is_retryable_status(unsigned status) { return status >= 500 && status < 600; }

std::optional<milliseconds> parse_retry_after(std::string_view value, system_clock::time_point now) {
  constexpr milliseconds cap = minutes(5);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    unsigned long long seconds = 0;
    const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (ec == std::errc::result_out_of_range) return cap;
    if (ec != std::errc() || ptr != value.data() + value.size()) return std::nullopt;
    return std::min<milliseconds>(cap, seconds > 3600 ? cap : milliseconds(seconds * 1000));
  }
  // IMF-fixdate, e.g. "Wed, 21 Oct 2015 07:28:00 GMT".
  std::tm tm{};
  const std::string text(value);
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  const auto when = system_clock::from_time_t(timegm(&tm));
  if (when <= now) return milliseconds(0);
  return std::min<milliseconds>(cap, duration_cast<milliseconds>(when - now));
}

milliseconds backoff_delay(const RetryPolicy& policy, int attempt, double random01, std::optional<milliseconds> retry_after) {
  const auto delay = static_cast<double>(doubled_delay(policy.initial_backoff, attempt, policy.max_backoff).count());
  random01 = std::clamp(random01, 0.0, 1.0);
  const auto jittered = milliseconds(static_cast<milliseconds::rep>(delay / 2 + delay / 2 * random01));
  if (retry_after && *retry_after > jittered) return *retry_after;
  return jittered;
}

}  // namespace exedev::detail
