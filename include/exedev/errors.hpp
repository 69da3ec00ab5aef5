#pragma once
// Errors of the exe.dev client. Messages name commands and VMs, never a token, an environment
// value or a response body beyond the server's own error message.

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace exedev {

/// Base of every exe.dev client error.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The server answered with an error status.
class APIError : public Error {
 public:
  APIError(unsigned status, std::string command, std::string server_message);
  [[nodiscard]] unsigned status() const noexcept { return status_; }
  /// The lobby command (name only, e.g. "new"), never its arguments' secrets.
  [[nodiscard]] const std::string& command() const noexcept { return command_; }
  /// The server's `{"error": …}` message (for a non-JSON body, only its size).
  [[nodiscard]] const std::string& server_message() const noexcept { return server_message_; }

 private:
  unsigned status_;
  std::string command_;
  std::string server_message_;
};

class BadRequestError : public APIError { public: using APIError::APIError; };       ///< 400, 405, 413
class AuthenticationError : public APIError { public: using APIError::APIError; };   ///< 401, or no token (status 0)
class PermissionError : public APIError { public: using APIError::APIError; };       ///< 403
class NotFoundError : public APIError { public: using APIError::APIError; };         ///< 404 (unknown command)
class CommandFailedError : public APIError { public: using APIError::APIError; };    ///< 422
class RateLimitedError : public APIError { public: using APIError::APIError; };      ///< 429
class ServerError : public APIError { public: using APIError::APIError; };           ///< 5xx other than 504
class GatewayTimeoutError : public APIError { public: using APIError::APIError; };   ///< 504

/// The server's answer could not be read (bad JSON, missing exit status, broken framing).
class ProtocolError : public Error { public: using Error::Error; };

/// The connection failed (resolve, connect, TLS, reset). `sent()` says whether the request may
/// have reached the server.
class ConnectionError : public Error {
 public:
  ConnectionError(const std::string& message, bool sent) : Error(message), sent_(sent) {}
  [[nodiscard]] bool sent() const noexcept { return sent_; }

 private:
  bool sent_;
};

/// A run() whose command may have run but whose result cannot be known: the VM is gone, its
/// record on the VM is lost, or the VM stayed unreachable. Holds what arrived.
class OutcomeUnknownError : public Error {
 public:
  OutcomeUnknownError(const std::string& message, std::string stdout_bytes, std::string stderr_bytes,
                      bool vm_gone = false)
      : Error(message),
        stdout_bytes_(std::move(stdout_bytes)),
        stderr_bytes_(std::move(stderr_bytes)),
        vm_gone_(vm_gone) {}
  [[nodiscard]] const std::string& stdout_bytes() const noexcept { return stdout_bytes_; }
  [[nodiscard]] const std::string& stderr_bytes() const noexcept { return stderr_bytes_; }
  /// True when exe.dev answered, while the result was being collected, that the VM does not
  /// exist (deleted mid-command); false when the VM may still exist.
  [[nodiscard]] bool vm_gone() const noexcept { return vm_gone_; }

 private:
  std::string stdout_bytes_;
  std::string stderr_bytes_;
  bool vm_gone_;
};

/// run() passed its timeout; the remote command was stopped. Holds the partial output.
class RunTimeoutError : public Error {
 public:
  RunTimeoutError(const std::string& message, std::string stdout_bytes, std::string stderr_bytes)
      : Error(message), stdout_bytes_(std::move(stdout_bytes)), stderr_bytes_(std::move(stderr_bytes)) {}
  [[nodiscard]] const std::string& stdout_bytes() const noexcept { return stdout_bytes_; }
  [[nodiscard]] const std::string& stderr_bytes() const noexcept { return stderr_bytes_; }

 private:
  std::string stdout_bytes_;
  std::string stderr_bytes_;
};

/// run() output passed max_output_bytes; the remote command was stopped. Holds the beginnings.
class OutputLimitError : public Error {
 public:
  OutputLimitError(const std::string& message, std::size_t limit, std::string stdout_bytes, std::string stderr_bytes)
      : Error(message), limit_(limit), stdout_bytes_(std::move(stdout_bytes)), stderr_bytes_(std::move(stderr_bytes)) {}
  [[nodiscard]] std::size_t limit() const noexcept { return limit_; }
  [[nodiscard]] const std::string& stdout_bytes() const noexcept { return stdout_bytes_; }
  [[nodiscard]] const std::string& stderr_bytes() const noexcept { return stderr_bytes_; }

 private:
  std::size_t limit_;
  std::string stdout_bytes_;
  std::string stderr_bytes_;
};

}  // namespace exedev
