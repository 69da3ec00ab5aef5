#include "emulator/exe0_verify.hpp"

#include "common/base64.hpp"
#include "common/sha256.hpp"
#include "common/openssl_handles.hpp"
#include "common/ssh_wire.hpp"

#include <nlohmann/json.hpp>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include <array>
#include <limits>
#include <memory>
#include <set>

namespace exedev::emulator {

namespace {

using detail::WireReader;

constexpr std::size_t max_token_size = 8 * 1024;
constexpr std::int64_t min_timestamp = 946684800;   // 2000-01-01
constexpr std::int64_t max_timestamp = 4102444800;  // 2100-01-01

// Go's bytes.TrimSpace: ASCII white space and the Unicode spaces (unicode.IsSpace) at either end.
bool space_at_edge(std::string_view text) {
  constexpr std::string_view ascii = " \t\n\v\f\r";
  if (text.empty()) return false;
  if (ascii.find(text.front()) != std::string_view::npos || ascii.find(text.back()) != std::string_view::npos) return true;
  static const std::array<std::string_view, 18> unicode = {
      "\u0085", "\u00a0", "\u1680", "\u2000", "\u2001", "\u2002", "\u2003", "\u2004", "\u2005",
      "\u2006", "\u2007", "\u2008", "\u2009", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f"};
  for (const auto space : unicode) {
    if (text.starts_with(space) || text.ends_with(space)) return true;
  }
  return text.starts_with("\u3000") || text.ends_with("\u3000");
}

// The payload read in order, as exe.dev's json/v2 Unmarshal into its tokenPayload reads it
// (RejectUnknownMembers, no duplicate names at any depth, exp and nbf plain integers): the first
// problem met is the one reported.
class PayloadReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::optional<std::string> error;
  std::optional<std::int64_t> exp;
  std::optional<std::int64_t> nbf;
  std::optional<std::vector<std::string>> cmds;

  bool null() override {
    // null leaves a pointer (exp, nbf) or slice (cmds) nil, and an element of cmds "".
    if (in_cmds()) cmds->emplace_back();
    return true;
  }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t value) override { return integer(value); }
  bool number_unsigned(number_unsigned_t value) override {
    if (value > static_cast<number_unsigned_t>(std::numeric_limits<std::int64_t>::max())) return invalid();
    return integer(static_cast<std::int64_t>(value));
  }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool string(string_t& value) override {
    if (in_cmds()) {
      cmds->push_back(value);
      return true;
    }
    return scalar();
  }
  bool binary(binary_t&) override { return invalid(); }
  bool start_object(std::size_t) override {
    if (top_level_value() && member_ != "ctx") return invalid();
    if (in_cmds()) return invalid();
    names_.emplace_back();
    return true;
  }
  bool key(string_t& name) override {
    if (!names_.back().insert(name).second) return invalid();  // a duplicate name
    if (names_.size() == 1) {
      if (name != "exp" && name != "nbf" && name != "cmds" && name != "ctx") {
        error = "invalid token: unknown field \"" + name + "\"";
        return false;
      }
      member_ = name;
    }
    return true;
  }
  bool end_object() override {
    names_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    ++arrays_;
    if (names_.size() == 1 && arrays_ == 1 && member_ == "cmds") {
      cmds.emplace();
      return true;
    }
    if (names_.size() == 1 && member_ != "ctx") return invalid();  // exp, nbf; or an array inside cmds
    return true;
  }
  bool end_array() override {
    --arrays_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return invalid(); }

 private:
  std::vector<std::set<std::string>> names_;  // per open object
  std::size_t arrays_ = 0;                    // open arrays
  std::string member_;                        // the top-level member being read

  // A value directly under a top-level member (not inside ctx's objects or arrays).
  bool top_level_value() const { return names_.size() == 1 && arrays_ == 0; }
  bool in_cmds() const { return names_.size() == 1 && arrays_ == 1 && member_ == "cmds"; }
  bool invalid() {
    error = "invalid token: invalid JSON";
    return false;
  }
  bool scalar() {
    if (top_level_value() && member_ != "ctx") return invalid();  // exp, nbf not integers; cmds not an array
    if (in_cmds()) return invalid();
    return true;
  }
  bool integer(std::int64_t value) {
    if (!top_level_value() || member_ == "ctx") return scalar();
    if (member_ == "exp") exp = value;
    else if (member_ == "nbf") nbf = value;
    else return invalid();  // cmds
    return true;
  }
};

// ---- SSHSIG ----

using PublicKey = detail::OpenSslHandle<EVP_PKEY, EVP_PKEY_free>;
using Bignum = detail::OpenSslHandle<BIGNUM, BN_free>;
using detail::openssl_bytes;

Bignum bignum(std::string_view mpint) {
  return Bignum(BN_bin2bn(openssl_bytes(mpint), static_cast<int>(mpint.size()), nullptr));
}

struct Curve {
  std::string_view type;
  std::string_view name;
  const char* group;
};
constexpr std::array<Curve, 3> curves = {{{"ecdsa-sha2-nistp256", "nistp256", "prime256v1"},
                                          {"ecdsa-sha2-nistp384", "nistp384", "secp384r1"},
                                          {"ecdsa-sha2-nistp521", "nistp521", "secp521r1"}}};

PublicKey from_params(const char* algorithm, OSSL_PARAM_BLD* builder) {
  return detail::key_from_params(algorithm, builder, EVP_PKEY_PUBLIC_KEY);
}

// An SSH public key blob as OpenSSL's key; nullptr for a type this check does not know.
PublicKey public_key(std::string_view blob, std::string& type) {
  WireReader reader(blob);
  const auto name = reader.string();
  if (!name) return nullptr;
  type = std::string(*name);
  std::unique_ptr<OSSL_PARAM_BLD, detail::OpenSslFree<OSSL_PARAM_BLD_free>> builder(OSSL_PARAM_BLD_new());
  if (!builder) return nullptr;
  if (type == "ssh-ed25519") {
    const auto raw = reader.string();
    if (!raw || raw->size() != 32 || !reader.empty()) return nullptr;
    return PublicKey(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, openssl_bytes(*raw), raw->size()));
  }
  if (type == "ssh-rsa") {
    const auto e = reader.string();
    const auto n = reader.string();
    if (!e || !n || !reader.empty()) return nullptr;
    const Bignum bn_e = bignum(*e), bn_n = bignum(*n);
    if (!bn_e || !bn_n || OSSL_PARAM_BLD_push_BN(builder.get(), OSSL_PKEY_PARAM_RSA_N, bn_n.get()) != 1 ||
        OSSL_PARAM_BLD_push_BN(builder.get(), OSSL_PKEY_PARAM_RSA_E, bn_e.get()) != 1) {
      return nullptr;
    }
    return from_params("RSA", builder.get());
  }
  for (const Curve& curve : curves) {
    if (type != curve.type) continue;
    const auto name_field = reader.string();
    const auto point = reader.string();
    if (!name_field || *name_field != curve.name || !point || !reader.empty() ||
        OSSL_PARAM_BLD_push_utf8_string(builder.get(), OSSL_PKEY_PARAM_GROUP_NAME, curve.group, 0) != 1 ||
        OSSL_PARAM_BLD_push_octet_string(builder.get(), OSSL_PKEY_PARAM_PUB_KEY, point->data(), point->size()) != 1) {
      return nullptr;
    }
    return from_params("EC", builder.get());
  }
  return nullptr;
}

// The digest a signature algorithm hashes with, and the signature in OpenSSL's form (DER for
// ECDSA); false for an algorithm the key type does not sign with.
bool openssl_signature(const std::string& key_type, std::string_view algorithm, std::string_view ssh_signature,
                       const EVP_MD*& digest, std::string& out) {
  if (key_type == "ssh-ed25519") {
    digest = nullptr;
    out = ssh_signature;
    return algorithm == key_type;
  }
  if (key_type == "ssh-rsa") {
    // OpenSSH refuses SHA-1 ("ssh-rsa") signatures in SSHSIG.
    digest = algorithm == "rsa-sha2-512" ? EVP_sha512() : algorithm == "rsa-sha2-256" ? EVP_sha256() : nullptr;
    out = ssh_signature;
    return digest != nullptr;
  }
  if (algorithm != key_type) return false;
  digest = key_type.ends_with("256") ? EVP_sha256() : key_type.ends_with("384") ? EVP_sha384() : EVP_sha512();
  WireReader pair(ssh_signature);
  const auto r = pair.string();
  const auto s = pair.string();
  if (!r || !s || !pair.empty()) return false;
  std::unique_ptr<ECDSA_SIG, detail::OpenSslFree<ECDSA_SIG_free>> signature(ECDSA_SIG_new());
  Bignum bn_r = bignum(*r), bn_s = bignum(*s);
  if (!signature || !bn_r || !bn_s || ECDSA_SIG_set0(signature.get(), bn_r.get(), bn_s.get()) != 1) return false;
  (void)bn_r.release();  // owned by the signature now
  (void)bn_s.release();
  unsigned char* der = nullptr;
  const int length = i2d_ECDSA_SIG(signature.get(), &der);
  if (length <= 0) return false;
  out.assign(reinterpret_cast<const char*>(der), static_cast<std::size_t>(length));
  OPENSSL_free(der);
  return true;
}

std::string digest_of(const EVP_MD* md, std::string_view message) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_Digest(message.data(), message.size(), digest.data(), &length, md, nullptr);
  return {reinterpret_cast<const char*>(digest.data()), length};
}

}  // namespace

std::variant<Exe0Token, std::string> parse_exe0_token(std::string_view text) {
  if (text.size() > max_token_size) return std::string("invalid token: exceeds maximum size");
  if (!text.starts_with("exe0.")) return std::string("invalid token format: missing exe0. prefix");
  text.remove_prefix(5);
  const auto dot = text.find('.');
  if (dot == std::string_view::npos) return std::string("invalid token format: expected exe0.<payload>.<sigblob>");
  const auto payload = detail::base64url_decode(text.substr(0, dot));
  if (!payload) return std::string("invalid token: payload is not valid base64url");
  if (space_at_edge(*payload)) return std::string("invalid token: payload must not have leading or trailing whitespace");
  if (payload->find_first_of("\n\r") != std::string::npos) return std::string("invalid token: payload must not contain newlines");
  if (payload->find('\0') != std::string::npos) return std::string("invalid token: payload must not contain null bytes");
  if (payload->empty() || payload->front() != '{') return std::string("invalid token: payload must be a JSON object");

  PayloadReader reader;
  if (!nlohmann::json::sax_parse(*payload, &reader)) return reader.error.value_or("invalid token: invalid JSON");
  const auto in_range = [](std::int64_t t) { return t >= min_timestamp && t <= max_timestamp; };
  if (reader.exp && !in_range(*reader.exp)) return std::string("invalid token: exp out of valid range");
  if (reader.nbf && !in_range(*reader.nbf)) return std::string("invalid token: nbf out of valid range");
  if (reader.cmds) {
    for (const auto& command : *reader.cmds) {
      if (command.empty()) return std::string("invalid token: cmds elements must be non-empty strings");
    }
  }

  const auto blob = detail::base64url_decode(text.substr(dot + 1));
  if (!blob) return std::string("invalid token: signature is not valid base64url");
  // PROTOCOL.sshsig: "SSHSIG", version 1, the key, the namespace, reserved, the hash, the signature.
  const std::string malformed = "invalid token: malformed signature";
  if (!std::string_view(*blob).starts_with("SSHSIG")) return malformed;
  WireReader sig(std::string_view(*blob).substr(6));
  const auto version = sig.uint32();
  const auto key = sig.string();
  const auto name_space = sig.string();
  const auto reserved = sig.string();
  const auto hash = sig.string();
  const auto signature = sig.string();
  if (version != 1u || !key || !name_space || name_space->empty() || !reserved || !hash ||
      (*hash != "sha256" && *hash != "sha512") || !signature || !sig.empty()) {
    return malformed;
  }
  std::string key_type;
  if (!public_key(*key, key_type)) return malformed;
  WireReader signature_fields(*signature);
  if (!signature_fields.string() || !signature_fields.string() || !signature_fields.empty()) return malformed;

  Exe0Token token;
  token.payload = std::move(*payload);
  token.exp = reader.exp;
  token.nbf = reader.nbf;
  token.cmds = std::move(reader.cmds);
  token.public_key_blob = std::string(*key);
  token.fingerprint = detail::ssh_key_fingerprint(*key);
  token.name_space = std::string(*name_space);
  token.hash_algorithm = std::string(*hash);
  token.signature_blob = std::string(*signature);
  return token;
}

std::optional<std::string> exe0_claims_error(const Exe0Token& token, std::int64_t now, bool for_trade) {
  if (token.exp && *token.exp < now) return "invalid token: token has expired";
  if (!for_trade && token.nbf && *token.nbf > now) return "invalid token: token is not yet valid";
  return std::nullopt;
}

bool exe0_signature_valid(const Exe0Token& token, std::string_view stored_key_blob, std::string_view name_space) {
  if (token.public_key_blob != stored_key_blob || token.name_space != name_space) return false;
  std::string key_type;
  const PublicKey key = public_key(stored_key_blob, key_type);
  WireReader fields(token.signature_blob);
  const auto algorithm = fields.string();
  const auto raw = fields.string();
  const EVP_MD* digest = nullptr;
  std::string signature;
  if (!key || !algorithm || !raw || !openssl_signature(key_type, *algorithm, *raw, digest, signature)) return false;
  const EVP_MD* message_digest = token.hash_algorithm == "sha256" ? EVP_sha256() : EVP_sha512();
  detail::WireWriter signed_data;
  signed_data.raw("SSHSIG").string(name_space).string("").string(token.hash_algorithm);
  signed_data.string(digest_of(message_digest, token.payload));
  std::unique_ptr<EVP_MD_CTX, detail::OpenSslFree<EVP_MD_CTX_free>> context(EVP_MD_CTX_new());
  const bool valid = context && EVP_DigestVerifyInit(context.get(), nullptr, digest, nullptr, key.get()) == 1 &&
                     EVP_DigestVerify(context.get(), openssl_bytes(signature), signature.size(), openssl_bytes(signed_data.bytes()),
                                      signed_data.bytes().size()) == 1;
  ERR_clear_error();
  return valid;
}

}  // namespace exedev::emulator
