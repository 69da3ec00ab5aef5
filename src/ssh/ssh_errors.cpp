#include "ssh/ssh_errors.hpp"

#include <libssh2.h>
#include <libssh2_sftp.h>

#include <array>
#include <string>
#include <utility>

namespace exedev::ssh {

namespace {

class Libssh2Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "libssh2"; }
  std::string message(int value) const override {
    switch (value) {
      case LIBSSH2_ERROR_BANNER_RECV: return "the server's banner could not be read";
      case LIBSSH2_ERROR_BANNER_SEND: return "the banner could not be sent";
      case LIBSSH2_ERROR_INVALID_MAC: return "a packet failed its integrity check";
      case LIBSSH2_ERROR_KEX_FAILURE: return "key exchange failed (no algorithm in common?)";
      case LIBSSH2_ERROR_SOCKET_SEND: return "sending on the socket failed";
      case LIBSSH2_ERROR_KEY_EXCHANGE_FAILURE: return "key exchange failed";
      case LIBSSH2_ERROR_TIMEOUT: return "timed out";
      case LIBSSH2_ERROR_HOSTKEY_INIT: return "the host key could not be initialised";
      case LIBSSH2_ERROR_HOSTKEY_SIGN: return "the host key's signature did not verify";
      case LIBSSH2_ERROR_DECRYPT: return "decryption failed";
      case LIBSSH2_ERROR_SOCKET_DISCONNECT: return "the server disconnected";
      case LIBSSH2_ERROR_PROTO: return "protocol error";
      case LIBSSH2_ERROR_ALLOC: return "out of memory";
      case LIBSSH2_ERROR_FILE: return "a key could not be read";
      case LIBSSH2_ERROR_METHOD_NONE: return "no method in common with the server";
      case LIBSSH2_ERROR_AUTHENTICATION_FAILED: return "authentication failed";
      case LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED: return "the public key was not verified";
      case LIBSSH2_ERROR_CHANNEL_OUTOFORDER: return "channel packets out of order";
      case LIBSSH2_ERROR_CHANNEL_FAILURE: return "the server refused to open a channel";
      case LIBSSH2_ERROR_CHANNEL_REQUEST_DENIED: return "the server refused a channel request";
      case LIBSSH2_ERROR_CHANNEL_CLOSED: return "the channel is closed";
      case LIBSSH2_ERROR_CHANNEL_EOF_SENT: return "the channel's end of input was already sent";
      case LIBSSH2_ERROR_SFTP_PROTOCOL: return "SFTP error";
      case LIBSSH2_ERROR_SOCKET_TIMEOUT: return "the socket timed out";
      case LIBSSH2_ERROR_REQUEST_DENIED: return "the server denied the request";
      case LIBSSH2_ERROR_INVAL: return "invalid argument";
      case LIBSSH2_ERROR_EAGAIN: return "the operation would block";
      case LIBSSH2_ERROR_BAD_USE: return "libssh2 was used out of order";
      case LIBSSH2_ERROR_SOCKET_RECV: return "receiving on the socket failed or the server closed the connection";
      case LIBSSH2_ERROR_KNOWN_HOSTS: return "known hosts error";
      case LIBSSH2_ERROR_AGENT_PROTOCOL: return "the SSH agent answered out of protocol";
      case LIBSSH2_ERROR_ENCRYPT: return "encryption failed";
      case LIBSSH2_ERROR_BAD_SOCKET: return "bad socket";
      default: return "libssh2 error " + std::to_string(value);
    }
  }
};

// The SSH layer's own causes, which libssh2 does not report: one so far.
class DeadlineCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "exedev.ssh.deadline"; }
  std::string message(int) const override { return "the operation's deadline passed"; }
  std::error_condition default_error_condition(int) const noexcept override {
    return std::make_error_condition(std::errc::timed_out);
  }
};

}  // namespace

std::error_code deadline_passed() noexcept {
  static const DeadlineCategory category;
  return {1, category};
}

bool is_deadline_passed(std::error_code cause) noexcept { return cause == deadline_passed(); }

const std::error_category& libssh2_category() noexcept {
  static const Libssh2Category category;
  return category;
}

bool is_channel_refusal(std::error_code cause) noexcept { return cause == libssh2_error(LIBSSH2_ERROR_CHANNEL_FAILURE); }

bool is_channel_gone(long rc) noexcept {
  return rc == LIBSSH2_ERROR_CHANNEL_CLOSED || rc == LIBSSH2_ERROR_CHANNEL_EOF_SENT ||
         rc == LIBSSH2_ERROR_CHANNEL_FAILURE || rc == LIBSSH2_ERROR_CHANNEL_UNKNOWN;
}

int exit_code_for_signal(std::string_view name) noexcept {
  if (name.starts_with("SIG")) name.remove_prefix(3);
  // Linux's numbers: the VMs run Linux, and sshd sends the name, not the number.
  static constexpr std::array<std::pair<std::string_view, int>, 31> signals{{
      {"HUP", 1},     {"INT", 2},     {"QUIT", 3},   {"ILL", 4},    {"TRAP", 5},    {"ABRT", 6},  {"BUS", 7},
      {"FPE", 8},     {"KILL", 9},    {"USR1", 10},  {"SEGV", 11},  {"USR2", 12},   {"PIPE", 13}, {"ALRM", 14},
      {"TERM", 15},   {"STKFLT", 16}, {"CHLD", 17},  {"CONT", 18},  {"STOP", 19},   {"TSTP", 20}, {"TTIN", 21},
      {"TTOU", 22},   {"URG", 23},    {"XCPU", 24},  {"XFSZ", 25},  {"VTALRM", 26}, {"PROF", 27}, {"WINCH", 28},
      {"IO", 29},     {"PWR", 30},    {"SYS", 31},
  }};
  for (const auto& [signal_name, number] : signals) {
    if (signal_name == name) return 128 + number;
  }
  return 255;
}

std::errc errc_for_sftp_status(unsigned long status) noexcept {
  switch (status) {
    case LIBSSH2_FX_NO_SUCH_FILE: case LIBSSH2_FX_NO_SUCH_PATH: return std::errc::no_such_file_or_directory;
    case LIBSSH2_FX_PERMISSION_DENIED: case LIBSSH2_FX_WRITE_PROTECT: return std::errc::permission_denied;
    case LIBSSH2_FX_FILE_ALREADY_EXISTS: return std::errc::file_exists;
    case LIBSSH2_FX_NOT_A_DIRECTORY: return std::errc::not_a_directory;
    case LIBSSH2_FX_DIR_NOT_EMPTY: return std::errc::directory_not_empty;
    case LIBSSH2_FX_NO_SPACE_ON_FILESYSTEM: case LIBSSH2_FX_QUOTA_EXCEEDED: return std::errc::no_space_on_device;
    case LIBSSH2_FX_INVALID_FILENAME: case LIBSSH2_FX_INVALID_HANDLE: case LIBSSH2_FX_BAD_MESSAGE:
      return std::errc::invalid_argument;
    case LIBSSH2_FX_OP_UNSUPPORTED: return std::errc::operation_not_supported;
    case LIBSSH2_FX_LINK_LOOP: return std::errc::too_many_symbolic_link_levels;
    case LIBSSH2_FX_NO_MEDIA: case LIBSSH2_FX_NO_CONNECTION: case LIBSSH2_FX_CONNECTION_LOST:
      return std::errc::io_error;
    case LIBSSH2_FX_LOCK_CONFLICT: return std::errc::device_or_resource_busy;
    case LIBSSH2_FX_UNKNOWN_PRINCIPAL: return std::errc::invalid_argument;
    default: return std::errc::io_error;  // LIBSSH2_FX_FAILURE and anything newer
  }
}

}  // namespace exedev::ssh
