#pragma once
// Notices of long waits a user should see (the client waiting for exe.dev's rate limit), for the
// layers that relay progress to someone (a tool call's live output). Process-wide, because the
// wait is: every client of a token shares one rate-limit model, so while one request waits for
// the bucket, every other request of that token in the process waits behind it. Internal.

#include <boost/asio/any_io_executor.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace exedev::detail {

/// A subscription; notices stop when it is destroyed.
class WaitNoticeSubscription {
 public:
  struct Entry;
  explicit WaitNoticeSubscription(std::shared_ptr<Entry> entry) : entry_(std::move(entry)) {}
  ~WaitNoticeSubscription();
  WaitNoticeSubscription(const WaitNoticeSubscription&) = delete;
  WaitNoticeSubscription& operator=(const WaitNoticeSubscription&) = delete;

 private:
  std::shared_ptr<Entry> entry_;
};

/// `listener` gets each notice published while the subscription lives, called on `executor`
/// (posted there, so a publisher on another thread never calls it directly), never after the
/// subscription is destroyed on that executor.
[[nodiscard]] std::unique_ptr<WaitNoticeSubscription> subscribe_wait_notices(
    boost::asio::any_io_executor executor, std::function<void(std::string_view)> listener);

/// Hands `text` (one line, no secrets) to every subscriber.
void publish_wait_notice(std::string_view text);

}  // namespace exedev::detail
