#include "ssh/signing_key.hpp"

#include <exedev/ssh/errors.hpp>

#include "common/base64.hpp"
#include "common/openssl_handles.hpp"
#include "ssh/bcrypt_pbkdf.hpp"
#include "ssh/private_key.hpp"
#include "common/ssh_wire.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <vector>

namespace exedev::ssh {

using detail::WireReader;
using detail::WireWriter;

namespace {

using Bignum = detail::OpenSslHandle<BIGNUM, BN_clear_free>;
using PrivateKey = detail::OpenSslHandle<EVP_PKEY, EVP_PKEY_free>;
using detail::openssl_bytes;

// The key's bytes are wiped when they are no longer needed.
struct Secret {
  std::string bytes;
  Secret() = default;
  explicit Secret(std::string b) : bytes(std::move(b)) {}
  Secret(Secret&& other) noexcept : bytes(std::move(other.bytes)) {}
  Secret(const Secret&) = delete;
  Secret& operator=(const Secret&) = delete;
  ~Secret() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
};

[[noreturn]] void unusable(const std::string& source, const std::string& problem) {
  ERR_clear_error();
  throw SshKeyUnusableError(fmt::format("SSH: the private key {} cannot be used: {}", source, problem), source);
}

Bignum bignum(std::string_view magnitude) {
  return Bignum(BN_bin2bn(openssl_bytes(magnitude), static_cast<int>(magnitude.size()), nullptr));
}

std::string bignum_bytes(const BIGNUM* number) {
  std::string out(static_cast<std::size_t>(BN_num_bytes(number)), '\0');
  BN_bn2bin(number, reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

// OpenSSH's curve identifiers and OpenSSL's group names.
struct Curve {
  std::string_view ssh_name;
  const char* group;
};
constexpr std::array<Curve, 3> curves = {
    {{"nistp256", "prime256v1"}, {"nistp384", "secp384r1"}, {"nistp521", "secp521r1"}}};

// ---- building OpenSSL keys from the OpenSSH private section ----

PrivateKey from_params(const char* algorithm, OSSL_PARAM_BLD* builder) {
  return detail::key_from_params(algorithm, builder, EVP_PKEY_KEYPAIR);
}

PrivateKey ecdsa_key(const Curve& curve, std::string_view point, std::string_view scalar) {
  std::unique_ptr<OSSL_PARAM_BLD, detail::OpenSslFree<OSSL_PARAM_BLD_free>> builder(OSSL_PARAM_BLD_new());
  const Bignum d = bignum(scalar);
  if (!builder || !d || OSSL_PARAM_BLD_push_utf8_string(builder.get(), OSSL_PKEY_PARAM_GROUP_NAME, curve.group, 0) != 1 ||
      OSSL_PARAM_BLD_push_octet_string(builder.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()) != 1 ||
      OSSL_PARAM_BLD_push_BN(builder.get(), OSSL_PKEY_PARAM_PRIV_KEY, d.get()) != 1) {
    return nullptr;
  }
  return from_params("EC", builder.get());
}

PrivateKey rsa_key(std::string_view n, std::string_view e, std::string_view d, std::string_view iqmp, std::string_view p,
                   std::string_view q) {
  const Bignum bn_n = bignum(n), bn_e = bignum(e), bn_d = bignum(d), bn_iqmp = bignum(iqmp), bn_p = bignum(p),
               bn_q = bignum(q), dmp1(BN_new()), dmq1(BN_new()), p1(BN_dup(bn_p.get())), q1(BN_dup(bn_q.get()));
  std::unique_ptr<BN_CTX, detail::OpenSslFree<BN_CTX_free>> context(BN_CTX_new());
  // OpenSSH stores no CRT exponents; OpenSSL signs faster with them: d mod (p-1), d mod (q-1).
  if (!bn_n || !bn_e || !bn_d || !bn_iqmp || !bn_p || !bn_q || !dmp1 || !dmq1 || !p1 || !q1 || !context ||
      BN_sub_word(p1.get(), 1) != 1 || BN_sub_word(q1.get(), 1) != 1 ||
      BN_mod(dmp1.get(), bn_d.get(), p1.get(), context.get()) != 1 ||
      BN_mod(dmq1.get(), bn_d.get(), q1.get(), context.get()) != 1) {
    return nullptr;
  }
  std::unique_ptr<OSSL_PARAM_BLD, detail::OpenSslFree<OSSL_PARAM_BLD_free>> builder(OSSL_PARAM_BLD_new());
  const std::pair<const char*, const BIGNUM*> values[] = {
      {OSSL_PKEY_PARAM_RSA_N, bn_n.get()},           {OSSL_PKEY_PARAM_RSA_E, bn_e.get()},
      {OSSL_PKEY_PARAM_RSA_D, bn_d.get()},           {OSSL_PKEY_PARAM_RSA_FACTOR1, bn_p.get()},
      {OSSL_PKEY_PARAM_RSA_FACTOR2, bn_q.get()},     {OSSL_PKEY_PARAM_RSA_EXPONENT1, dmp1.get()},
      {OSSL_PKEY_PARAM_RSA_EXPONENT2, dmq1.get()},   {OSSL_PKEY_PARAM_RSA_COEFFICIENT1, bn_iqmp.get()}};
  if (!builder) return nullptr;
  for (const auto& [name, value] : values) {
    if (OSSL_PARAM_BLD_push_BN(builder.get(), name, value) != 1) return nullptr;
  }
  return from_params("RSA", builder.get());
}

// ---- the OpenSSH format ----

constexpr std::string_view openssh_begin = "-----BEGIN OPENSSH PRIVATE KEY-----";
constexpr std::string_view openssh_end = "-----END OPENSSH PRIVATE KEY-----";

const EVP_CIPHER* openssh_cipher(std::string_view name) {
  if (name == "aes256-ctr") return EVP_aes_256_ctr();
  if (name == "aes192-ctr") return EVP_aes_192_ctr();
  if (name == "aes128-ctr") return EVP_aes_128_ctr();
  if (name == "aes256-cbc") return EVP_aes_256_cbc();
  if (name == "aes192-cbc") return EVP_aes_192_cbc();
  if (name == "aes128-cbc") return EVP_aes_128_cbc();
  return nullptr;
}

// The private section in the clear.
Secret decrypt_section(std::string_view cipher_name, std::string_view kdf, std::string_view kdf_options,
                       std::string_view section, const std::optional<std::string>& passphrase, const std::string& source) {
  if (cipher_name == "none") return Secret(std::string(section));
  const EVP_CIPHER* cipher = openssh_cipher(cipher_name);
  if (cipher == nullptr) {
    unusable(source, fmt::format("it is encrypted with \"{}\", which this library cannot decrypt", cipher_name));
  }
  if (kdf != "bcrypt") unusable(source, fmt::format("it is encrypted with the key derivation \"{}\", which this library lacks", kdf));
  if (!passphrase) unusable(source, "it is encrypted and no passphrase was given");
  WireReader options(kdf_options);
  const auto salt = options.string();
  const auto rounds = options.uint32();
  if (!salt || !rounds) unusable(source, "its key derivation options are truncated");
  const auto key_length = static_cast<std::size_t>(EVP_CIPHER_get_key_length(cipher));
  const auto iv_length = static_cast<std::size_t>(EVP_CIPHER_get_iv_length(cipher));
  const auto block = static_cast<std::size_t>(EVP_CIPHER_get_block_size(cipher));
  auto derived = bcrypt_pbkdf(*passphrase, *salt, key_length + iv_length, *rounds);
  if (!derived) unusable(source, "its key derivation options, or the empty passphrase, are refused");
  const Secret key_and_iv(std::move(*derived));
  if (section.size() % block != 0) unusable(source, "its encrypted part is not whole cipher blocks");
  std::unique_ptr<EVP_CIPHER_CTX, detail::OpenSslFree<EVP_CIPHER_CTX_free>> context(EVP_CIPHER_CTX_new());
  Secret clear(std::string(section.size() + block, '\0'));
  int written = 0;
  int final_written = 0;
  auto* out = reinterpret_cast<unsigned char*>(clear.bytes.data());
  if (!context ||
      EVP_DecryptInit_ex(context.get(), cipher, nullptr, openssl_bytes(key_and_iv.bytes), openssl_bytes(key_and_iv.bytes) + key_length) != 1 ||
      EVP_CIPHER_CTX_set_padding(context.get(), 0) != 1 ||
      EVP_DecryptUpdate(context.get(), out, &written, openssl_bytes(section), static_cast<int>(section.size())) != 1 ||
      EVP_DecryptFinal_ex(context.get(), out + written, &final_written) != 1) {
    unusable(source, "OpenSSL could not decrypt it");
  }
  clear.bytes.resize(static_cast<std::size_t>(written + final_written));
  return clear;
}

PrivateKey openssh_private_key(std::string_view text, const std::optional<std::string>& passphrase, const std::string& source) {
  const auto begin = text.find(openssh_begin);
  const auto end = text.find(openssh_end);
  if (end == std::string_view::npos || end < begin) unusable(source, "an OpenSSH private key without its END line");
  std::string base64;
  for (const char c : text.substr(begin + openssh_begin.size(), end - begin - openssh_begin.size())) {
    if (c != '\n' && c != '\r' && c != ' ' && c != '\t') base64 += c;
  }
  const auto decoded = detail::base64_decode(base64);
  constexpr std::string_view magic{"openssh-key-v1\0", 15};
  if (!decoded || !std::string_view(*decoded).starts_with(magic)) unusable(source, "its content does not decode");
  const Secret file(std::move(*decoded));
  WireReader reader(std::string_view(file.bytes).substr(magic.size()));
  const auto cipher = reader.string();
  const auto kdf = reader.string();
  const auto kdf_options = reader.string();
  const auto count = reader.uint32();
  const auto public_key = reader.string();
  const auto section = reader.string();
  if (!cipher || !kdf || !kdf_options || !count || !public_key || !section) unusable(source, "it is truncated");
  if (*count != 1) unusable(source, "it holds more than one key");
  const Secret clear = decrypt_section(*cipher, *kdf, *kdf_options, *section, passphrase, source);
  WireReader fields(clear.bytes);
  const auto check1 = fields.uint32();
  const auto check2 = fields.uint32();
  if (!check1 || !check2 || *check1 != *check2) {
    unusable(source, *cipher == "none" ? "its private part is damaged" : "the passphrase is wrong");
  }
  const auto type = fields.string();
  if (!type) unusable(source, "its private part is truncated");
  PrivateKey key;
  if (*type == "ssh-ed25519") {
    const auto public_bytes = fields.string();
    const auto private_bytes = fields.string();
    if (!public_bytes || !private_bytes || private_bytes->size() != 64) unusable(source, "its ed25519 key is malformed");
    key.reset(EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, openssl_bytes(*private_bytes), 32));
  } else if (type->starts_with("ecdsa-sha2-")) {
    const auto curve_name = fields.string();
    const auto point = fields.string();
    const auto scalar = fields.string();
    if (!curve_name || !point || !scalar) unusable(source, "its ECDSA key is truncated");
    for (const Curve& curve : curves) {
      if (curve.ssh_name == *curve_name && *type == fmt::format("ecdsa-sha2-{}", curve.ssh_name)) {
        key = ecdsa_key(curve, *point, *scalar);
      }
    }
  } else if (*type == "ssh-rsa") {
    const auto n = fields.string(), e = fields.string(), d = fields.string(), iqmp = fields.string(), p = fields.string(),
               q = fields.string();
    if (!n || !e || !d || !iqmp || !p || !q) unusable(source, "its RSA key is truncated");
    key = rsa_key(*n, *e, *d, *iqmp, *p, *q);
  } else {
    unusable(source, fmt::format("a key of type \"{}\", which this library cannot use", *type));
  }
  if (!key) unusable(source, fmt::format("OpenSSL refused its {} key", *type));
  return key;
}

// ---- PEM and PKCS#8, read by OpenSSL ----

int passphrase_callback(char* buffer, int size, int, void* user) {
  const auto* passphrase = static_cast<const std::string*>(user);
  if (passphrase == nullptr || passphrase->size() > static_cast<std::size_t>(size)) return -1;
  std::memcpy(buffer, passphrase->data(), passphrase->size());
  return static_cast<int>(passphrase->size());
}

PrivateKey pem_private_key(std::string_view text, const std::optional<std::string>& passphrase, const std::string& source) {
  const auto info = inspect_private_key(text);
  if (!info.problem.empty()) unusable(source, info.problem);
  if (info.encrypted && !passphrase) unusable(source, "it is encrypted and no passphrase was given");
  std::unique_ptr<BIO, detail::OpenSslFree<BIO_free>> bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  const std::string* secret = passphrase ? &*passphrase : nullptr;
  PrivateKey key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, passphrase_callback, const_cast<std::string*>(secret))
                     : nullptr);
  if (!key) unusable(source, info.encrypted ? "OpenSSL could not read it (a wrong passphrase?)" : "OpenSSL could not read it");
  return key;
}

// ---- what the key is, as SSH names it ----

struct KeyKind {
  std::string type;               // the public key's type
  std::string signature_algorithm;
  const EVP_MD* digest = nullptr;  // none for ed25519
  std::string_view curve;          // ECDSA
};

KeyKind kind_of(EVP_PKEY* key, const std::string& source) {
  switch (EVP_PKEY_get_base_id(key)) {
    case EVP_PKEY_ED25519:
      return {"ssh-ed25519", "ssh-ed25519", nullptr, {}};
    case EVP_PKEY_RSA:
      return {"ssh-rsa", "rsa-sha2-512", EVP_sha512(), {}};
    case EVP_PKEY_EC: {
      std::array<char, 64> group{};
      std::size_t length = 0;
      if (EVP_PKEY_get_group_name(key, group.data(), group.size(), &length) != 1) break;
      const std::string_view name(group.data(), length);
      const EVP_MD* digests[] = {EVP_sha256(), EVP_sha384(), EVP_sha512()};
      for (std::size_t i = 0; i < curves.size(); ++i) {
        if (name == curves[i].group) {
          const std::string type = fmt::format("ecdsa-sha2-{}", curves[i].ssh_name);
          return {type, type, digests[i], curves[i].ssh_name};
        }
      }
      unusable(source, fmt::format("an ECDSA key on the curve \"{}\", which SSH does not use", name));
    }
    default:
      break;
  }
  unusable(source, "a key type this library cannot use (ed25519, ECDSA P-256/384/521 and RSA can)");
}

std::string ssh_public_key_blob(EVP_PKEY* key, const KeyKind& kind, const std::string& source) {
  WireWriter out;
  out.string(kind.type);
  if (kind.type == "ssh-ed25519") {
    std::array<unsigned char, 32> raw{};
    std::size_t length = raw.size();
    if (EVP_PKEY_get_raw_public_key(key, raw.data(), &length) != 1) unusable(source, "OpenSSL gave no public key");
    out.string({reinterpret_cast<const char*>(raw.data()), length});
  } else if (kind.type == "ssh-rsa") {
    BIGNUM* n = nullptr;
    BIGNUM* e = nullptr;
    const bool read = EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_RSA_N, &n) == 1 &&
                      EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_RSA_E, &e) == 1;
    const Bignum owned_n(n), owned_e(e);
    if (!read) unusable(source, "OpenSSL gave no public key");
    out.mpint(bignum_bytes(e)).mpint(bignum_bytes(n));
  } else {
    std::array<unsigned char, 160> point{};
    std::size_t length = 0;
    if (EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size(), &length) != 1) {
      unusable(source, "OpenSSL gave no public key");
    }
    out.string(kind.curve).string({reinterpret_cast<const char*>(point.data()), length});
  }
  return std::move(out).bytes();
}

}  // namespace

struct SigningKey::Impl {
  PrivateKey key;
  KeyKind kind;
  std::string source;
};

SigningKey::SigningKey(std::unique_ptr<Impl> impl, std::string public_key_blob)
    : impl_(std::move(impl)), public_key_blob_(std::move(public_key_blob)) {}
SigningKey::SigningKey(SigningKey&&) noexcept = default;
SigningKey& SigningKey::operator=(SigningKey&&) noexcept = default;
SigningKey::~SigningKey() = default;

SigningKey SigningKey::load(std::string_view text, const std::optional<std::string>& passphrase, const std::string& source) {
  PrivateKey key = text.find(openssh_begin) != std::string_view::npos ? openssh_private_key(text, passphrase, source)
                                                                      : pem_private_key(text, passphrase, source);
  auto impl = std::make_unique<Impl>();
  impl->kind = kind_of(key.get(), source);
  std::string blob = ssh_public_key_blob(key.get(), impl->kind, source);
  impl->key = std::move(key);
  impl->source = source;
  return SigningKey(std::move(impl), std::move(blob));
}

std::string SigningKey::sign(std::string_view data) const {
  detail::OpenSslHandle<EVP_MD_CTX, EVP_MD_CTX_free> context(EVP_MD_CTX_new());
  std::size_t length = 0;
  if (!context || EVP_DigestSignInit(context.get(), nullptr, impl_->kind.digest, nullptr, impl_->key.get()) != 1 ||
      EVP_DigestSign(context.get(), nullptr, &length, openssl_bytes(data), data.size()) != 1) {
    unusable(impl_->source, "OpenSSL could not sign with it");
  }
  std::string signature(length, '\0');
  if (EVP_DigestSign(context.get(), reinterpret_cast<unsigned char*>(signature.data()), &length, openssl_bytes(data),
                     data.size()) != 1) {
    unusable(impl_->source, "OpenSSL could not sign with it");
  }
  signature.resize(length);
  if (!impl_->kind.curve.empty()) {
    // ECDSA: OpenSSL's DER (r, s) becomes SSH's string(mpint r ‖ mpint s).
    const unsigned char* der = openssl_bytes(signature);
    std::unique_ptr<ECDSA_SIG, detail::OpenSslFree<ECDSA_SIG_free>> parsed(d2i_ECDSA_SIG(nullptr, &der, static_cast<long>(signature.size())));
    if (!parsed) unusable(impl_->source, "OpenSSL made an unreadable ECDSA signature");
    const BIGNUM* r = nullptr;
    const BIGNUM* s = nullptr;
    ECDSA_SIG_get0(parsed.get(), &r, &s);
    WireWriter pair;
    pair.mpint(bignum_bytes(r)).mpint(bignum_bytes(s));
    signature = std::move(pair).bytes();
  }
  WireWriter out;
  out.string(impl_->kind.signature_algorithm).string(signature);
  return std::move(out).bytes();
}

}  // namespace exedev::ssh
