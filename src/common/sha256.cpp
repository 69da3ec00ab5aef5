#include "common/sha256.hpp"

#include "common/base64.hpp"

#include <openssl/evp.h>

#include <array>
#include <stdexcept>

namespace exedev::detail {

struct Sha256::Context {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  Context() {
    if (md == nullptr || EVP_DigestInit_ex(md, EVP_sha256(), nullptr) != 1) {
      EVP_MD_CTX_free(md);
      throw std::runtime_error("SHA-256 is not available from OpenSSL");
    }
  }
  ~Context() { EVP_MD_CTX_free(md); }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(std::string_view piece) {
  if (EVP_DigestUpdate(context_->md, piece.data(), piece.size()) != 1) throw std::runtime_error("SHA-256 failed in OpenSSL");
}

std::string Sha256::finish_hex() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(context_->md, digest.data(), &length) != 1 ||
      EVP_DigestInit_ex(context_->md, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 failed in OpenSSL");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xf];
  }
  return hex;
}

std::string sha256_hex(std::string_view data) {
  Sha256 hash;
  hash.update(data);
  return hash.finish_hex();
}

std::string ssh_key_fingerprint(std::string_view key_blob) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(key_blob.data(), key_blob.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 failed in OpenSSL");
  }
  std::string text = base64_encode(std::string_view(reinterpret_cast<const char*>(digest.data()), length));
  while (!text.empty() && text.back() == '=') text.pop_back();
  return "SHA256:" + text;
}

}  // namespace exedev::detail
