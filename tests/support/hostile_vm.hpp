#pragma once
// A compromised VM on the emulator (tests and bench B11; docs/reliability.md, "A hostile VM"):
// a login shell (emulator::Options::login_shell) through which a VM replaces its own tools.
// A VM that puts files in ~/.hostile/bin has each of them bind-mounted over /usr/bin/<name> in a
// mount namespace of its shell's own, so that even the scripts' fixed PATH finds them, as on a
// VM whose /usr/bin was replaced; one that puts them in ~/.hostile/path gets that directory
// first on PATH, as a broken ~/.bashrc would. Needs unshare(1) and the right to mount.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace exedev::test_support {

inline constexpr const char* hostile_login_shell = R"SH(#!/bin/sh
if [ -d "$HOME/.hostile/path" ]; then PATH="$HOME/.hostile/path:$PATH"; export PATH; fi
if [ -z "$EXEDEV_HOSTILE_NS" ] && [ -d "$HOME/.hostile/bin" ]; then
  EXEDEV_HOSTILE_NS=1; export EXEDEV_HOSTILE_NS
  exec unshare -m --propagation private /bin/sh -c '
    for f in "$HOME"/.hostile/bin/*; do [ -f "$f" ] && mount --bind "$f" "/usr/bin/${f##*/}"; done
    exec /bin/bash "$@"' hostile "$@"
fi
exec /bin/bash "$@"
)SH";

/// Whether this machine lets a shell replace /usr/bin's tools in a namespace of its own.
inline bool can_replace_tools() {
  return std::system("unshare -m --propagation private sh -c 'mount --bind /bin/true /usr/bin/false' >/dev/null 2>&1") == 0;
}

inline void write_executable(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
  std::filesystem::permissions(path, std::filesystem::perms(0755));
}

/// Writes the hostile login shell into `dir` and returns its path.
inline std::filesystem::path install_hostile_login_shell(const std::filesystem::path& dir) {
  const auto path = dir / "hostile-login-shell";
  write_executable(path, hostile_login_shell);
  return path;
}

/// The VM whose home is `home` runs `text` instead of /usr/bin/<tool> from its next shell on.
inline void replace_tool(const std::filesystem::path& home, const std::string& tool, const std::string& text) {
  write_executable(home / ".hostile/bin" / tool, text);
}

/// The VM whose home is `home` finds `text` first on PATH as `tool`, as a broken profile makes it.
inline void shadow_tool_on_path(const std::filesystem::path& home, const std::string& tool, const std::string& text) {
  write_executable(home / ".hostile/path" / tool, text);
}

}  // namespace exedev::test_support
