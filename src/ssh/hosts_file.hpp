#pragma once
// A hosts(5) file consulted before the system resolver (SshOptions::hosts_file): how the
// emulator's SSH names (`exe.localhost`, `<vm>.exe.localhost`) reach its loopback endpoints
// without touching the system's resolver. Sans-IO but for read_hosts_file.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace exedev::ssh {

/// The address hosts(5) text gives `name` (the first line naming it, case-insensitively; `#`
/// starts a comment), or nullopt when no line names it.
[[nodiscard]] std::optional<std::string> address_in_hosts(std::string_view text, std::string_view name);

/// The hosts file an SSH connection consults: `configured` when not empty, else the
/// EXE_SSH_HOSTS environment variable's path, else none (empty).
[[nodiscard]] std::filesystem::path hosts_file_to_use(const std::filesystem::path& configured);

}  // namespace exedev::ssh
