#include "ssh/known_hosts.hpp"

#include "common/base64.hpp"
#include "common/sha256.hpp"
#include "ssh/patterns.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace exedev::ssh {

namespace {

std::uint32_t read_u32(std::string_view bytes) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < 4; ++i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

// The fields of a line separated by spaces or tabs.
std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t at = 0;
  while (at < line.size()) {
    while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) ++at;
    if (at == line.size()) break;
    const std::size_t end = line.find_first_of(" \t", at);
    fields.push_back(line.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
    at = end == std::string_view::npos ? line.size() : end;
  }
  return fields;
}

// A hashed host field: |1|salt|hash, both base64.
struct HashedName {
  std::string salt, hash;
};

std::optional<HashedName> parse_hashed(std::string_view field) {
  if (!field.starts_with("|1|")) return std::nullopt;
  field.remove_prefix(3);
  const auto bar = field.find('|');
  if (bar == std::string_view::npos) return std::nullopt;
  auto salt = detail::base64_decode(field.substr(0, bar));
  auto hash = detail::base64_decode(field.substr(bar + 1));
  if (!salt || !hash || hash->size() != 20) return std::nullopt;
  return HashedName{std::move(*salt), std::move(*hash)};
}

std::string hmac_sha1(std::string_view key, std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  ::HMAC(EVP_sha1(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
         data.size(), digest.data(), &length);
  return std::string(reinterpret_cast<const char*>(digest.data()), length);
}

}  // namespace

std::string sha256_fingerprint(std::string_view key_blob) { return detail::ssh_key_fingerprint(key_blob); }

std::optional<std::string> key_type_of_blob(std::string_view key_blob) {
  if (key_blob.size() < 4) return std::nullopt;
  const std::uint32_t length = read_u32(key_blob);
  if (length == 0 || length > key_blob.size() - 4) return std::nullopt;
  return std::string(key_blob.substr(4, length));
}

std::string known_hosts_name(std::string_view host, std::uint16_t port) {
  if (port == 22) return lowercase(host);
  return fmt::format("[{}]:{}", lowercase(host), port);
}

std::string hashed_host_name(std::string_view name, std::string_view salt) {
  return fmt::format("|1|{}|{}", detail::base64_encode(salt), detail::base64_encode(hmac_sha1(salt, name)));
}

KnownHostsFile parse_known_hosts(std::string_view text) {
  KnownHostsFile file;
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto fields = fields_of(line);
    if (fields.empty() || fields.front().starts_with('#')) continue;
    // A line that does not parse is skipped, as OpenSSH does; its reason never quotes it.
    const auto skip = [&](std::string reason) { file.malformed.push_back({line_number, std::move(reason)}); };
    KnownHostEntry entry;
    entry.line = line_number;
    if (fields.front().starts_with('@')) {
      if (fields.front() == "@revoked") {
        entry.marker = KnownHostEntry::Marker::revoked;
      } else if (fields.front() == "@cert-authority") {
        entry.marker = KnownHostEntry::Marker::cert_authority;
      } else {
        skip("an unknown marker");
        continue;
      }
      fields.erase(fields.begin());
    }
    if (fields.size() < 3) {
      skip("expected a host list, a key type and a base64 key");
      continue;
    }
    entry.hosts = std::string(fields[0]);
    if (entry.hosts.starts_with('|') && !parse_hashed(entry.hosts)) {
      skip("a malformed hashed host name (expected |1|<salt>|<hash>)");
      continue;
    }
    entry.key_type = std::string(fields[1]);
    auto blob = detail::base64_decode(fields[2]);
    if (!blob) {
      skip("the key is not valid base64");
      continue;
    }
    const auto blob_type = key_type_of_blob(*blob);
    if (!blob_type) {
      skip("the key is too short to be an SSH public key");
      continue;
    }
    // A certificate authority line names its key's own type; other lines must agree with the blob.
    if (*blob_type != entry.key_type) {
      skip("the key type differs from the type the key names");
      continue;
    }
    entry.key_blob = std::move(*blob);
    file.entries.push_back(std::move(entry));
  }
  return file;
}

bool KnownHostsFile::uses_hashed_names() const {
  return std::any_of(entries.begin(), entries.end(), [](const KnownHostEntry& entry) { return entry.hosts.starts_with("|1|"); });
}

std::string malformed_lines_warning(std::string_view file_name, const std::vector<MalformedLine>& malformed) {
  if (malformed.empty()) return {};
  constexpr std::size_t kNamed = 5;
  std::string lines;
  for (std::size_t i = 0; i < malformed.size() && i < kNamed; ++i) {
    lines += fmt::format("{}line {} ({})", i == 0 ? "" : ", ", malformed[i].line, malformed[i].reason);
  }
  if (malformed.size() > kNamed) lines += fmt::format(" and {} more", malformed.size() - kNamed);
  return fmt::format("SSH: known_hosts file {}: {} line{} that do{} not parse skipped, as OpenSSH does: {}", file_name,
                     malformed.size(), malformed.size() == 1 ? "" : "s", malformed.size() == 1 ? "es" : "", lines);
}

bool entry_names_host(const KnownHostEntry& entry, std::string_view name) {
  const std::string host = lowercase(name);
  if (const auto hashed = parse_hashed(entry.hosts)) return hmac_sha1(hashed->salt, host) == hashed->hash;
  return match_pattern_list(host, entry.hosts);
}

HostKeyVerdict check_host_key(const std::vector<KnownHostEntry>& entries, std::string_view name, std::string_view key_blob) {
  const auto type = key_type_of_blob(key_blob).value_or("");
  HostKeyVerdict verdict;
  bool known = false;
  for (const auto& entry : entries) {
    if (!entry_names_host(entry, name)) continue;
    if (entry.marker == KnownHostEntry::Marker::revoked) {
      if (entry.key_blob == key_blob) return HostKeyVerdict{HostKeyVerdict::Status::revoked, std::nullopt, entry.line, 0};
      continue;
    }
    if (entry.marker == KnownHostEntry::Marker::cert_authority) {
      if (verdict.cert_authority_line == 0) verdict.cert_authority_line = entry.line;
      continue;
    }
    if (entry.key_type != type) continue;
    if (entry.key_blob == key_blob) {
      known = true;
    } else if (!verdict.recorded_blob) {
      verdict.recorded_blob = entry.key_blob;
      verdict.recorded_line = entry.line;
    }
  }
  // A host may have several keys of one type recorded (OpenSSH accepts any of them); only when
  // none is the offered one has the key changed.
  if (known) return HostKeyVerdict{HostKeyVerdict::Status::known, std::nullopt, 0, 0};
  verdict.status = verdict.recorded_blob ? HostKeyVerdict::Status::changed : HostKeyVerdict::Status::unknown;
  return verdict;
}

std::string known_hosts_line(std::string_view name, std::string_view key_blob) {
  return fmt::format("{} {} {}\n", name, key_type_of_blob(key_blob).value_or(""), detail::base64_encode(key_blob));
}

std::string domain_host_pattern(std::string_view host, std::uint16_t port) {
  const std::string name = lowercase(host);
  std::array<unsigned char, 16> address{};
  const bool is_address = ::inet_pton(AF_INET, name.c_str(), address.data()) == 1 ||
                          ::inet_pton(AF_INET6, name.c_str(), address.data()) == 1;
  // At least three labels, so that the pattern never covers a whole top-level domain
  // (`exe.dev` is recorded as itself, not as `*.dev`).
  if (is_address || std::count(name.begin(), name.end(), '.') < 2) return known_hosts_name(name, port);
  const std::string domain = "*" + name.substr(name.find('.'));
  // The proxy's one key on every port, as exe.dev's published line names it (`[*.<domain>]:*`):
  // VMs reached at different ports (the emulator's shard endpoints) share the line too.
  return port == 22 ? domain : "[" + domain + "]:*";
}

std::optional<std::string> line_to_record(const KnownHostsFile& file, std::string_view host, std::uint16_t port,
                                          std::string_view key_blob, std::string_view salt) {
  const auto name = known_hosts_name(host, port);
  if (check_host_key(file.entries, name, key_blob).status == HostKeyVerdict::Status::known) return std::nullopt;
  // A hash holds one name, never a pattern: a hashed file gets the exact name.
  if (file.uses_hashed_names()) return known_hosts_line(hashed_host_name(name, salt), key_blob);
  return known_hosts_line(domain_host_pattern(host, port), key_blob);
}

}  // namespace exedev::ssh
