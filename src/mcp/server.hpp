#pragma once
// The I/O layer of exedev-mcp: serves one Session over a pair of pipe or socket descriptors
// (stdin and stdout), newline-delimited, on Asio (posix::stream_descriptor).

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <exedev/tools/toolset.hpp>

#include "mcp/session.hpp"

namespace exedev::mcp {

struct ServeOptions {
  ServerInfo info{};
  int input_fd = 0;   ///< Read; must be a pipe, socket or terminal (not a regular file).
  int output_fd = 1;  ///< Written; the same.
  /// A longer line is answered with a parse error and skipped.
  std::size_t max_message_bytes = 64 * 1024 * 1024;
};

/// Serves the tool sets until the input ends, `stop` is called, or a tool ends the run
/// (end_run). Then cancels every call in flight, waits for them to stop, writes what is queued,
/// and returns the exit status (0, or 1 after end_run). The descriptors are duplicated, never
/// closed. Cancellation: like the input ending.
/// The message of an exception, for a log line or an error answer.
[[nodiscard]] std::string describe(const std::exception_ptr& error);

workspace::Task<int> serve(std::vector<std::shared_ptr<tools::Toolset>> toolsets, ServeOptions options);

}  // namespace exedev::mcp
