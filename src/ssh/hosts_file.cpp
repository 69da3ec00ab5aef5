#include "ssh/hosts_file.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace exedev::ssh {

namespace {

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::optional<std::string> address_in_hosts(std::string_view text, std::string_view name) {
  while (!text.empty()) {
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    line = line.substr(0, line.find('#'));
    std::string_view address;
    std::size_t at = 0;
    while (at < line.size()) {
      while (at < line.size() && std::isspace(static_cast<unsigned char>(line[at]))) ++at;
      const auto start = at;
      while (at < line.size() && !std::isspace(static_cast<unsigned char>(line[at]))) ++at;
      if (at == start) break;
      const auto field = line.substr(start, at - start);
      if (address.empty()) {
        address = field;
      } else if (same_name(field, name)) {
        return std::string(address);
      }
    }
  }
  return std::nullopt;
}

std::filesystem::path hosts_file_to_use(const std::filesystem::path& configured) {
  if (!configured.empty()) return configured;
  const char* from_environment = std::getenv("EXE_SSH_HOSTS");
  return from_environment != nullptr ? std::filesystem::path(from_environment) : std::filesystem::path();
}

}  // namespace exedev::ssh
