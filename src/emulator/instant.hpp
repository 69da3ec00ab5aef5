#pragma once
// The moment a lobby call happens, as the server reads it. The lobby (lobby.hpp) reads no clock:
// every call that depends on the time takes an Instant, so its tests choose the time.

#include <chrono>

namespace exedev::emulator {

using WallTime = std::chrono::system_clock::time_point;
using SteadyTime = std::chrono::steady_clock::time_point;

struct Instant {
  /// What the lobby shows and stores: created_at, ready_at, expiry, share links, key times.
  WallTime wall;
  /// What it measures: the lobby deadline, the rate limit, cp's `elapsed`.
  SteadyTime steady;

  /// Both clocks read now (for the server; a test builds its own Instant).
  static Instant now() { return {std::chrono::system_clock::now(), std::chrono::steady_clock::now()}; }
};

}  // namespace exedev::emulator
