#pragma once
// OpenSSH's host patterns (match.c), sans-IO: shared by known_hosts and ssh_config, which
// both name hosts this way. Internal.

#include <string>
#include <string_view>

namespace exedev::ssh {

/// `text` with its letters lowercased as the C locale does (host names, patterns and ssh_config
/// keywords compare this way).
[[nodiscard]] std::string lowercase(std::string_view text);

/// One pattern: `*` matches any run of characters (dots too), `?` exactly one; case-sensitive
/// (callers lowercase host names and patterns).
[[nodiscard]] bool wildcard_match(std::string_view text, std::string_view pattern);

/// A comma-separated list of patterns, each possibly negated with `!`: true when some pattern
/// matches `text` and no negated one does (a matching `!pattern` excludes whatever else
/// matches). Case-insensitive, as OpenSSH's match_hostname.
[[nodiscard]] bool match_pattern_list(std::string_view text, std::string_view patterns);

}  // namespace exedev::ssh
