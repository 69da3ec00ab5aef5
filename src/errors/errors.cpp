#include "errors/status_codes.hpp"
#include "common/inert_text.hpp"

#include <exedev/error_code.hpp>
#include <exedev/errors.hpp>

#include <fmt/format.h>

namespace exedev {

namespace {

std::string describe(unsigned status, const std::string& command, const std::string& server_message) {
  std::string text = command.empty() ? std::string("exe.dev request") : fmt::format("exe.dev command \"{}\"", command);
  if (status != 0) text += fmt::format(" failed with HTTP {}", status);
  else text += " failed";
  // The server's text may quote a VM's (a command's stderr): inert in what(), as it came in
  // server_message().
  if (!server_message.empty()) text += fmt::format(": {}", detail::inert_text(server_message));
  return text;
}

}  // namespace

errc detail::errc_for_status(unsigned status) {
  switch (status) {
    case 0: case 401: return errc::authentication_failed;
    case 200: case 422: return errc::command_failed;
    case 400: case 405: case 413: return errc::bad_request;
    case 403: return errc::permission_denied;
    case 404: return errc::unknown_command;
    case 429: return errc::rate_limited;
    case 504: return errc::gateway_timeout;
    default: return status >= 500 && status < 600 ? errc::server_error : errc::unexpected_status;
  }
}

namespace {

class ClientCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "exedev"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::bad_request: return "exe.dev refused the request as malformed";
      case errc::authentication_failed: return "exe.dev refused the token, or no token is configured";
      case errc::permission_denied: return "the token may not run the command";
      case errc::unknown_command: return "exe.dev does not know the command";
      case errc::command_failed: return "the lobby command failed";
      case errc::rate_limited: return "the key's rate limit was reached";
      case errc::server_error: return "exe.dev had a server error";
      case errc::gateway_timeout: return "exe.dev timed out the request";
      case errc::unexpected_status: return "exe.dev answered with an unexpected HTTP status";
      case errc::protocol_error: return "the answer could not be read";
      case errc::connection_failed: return "the connection to exe.dev failed";
      case errc::outcome_unknown: return "the command may have run; its result is unknown";
      case errc::run_timeout: return "the command passed its timeout and was stopped";
      case errc::output_limit: return "the command passed its output limit and was stopped";
      case errc::host_key_rejected: return "the SSH server's host key was refused";
      case errc::ssh_authentication_failed: return "the SSH server accepted none of the keys tried";
      case errc::ssh_key_unusable: return "an SSH private key could not be used";
      case errc::transport_unsupported: return "the transport in use has no channel for the operation";
      case errc::ssh_misrouted: return "the SSH connection landed somewhere other than the VM it names";
    }
    return "unknown exedev error";
  }
};

}  // namespace

const std::error_category& client_category() noexcept {
  static const ClientCategory category;
  return category;
}

bool Error::is_retryable() const noexcept {
  switch (code_) {
    case errc::rate_limited: case errc::server_error: case errc::gateway_timeout: case errc::connection_failed:
      return true;
    default:
      return false;
  }
}

bool Error::may_have_run() const noexcept {
  switch (code_) {
    case errc::bad_request: case errc::authentication_failed: case errc::permission_denied:
    case errc::unknown_command: case errc::command_failed: case errc::rate_limited:
      return false;  // refused before anything ran (§1.5)
    case errc::host_key_rejected: case errc::ssh_authentication_failed: case errc::ssh_key_unusable:
      return false;  // an SSH connection refused before any command was sent
    case errc::ssh_misrouted:
      return false;  // found by the route probe, before any of the caller's work was sent
    case errc::transport_unsupported:
      return false;  // refused before anything was sent
    default:
      return true;
  }
}

APIError::APIError(unsigned status, std::string command, std::string server_message)
    : Error(detail::errc_for_status(status), describe(status, command, server_message)),
      status_(status),
      command_(std::move(command)),
      server_message_(std::move(server_message)) {}

RateLimitedError::RateLimitedError(std::string command, std::string server_message,
                                   std::optional<std::chrono::milliseconds> retry_after)
    : APIError(429, std::move(command), std::move(server_message)), retry_after_(retry_after) {}

}  // namespace exedev
