#include "ssh/private_key.hpp"

#include "common/base64.hpp"
#include "common/ssh_wire.hpp"

#include <fmt/format.h>

namespace exedev::ssh {

using detail::WireReader;

namespace {

constexpr std::string_view openssh_begin = "-----BEGIN OPENSSH PRIVATE KEY-----";
constexpr std::string_view openssh_end = "-----END OPENSSH PRIVATE KEY-----";

PrivateKeyInfo inspect_openssh(std::string_view text) {
  PrivateKeyInfo info;
  info.format = PrivateKeyInfo::Format::openssh;
  const auto begin = text.find(openssh_begin);
  const auto end = text.find(openssh_end);
  if (end == std::string_view::npos || end < begin) {
    info.problem = "an OpenSSH private key without its END line";
    return info;
  }
  const auto body = text.substr(begin + openssh_begin.size(), end - begin - openssh_begin.size());
  std::string base64;
  for (const char c : body) {
    if (c != '\n' && c != '\r' && c != ' ' && c != '\t') base64 += c;
  }
  const auto decoded = detail::base64_decode(base64);
  constexpr std::string_view magic{"openssh-key-v1\0", 15};
  if (!decoded || !std::string_view(*decoded).starts_with(magic)) {
    info.problem = "an OpenSSH private key whose content does not decode";
    return info;
  }
  WireReader reader(std::string_view(*decoded).substr(magic.size()));
  const auto cipher = reader.string();
  const auto kdf = reader.string();
  const auto kdf_options = reader.string();
  const bool count_read = reader.skip(4);
  const auto public_key = reader.string();
  if (!cipher || !kdf || !kdf_options || !count_read || !public_key) {
    info.problem = "a truncated OpenSSH private key";
    return info;
  }
  info.encrypted = *cipher != "none";
  info.public_blob = std::string(*public_key);
  WireReader key_reader(*public_key);
  const auto type = key_reader.string();
  if (!type) {
    info.problem = "an OpenSSH private key without a key type";
    return info;
  }
  info.key_type = std::string(*type);
  const bool supported = info.key_type == "ssh-ed25519" || info.key_type == "ssh-rsa" ||
                         info.key_type.starts_with("ecdsa-sha2-nistp");
  if (!supported) info.problem = fmt::format("a key of type \"{}\", which this library cannot use", info.key_type);
  return info;
}

}  // namespace

PrivateKeyInfo inspect_private_key(std::string_view text) {
  if (text.find(openssh_begin) != std::string_view::npos) return inspect_openssh(text);
  PrivateKeyInfo info;
  const auto begin = text.find("-----BEGIN ");
  if (begin == std::string_view::npos) {
    info.problem = "not a private key (no \"-----BEGIN\" line)";
    return info;
  }
  const auto label_end = text.find("-----", begin + 11);
  const auto label = text.substr(begin + 11, label_end == std::string_view::npos ? 0 : label_end - begin - 11);
  if (label == "PRIVATE KEY" || label == "ENCRYPTED PRIVATE KEY") {
    info.format = PrivateKeyInfo::Format::pkcs8;
    info.encrypted = label == "ENCRYPTED PRIVATE KEY";
    return info;
  }
  for (const std::string_view type : {"RSA", "EC", "DSA"}) {
    if (label == fmt::format("{} PRIVATE KEY", type)) {
      info.format = PrivateKeyInfo::Format::pem;
      info.key_type = std::string(type);
      info.encrypted = text.find("Proc-Type: 4,ENCRYPTED") != std::string_view::npos;
      return info;
    }
  }
  info.problem = fmt::format("an unknown key format (\"-----BEGIN {}-----\")", label);
  return info;
}

}  // namespace exedev::ssh
