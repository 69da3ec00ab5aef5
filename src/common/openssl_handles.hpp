#pragma once
// OpenSSL objects owned by std::unique_ptr, and bytes as OpenSSL takes them. Internal; for the
// translation units that already talk to OpenSSL (the SSH signer, the emulator's exe0 check and
// TLS certificates).

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

}  // namespace exedev::detail
