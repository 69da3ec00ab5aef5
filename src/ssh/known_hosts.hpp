#pragma once
// OpenSSH known_hosts, sans-IO: parsing a file's text, finding what it says about a host's key,
// and the line that records a new key. Also the SHA256 fingerprint of a key, as ssh-keygen -l
// prints it. Internal.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace exedev::ssh {

/// "SHA256:<base64 of the SHA-256 of the key blob, without padding>".
[[nodiscard]] std::string sha256_fingerprint(std::string_view key_blob);

/// The key type a public key blob names in its first field ("ssh-ed25519"), or nullopt when the
/// blob is too short to hold one.
[[nodiscard]] std::optional<std::string> key_type_of_blob(std::string_view key_blob);

/// How known_hosts names a host: "host" on port 22, "[host]:port" otherwise.
[[nodiscard]] std::string known_hosts_name(std::string_view host, std::uint16_t port);

/// The hashed form of a host name (`ssh-keygen -H`): "|1|<base64 salt>|<base64 HMAC-SHA1(salt, name)>".
[[nodiscard]] std::string hashed_host_name(std::string_view name, std::string_view salt);

struct KnownHostEntry {
  enum class Marker { none, revoked, cert_authority };
  Marker marker = Marker::none;
  std::string hosts;  ///< the host field as written: a comma list of patterns, or one hashed name
  std::string key_type;
  std::string key_blob;  ///< the decoded key
  std::size_t line = 0;  ///< 1-based
};

struct KnownHostsParseError {
  std::size_t line = 0;  ///< 1-based
  std::string reason;
};

/// Parses a known_hosts file's text. Comments and blank lines are skipped; the first line that
/// does not parse is returned as the error.
[[nodiscard]] std::variant<std::vector<KnownHostEntry>, KnownHostsParseError> parse_known_hosts(std::string_view text);

/// Whether `entry` names `name` (known_hosts_name() of the host): a hashed name, or a comma list
/// of patterns with `*` and `?` wildcards, where a matching `!pattern` excludes the host.
[[nodiscard]] bool entry_names_host(const KnownHostEntry& entry, std::string_view name);

/// What the file says about a key offered by a host.
struct HostKeyVerdict {
  enum class Status {
    known,     ///< recorded for the host as it is
    changed,   ///< the host has a different key of the same type recorded
    unknown,   ///< nothing of that type recorded for the host
    revoked,   ///< the key is marked @revoked
  };
  Status status = Status::unknown;
  /// The recorded key of the same type (for `changed`), and its line.
  std::optional<std::string> recorded_blob;
  std::size_t recorded_line = 0;
};

/// @cert-authority lines are skipped (host certificates are not used); @revoked lines refuse the
/// key whatever host they name.
[[nodiscard]] HostKeyVerdict check_host_key(const std::vector<KnownHostEntry>& entries, std::string_view name,
                                            std::string_view key_blob);

/// The line recording a new key: "<name> <type> <base64 blob>\n".
[[nodiscard]] std::string known_hosts_line(std::string_view name, std::string_view key_blob);

}  // namespace exedev::ssh
