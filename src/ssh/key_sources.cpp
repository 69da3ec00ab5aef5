#include "ssh/key_sources.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

namespace exedev::ssh {

namespace fs = std::filesystem;

namespace {

const char* set_variable(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

}  // namespace

FileText read_text_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {{}, errno != 0 ? errno : ENOENT};
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return {{}, EIO};
  return {content.str(), 0};
}

SshKeySource key_source_of(const SshOptions& options) {
  SshKeySource source;
  source.private_key_file = options.private_key_file;
  source.private_key_pem = options.private_key_pem;
  source.passphrase = options.passphrase;
  source.use_agent = options.use_agent;
  source.default_key_files = options.default_key_files;
  return source;
}

fs::path home_directory() {
  if (const char* home = set_variable("HOME")) return home;
  if (const passwd* entry = ::getpwuid(::getuid()); entry != nullptr) return entry->pw_dir;
  return "/";
}

std::vector<fs::path> default_key_files(const SshKeySource& source) {
  if (!source.default_key_files.empty()) return source.default_key_files;
  const auto ssh_dir = home_directory() / ".ssh";
  return {ssh_dir / "id_ed25519", ssh_dir / "id_rsa"};
}

std::optional<fs::path> explicit_key_file(const SshKeySource& source) {
  if (source.private_key_file) return source.private_key_file;
  if (const char* path = set_variable("EXE_SSH_KEY")) return fs::path(path);
  return std::nullopt;
}

std::optional<std::string> agent_socket(const SshKeySource& source) {
  const char* path = source.use_agent ? set_variable("SSH_AUTH_SOCK") : nullptr;
  return path ? std::optional<std::string>(path) : std::nullopt;
}

std::optional<std::string> missing_credentials(const SshKeySource& source) {
  if (source.private_key_pem || explicit_key_file(source) || agent_socket(source)) return std::nullopt;
  std::error_code ignored;
  for (const auto& file : default_key_files(source)) {
    if (fs::exists(file, ignored)) return std::nullopt;
  }
  return "no SSH key: none in SshOptions or EXE_SSH_KEY, no ssh-agent (SSH_AUTH_SOCK) and no default key file";
}

}  // namespace exedev::ssh
