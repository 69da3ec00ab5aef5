#pragma once
// The workspace error hierarchy. Path-level failures are not here: they are
// std::filesystem::filesystem_error with the matching std::errc (no_such_file_or_directory,
// is_a_directory, not_a_directory, file_exists, permission_denied) and the path.
// Invalid arguments are std::invalid_argument.
// The reference API's OSError("not a regular file") (a FIFO, socket or device where a regular
// file is needed) is a filesystem_error with not_a_regular_file (std::errc::operation_not_supported).

#include <exedev/partial_output.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace exedev::workspace {

/// The workspace layer deliberately failed an operation.
class WorkspaceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The environment is gone or unusable (terminated, expired, not found): retrying can't succeed.
class WorkspaceUnavailableError : public WorkspaceError {
 public:
  using WorkspaceError::WorkspaceError;
};

/// A command exceeded its timeout; `output()` holds the partial output, as text.
class WorkspaceTimeoutError : public WorkspaceError, public WithPartialOutput {
 public:
  WorkspaceTimeoutError(const std::string& message, PartialOutput output)
      : WorkspaceError(message), WithPartialOutput(std::move(output)) {}
};

/// A command exceeded its output cap; `output()` holds the captured beginnings, as text.
class WorkspaceOutputLimitError : public WorkspaceError, public WithPartialOutput {
 public:
  WorkspaceOutputLimitError(const std::string& message, std::size_t limit, PartialOutput output)
      : WorkspaceError(message), WithPartialOutput(std::move(output)), limit_(limit) {}
  [[nodiscard]] std::size_t limit() const noexcept { return limit_; }

 private:
  std::size_t limit_;
};

/// A command the workspace ran for one of its own operations (a file operation's script, a
/// background job's control command) failed and gave its reason on stderr. The environment chose
/// that text: what() holds it made inert (control characters, escape sequences and invalid
/// UTF-8 written as `\xNN`, at most 1 KiB of it); output() holds stdout and stderr as they came.
class WorkspaceScriptError : public WorkspaceError, public WithPartialOutput {
 public:
  WorkspaceScriptError(const std::string& message, PartialOutput output)
      : WorkspaceError(message), WithPartialOutput(std::move(output)) {}
};

/// More data than a documented limit allows: a file, listing or tree archive the environment
/// reported (or sent) larger than the option `option()` permits (`limit()` bytes). Nothing was
/// returned or changed; raising the option accepts it.
class WorkspaceLimitError : public WorkspaceError {
 public:
  WorkspaceLimitError(const std::string& what_exceeds, std::uint64_t limit, std::string option)
      : WorkspaceError(what_exceeds + " is larger than the limit of " + std::to_string(limit) + " bytes (option " + option +
                       ")"),
        limit_(limit),
        option_(std::move(option)) {}
  [[nodiscard]] std::uint64_t limit() const noexcept { return limit_; }
  /// The option that sets the limit, e.g. "ShellFilesystemLimits::max_read_bytes".
  [[nodiscard]] const std::string& option() const noexcept { return option_; }

 private:
  std::uint64_t limit_;
  std::string option_;
};

/// A mutation was refused because the workspace is read-only.
class WorkspaceReadOnlyError : public WorkspaceError {
 public:
  using WorkspaceError::WorkspaceError;
};

/// A workspace was used for something it cannot do (no commands, no filesystem).
/// The reference API's UserError: a configuration mistake, not an environment failure.
class WorkspaceUsageError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// The errc of "not a regular file": a FIFO, socket or device where a regular file is needed.
inline constexpr std::errc not_a_regular_file = std::errc::operation_not_supported;

/// A path-level failure: std::filesystem::filesystem_error carrying `code` and `path`.
/// `what` says what was attempted; the message ends with the code's text and the path.
[[nodiscard]] inline std::filesystem::filesystem_error path_error(std::errc code, const std::string& path,
                                                                  const std::string& what = "cannot access") {
  return std::filesystem::filesystem_error(what, std::filesystem::path(path), std::make_error_code(code));
}

}  // namespace exedev::workspace
