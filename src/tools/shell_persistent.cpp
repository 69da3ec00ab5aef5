#include "tools/shell_persistent.hpp"

#include "common/backoff.hpp"
#include "common/coroutines.hpp"
#include "common/random_ids.hpp"
#include "tools/outcome.hpp"
#include "tools/text.hpp"
#include "tools/shell_jobs.hpp"
#include "tools/utf8_stream.hpp"
#include "workspace/shell_filesystem.hpp"

namespace exedev::tools::detail {

namespace ws = exedev::workspace;

namespace {

/// Streams the first kOutputTailBytes of the log to on_output, decoded incrementally.
class LiveOutput {
 public:
  LiveOutput(Job job, std::function<void(std::string_view)> sink) : job_(std::move(job)), sink_(std::move(sink)) {}

  /// Whether a new piece of the log was read.
  Task<bool> emit() {
    if (!sink_ || offset_ >= kOutputTailBytes) co_return false;
    const auto chunk =
        co_await job_.read(job_.output_path(), offset_, std::min(kEventChunkBytes, kOutputTailBytes - offset_));
    offset_ += chunk.size();
    if (auto text = stream_.feed(chunk); !text.empty()) sink_(text);
    co_return !chunk.empty();
  }

  Task<void> drain() {
    // (Not `while (co_await emit()) {}`: GCC 12 compiles that empty loop into a trap.)
    for (;;) {
      const bool more = co_await emit();
      if (!more) co_return;
    }
  }

  void finish() {
    if (!sink_) return;
    if (auto text = stream_.finish(); !text.empty()) sink_(text);
  }

 private:
  Job job_;
  std::function<void(std::string_view)> sink_;
  std::uint64_t offset_ = 0;
  Utf8Stream stream_;
};

/// The last kOutputTailBytes of the log, from a line start, marked when earlier output is cut.
Task<std::string> output_tail(Job job) {
  const auto size = co_await job.size(job.output_path());
  auto start = size > kOutputTailBytes ? size - kOutputTailBytes : 0;
  auto data = co_await job.read(job.output_path(), start, size - start);
  if (start == 0) co_return ws::utf8_replace_invalid(data);
  // Drop the cut first line, unless it is the only one.
  const auto newline = data.find('\n');
  if (newline != std::string::npos && newline + 1 < data.size()) {
    start += newline + 1;
    data.erase(0, newline + 1);
  }
  co_return "[... output truncated, " + std::to_string(start) + " earlier bytes omitted]\n" +
      ws::utf8_replace_invalid(data);
}

Task<std::string> follow(Job job, bool foreground, double timeout, std::function<void(std::string_view)> sink) {
  LiveOutput output(job, std::move(sink));
  if (foreground) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout));
    exedev::detail::Backoff poll(kPollMin, kPollMax);
    while (true) {
      const auto exited = co_await job.exit_code();
      if (exited) break;
      const bool emitted = co_await output.emit();
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) break;
      co_await exedev::detail::sleep_for(std::min(poll.current(), deadline - now));
      poll.advance(emitted);
    }
    co_await output.drain();
  }
  output.finish();
  // The handles come last: a result over the output cap keeps its tail.
  std::string result;
  if (foreground) {
    result = co_await output_tail(job);
    if (!result.empty() && result.back() != '\n') result += '\n';
  }
  result += "PID: " + std::to_string(job.pid()) + " (supervisor; use `" + job.stop_command() +
            "` to stop the whole process tree)\nOutput: " + job.output_path() + "\nStatus: " + job.status_path();
  if (const auto status = co_await job.status_text()) result += "\n" + *status;
  co_return result;
}

Task<void> stop_and_remove(Job job) {
  co_await job.kill();
  co_await job.cleanup();
}

}  // namespace

std::string persistent_tool_description() {
  return "Run a command that keeps running after this call and after the agent run.\n\n"
         "Foreground waits up to `timeout` seconds (at most 270) for the command to\n"
         "exit, then returns handles to the same still-running process. Background\n"
         "returns the handles immediately. Both return the PID, the path of the\n"
         "combined stdout/stderr log, and the path of a JSON status file whose\n"
         "`exit_code` is null until the command exits. Read those files with your\n"
         "other tools and stop the process with `kill` and the returned PID; no\n"
         "notification arrives when it finishes.";
}

Task<std::string> run_persistent(std::shared_ptr<ws::Workspace> workspace, PersistentRequest request,
                                 std::function<void(std::string_view)> on_output) {
  if (!(request.timeout > 0 && request.timeout <= kMaxForegroundWait.count())) {
    throw ModelRetry("timeout must be greater than zero and at most " + python_g(kMaxForegroundWait.count()) +
                     " seconds.");
  }
  LaunchRequest launch;
  launch.cwd = request.cwd;
  launch.directory = ws::detail::posix_join(request.base, exedev::detail::random_hex(16));
  launch.combined = true;
  launch.command = request.command;
  auto job = co_await Job::launch(workspace, std::move(launch), std::move(request.env));
  std::string result;
  std::exception_ptr error;
  try {
    result = co_await follow(job, request.foreground, request.timeout, std::move(on_output));
  } catch (...) {
    error = std::current_exception();
  }
  if (error) {
    // A cancelled or failed call cannot hand back its handles: nothing is left running.
    try {
      co_await finish_despite_cancellation(stop_and_remove(job), std::chrono::duration_cast<std::chrono::steady_clock::duration>(kControlTimeout));
    } catch (...) {
      // Best effort: the original error is what the caller must see.
    }
    std::rethrow_exception(error);
  }
  co_return result;
}

}  // namespace exedev::tools::detail
