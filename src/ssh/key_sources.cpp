#include "ssh/key_sources.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <system_error>

namespace exedev::ssh {

namespace fs = std::filesystem;

namespace {

const char* set_variable(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

}  // namespace

fs::path home_directory() {
  if (const char* home = set_variable("HOME")) return home;
  if (const passwd* entry = ::getpwuid(::getuid()); entry != nullptr) return entry->pw_dir;
  return "/";
}

std::vector<fs::path> default_key_files(const SshOptions& options) {
  if (!options.default_key_files.empty()) return options.default_key_files;
  const auto ssh_dir = home_directory() / ".ssh";
  return {ssh_dir / "id_ed25519", ssh_dir / "id_rsa"};
}

std::optional<fs::path> explicit_key_file(const SshOptions& options) {
  if (options.private_key_file) return options.private_key_file;
  if (const char* path = set_variable("EXE_SSH_KEY")) return fs::path(path);
  return std::nullopt;
}

std::optional<std::string> missing_credentials(const SshOptions& options) {
  if (options.private_key_pem || explicit_key_file(options)) return std::nullopt;
  if (options.use_agent && set_variable("SSH_AUTH_SOCK")) return std::nullopt;
  std::error_code ignored;
  for (const auto& file : default_key_files(options)) {
    if (fs::exists(file, ignored)) return std::nullopt;
  }
  return "no SSH key: none in SshOptions or EXE_SSH_KEY, no ssh-agent (SSH_AUTH_SOCK) and no default key file";
}

}  // namespace exedev::ssh
