#pragma once
// Where the library's own scripts on a VM (or in any workspace) find their tools. Internal.

#include <string_view>

namespace exedev::detail {

/// The first line of every script the library runs for itself on a VM, where the user's login
/// shell and profile start it (run_script's wrappers on both transports, so every file and tree
/// operation's script, and the stop of a process group): the standard
/// directories (/usr/bin, /bin: coreutils, findutils, tar and gzip live there on every Linux)
/// first, the PATH the script inherited (always exported) after them. A user's shell startup files
/// (a ~/.bashrc or ~/.profile that puts a broken `tar` or `base64` first on PATH) then do not
/// change which tools the scripts run. Robustness against a broken profile, not a defence
/// against a compromised VM, which can replace /usr/bin itself (docs/reliability.md).
inline constexpr std::string_view script_path_line = "PATH=/usr/bin:/bin:$PATH\n";

/// How a lobby line's `base64 -d`, which hands a script to /bin/sh, is named: by its absolute
/// path (coreutils' and BusyBox's both), so that a profile's PATH cannot swap it either. Plain
/// words, which any login shell reads alike; short, because every byte of the lobby line is one
/// less of a write chunk's request on /exec.
inline constexpr std::string_view script_base64_decode = "/usr/bin/base64 -d";

}  // namespace exedev::detail
