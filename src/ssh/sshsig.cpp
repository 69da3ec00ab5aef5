#include "ssh/sshsig.hpp"

#include "common/ssh_wire.hpp"

#include <openssl/sha.h>

#include <array>

namespace exedev::ssh {

using detail::WireWriter;

std::string sshsig_signed_data(std::string_view name_space, std::string_view message) {
  std::array<unsigned char, SHA512_DIGEST_LENGTH> digest{};
  SHA512(reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest.data());
  WireWriter out;
  out.raw(sshsig_magic).string(name_space).string("").string(sshsig_hash_algorithm);
  out.string({reinterpret_cast<const char*>(digest.data()), digest.size()});
  return std::move(out).bytes();
}

std::string sshsig_blob(std::string_view public_key_blob, std::string_view name_space, std::string_view signature_blob) {
  WireWriter out;
  out.raw(sshsig_magic).uint32(1).string(public_key_blob).string(name_space).string("").string(sshsig_hash_algorithm);
  out.string(signature_blob);
  return std::move(out).bytes();
}

}  // namespace exedev::ssh
