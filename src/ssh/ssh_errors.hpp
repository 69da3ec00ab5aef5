#pragma once
// The SSH layer's small mappings, sans-IO: libssh2's error codes as a std::error_category, a
// signal name to a shell's exit code, an SFTP status to a std::errc. Internal.

#include <string_view>
#include <system_error>

namespace exedev::ssh {

/// libssh2's error codes (LIBSSH2_ERROR_*, negative) as std::error_code values; its name is
/// "libssh2". ConnectionError::cause() holds one when libssh2 reported the failure.
[[nodiscard]] const std::error_category& libssh2_category() noexcept;

[[nodiscard]] inline std::error_code libssh2_error(int code) noexcept { return {code, libssh2_category()}; }

/// Whether a ConnectionError's cause says the server refused to open a channel (a session one:
/// MaxSessions, or the SFTP subsystem's) on a connection that stands.
[[nodiscard]] bool is_channel_refusal(std::error_code cause) noexcept;

/// The cause of a ConnectionError for an SFTP call that was not answered by its operation's
/// deadline (SshOptions::file_operation_timeout; the SFTP session was retired, the connection
/// stands). It compares equal to std::errc::timed_out, and is_deadline_passed tells it from a
/// connection that timed out.
[[nodiscard]] std::error_code deadline_passed() noexcept;
[[nodiscard]] bool is_deadline_passed(std::error_code cause) noexcept;

/// Whether a channel call's result (LIBSSH2_ERROR_*) says only that the channel, not the
/// connection, is gone (closed, EOF sent, refused, unknown).
[[nodiscard]] bool is_channel_gone(long rc) noexcept;

/// The exit code a shell reports for a process killed by the signal named `name` as SSH sends
/// it ("KILL", "TERM"; a "SIG" prefix is accepted): 128 + its Linux number, or 255 for a name
/// this table does not know (ssh's own code for a lost exit status).
[[nodiscard]] int exit_code_for_signal(std::string_view name) noexcept;

/// The std::errc a filesystem_error carries for an SFTP status (LIBSSH2_FX_*).
[[nodiscard]] std::errc errc_for_sftp_status(unsigned long status) noexcept;

}  // namespace exedev::ssh
