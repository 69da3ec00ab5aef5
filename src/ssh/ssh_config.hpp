#pragma once
// The user's ssh_config (~/.ssh/config) as OpenSSH reads it (ssh_config(5)), sans-IO: what the
// file says for one host. Include's files come through a callback, so nothing here opens a file.
// Internal; docs/ssh.md, "~/.ssh/config", lists what is read.
//
// - A line is a keyword (case-insensitive) and its arguments, separated by whitespace or one `=`;
//   arguments may be quoted ("…" or '…'); `#` starts a comment where a word could start.
// - For each keyword the first value obtained is used; IdentityFile accumulates.
// - `Host` patterns (whitespace-separated, `*`, `?`, `!` to exclude) match the host as the
//   connection names it; `Match all`, `Match host <list>` (the HostName obtained so far, else the
//   host), `Match originalhost <list>` (comma lists with `!`; criteria ANDed, each negatable).
//   A block of any other Match criterion is skipped with a note: never applied on a guess.
// - `Include` (relative to ~/.ssh, `~`, glob wildcards, at most 16 levels), read only where
//   it appears in an active block; a Host or Match line inside it changes the block for the
//   rest of the including file too, as in OpenSSH.
// - A line that cannot be used is skipped with a note naming the file and line (never its
//   content); nothing throws for a bad user file.

#include <exedev/ssh/options.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::ssh {

/// One configuration file: the name notes use for it, and its text (or why it could not be read).
struct ConfigText {
  std::string name;
  std::string text;
  std::optional<std::string> problem;  ///< set: the file could not be read (text is empty)
};

/// Reads the files an Include names: `pattern` is an absolute path that may hold glob wildcards;
/// returns the files that match, in lexical order (none: the Include adds nothing).
using IncludeReader = std::function<std::vector<ConfigText>(const std::string& pattern)>;

/// What the file says for one host. Paths are as written: expand_config_path() expands them
/// once the remote user is known.
struct SshConfig {
  std::optional<std::string> host_name;  ///< HostName, `%h` expanded
  std::optional<std::string> user;
  std::optional<std::uint16_t> port;
  std::vector<std::string> identity_files;           ///< every IdentityFile obtained, in order
  std::optional<bool> identities_only;
  std::optional<std::string> user_known_hosts_file;  ///< the first file of UserKnownHostsFile
  /// StrictHostKeyChecking: yes and ask → strict; accept-new → accept_new; no/off → accept_new
  /// too (this library never turns host key checking off; a note says so).
  std::optional<HostKeyPolicy> host_key_policy;
  /// One line per thing skipped: "ssh_config <file> line <n>: <why>".
  std::vector<std::string> notes;
};

/// Resolves `file` for `host` (the host as the connection names it). `home` is `~` and the
/// directory of `.ssh`, where relative Include paths are.
[[nodiscard]] SshConfig resolve_ssh_config(const ConfigText& file, std::string_view host,
                                           const std::filesystem::path& home, const IncludeReader& read_include);

/// The values of the `%` tokens ssh_config paths may hold.
struct PathTokens {
  std::filesystem::path home;  ///< %d, and `~`
  std::string local_user;      ///< %u
  std::string local_host;      ///< %l
  std::string remote_host;     ///< %h (after HostName)
  std::string remote_user;     ///< %r
};

/// A path from the file (IdentityFile, UserKnownHostsFile) with `~` and `%d %h %u %r %l %%`
/// expanded; a relative path is taken relative to ~/.ssh. resolve_ssh_config() keeps only paths
/// whose tokens are these (another `%` token or `~user` is a line skipped with a note).
[[nodiscard]] std::filesystem::path expand_config_path(std::string_view text, const PathTokens& tokens);

}  // namespace exedev::ssh
