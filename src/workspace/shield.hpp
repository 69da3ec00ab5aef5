#pragma once
// Running cleanup that must happen even when the calling coroutine was cancelled (internal).

#include <chrono>

#include <exedev/workspace/backend.hpp>

namespace exedev::workspace::detail {

/// Runs `op` on a coroutine of its own that the caller's cancellation does not reach, bounded by
/// `limit` (past it, `op` receives a terminal cancellation and this throws
/// WorkspaceTimeoutError). Leaves the caller's cancellation state as it was; a caller that may
/// already have been cancelled awaits this through EXEDEV_AWAIT_DESPITE_CANCELLATION
/// (see exedev::detail::shielded). Rethrows what `op` threw.
Task<void> run_shielded(Task<void> op, std::chrono::steady_clock::duration limit);

}  // namespace exedev::workspace::detail
