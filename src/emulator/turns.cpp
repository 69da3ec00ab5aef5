#include "emulator/turns.hpp"

namespace exedev::emulator {

TurnQueue::Place TurnQueue::take() {
  std::lock_guard lock(mutex_);
  return Place(*this, next_place_++);
}

TurnQueue::Place::Place(Place&& other) noexcept : queue_(other.queue_), number_(other.number_), turn_(other.turn_) {
  other.queue_ = nullptr;
}

void TurnQueue::Place::wait_for_turn() {
  if (turn_) return;
  std::unique_lock lock(queue_->mutex_);
  queue_->turn_changed_.wait(lock, [this] { return queue_->serving_ == number_; });
  turn_ = true;
}

TurnQueue::Place::~Place() {
  if (queue_ == nullptr) return;
  wait_for_turn();
  {
    std::lock_guard lock(queue_->mutex_);
    ++queue_->serving_;
  }
  queue_->turn_changed_.notify_all();
}

}  // namespace exedev::emulator
