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

TEST_CASE("channel slots: nothing is made ready while anyone waits, without a free slot, or on a connection that is down") {
  SECTION("a waiter") {
    auto slots = with_held(3, 0);
    slots.set_ready_wanted(true);
    auto waiter = slots.start_waiting(false);
    CHECK_FALSE(slots.start_preparing_ready(up));
    slots.stop_waiting(waiter);
    CHECK(slots.start_preparing_ready(up));
    CHECK(slots.held() == 1);
  }
  SECTION("every slot held") {
    auto slots = with_held(2, 2);
    slots.set_ready_wanted(true);
    CHECK_FALSE(slots.start_preparing_ready(up));
  }
  SECTION("the connection is down") {
    auto slots = with_held(2, 0);
    slots.set_ready_wanted(true);
    CHECK_FALSE(slots.start_preparing_ready(down));
  }
  SECTION("no command to keep ready") {
    auto slots = with_held(2, 0);
    CHECK_FALSE(slots.start_preparing_ready(up));
  }
  SECTION("one at a time") {
    auto slots = with_held(3, 0);
    slots.set_ready_wanted(true);
    REQUIRE(slots.start_preparing_ready(up));
    CHECK_FALSE(slots.start_preparing_ready(up));
    REQUIRE(slots.finish_preparing_ready(true, up));
    CHECK_FALSE(slots.start_preparing_ready(up));
    CHECK(slots.held() == 1);
  }
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

TEST_CASE("channel slots: the upload lane leaves a slot for commands, row by row") {
  struct Row {
    std::string name;
    std::size_t max_sessions;
    std::size_t held;  // the first SFTP session's among them when it is open
    bool first_sftp_open;
    bool connection_up;
    bool anyone_waits;
    bool expected;
  };
  const std::vector<Row> rows{
      {"beside the first session, with one slot left for commands", 3, 1, true, up, false, true},
      {"not when it would take the last slot", 2, 1, true, up, false, false},
      {"not when a command holds the slot it would leave", 3, 2, true, up, false, false},
      {"not before the first SFTP session is open", 3, 0, false, up, false, false},
      {"not on a connection that is down", 3, 1, true, down, false, false},
      {"not while anyone waits for a slot", 4, 1, true, up, true, false},
  };
  for (const auto& row : rows) {
    SECTION(row.name) {
      auto slots = with_held(row.max_sessions, row.held);
      auto waiter = slots.start_waiting(false);
      if (!row.anyone_waits) slots.stop_waiting(waiter);
      CHECK(slots.start_opening_lane(row.first_sftp_open, row.connection_up) == row.expected);
      CHECK(slots.held() == row.held + (row.expected ? 1 : 0));
      CHECK(slots.lane() == (row.expected ? Lane::opening : Lane::none));
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
