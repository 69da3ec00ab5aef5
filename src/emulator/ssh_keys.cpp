#include "emulator/ssh_keys.hpp"

#include "common/base64.hpp"
#include "common/sha256.hpp"


#include <array>
#include <cstdint>
#include <vector>

namespace exedev::emulator {

namespace {

constexpr std::array<std::string_view, 8> key_types = {
    "ssh-ed25519",         "ssh-rsa",
    "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521", "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com", "ssh-dss"};

bool known_type(std::string_view type) {
  for (const auto known : key_types) {
    if (known == type) return true;
  }
  return false;
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

std::vector<std::string_view> fields(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    const std::size_t start = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

// The first length-prefixed string of an SSH wire blob.
std::optional<std::string_view> first_string(std::string_view blob) {
  if (blob.size() < 4) return std::nullopt;
  const std::uint32_t length = (std::uint32_t(std::uint8_t(blob[0])) << 24) | (std::uint32_t(std::uint8_t(blob[1])) << 16) |
                               (std::uint32_t(std::uint8_t(blob[2])) << 8) | std::uint32_t(std::uint8_t(blob[3]));
  if (length > blob.size() - 4) return std::nullopt;
  return blob.substr(4, length);
}

// `type base64 [comment]` starting at field `first`.
std::optional<PublicKey> key_at(const std::vector<std::string_view>& words, std::string_view line, std::size_t first) {
  if (first + 1 >= words.size() || !known_type(words[first])) return std::nullopt;
  auto blob = detail::base64_decode(words[first + 1]);
  if (!blob) return std::nullopt;
  const auto embedded = first_string(*blob);
  if (!embedded || *embedded != words[first]) return std::nullopt;
  // An ed25519 key is its type and exactly 32 key bytes.
  if (words[first] == "ssh-ed25519" && blob->size() != 4 + 11 + 4 + 32) return std::nullopt;
  PublicKey key;
  key.type = std::string(words[first]);
  key.blob = std::move(*blob);
  if (first + 2 < words.size()) {
    // The comment is the rest of the line after the key field, trimmed.
    const auto rest = line.substr(static_cast<std::size_t>(words[first + 2].data() - line.data()));
    auto end = rest.size();
    while (end > 0 && (is_space(rest[end - 1]) || rest[end - 1] == '\r' || rest[end - 1] == '\n')) --end;
    key.comment = std::string(rest.substr(0, end));
  }
  return key;
}

}  // namespace

std::string PublicKey::canonical() const { return type + " " + detail::base64_encode(blob); }

std::string PublicKey::fingerprint() const { return detail::ssh_key_fingerprint(blob); }

std::optional<PublicKey> parse_public_key(std::string_view line) {
  const auto newline = line.find('\n');
  if (newline != std::string_view::npos) line = line.substr(0, newline);
  const auto words = fields(line);
  if (words.empty() || words[0][0] == '#') return std::nullopt;
  if (auto key = key_at(words, line, 0)) return key;
  // A leading options field (`restrict,command="…" ssh-ed25519 …`) is skipped, as Go does.
  // Options with quoted spaces split into several fields: try each start.
  for (std::size_t first = 1; first < words.size(); ++first) {
    if (auto key = key_at(words, line, first)) return key;
  }
  return std::nullopt;
}

std::string sanitize_key_name(std::string_view comment) {
  static constexpr std::string_view removed = "|&;$`\\\"'<>(){}[]!#*?~/";
  std::string kept;
  for (const char c : comment) {
    if (static_cast<unsigned char>(c) < 0x20 || removed.find(c) != std::string_view::npos) continue;
    kept += c;
  }
  std::string joined;
  for (const auto word : fields(kept)) {
    if (!joined.empty()) joined += '-';
    joined += word;
  }
  const auto start = joined.find_first_not_of('-');
  joined = start == std::string::npos ? std::string() : joined.substr(start);
  if (joined.size() > 64) joined.resize(64);
  return joined;
}

}  // namespace exedev::emulator
