#include "tools/shell_jobs.hpp"

#include "common/backoff.hpp"
#include "common/base64.hpp"
#include "common/coroutines.hpp"
#include "common/inert_text.hpp"
#include "tools/outcome.hpp"
#include "tools/text.hpp"
#include "workspace/shell_filesystem.hpp"
#include "workspace/shield.hpp"

#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

#include <exedev/workspace/errors.hpp>

namespace exedev::tools::detail {

namespace ws = exedev::workspace;
using ws::detail::posix_join;
using ws::detail::strip;

namespace {

ws::RunOptions control_options(ws::Env env = {}) {
  ws::RunOptions options;
  options.env = std::move(env);
  options.timeout = kControlTimeout;
  return options;
}

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace

Task<void> finish_despite_cancellation(Task<void> op, std::optional<std::chrono::steady_clock::duration> limit) {
  EXEDEV_AWAIT_DESPITE_CANCELLATION(error, limit ? ws::detail::run_shielded(std::move(op), *limit)
                                                 : exedev::detail::shielded(std::move(op)));
  if (error) std::rethrow_exception(error);
}

Task<Job> Job::launch(std::shared_ptr<ws::Workspace> workspace, LaunchRequest request, ws::Env env) {
  auto command = ws::Command::shell(launcher_script(request));
  const auto result = co_await workspace->run(std::move(command), control_options(std::move(env)));
  const auto& prelude_codes = request.prelude_exit_codes;
  if (!request.prelude.empty() &&
      std::find(prelude_codes.begin(), prelude_codes.end(), result.exit_code) != prelude_codes.end()) {
    throw PreludeFailed{result.exit_code, result.stdout_text};
  }
  if (result.exit_code == kMissingJobTools) {
    // Without them the launcher would wait out its time limit for a status never published.
    std::string lacking;
    std::size_t start = 0;
    const auto& names = result.stdout_text;
    while (start < names.size()) {
      const auto end = names.find_first_of(" \t\n", start);
      const auto name = names.substr(start, end == std::string::npos ? std::string::npos : end - start);
      if (!name.empty()) lacking += (lacking.empty() ? "`" : " and `") + name + "`";
      if (end == std::string::npos) break;
      start = end + 1;
    }
    throw ws::WorkspaceError("Shell needs `mv` and `base64` on PATH in the workspace; this image lacks " + lacking +
                             ".");
  }
  if (request.exclusive && result.exit_code == kJobClaimed) {
    // An in-flight launch or a lost reply: never start a second process; a retry can attach.
    auto existing = co_await attach(workspace, request.directory, request.combined);
    if (existing) co_return std::move(*existing);
    throw ModelRetry("Background command launch is pending; retry with the same tool call ID.");
  }
  const auto handle = parse_handle(result.stdout_text);
  if (result.exit_code != 0 || !handle) {
    auto detail = exedev::detail::inert_text(strip(result.stderr_text));
    if (detail.empty()) detail = "launcher output " + exedev::detail::inert_text(python_repr(strip(result.stdout_text)));
    throw ModelRetry("Shell supervisor exited with " + std::to_string(result.exit_code) + ": " + detail);
  }
  co_return Job(std::move(workspace), std::move(request.directory), *handle, request.combined);
}

Task<std::optional<Job>> Job::attach(std::shared_ptr<ws::Workspace> workspace, std::string directory, bool combined) {
  std::string text;
  try {
    text = co_await workspace->read_bytes(posix_join(directory, "handle"));
  } catch (const std::filesystem::filesystem_error&) {
    // Missing, a directory, or unreadable: no job to attach to.
    co_return std::nullopt;
  }
  const auto handle = parse_handle(ws::utf8_replace_invalid(text));
  if (!handle) co_return std::nullopt;
  co_return Job(std::move(workspace), std::move(directory), *handle, combined);
}

std::string Job::output_path() const { return posix_join(directory_, combined_ ? "output.log" : "stdout.log"); }
std::string Job::stderr_path() const { return posix_join(directory_, combined_ ? "output.log" : "stderr.log"); }
std::string Job::status_path() const { return posix_join(directory_, "status.json"); }

std::string Job::stop_command() const {
  return handle_.pgid ? "kill -- -" + std::to_string(*handle_.pgid) : "kill " + std::to_string(handle_.pid);
}

Task<std::optional<std::string>> Job::status_text() {
  if (*final_status_) co_return *final_status_;
  std::string bytes;
  std::exception_ptr error;
  try {
    bytes = co_await workspace_->read_bytes(status_path());
  } catch (...) {
    error = std::current_exception();
  }
  if (error) {
    if (has_errc(error, std::errc::no_such_file_or_directory)) co_return std::nullopt;
    std::rethrow_exception(error);
  }
  auto text = ws::utf8_replace_invalid(bytes);
  if (parse_exit_code(text)) *final_status_ = text;
  co_return text;
}

Task<std::optional<long long>> Job::exit_code() {
  const auto text = co_await status_text();
  if (!text) co_return std::nullopt;
  co_return parse_exit_code(*text);
}

Task<std::uint64_t> Job::size(std::string path) {
  ws::FileEntry entry;
  try {
    entry = co_await workspace_->stat(path);
  } catch (const std::filesystem::filesystem_error& e) {
    if (e.code() != std::errc::no_such_file_or_directory) throw;
    co_return 0;
  }
  if (entry.size) co_return *entry.size;
  // The backend's stat reports no size: count the bytes in the workspace.
  auto command = ws::Command::shell("wc -c < " + ws::shell_quote(path));
  const auto result = co_await workspace_->run(std::move(command), control_options());
  const auto count = strip(result.stdout_text);
  const bool digits = !count.empty() && std::all_of(count.begin(), count.end(), [](unsigned char c) {
    return std::isdigit(c) != 0;
  });
  // At most 19 digits: every such number fits 64 bits (std::stoull never throws).
  if (result.exit_code != 0 || !digits || count.size() > 19) {
    const auto message = strip(result.stderr_text);
    throw ws::WorkspaceScriptError(message.empty() ? "Unable to size job log " + python_repr(path) + "."
                                                   : exedev::detail::inert_text(message),
                                   PartialOutput{result.stdout_text, result.stderr_text});
  }
  co_return std::stoull(count);
}

Task<std::string> Job::read(std::string path, std::uint64_t offset, std::uint64_t length) {
  if (length == 0) co_return std::string();
  auto command = ws::Command::shell(read_log_script(path, offset, length));
  const auto result = co_await workspace_->run(std::move(command), control_options());
  if (result.exit_code == kLogMissing) co_return std::string();
  std::optional<std::string> bytes;
  if (result.exit_code == 0) bytes = exedev::detail::base64_decode(result.stdout_text);
  if (!bytes) {
    const auto message = strip(result.stderr_text);
    throw ws::WorkspaceScriptError(message.empty() ? "Unable to read job log " + python_repr(path) + "."
                                                   : exedev::detail::inert_text(message),
                                   PartialOutput{result.stdout_text, result.stderr_text});
  }
  co_return std::move(*bytes);
}

Task<bool> Job::send(std::string signal) {
  const auto target = handle_.pgid ? "-" + std::to_string(*handle_.pgid) : std::to_string(handle_.pid);
  auto command = ws::Command::argv(signal_argv(signal, target, posix_join(directory_, "stop")));
  const auto result = co_await workspace_->run(std::move(command), control_options());
  if (result.exit_code == 0) co_return true;
  if (lowercase(result.stderr_text).find("no such process") != std::string::npos) co_return false;
  auto message = exedev::detail::inert_text(strip(result.stderr_text));
  if (message.empty()) message = "Unable to send SIG" + signal + " to job " + std::to_string(handle_.pid) + ".";
  throw ws::WorkspaceScriptError(message, PartialOutput{result.stdout_text, result.stderr_text});
}

Task<void> Job::kill() {
  const bool signalled = co_await send("TERM");
  if (!signalled) co_return;
  if (!handle_.pgid) co_return;
  // The supervisor's status says nothing of children left in its group; when it already
  // finished, there is nothing to wait for.
  const auto finished = co_await exit_code();
  if (finished) {
    const bool alive = co_await send("0");
    if (alive) co_await send("KILL");
    co_return;
  }
  const auto deadline = std::chrono::steady_clock::now() + kKillGrace;
  exedev::detail::Backoff poll(kPollMin, kPollMax);
  while (true) {
    const bool alive = co_await send("0");
    if (!alive) break;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      co_await send("KILL");
      co_return;
    }
    co_await exedev::detail::sleep_for(std::min(poll.current(), deadline - now));
    poll.advance();
  }
}

Task<void> Job::cleanup() {
  try {
    co_await workspace_->remove(directory_);
  } catch (const std::filesystem::filesystem_error& e) {
    if (e.code() != std::errc::no_such_file_or_directory) throw;
  }
}

}  // namespace exedev::tools::detail
