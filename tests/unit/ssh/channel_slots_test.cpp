// A connection's session-channel bookkeeping, rule by rule (src/ssh/channel_slots.hpp), without
// a socket: the max_sessions limit, waiters before what only saves time, the ready channel and
// its claim, the upload lane's slot left for commands, the opening lock.
#include "ssh/channel_slots.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using exedev::ssh::ChannelSlots;
using Next = ChannelSlots::Next;
using Ready = ChannelSlots::Ready;
using Lane = ChannelSlots::Lane;

namespace {

constexpr bool up = true;
constexpr bool down = false;

// `held` slots taken by channels of their own (commands, the first SFTP session).
ChannelSlots with_held(std::size_t max_sessions, std::size_t held) {
  ChannelSlots slots(max_sessions);
  for (std::size_t i = 0; i < held; ++i) {
    auto waiter = slots.start_waiting(false);
    REQUIRE(slots.next(waiter) == Next::open_new);
    slots.stop_waiting(waiter);
  }
  return slots;
}

// A ready channel kept waiting for its command.
ChannelSlots with_ready_waiting(std::size_t max_sessions, std::size_t held) {
  auto slots = with_held(max_sessions, held);
  slots.set_ready_wanted(true);
  REQUIRE(slots.start_preparing_ready(up));
  REQUIRE(slots.finish_preparing_ready(true, up));
  return slots;
}

}  // namespace

TEST_CASE("channel slots: never more than max_sessions held; a release frees one") {
  auto slots = with_held(2, 2);
  auto waiter = slots.start_waiting(false);
  CHECK(slots.next(waiter) == Next::give_up_and_await);
  CHECK(slots.held() == 2);
  slots.release();
  CHECK(slots.next(waiter) == Next::open_new);
  CHECK(slots.held() == 2);
  slots.stop_waiting(waiter);
}

TEST_CASE("channel slots: what a waiter does next, row by row") {
  struct Row {
    std::string name;
    std::size_t max_sessions;
    std::size_t held;  // by channels of their own, before anything kept ready
    Ready ready;       // the ready channel's state (its slot counted on top of `held`)
    bool wants_ready;
    Next expected;
  };
  const std::vector<Row> rows{
      {"a free slot", 3, 1, Ready::none, false, Next::open_new},
      {"every slot held", 2, 2, Ready::none, false, Next::give_up_and_await},
      {"the ready channel serves its command", 3, 0, Ready::waiting, true, Next::take_ready},
      {"the ready channel serves its command even with every slot held", 2, 1, Ready::waiting, true, Next::take_ready},
      {"another command takes a slot of its own beside the ready channel", 3, 0, Ready::waiting, false, Next::open_new},
      {"another command has the ready channel give its slot up", 2, 1, Ready::waiting, false, Next::give_up_and_await},
      {"the channel being made ready is awaited rather than a new one opened", 3, 0, Ready::preparing, true, Next::await_ready},
      {"another command does not wait for the one being made ready", 3, 0, Ready::preparing, false, Next::open_new},
  };
  for (const auto& row : rows) {
    SECTION(row.name) {
      auto slots = with_held(row.max_sessions, row.held);
      slots.set_ready_wanted(row.ready != Ready::none);
      if (row.ready != Ready::none) REQUIRE(slots.start_preparing_ready(up));
      if (row.ready == Ready::waiting) REQUIRE(slots.finish_preparing_ready(true, up));
      REQUIRE(slots.ready() == row.ready);
      auto waiter = slots.start_waiting(row.wants_ready);
      CHECK(slots.next(waiter) == row.expected);
      slots.stop_waiting(waiter);
    }
  }
}

TEST_CASE("channel slots: the ready channel yields its slot to a waiter, and is taken with its slot") {
  SECTION("given up: its slot comes back once it is closed") {
    auto slots = with_ready_waiting(2, 1);
    auto waiter = slots.start_waiting(false);
    REQUIRE(slots.next(waiter) == Next::give_up_and_await);
    CHECK(slots.discard_ready());
    CHECK(slots.ready() == Ready::none);
    CHECK_FALSE(slots.discard_ready());  // closed once
    CHECK(slots.next(waiter) == Next::give_up_and_await);  // still closing
    slots.release();
    CHECK(slots.next(waiter) == Next::open_new);
    CHECK(slots.held() == 2);
    slots.stop_waiting(waiter);
  }
  SECTION("taken: the exec holds its slot, no new one is taken") {
    auto slots = with_ready_waiting(3, 0);
    auto waiter = slots.start_waiting(true);
    REQUIRE(slots.next(waiter) == Next::take_ready);
    slots.ready_taken();
    slots.stop_waiting(waiter);
    CHECK(slots.ready() == Ready::none);
    CHECK(slots.held() == 1);
  }
}

TEST_CASE("channel slots: one ready channel at a time") {
  auto slots = with_held(3, 0);
  slots.set_ready_wanted(true);
  REQUIRE(slots.start_preparing_ready(up));
  CHECK_FALSE(slots.start_preparing_ready(up));
  REQUIRE(slots.finish_preparing_ready(true, up));
  CHECK_FALSE(slots.start_preparing_ready(up));
  CHECK(slots.held() == 1);
}

TEST_CASE("channel slots: a preparation that failed gives its slot back; one that ended on a connection gone down is not kept") {
  auto slots = with_held(2, 0);
  slots.set_ready_wanted(true);
  REQUIRE(slots.start_preparing_ready(up));
  CHECK_FALSE(slots.finish_preparing_ready(false, up));
  CHECK(slots.held() == 0);
  CHECK(slots.ready() == Ready::none);
  REQUIRE(slots.start_preparing_ready(up));
  CHECK_FALSE(slots.finish_preparing_ready(true, down));
  CHECK(slots.held() == 1);  // until the caller has closed it
  CHECK(slots.ready() == Ready::none);
}

TEST_CASE("channel slots: one exec at a time claims the channel being made ready") {
  auto slots = with_held(3, 0);
  slots.set_ready_wanted(true);
  REQUIRE(slots.start_preparing_ready(up));
  auto first = slots.start_waiting(true);
  auto second = slots.start_waiting(true);
  CHECK(slots.next(first) == Next::await_ready);
  CHECK(slots.next(second) == Next::open_new);
  CHECK(slots.next(first) == Next::await_ready);  // still its claim
  slots.stop_waiting(second);
  slots.stop_waiting(first);  // gone (cancelled, say): the claim is free again
  auto third = slots.start_waiting(true);
  CHECK(slots.next(third) == Next::await_ready);
  REQUIRE(slots.finish_preparing_ready(true, up));
  CHECK(slots.next(third) == Next::take_ready);
  slots.stop_waiting(third);
}

TEST_CASE("channel slots: when what only saves time takes a slot (the ready channel, the upload lane), row by row") {
  enum class Saver { ready_channel, upload_lane };
  struct Row {
    std::string name;
    Saver saver;
    std::size_t max_sessions;
    std::size_t held;  // the first SFTP session's among them when it is open
    bool wanted;       // a command to keep ready; the first SFTP session open
    bool anyone_waits;
    bool connection_up;
    bool expected;
  };
  const Saver ready = Saver::ready_channel;
  const Saver lane = Saver::upload_lane;
  const std::vector<Row> rows{
      {"ready: a command to keep ready, a free slot, nobody waiting", ready, 3, 0, true, false, up, true},
      {"ready: the last free slot", ready, 2, 1, true, false, up, true},
      {"ready: not while anyone waits for a slot", ready, 3, 0, true, true, up, false},
      {"ready: not with every slot held", ready, 2, 2, true, false, up, false},
      {"ready: not on a connection that is down", ready, 2, 0, true, false, down, false},
      {"ready: not without a command to keep ready", ready, 2, 0, false, false, up, false},
      {"lane: beside the first session, with one slot left for commands", lane, 3, 1, true, false, up, true},
      {"lane: not when it would take the last slot", lane, 2, 1, true, false, up, false},
      {"lane: not when a command holds the slot it would leave", lane, 3, 2, true, false, up, false},
      {"lane: not before the first SFTP session is open", lane, 3, 0, false, false, up, false},
      {"lane: not on a connection that is down", lane, 3, 1, true, false, down, false},
      {"lane: not while anyone waits for a slot", lane, 4, 1, true, true, up, false},
  };
  for (const auto& row : rows) {
    SECTION(row.name) {
      auto slots = with_held(row.max_sessions, row.held);
      slots.set_ready_wanted(row.saver == ready && row.wanted);
      auto waiter = slots.start_waiting(false);
      if (!row.anyone_waits) slots.stop_waiting(waiter);
      if (row.saver == ready) {
        CHECK(slots.start_preparing_ready(row.connection_up) == row.expected);
        CHECK(slots.ready() == (row.expected ? Ready::preparing : Ready::none));
      } else {
        CHECK(slots.start_opening_lane(row.wanted, row.connection_up) == row.expected);
        CHECK(slots.lane() == (row.expected ? Lane::opening : Lane::none));
      }
      CHECK(slots.held() == row.held + (row.expected ? 1 : 0));
      if (row.anyone_waits) slots.stop_waiting(waiter);
    }
  }
}

TEST_CASE("channel slots: one upload lane, kept when it opened, its slot back when it failed or is shut down") {
  auto slots = with_held(4, 1);
  REQUIRE(slots.start_opening_lane(true, up));
  CHECK_FALSE(slots.start_opening_lane(true, up));  // one being opened already
  CHECK_FALSE(slots.finish_opening_lane(false, up));
  CHECK(slots.held() == 1);
  CHECK(slots.lane() == Lane::none);

  REQUIRE(slots.start_opening_lane(true, up));
  CHECK(slots.finish_opening_lane(true, up));
  CHECK(slots.lane() == Lane::open);
  CHECK_FALSE(slots.start_opening_lane(true, up));  // one open already
  slots.lane_shutting_down();
  CHECK(slots.lane() == Lane::none);
  CHECK(slots.held() == 2);  // until it has shut down
  slots.release();
  CHECK(slots.held() == 1);

  REQUIRE(slots.start_opening_lane(true, up));
  CHECK_FALSE(slots.finish_opening_lane(true, down));  // freed with the session
  CHECK(slots.lane() == Lane::none);
  CHECK(slots.held() == 1);
}

TEST_CASE("channel slots: one channel opening at a time") {
  ChannelSlots slots(2);
  CHECK(slots.try_lock_opening());
  CHECK_FALSE(slots.try_lock_opening());
  slots.unlock_opening();
  CHECK(slots.try_lock_opening());
}
