#include "ssh/key_sources.hpp"

#include <glob.h>
#include <pwd.h>
#include <unistd.h>

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <system_error>

namespace exedev::ssh {

namespace fs = std::filesystem;

namespace {

const char* set_variable(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

std::optional<fs::path> path_variable(const char* name) {
  if (const char* value = set_variable(name)) return fs::path(value);
  return std::nullopt;
}

// The effective user's login name: its passwd entry, else what the session says.
std::string local_user() {
  if (const passwd* entry = ::getpwuid(::geteuid()); entry != nullptr && entry->pw_name != nullptr) return entry->pw_name;
  for (const char* name : {"LOGNAME", "USER"}) {
    if (const char* value = set_variable(name)) return value;
  }
  return std::to_string(::geteuid());
}

std::string local_host_name() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return "localhost";
  return name.data();
}

ConfigText read_config_text(const fs::path& path) {
  ConfigText file{path.string(), {}, std::nullopt};
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    file.problem = std::strerror(errno != 0 ? errno : ENOENT);
    return file;
  }
  std::ostringstream content;
  content << in.rdbuf();
  file.text = content.str();
  return file;
}

std::vector<ConfigText> read_included(const std::string& pattern) {
  std::vector<ConfigText> files;
  glob_t matches{};
  // glob(3) returns the names sorted, as OpenSSH reads them.
  if (::glob(pattern.c_str(), 0, nullptr, &matches) == 0) {
    for (std::size_t i = 0; i < matches.gl_pathc; ++i) files.push_back(read_config_text(matches.gl_pathv[i]));
  }
  ::globfree(&matches);
  return files;
}

// The user's ssh_config for `host`, as `source` says (use_config, config_file); what was skipped
// goes to `warn`.
SshConfig read_ssh_config(const std::string& host, const SshKeySource& source, const fs::path& home,
                          const std::function<void(std::string_view)>& warn) {
  if (!source.use_config) return {};
  const fs::path path = source.config_file.empty() ? home / ".ssh" / "config" : source.config_file;
  std::error_code ignored;
  if (!fs::exists(path, ignored)) return {};
  auto config = resolve_ssh_config(read_config_text(path), host, home, read_included);
  if (warn) {
    for (const auto& note : config.notes) warn(note);
  }
  return config;
}

LocalFacts local_facts() {
  return {home_directory(), local_user(), local_host_name(), path_variable("EXE_SSH_KEY"), path_variable("EXE_SSH_KNOWN_HOSTS")};
}

ConnectionSettings settings_telling(const Endpoint& endpoint, const SshOptions& options,
                                    const std::function<void(std::string_view)>& warn) {
  const auto local = local_facts();
  const auto config = read_ssh_config(endpoint.host, key_source_of(options), local.home, warn);
  return settle_connection(endpoint, options, config, local);
}

bool any_exists(const std::vector<fs::path>& files) {
  std::error_code ignored;
  for (const auto& file : files) {
    if (fs::exists(file, ignored)) return true;
  }
  return false;
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

std::optional<std::string> key_file_text(const fs::path& path, bool named_in_config, std::vector<std::string>& tried) {
  auto content = read_text_file(path);
  if (content.error == ENOENT) {
    if (named_in_config) tried.push_back(fmt::format("{} (ssh_config IdentityFile: no such file)", path.string()));
    return std::nullopt;
  }
  if (content.error != 0) {
    tried.push_back(fmt::format("{} (unreadable: {})", path.string(), std::strerror(content.error)));
    return std::nullopt;
  }
  return std::move(content.text);
}

fs::path home_directory() {
  if (const char* home = set_variable("HOME")) return home;
  if (const passwd* entry = ::getpwuid(::getuid()); entry != nullptr) return entry->pw_dir;
  return "/";
}

std::optional<std::string> agent_socket() {
  if (const char* path = set_variable("SSH_AUTH_SOCK")) return std::string(path);
  return std::nullopt;
}

ConnectionSettings connection_settings(const Endpoint& endpoint, const SshOptions& options) {
  return settings_telling(endpoint, options, options.on_warning);
}

KeyChoice key_choice(const SshKeySource& source, const std::string& host,
                     const std::function<void(std::string_view)>& warn) {
  const auto local = local_facts();
  const auto config = read_ssh_config(host, source, local.home, warn);
  // The tokens a connection to `host` would expand IdentityFile's paths with.
  const PathTokens tokens{local.home, local.user, local.host_name, config.host_name.value_or(host),
                          config.user.value_or(local.user)};
  return settle_keys(source, config, local, tokens);
}

std::optional<std::string> missing_credentials(const Endpoint& endpoint, const SshOptions& options) {
  // Silent: Connection::open reads the same files again and tells what it skipped.
  const auto keys = settings_telling(endpoint, options, nullptr).keys;
  if (options.private_key_pem || keys.explicit_key_file) return std::nullopt;
  if (keys.use_agent && agent_socket()) return std::nullopt;
  if (any_exists(keys.identity_files) || any_exists(keys.default_key_files)) return std::nullopt;
  return "no SSH key: none in SshOptions or EXE_SSH_KEY, no ssh-agent (SSH_AUTH_SOCK), no ssh_config IdentityFile and no "
         "default key file";
}

}  // namespace exedev::ssh
