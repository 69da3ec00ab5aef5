#pragma once
// A private OpenSSH sshd for tests: what a client meets at exe.dev (its front's RSA host key and
// algorithms; behind it the VM sshd's SFTP, AcceptEnv LANG LC_*, forwarding), listening on 127.0.0.1 on a free port, as
// the current user (root works too), keys and authorized_keys in a temporary directory. The
// constructor returns once sshd says it listens; the destructor kills it and every process it
// started. Blocking, no Asio: usable from any test.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace exedev::test_support {

/// Runs a program (no shell) to its end; returns its exit code. Its output goes to `output` when
/// given, else to /dev/null.
int run_program(const std::vector<std::string>& argv, std::string* output = nullptr);

/// An ed25519 key pair made by ssh-keygen: `path` and `path`.pub.
struct KeyPair {
  std::filesystem::path private_key;
  std::filesystem::path public_key;
  [[nodiscard]] std::string public_line() const;    ///< "ssh-ed25519 AAAA… comment"
  [[nodiscard]] std::string private_text() const;   ///< the private key file's content
  [[nodiscard]] std::string fingerprint() const;    ///< "SHA256:…", as ssh-keygen -l prints it
};

/// Makes a key with ssh-keygen in `directory` (encrypted when `passphrase` is not empty).
KeyPair make_key(const std::filesystem::path& directory, const std::string& name, const std::string& passphrase = "",
                 const std::string& type = "ed25519");

/// An ssh-agent on a socket in `directory`, holding `keys` in order, named by SSH_AUTH_SOCK
/// while it lives; stopped by the destructor. Throws std::runtime_error when it cannot start.
class Agent {
 public:
  Agent(const std::filesystem::path& directory, const std::vector<KeyPair>& keys);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

 private:
  pid_t pid_ = -1;
};

class SshServer {
 public:
  /// `extra_config`: more sshd_config lines (appended).
  explicit SshServer(const std::string& extra_config = "");
  ~SshServer();
  SshServer(const SshServer&) = delete;
  SshServer& operator=(const SshServer&) = delete;

  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  [[nodiscard]] const std::string& user() const noexcept { return user_; }
  /// The temporary directory (removed by the destructor); tests may keep their files there.
  [[nodiscard]] const std::filesystem::path& directory() const noexcept { return directory_; }
  /// The key authorized when the server started.
  [[nodiscard]] const KeyPair& client_key() const noexcept { return client_key_; }
  /// Adds a public key to authorized_keys (sshd reads the file at each login).
  void authorize(const KeyPair& key) const;
  /// The known_hosts line for this server: "[127.0.0.1]:<port> ssh-rsa AAAA…".
  [[nodiscard]] std::string known_hosts_line() const;
  /// The host key's "SHA256:…" fingerprint, as ssh-keygen -l prints it.
  [[nodiscard]] std::string host_key_fingerprint() const;
  /// SIGKILLs every process sshd started (the connections' handlers and their sessions), so
  /// that each client connection drops; the listener stays.
  void kill_connections() const;
  /// What sshd logged so far (for failure messages).
  [[nodiscard]] std::string log() const;

 private:
  bool start(const std::string& extra_config);
  void stop();

  std::filesystem::path directory_;
  std::string user_;
  KeyPair host_key_;
  KeyPair client_key_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace exedev::test_support
