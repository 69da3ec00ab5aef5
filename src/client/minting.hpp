#pragma once
// exe0 tokens (exedev-api.md §2) minted with the user's SSH key: the payload and the token's
// form, when a token is renewed, and the commands a Client sends (sans-IO); and the minter each
// Client holds, which signs through src/ssh/signer (the SSH transport's choice of keys).

#include <exedev/client/client_options.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::ssh {
class Signer;
}

namespace exedev::detail {

using WallClock = std::chrono::system_clock;

/// The payload exe.dev checks and signs: `{"exp":…,"nbf":…,"cmds":[…]}` compact, only the keys
/// given, in that order. Throws std::invalid_argument for what exe.dev refuses: a time outside
/// [946684800, 4102444800] or an empty command.
[[nodiscard]] std::string exe0_payload(std::optional<std::int64_t> exp, std::optional<std::int64_t> nbf,
                                       const std::optional<std::vector<std::string>>& cmds);

/// `exe0.<base64url(payload)>.<base64url(SSHSIG blob)>`, both without padding.
[[nodiscard]] std::string exe0_token(std::string_view payload, std::string_view sshsig_blob);

/// The namespace a token is signed in: `v0@exe.dev` for /exec, `v0@<vm>.exe.xyz` for the VM's
/// HTTPS proxy.
inline constexpr std::string_view exec_namespace = "v0@exe.dev";
[[nodiscard]] std::string vm_namespace(std::string_view vm);

/// Whether a token valid until `expires` is replaced before a request sent at `now`: once less
/// than a third of `lifetime` (at most a minute) is left, so that a request, its retries and a
/// clock a little ahead of exe.dev's all fall within it.
[[nodiscard]] bool needs_renewal(WallClock::time_point expires, WallClock::time_point now, std::chrono::seconds lifetime);

/// Every command Client's typed calls send (the cmds of a minted token unless
/// TokenMinting::cmds says otherwise). Client::exec sends whatever it is given.
[[nodiscard]] const std::vector<std::string>& client_commands();

/// The /exec token of a client that mints: one at a time, replaced before it expires. Shared by
/// the copies of a Client; thread-safe. Choosing the key and signing block (a key file read, one
/// exchange with a local ssh-agent); nothing is logged.
class TokenMinter {
 public:
  /// What the key choice skipped in the user's ssh_config goes to `logger` (a warning), when set.
  TokenMinter(TokenMinting options, Logger logger);
  ~TokenMinter();
  /// The token for a request sent at `now`. Throws SshKeyUnusableError / SshAuthenticationError
  /// when no key can sign.
  [[nodiscard]] std::string exec_token(WallClock::time_point now);
  /// A token for the VM's HTTPS proxy, valid for `lifetime` from `now`, with no cmds.
  [[nodiscard]] std::string vm_token(std::string_view vm, std::chrono::seconds lifetime, WallClock::time_point now);
  /// The signing key's "SHA256:…" fingerprint and where it is (for messages).
  [[nodiscard]] std::string key_description();
  /// The token last minted, to mask in messages; empty before the first.
  [[nodiscard]] std::string current() const;

 private:
  const ssh::Signer& signer();  // with mutex_ held
  TokenMinting options_;
  Logger logger_;
  std::shared_ptr<const ssh::Signer> signer_;
  std::string token_;
  WallClock::time_point expires_{};
  mutable std::mutex mutex_;
};

}  // namespace exedev::detail
