#include "tools/outcome.hpp"

#include "common/exceptions.hpp"
#include "tools/text.hpp"

#include <exception>
#include <filesystem>
#include <utility>

namespace exedev::tools::detail {

namespace {

std::string type_name(const workspace::WorkspaceError& error) {
  if (dynamic_cast<const workspace::WorkspaceOutputLimitError*>(&error)) return "WorkspaceOutputLimitError";
  if (dynamic_cast<const workspace::WorkspaceTimeoutError*>(&error)) return "WorkspaceTimeoutError";
  return "WorkspaceError";
}

}  // namespace

void raise_tool_failure(const workspace::WorkspaceError& error) {
  if (dynamic_cast<const workspace::WorkspaceUnavailableError*>(&error)) throw;
  if (dynamic_cast<const workspace::WorkspaceReadOnlyError*>(&error)) {
    throw ToolFailed("The workspace is read-only; the change was refused.");
  }
  const std::string message = error.what();
  if (!message.empty()) throw ToolFailed(message);
  throw ToolFailed("The workspace operation failed (" + type_name(error) + ").");
}

bool has_errc(const std::exception_ptr& error, std::errc code) {
  const auto* filesystem_error = exedev::detail::exception_as<std::filesystem::filesystem_error>(error);
  return filesystem_error != nullptr && filesystem_error->code() == code;
}

std::string unknown_tool_message(const std::string& name, const std::vector<std::string>& offered) {
  std::string available;
  for (std::size_t i = 0; i < offered.size(); ++i) available += (i == 0 ? "" : ", ") + python_repr(offered[i]);
  return "Unknown tool name: " + python_repr(name) + ". Available tools: " + available;
}

Task<ToolResult> to_tool_result(Task<std::string> body) {
  ToolResult result;
  try {
    try {
      result.text = co_await std::move(body);
    } catch (const workspace::WorkspaceError& error) {
      raise_tool_failure(error);
    }
  } catch (const ModelRetry& retry) {
    result.outcome = ToolOutcome::retry;
    result.text = retry.what();
  } catch (const ToolFailed& failed) {
    result.outcome = ToolOutcome::failed;
    result.text = failed.what();
  } catch (const workspace::WorkspaceUnavailableError& gone) {
    result.outcome = ToolOutcome::end_run;
    result.text = gone.what();
    result.error = std::current_exception();
  }
  co_return result;
}

std::unique_ptr<exedev::detail::WaitNoticeSubscription> relay_wait_notices(
    boost::asio::any_io_executor executor, const std::function<void(std::string_view)>& on_output) {
  if (!on_output) return nullptr;
  return exedev::detail::subscribe_wait_notices(std::move(executor), [on_output](std::string_view text) {
    on_output(std::string(text) + "\n");
  });
}

}  // namespace exedev::tools::detail
