#pragma once
// exe0 tokens as exe.dev reads them (sshkey/token.go at the commit exedev-api.md §0 names):
// `exe0.<base64url(payload)>.<base64url(SSHSIG blob)>`, the payload's rules with exe.dev's
// messages, the exp/nbf claims, and the SSHSIG signature verified with the account's stored key
// (OpenSSL). Written from the specification, not from the client's signer (src/ssh/signer),
// so that each checks the other; OpenSSH's ssh-keygen checks both in the tests. Internal, sans-IO.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace exedev::emulator {

/// A token that passed exe.dev's ParseToken: its format and payload rules (not its signature).
struct Exe0Token {
  std::string payload;  ///< the signed bytes
  std::optional<std::int64_t> exp;
  std::optional<std::int64_t> nbf;
  /// nullopt: absent (exe.dev's defaults apply); an empty list allows nothing.
  std::optional<std::vector<std::string>> cmds;
  std::string public_key_blob;  ///< the key embedded in the signature
  std::string fingerprint;      ///< "SHA256:…" of that key
  std::string name_space;
  std::string hash_algorithm;   ///< sha256 or sha512
  std::string signature_blob;   ///< string(algorithm) ‖ string(signature)
};

/// The token parsed, or exe.dev's error message for it (e.g. `invalid token: unknown field "x"`).
[[nodiscard]] std::variant<Exe0Token, std::string> parse_exe0_token(std::string_view token);

/// exe.dev's message when the claims refuse the token at `now` (Unix seconds): exp before now
/// ("invalid token: token has expired"), then, unless `for_trade` (exe0-to-exe1 checks exp only),
/// nbf after now ("invalid token: token is not yet valid").
[[nodiscard]] std::optional<std::string> exe0_claims_error(const Exe0Token& token, std::int64_t now, bool for_trade);

/// Whether the token's SSHSIG signature of its payload verifies with `stored_key_blob` (the
/// account's key, in the SSH wire format) in `name_space`. The embedded key must be that key.
[[nodiscard]] bool exe0_signature_valid(const Exe0Token& token, std::string_view stored_key_blob, std::string_view name_space);

}  // namespace exedev::emulator
