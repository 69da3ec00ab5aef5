#pragma once
// The exe.dev client's error codes: one `exedev::errc` per kind of client error (errors.hpp, and
// ssh/errors.hpp for the SSH layer's), in
// a category of their own, so that an `Error` can be told apart by `code()` as well as by type,
// compared with `==`, and logged with `code().message()`.

#include <string>
#include <system_error>
#include <type_traits>

namespace exedev {

/// The kind of a client error; `Error::code()` holds one. Never 0 (0 is "no error").
enum class errc {
  bad_request = 1,        ///< BadRequestError: HTTP 400, 405, 413
  authentication_failed,  ///< AuthenticationError: HTTP 401, or no token
  permission_denied,      ///< PermissionError: HTTP 403
  unknown_command,        ///< NotFoundError: HTTP 404
  command_failed,         ///< CommandFailedError: HTTP 422, or an error answer with 200
  rate_limited,           ///< RateLimitedError: HTTP 429
  server_error,           ///< ServerError: HTTP 5xx other than 504
  gateway_timeout,        ///< GatewayTimeoutError: HTTP 504
  unexpected_status,      ///< APIError with a status none of the above covers
  protocol_error,         ///< ProtocolError: the answer could not be read
  connection_failed,      ///< ConnectionError: resolve, connect, TLS, reset (its cause() says which)
  outcome_unknown,        ///< OutcomeUnknownError: a command may have run, its result is lost
  run_timeout,            ///< RunTimeoutError
  output_limit,           ///< OutputLimitError
  host_key_rejected,      ///< HostKeyError: an SSH host key refused (changed, unknown under strict, revoked)
  ssh_authentication_failed,  ///< SshAuthenticationError: the SSH server accepted none of the keys tried
  ssh_key_unusable,       ///< SshKeyUnusableError: a private key that cannot be used (unreadable, encrypted, unknown type)
  transport_unsupported,  ///< TransportUnsupportedError: the operation needs a channel the backend's transport lacks
  ssh_misrouted,          ///< SshMisrouteError: an SSH connection landed somewhere other than the VM it names
};

/// The category of exedev::errc; its name is "exedev".
[[nodiscard]] const std::error_category& client_category() noexcept;

[[nodiscard]] inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), client_category()};
}

}  // namespace exedev

template <>
struct std::is_error_code_enum<exedev::errc> : std::true_type {};
