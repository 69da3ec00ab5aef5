#pragma once
// Blocking work run in the order it was planned. The lobby takes a place in line while it holds
// its mutex, so places follow the order of its state changes; it then releases the mutex and
// waits for its turn to do the work (lobby.hpp). Internal to src/emulator.

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace exedev::emulator {

class TurnQueue {
 public:
  /// A place in line. Its turn comes once every earlier place has been released.
  class Place {
   public:
    Place(Place&& other) noexcept;
    Place& operator=(Place&&) = delete;
    Place(const Place&) = delete;
    Place& operator=(const Place&) = delete;
    /// Waits for its turn (if it has not yet), then lets the next place have its own: a place
    /// is never skipped, even when the work before it threw.
    ~Place();
    /// Returns once every earlier place has been released.
    void wait_for_turn();

   private:
    friend class TurnQueue;
    Place(TurnQueue& queue, std::uint64_t number) : queue_(&queue), number_(number) {}
    TurnQueue* queue_;
    std::uint64_t number_;
    bool turn_ = false;
  };

  /// The next place in line.
  [[nodiscard]] Place take();

 private:
  std::mutex mutex_;
  std::condition_variable turn_changed_;
  std::uint64_t next_place_ = 0;
  std::uint64_t serving_ = 0;
};

}  // namespace exedev::emulator
