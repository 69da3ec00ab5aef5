#pragma once
// OpenSSH known_hosts, sans-IO: parsing a file's text, finding what it says about a host's key,
// and the line that records a new key. Also the SHA256 fingerprint of a key, as ssh-keygen -l
// prints it. Internal.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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

/// A line that does not parse: skipped, as OpenSSH skips it. The reason never quotes the line.
struct MalformedLine {
  std::size_t line = 0;  ///< 1-based
  std::string reason;
};

struct KnownHostsFile {
  std::vector<KnownHostEntry> entries;
  std::vector<MalformedLine> malformed;
  /// Some line names its host hashed (`|1|…`): the user hashes names (HashKnownHosts).
  [[nodiscard]] bool uses_hashed_names() const;
};

/// Parses a known_hosts file's text. Comments and blank lines are skipped; a line that does not
/// parse is skipped and listed in `malformed`; the rest of the file is used.
[[nodiscard]] KnownHostsFile parse_known_hosts(std::string_view text);

/// The one warning about a file's malformed lines (line numbers and reasons, never content), or
/// empty when there are none.
[[nodiscard]] std::string malformed_lines_warning(std::string_view file_name, const std::vector<MalformedLine>& malformed);

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
  std::size_t recorded_line = 0;  ///< also the @revoked line, for `revoked`
  /// The first @cert-authority line naming the host (0: none). Host certificates are not checked
  /// (libssh2 1.10 negotiates no RSA or Ed25519 certificate, and exe.dev's proxy has an RSA key),
  /// so such a line never makes a key known; it is reported so that a refusal can say which
  /// plain key line to add.
  std::size_t cert_authority_line = 0;
};

/// Only lines naming the host count: a @revoked line refuses the key for the hosts it names, a
/// @cert-authority line is reported (cert_authority_line), never matched against the key.
[[nodiscard]] HostKeyVerdict check_host_key(const std::vector<KnownHostEntry>& entries, std::string_view name,
                                            std::string_view key_blob);

/// The line recording a new key: "<name> <type> <base64 blob>\n".
[[nodiscard]] std::string known_hosts_line(std::string_view name, std::string_view key_blob);

/// The host field accept_new records for `host`: every exe.dev VM is reached through one SSH
/// proxy with one host key, so one line covers the host's domain, `*.exe.xyz` for `a.exe.xyz`
/// (`[*.exe.xyz]:*` on another port than 22: the proxy's key on every port, as exe.dev's
/// published line names it). An IP address, or a name of fewer than three
/// labels (`exe.dev`, `localhost`), is recorded as itself.
[[nodiscard]] std::string domain_host_pattern(std::string_view host, std::uint16_t port);

/// What accept_new appends for a key offered by `host`:`port` to a file whose current content is
/// `file`: nothing when a line already names the host with that key (another connection
/// recorded it meanwhile), else the domain_host_pattern() line, or, when the file uses hashed
/// names, the hashed exact name made with `salt` (a hash cannot hold a pattern).
[[nodiscard]] std::optional<std::string> line_to_record(const KnownHostsFile& file, std::string_view host,
                                                        std::uint16_t port, std::string_view key_blob,
                                                        std::string_view salt);

}  // namespace exedev::ssh
