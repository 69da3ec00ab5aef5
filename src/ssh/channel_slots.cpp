#include "ssh/channel_slots.hpp"

namespace exedev::ssh {

void ChannelSlots::release() noexcept {
  if (held_ > 0) --held_;
}

bool ChannelSlots::take_free_slot() noexcept {
  if (held_ >= max_sessions_) return false;
  ++held_;
  return true;
}

ChannelSlots::Waiter ChannelSlots::start_waiting(bool wants_ready) noexcept {
  ++waiters_;
  Waiter waiter;
  waiter.wants_ready = wants_ready;
  return waiter;
}

ChannelSlots::Next ChannelSlots::next(Waiter& waiter) noexcept {
  if (waiter.wants_ready && ready_ == Ready::waiting) return Next::take_ready;
  if (waiter.wants_ready && ready_ == Ready::preparing && (waiter.claimed || !ready_claimed_)) {
    // The channel being made ready comes sooner than one of its own would.
    ready_claimed_ = waiter.claimed = true;
    return Next::await_ready;
  }
  if (take_free_slot()) return Next::open_new;
  return Next::give_up_and_await;
}

void ChannelSlots::stop_waiting(Waiter& waiter) noexcept {
  --waiters_;
  if (waiter.claimed) ready_claimed_ = waiter.claimed = false;
}

bool ChannelSlots::start_preparing_ready(bool connection_up) noexcept {
  if (!ready_wanted_ || ready_ != Ready::none || !connection_up || waiters_ > 0 || !take_free_slot()) return false;
  ready_ = Ready::preparing;
  return true;
}

bool ChannelSlots::finish_preparing_ready(bool opened, bool connection_up) noexcept {
  ready_ = opened && connection_up ? Ready::waiting : Ready::none;
  if (!opened) release();
  return ready_ == Ready::waiting;
}

void ChannelSlots::ready_taken() noexcept { ready_ = Ready::none; }

bool ChannelSlots::discard_ready() noexcept {
  const bool waited = ready_ == Ready::waiting;
  if (waited) ready_ = Ready::none;
  return waited;
}

bool ChannelSlots::start_opening_lane(bool first_sftp_open, bool connection_up) noexcept {
  // One slot is always left free for commands.
  if (lane_ != Lane::none || !first_sftp_open || !connection_up || waiters_ > 0 || held_ + 2 > max_sessions_) return false;
  ++held_;
  lane_ = Lane::opening;
  return true;
}

bool ChannelSlots::finish_opening_lane(bool opened, bool connection_up) noexcept {
  lane_ = opened && connection_up ? Lane::open : Lane::none;
  if (lane_ == Lane::none) release();
  return lane_ == Lane::open;
}

void ChannelSlots::lane_shutting_down() noexcept { lane_ = Lane::none; }

bool ChannelSlots::try_lock_opening() noexcept {
  if (opening_) return false;
  opening_ = true;
  return true;
}

}  // namespace exedev::ssh
