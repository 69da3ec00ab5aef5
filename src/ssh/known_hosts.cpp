#include "ssh/known_hosts.hpp"

#include "common/base64.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace exedev::ssh {

namespace {

std::string without_padding(std::string text) {
  while (!text.empty() && text.back() == '=') text.pop_back();
  return text;
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

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

// OpenSSH's match_pattern: `*` any run, `?` one character.
bool wildcard_match(std::string_view text, std::string_view pattern) {
  std::size_t t = 0, p = 0, star = std::string_view::npos, star_text = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++t, ++p;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++, star_text = t;
    } else if (star != std::string_view::npos) {
      p = star + 1, t = ++star_text;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
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

std::string sha256_fingerprint(std::string_view key_blob) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  ::EVP_Digest(key_blob.data(), key_blob.size(), digest.data(), &length, EVP_sha256(), nullptr);
  const std::string_view bytes(reinterpret_cast<const char*>(digest.data()), length);
  return "SHA256:" + without_padding(detail::base64_encode(bytes));
}

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

std::variant<std::vector<KnownHostEntry>, KnownHostsParseError> parse_known_hosts(std::string_view text) {
  std::vector<KnownHostEntry> entries;
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto fields = fields_of(line);
    if (fields.empty() || fields.front().starts_with('#')) continue;
    KnownHostEntry entry;
    entry.line = line_number;
    if (fields.front().starts_with('@')) {
      if (fields.front() == "@revoked") entry.marker = KnownHostEntry::Marker::revoked;
      else if (fields.front() == "@cert-authority") entry.marker = KnownHostEntry::Marker::cert_authority;
      else return KnownHostsParseError{line_number, fmt::format("unknown marker \"{}\"", fields.front())};
      fields.erase(fields.begin());
    }
    if (fields.size() < 3) {
      return KnownHostsParseError{line_number, "expected a host list, a key type and a base64 key"};
    }
    entry.hosts = std::string(fields[0]);
    if (entry.hosts.starts_with('|') && !parse_hashed(entry.hosts)) {
      return KnownHostsParseError{line_number, "malformed hashed host name (expected |1|<salt>|<hash>)"};
    }
    entry.key_type = std::string(fields[1]);
    auto blob = detail::base64_decode(fields[2]);
    if (!blob) return KnownHostsParseError{line_number, "the key is not valid base64"};
    const auto blob_type = key_type_of_blob(*blob);
    if (!blob_type) return KnownHostsParseError{line_number, "the key is too short to be an SSH public key"};
    // A certificate authority line names its key's own type; other lines must agree with the blob.
    if (*blob_type != entry.key_type) {
      return KnownHostsParseError{line_number,
                                  fmt::format("the key type \"{}\" differs from the key's own \"{}\"", entry.key_type, *blob_type)};
    }
    entry.key_blob = std::move(*blob);
    entries.push_back(std::move(entry));
  }
  return entries;
}

bool entry_names_host(const KnownHostEntry& entry, std::string_view name) {
  const std::string host = lowercase(name);
  if (const auto hashed = parse_hashed(entry.hosts)) return hmac_sha1(hashed->salt, host) == hashed->hash;
  bool matched = false;
  std::string_view patterns = entry.hosts;
  while (true) {
    const auto comma = patterns.find(',');
    std::string_view pattern = patterns.substr(0, comma);
    const bool negated = pattern.starts_with('!');
    if (negated) pattern.remove_prefix(1);
    if (wildcard_match(host, lowercase(pattern))) {
      if (negated) return false;
      matched = true;
    }
    if (comma == std::string_view::npos) break;
    patterns.remove_prefix(comma + 1);
  }
  return matched;
}

HostKeyVerdict check_host_key(const std::vector<KnownHostEntry>& entries, std::string_view name, std::string_view key_blob) {
  const auto type = key_type_of_blob(key_blob).value_or("");
  HostKeyVerdict verdict;
  bool known = false;
  for (const auto& entry : entries) {
    if (entry.marker == KnownHostEntry::Marker::revoked) {
      if (entry.key_blob == key_blob) return HostKeyVerdict{HostKeyVerdict::Status::revoked, std::nullopt, entry.line};
      continue;
    }
    if (entry.marker == KnownHostEntry::Marker::cert_authority || entry.key_type != type) continue;
    if (!entry_names_host(entry, name)) continue;
    if (entry.key_blob == key_blob) {
      known = true;
    } else if (!verdict.recorded_blob) {
      verdict.recorded_blob = entry.key_blob;
      verdict.recorded_line = entry.line;
    }
  }
  // A host may have several keys of one type recorded (OpenSSH accepts any of them); only when
  // none is the offered one has the key changed.
  if (known) return HostKeyVerdict{HostKeyVerdict::Status::known, std::nullopt, 0};
  verdict.status = verdict.recorded_blob ? HostKeyVerdict::Status::changed : HostKeyVerdict::Status::unknown;
  return verdict;
}

std::string known_hosts_line(std::string_view name, std::string_view key_blob) {
  return fmt::format("{} {} {}\n", name, key_type_of_blob(key_blob).value_or(""), detail::base64_encode(key_blob));
}

}  // namespace exedev::ssh
