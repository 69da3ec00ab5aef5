#include "tools/content_hash.hpp"

#include <openssl/evp.h>

#include <stdexcept>

namespace exedev::tools::detail {

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 failed");
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xF];
  }
  return out;
}

std::string content_hash(std::string_view bytes) { return sha256_hex(bytes).substr(0, 12); }

}  // namespace exedev::tools::detail
