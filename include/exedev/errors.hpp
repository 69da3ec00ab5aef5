#pragma once
// Errors of the exe.dev client. Messages name commands and VMs, never a token, an environment
// value or a response body beyond the server's own error message.
//
// Every error has a code (error_code.hpp) and answers two questions (docs/client.md, "Errors"):
// is_retryable(): can the same request succeed if sent again later; may_have_run(): may the
// request have taken effect. Sending it again is safe when it is retryable and either did not
// run or runs safely twice.

#include <exedev/error_code.hpp>
#include <exedev/partial_output.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>

namespace exedev {

/// Base of every exe.dev client error.
class Error : public std::runtime_error {
 public:
  Error(errc code, const std::string& message) : std::runtime_error(message), code_(code) {}

  /// Which kind of error this is, in exedev's category (`e.code() == exedev::errc::rate_limited`).
  [[nodiscard]] std::error_code code() const noexcept { return code_; }
  /// The same request may succeed if sent again later: a rate limit, a server error (5xx, 504)
  /// or a failed connection. Every other error repeats until something changes.
  [[nodiscard]] bool is_retryable() const noexcept;
  /// The request may have taken effect: it was (or may have been) accepted and the answer is an
  /// error, lost or unreadable. False when exe.dev refused it before running it (4xx, 429) and
  /// when the connection failed before it was sent.
  [[nodiscard]] virtual bool may_have_run() const noexcept;

 private:
  errc code_;
};

/// The server answered with an error status.
class APIError : public Error {
 public:
  APIError(unsigned status, std::string command, std::string server_message);
  [[nodiscard]] unsigned status() const noexcept { return status_; }
  /// The lobby command (name only, e.g. "new"), never its arguments' secrets.
  [[nodiscard]] const std::string& command() const noexcept { return command_; }
  /// The server's `{"error": …}` message (for a non-JSON body, only its size), as it came; what()
  /// shows it inert (control characters escaped as `\xNN`, at most 1 KiB).
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
class ServerError : public APIError { public: using APIError::APIError; };           ///< 5xx other than 504
class GatewayTimeoutError : public APIError { public: using APIError::APIError; };   ///< 504

/// 429: the key's rate limit (60 requests of burst, then 1 per second). exe.dev answers it before
/// the command runs, so every command may be sent again once the limit allows.
class RateLimitedError : public APIError {
 public:
  RateLimitedError(std::string command, std::string server_message,
                   std::optional<std::chrono::milliseconds> retry_after = std::nullopt);
  /// How long to wait before the request would be accepted: the wait the client's rate-limit
  /// model needed, when the client gave up because it would pass the operation's deadline
  /// (RateLimitOptions); otherwise exe.dev's Retry-After (counted from when the answer arrived),
  /// if it sent one.
  [[nodiscard]] std::optional<std::chrono::milliseconds> retry_after() const noexcept { return retry_after_; }

 private:
  std::optional<std::chrono::milliseconds> retry_after_;
};

/// The server's answer could not be read (bad JSON, missing exit status, broken framing).
class ProtocolError : public Error {
 public:
  explicit ProtocolError(const std::string& message) : Error(errc::protocol_error, message) {}
};

/// The connection failed (resolve, connect, TLS, reset). `sent()` says whether the request may
/// have reached the server; `cause()` is the failure underneath (an Asio, OpenSSL or system
/// code, e.g. `std::errc::connection_refused`), when there was one.
class ConnectionError : public Error {
 public:
  ConnectionError(const std::string& message, bool sent, std::error_code cause = {})
      : Error(errc::connection_failed, message), sent_(sent), cause_(cause) {}
  [[nodiscard]] bool sent() const noexcept { return sent_; }
  [[nodiscard]] std::error_code cause() const noexcept { return cause_; }
  [[nodiscard]] bool may_have_run() const noexcept override { return sent_; }

 private:
  bool sent_;
  std::error_code cause_;
};

/// A run() whose command may have run but whose result cannot be known: the VM is gone, its
/// record on the VM is lost, or the VM stayed unreachable. `output()` holds what arrived.
class OutcomeUnknownError : public Error, public WithPartialOutput {
 public:
  OutcomeUnknownError(const std::string& message, PartialOutput output, bool vm_gone = false)
      : Error(errc::outcome_unknown, message), WithPartialOutput(std::move(output)), vm_gone_(vm_gone) {}
  /// True when exe.dev answered, while the result was being collected, that the VM does not
  /// exist (deleted mid-command); false when the VM may still exist.
  [[nodiscard]] bool vm_gone() const noexcept { return vm_gone_; }

 private:
  bool vm_gone_;
};

/// run() passed its timeout; the remote command was stopped. `output()` holds the partial output.
class RunTimeoutError : public Error, public WithPartialOutput {
 public:
  RunTimeoutError(const std::string& message, PartialOutput output)
      : Error(errc::run_timeout, message), WithPartialOutput(std::move(output)) {}
};

/// run() output passed max_output_bytes; the remote command was stopped. `output()` holds the
/// beginnings.
class OutputLimitError : public Error, public WithPartialOutput {
 public:
  OutputLimitError(const std::string& message, std::size_t limit, PartialOutput output)
      : Error(errc::output_limit, message), WithPartialOutput(std::move(output)), limit_(limit) {}
  [[nodiscard]] std::size_t limit() const noexcept { return limit_; }

 private:
  std::size_t limit_;
};

}  // namespace exedev
