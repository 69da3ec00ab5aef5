#pragma once
// What ReadOnlyWorkspace answers to an operation that would change something.

#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/workspace.hpp>

#include <type_traits>

namespace exedev::workspace::detail {

/// An awaitable that throws WorkspaceReadOnlyError when it is awaited, as the refused operation
/// would have failed (on co_await, not on the call).
template <typename T>
Task<T> refused_as_read_only() {
  throw WorkspaceReadOnlyError(ReadOnlyWorkspace::reason);
  if constexpr (std::is_void_v<T>) {
    co_return;
  } else {
    co_return T{};
  }
}

}  // namespace exedev::workspace::detail
