#pragma once
// The ssh-agent protocol messages this library speaks (draft-miller-ssh-agent): listing the
// agent's keys (SSH_AGENTC_REQUEST_IDENTITIES) and asking one to sign (SSH_AGENTC_SIGN_REQUEST,
// with SSH_AGENT_RSA_SHA2_512 for RSA keys). Every message is uint32(length) ‖ byte(type) ‖
// contents. Internal, sans-IO: agent_client carries these over the socket.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::ssh {

inline constexpr std::uint8_t agentc_request_identities = 11;
inline constexpr std::uint8_t agent_identities_answer = 12;
inline constexpr std::uint8_t agentc_sign_request = 13;
inline constexpr std::uint8_t agent_sign_response = 14;
inline constexpr std::uint32_t agent_rsa_sha2_512 = 4;
/// The largest answer read from an agent (OpenSSH's AGENT_MAX_LEN).
inline constexpr std::uint32_t agent_max_message = 256 * 1024;

struct AgentIdentity {
  std::string key_blob;
  std::string comment;
  bool operator==(const AgentIdentity&) const = default;
};

/// The framed request for the agent's keys.
[[nodiscard]] std::string agent_identities_request();

/// The framed request to sign `data` with the key `key_blob`: flags SSH_AGENT_RSA_SHA2_512 for
/// an ssh-rsa key (an RSA signature over SHA-512), none for others.
[[nodiscard]] std::string agent_sign_request(std::string_view key_blob, std::string_view data);

/// The length of the message a 4-byte header announces; nullopt for 0 or more than
/// agent_max_message.
[[nodiscard]] std::optional<std::uint32_t> agent_message_length(std::string_view header);

/// The keys of an SSH_AGENT_IDENTITIES_ANSWER (`message`: type and contents, without the length);
/// nullopt for any other or a malformed message.
[[nodiscard]] std::optional<std::vector<AgentIdentity>> parse_agent_identities(std::string_view message);

/// The SSH signature blob of an SSH_AGENT_SIGN_RESPONSE; nullopt for SSH_AGENT_FAILURE, any other
/// or a malformed message.
[[nodiscard]] std::optional<std::string> parse_agent_signature(std::string_view message);

}  // namespace exedev::ssh
