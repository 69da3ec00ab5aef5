// The SSH layer's small mappings: signals to exit codes, SFTP statuses to std::errc, libssh2's
// codes as an error category; and what a private key's text says before it is used.
#include "common/base64.hpp"
#include "ssh/private_key.hpp"
#include "ssh/ssh_errors.hpp"

#include <libssh2.h>
#include <libssh2_sftp.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

using namespace exedev::ssh;

TEST_CASE("ssh exit codes: a signal is 128 + its Linux number, as a shell reports it") {
  struct Row {
    std::string name;
    int code;
  };
  const std::vector<Row> rows = {{"KILL", 137}, {"TERM", 143}, {"INT", 130}, {"HUP", 129},   {"SEGV", 139},
                                 {"PIPE", 141}, {"ABRT", 134}, {"USR1", 138}, {"SIGKILL", 137}, {"SYS", 159},
                                 {"NOSUCH", 255}, {"", 255}};
  for (const auto& row : rows) {
    INFO(row.name);
    CHECK(exit_code_for_signal(row.name) == row.code);
  }
}

TEST_CASE("ssh SFTP: statuses map to the std::errc a local filesystem would give") {
  struct Row {
    unsigned long status;
    std::errc code;
  };
  const std::vector<Row> rows = {
      {LIBSSH2_FX_NO_SUCH_FILE, std::errc::no_such_file_or_directory},
      {LIBSSH2_FX_NO_SUCH_PATH, std::errc::no_such_file_or_directory},
      {LIBSSH2_FX_PERMISSION_DENIED, std::errc::permission_denied},
      {LIBSSH2_FX_WRITE_PROTECT, std::errc::permission_denied},
      {LIBSSH2_FX_FILE_ALREADY_EXISTS, std::errc::file_exists},
      {LIBSSH2_FX_NOT_A_DIRECTORY, std::errc::not_a_directory},
      {LIBSSH2_FX_DIR_NOT_EMPTY, std::errc::directory_not_empty},
      {LIBSSH2_FX_NO_SPACE_ON_FILESYSTEM, std::errc::no_space_on_device},
      {LIBSSH2_FX_QUOTA_EXCEEDED, std::errc::no_space_on_device},
      {LIBSSH2_FX_LINK_LOOP, std::errc::too_many_symbolic_link_levels},
      {LIBSSH2_FX_OP_UNSUPPORTED, std::errc::operation_not_supported},
      {LIBSSH2_FX_INVALID_FILENAME, std::errc::invalid_argument},
      {LIBSSH2_FX_FAILURE, std::errc::io_error},
      {LIBSSH2_FX_CONNECTION_LOST, std::errc::io_error},
      {999, std::errc::io_error},
  };
  for (const auto& row : rows) {
    INFO("status " << row.status);
    CHECK(errc_for_sftp_status(row.status) == row.code);
  }
}

TEST_CASE("ssh errors: libssh2's codes are a category of their own with messages") {
  const auto code = libssh2_error(LIBSSH2_ERROR_SOCKET_RECV);
  CHECK(std::string(code.category().name()) == "libssh2");
  CHECK(code.value() == LIBSSH2_ERROR_SOCKET_RECV);
  CHECK_THAT(code.message(), Catch::Contains("closed the connection"));
  CHECK(libssh2_error(LIBSSH2_ERROR_KEX_FAILURE) != libssh2_error(LIBSSH2_ERROR_SOCKET_RECV));
  CHECK_THAT(libssh2_error(-9999).message(), Catch::Contains("-9999"));
}

namespace {

std::string wire_string(const std::string& text) {
  std::string out(4, '\0');
  const auto size = static_cast<std::uint32_t>(text.size());
  for (int i = 0; i < 4; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((size >> (24 - 8 * i)) & 0xff);
  return out + text;
}

// An OpenSSH private key file's text with the given cipher and public key type (the private
// part is left out: inspection never reads it).
std::string openssh_key(const std::string& cipher, const std::string& type) {
  const std::string body = std::string("openssh-key-v1\0", 15) + wire_string(cipher) +
                           wire_string(cipher == "none" ? "none" : "bcrypt") + wire_string("") +
                           std::string("\0\0\0\1", 4) + wire_string(wire_string(type) + wire_string(std::string(32, 'k')));
  return "-----BEGIN OPENSSH PRIVATE KEY-----\n" + exedev::detail::base64_encode(body) +
         "\n-----END OPENSSH PRIVATE KEY-----\n";
}

}  // namespace

TEST_CASE("ssh private keys: format, encryption and type read without decrypting") {
  using Format = PrivateKeyInfo::Format;
  struct Row {
    std::string text;
    Format format;
    bool encrypted;
    std::string type;
    std::string problem_part;  // empty: usable
  };
  const std::vector<Row> rows = {
      {openssh_key("none", "ssh-ed25519"), Format::openssh, false, "ssh-ed25519", ""},
      {openssh_key("aes256-ctr", "ssh-ed25519"), Format::openssh, true, "ssh-ed25519", ""},
      {openssh_key("none", "ssh-rsa"), Format::openssh, false, "ssh-rsa", ""},
      {openssh_key("none", "ecdsa-sha2-nistp256"), Format::openssh, false, "ecdsa-sha2-nistp256", ""},
      {openssh_key("none", "sk-ssh-ed25519@openssh.com"), Format::openssh, false, "sk-ssh-ed25519@openssh.com",
       "cannot use"},
      {"-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n", Format::openssh, false, "", "without its END line"},
      {"-----BEGIN OPENSSH PRIVATE KEY-----\nbm90IGEga2V5\n-----END OPENSSH PRIVATE KEY-----\n", Format::openssh, false, "",
       "does not decode"},
      {"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n", Format::pem, false, "RSA", ""},
      {"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nMIIE\n-----END RSA PRIVATE KEY-----\n",
       Format::pem, true, "RSA", ""},
      {"-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----\n", Format::pem, false, "EC", ""},
      {"-----BEGIN PRIVATE KEY-----\nMC4\n-----END PRIVATE KEY-----\n", Format::pkcs8, false, "", ""},
      {"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMC4\n-----END ENCRYPTED PRIVATE KEY-----\n", Format::pkcs8, true, "", ""},
      {"-----BEGIN PGP PRIVATE KEY BLOCK-----\n", Format::unknown, false, "", "unknown key format"},
      {"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBgC public key\n", Format::unknown, false, "", "not a private key"},
  };
  for (const auto& row : rows) {
    INFO(row.text);
    const auto info = inspect_private_key(row.text);
    CHECK(info.format == row.format);
    if (row.problem_part.empty()) {
      CHECK(info.problem.empty());
      CHECK(info.encrypted == row.encrypted);
      CHECK(info.key_type == row.type);
    } else {
      CHECK_THAT(info.problem, Catch::Contains(row.problem_part));
    }
  }
}
