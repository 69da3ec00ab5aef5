#pragma once
// Where the library's own scripts on a VM (or in any workspace) find their tools. Internal.

#include <string_view>

namespace exedev::detail {

/// The first line of every script the library runs for itself (file and tree operations, the
/// stop of a process group, the wrappers of run_script on both transports): the standard
/// directories first, the PATH the script inherited after them. A user's shell startup files
/// (a ~/.bashrc or ~/.profile that puts a broken `tar` or `base64` first on PATH) then do not
/// change which tools the scripts run. Robustness against a broken profile, not a defence
/// against a compromised VM, which can replace /usr/bin itself (docs/reliability.md).
inline constexpr std::string_view script_path_line =
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}; export PATH\n";

/// How a lobby line's `base64 -d`, which hands a script to /bin/sh, is run: by absolute env with
/// the standard directories only, so that a profile's PATH cannot swap it either. Plain words,
/// which any login shell (csh too) reads alike.
inline constexpr std::string_view script_base64_decode =
    "/usr/bin/env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin base64 -d";

}  // namespace exedev::detail
