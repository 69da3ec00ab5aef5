#include "emulator/tls.hpp"

#include "common/openssl_handles.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <stdexcept>

namespace exedev::emulator {
namespace {

using Key = detail::OpenSslHandle<EVP_PKEY, EVP_PKEY_free>;
using Cert = detail::OpenSslHandle<X509, X509_free>;
using Bio = detail::OpenSslHandle<BIO, BIO_free_all>;
using Ext = detail::OpenSslHandle<X509_EXTENSION, X509_EXTENSION_free>;

[[noreturn]] void fail(const char* what) {
  char reason[256] = "unknown error";
  if (const unsigned long code = ERR_get_error()) ERR_error_string_n(code, reason, sizeof reason);
  ERR_clear_error();
  throw std::runtime_error(std::string("emulator TLS setup: ") + what + ": " + reason);
}

Key make_key() {
  Key key(EVP_EC_gen("P-256"));
  if (!key) fail("EC key generation");
  return key;
}

void add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  Ext ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) fail("certificate extension");
}

// Validity in seconds from now.
struct Validity {
  long not_before = -3600;
  long not_after = 60L * 60 * 24 * 825;
};

Cert make_cert(EVP_PKEY* key, const char* common_name, X509* issuer, EVP_PKEY* issuer_key, Validity validity) {
  Cert cert(X509_new());
  if (!cert) fail("X509_new");
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) fail("serial");
  serial[0] &= 0x7F;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), validity.not_before);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), validity.not_after);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("exedev emulator"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(common_name), -1, -1, 0);
  X509* signer = issuer ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  if (issuer == nullptr) {
    add_extension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    add_extension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
    add_extension(cert.get(), signer, NID_subject_key_identifier, "hash");
  } else {
    add_extension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    add_extension(cert.get(), signer, NID_key_usage, "critical,digitalSignature");
    add_extension(cert.get(), signer, NID_ext_key_usage, "serverAuth");
    add_extension(cert.get(), signer, NID_subject_alt_name, "IP:127.0.0.1,IP:::1,DNS:localhost,DNS:*.exe.xyz");
    add_extension(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
  }
  if (X509_sign(cert.get(), issuer_key ? issuer_key : key, EVP_sha256()) == 0) fail("X509_sign");
  return cert;
}

std::string to_pem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) fail("PEM_write_bio_X509");
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

std::string to_pem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) fail("PEM_write_bio_PrivateKey");
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

}  // namespace

TlsMaterial make_tls_material(bool expired_server_certificate) {
  const Key ca_key = make_key();
  const Cert ca = make_cert(ca_key.get(), "exedev emulator CA", nullptr, nullptr, Validity{});
  const Key server_key = make_key();
  const Validity expired{-2L * 60 * 60 * 24, -60L * 60 * 24};  // ended a day ago
  const Cert server = make_cert(server_key.get(), "localhost", ca.get(), ca_key.get(),
                                expired_server_certificate ? expired : Validity{});
  return {to_pem(ca.get()), to_pem(server.get()), to_pem(server_key.get())};
}

}  // namespace exedev::emulator
