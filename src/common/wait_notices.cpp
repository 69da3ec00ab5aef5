#include "common/wait_notices.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

namespace exedev::detail {

struct WaitNoticeSubscription::Entry {
  boost::asio::any_io_executor executor;
  std::function<void(std::string_view)> listener;
  std::atomic<bool> alive{true};
};

namespace {

struct Subscribers {
  std::mutex mutex;
  std::vector<std::shared_ptr<WaitNoticeSubscription::Entry>> entries;
};

Subscribers& subscribers() {
  static Subscribers instance;
  return instance;
}

}  // namespace

WaitNoticeSubscription::~WaitNoticeSubscription() {
  entry_->alive = false;
  auto& all = subscribers();
  std::lock_guard lock(all.mutex);
  std::erase(all.entries, entry_);
}

std::unique_ptr<WaitNoticeSubscription> subscribe_wait_notices(boost::asio::any_io_executor executor,
                                                               std::function<void(std::string_view)> listener) {
  auto entry = std::make_shared<WaitNoticeSubscription::Entry>();
  entry->executor = std::move(executor);
  entry->listener = std::move(listener);
  auto& all = subscribers();
  std::lock_guard lock(all.mutex);
  all.entries.push_back(entry);
  return std::make_unique<WaitNoticeSubscription>(std::move(entry));
}

void publish_wait_notice(std::string_view text) {
  std::vector<std::shared_ptr<WaitNoticeSubscription::Entry>> entries;
  {
    auto& all = subscribers();
    std::lock_guard lock(all.mutex);
    entries = all.entries;
  }
  for (auto& entry : entries) {
    boost::asio::post(entry->executor, [entry, line = std::string(text)] {
      if (entry->alive) entry->listener(line);
    });
  }
}

}  // namespace exedev::detail
