#pragma once
// How a tool's exceptions become outcomes (workspaces-api.md §4.1): ModelRetry asks the model
// to correct its call, ToolFailed tells it the tool could not do it, WorkspaceUnavailableError
// ends the run. Shared by every tool set of the layer.

#include <exedev/tools/toolset.hpp>
#include <exedev/workspace/errors.hpp>

#include "common/wait_notices.hpp"

#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace exedev::tools::detail {

/// Relays the process's wait notices (the client waiting for exe.dev's rate limit, ADR 11) to a
/// call's live output, one line each, while the returned subscription lives; null when the call
/// wants no live output.
[[nodiscard]] std::unique_ptr<exedev::detail::WaitNoticeSubscription> relay_wait_notices(
    boost::asio::any_io_executor executor, const std::function<void(std::string_view)>& on_output);

/// The reference's ModelRetry: the model may correct its arguments and call again.
class ModelRetry : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The reference's ToolFailed: the tool could not do it; the run goes on.
class ToolFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The reference's raise_tool_failure, called from a handler of `error`: rethrows a
/// WorkspaceUnavailableError unchanged (it ends the run), and throws ToolFailed for every
/// other WorkspaceError: a read-only refusal as "The workspace is read-only; the change was
/// refused.", a timeout and the rest with their message (or "The workspace operation failed
/// (<type>)." when it is empty).
[[noreturn]] void raise_tool_failure(const workspace::WorkspaceError& error);

/// Whether `error` is a std::filesystem::filesystem_error whose code is `code`.
[[nodiscard]] bool has_errc(const std::exception_ptr& error, std::errc code);

/// pydantic-ai's retry text for a tool name that is not among `offered`.
[[nodiscard]] std::string unknown_tool_message(const std::string& name, const std::vector<std::string>& offered);

/// Runs a tool body and turns its outcome into a ToolResult: a string is a success,
/// ModelRetry a retry, ToolFailed (and any WorkspaceError, through raise_tool_failure) a
/// failure, WorkspaceUnavailableError end_run. Anything else propagates (it aborts the run,
/// as in the reference), and so does cancellation.
Task<ToolResult> to_tool_result(Task<std::string> body);

}  // namespace exedev::tools::detail
