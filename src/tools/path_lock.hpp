#pragma once
// One writer at a time per key: FileSystem serializes writes and edits of one resolved path, so
// two concurrent edits cannot both start from the same content. For coroutines on one
// executor (the tool set's caller); not a thread lock.

#include <exedev/workspace/backend.hpp>

#include "common/event.hpp"

#include <map>
#include <string>
#include <utility>

namespace exedev::tools::detail {

class PathLocks {
 public:
  /// Held until the returned guard is destroyed. Waiting honours cancellation (the wait ends
  /// with operation_aborted and nothing is held).
  class Guard {
   public:
    Guard(PathLocks* owner, std::string key) : owner_(owner), key_(std::move(key)) {}
    Guard(Guard&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)), key_(std::move(other.key_)) {}
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    Guard& operator=(Guard&&) = delete;
    ~Guard() {
      if (owner_ != nullptr) owner_->release(key_);
    }

   private:
    PathLocks* owner_;
    std::string key_;
  };

  workspace::Task<Guard> acquire(std::string key);

 private:
  struct Entry {
    bool held = false;
    exedev::detail::Event released{};  ///< Wakes the longest waiter at each release.
    int users = 0;
  };
  void release(const std::string& key);
  std::map<std::string, Entry> entries_;
};

}  // namespace exedev::tools::detail
