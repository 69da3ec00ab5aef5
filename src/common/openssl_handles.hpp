#pragma once
// OpenSSL objects owned by std::unique_ptr, bytes as OpenSSL takes them, and keys built from
// parameters. Internal; for the translation units that already talk to OpenSSL (the SSH signer,
// the emulator's exe0 check and TLS certificates).

#include <openssl/evp.h>
#include <openssl/param_build.h>

#include <memory>
#include <string_view>

namespace exedev::detail {

/// A unique_ptr deleter calling OpenSSL's `free_function` (EVP_PKEY_free, BN_clear_free, ...).
template <auto free_function>
struct OpenSslFree {
  template <typename T>
  void operator()(T* pointer) const {
    free_function(pointer);
  }
};

/// `T*` owned, freed by `free_function`.
template <typename T, auto free_function>
using OpenSslHandle = std::unique_ptr<T, OpenSslFree<free_function>>;

/// The bytes of `text` as OpenSSL's `const unsigned char*`.
inline const unsigned char* openssl_bytes(std::string_view text) { return reinterpret_cast<const unsigned char*>(text.data()); }

/// The key OpenSSL builds from `builder`'s parameters for `algorithm` ("ED25519", "RSA", "EC");
/// `selection`: EVP_PKEY_PUBLIC_KEY or EVP_PKEY_KEYPAIR. Null when OpenSSL refuses them.
inline OpenSslHandle<EVP_PKEY, EVP_PKEY_free> key_from_params(const char* algorithm, OSSL_PARAM_BLD* builder,
                                                              int selection) {
  OpenSslHandle<OSSL_PARAM, OSSL_PARAM_free> params(OSSL_PARAM_BLD_to_param(builder));
  OpenSslHandle<EVP_PKEY_CTX, EVP_PKEY_CTX_free> context(EVP_PKEY_CTX_new_from_name(nullptr, algorithm, nullptr));
  EVP_PKEY* key = nullptr;
  if (!params || !context || EVP_PKEY_fromdata_init(context.get()) != 1 ||
      EVP_PKEY_fromdata(context.get(), &key, selection, params.get()) != 1) {
    return nullptr;
  }
  return OpenSslHandle<EVP_PKEY, EVP_PKEY_free>(key);
}

}  // namespace exedev::detail
