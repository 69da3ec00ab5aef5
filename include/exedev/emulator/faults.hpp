#pragma once
// Failures the emulator injects into /exec requests on demand (Emulator::inject).

#include <chrono>
#include <cstddef>
#include <string>

#include <exedev/coawait_guard.hpp>

namespace exedev::emulator {

/// The kinds of injected failure.
enum class FaultKind {
  reset_before_run,  ///< close the connection (TCP RST) without running the command.
  reset_after_run,   ///< run the command, then close the connection without answering.
  http_status,       ///< run the command, then answer `status` (500, 502 or 504) instead.
  truncate_stream,   ///< ssh only: send `after_bytes` output bytes, then close: no trailer.
  bad_json,          ///< run the command, answer 200 with a body that is not JSON.
  stall,             ///< hold the request for `duration` without answering, then close it.
};

/// A fault applied to the next `count` /exec requests that match.
struct Fault {
  FaultKind kind = FaultKind::reset_before_run;
  // (`{}` on every member: GCC 12 warns about members a designated initializer leaves out
  // unless they have one.)
  std::string command{};         ///< canonical command name ("ssh", "ls", …); empty = any.
  std::string vm{};              ///< VM name the request targets; empty = any.
  std::size_t count = 1;
  /// Matching requests let through untouched before the fault applies (to hit, say, the third
  /// request of an operation).
  std::size_t skip = 0;
  unsigned status = 500;         ///< http_status
  std::size_t after_bytes = 0;   ///< truncate_stream
  std::chrono::milliseconds duration = std::chrono::seconds(60);  ///< stall
  EXEDEV_COAWAIT_GUARD;
};

}  // namespace exedev::emulator
