// The sans-IO parts of signing: the SSH wire encoding, bcrypt_pbkdf, the SSHSIG layout and the
// ssh-agent messages, table-driven. (The signatures themselves are checked by ssh-keygen in
// tests/integration/ssh/sshsig_test.cpp.)
#include "ssh/agent_protocol.hpp"
#include "ssh/bcrypt_pbkdf.hpp"
#include "common/ssh_wire.hpp"
#include "ssh/sshsig.hpp"

#include <openssl/sha.h>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace exedev::ssh;
using exedev::detail::WireReader;
using exedev::detail::WireWriter;
using namespace std::string_literals;

namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (const int v : values) out += static_cast<char>(v);
  return out;
}

std::string sha512(const std::string& message) {
  unsigned char digest[SHA512_DIGEST_LENGTH];
  SHA512(reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest);
  return {reinterpret_cast<const char*>(digest), sizeof digest};
}

std::string ssh_string(const std::string& text) {
  const auto n = text.size();
  return bytes({static_cast<int>(n >> 24 & 0xFF), static_cast<int>(n >> 16 & 0xFF), static_cast<int>(n >> 8 & 0xFF),
                static_cast<int>(n & 0xFF)}) +
         text;
}

}  // namespace

TEST_CASE("ssh wire: strings, uint32 and mpints as RFC 4251 writes them", "[unit][ssh]") {
  CHECK(WireWriter().uint32(0x01020304).bytes() == bytes({1, 2, 3, 4}));
  CHECK(WireWriter().string("ab").bytes() == bytes({0, 0, 0, 2, 'a', 'b'}));
  // RFC 4251 §5's mpint examples: 0, 0x80 (a zero byte before a set top bit), leading zeros dropped.
  CHECK(WireWriter().mpint("").bytes() == bytes({0, 0, 0, 0}));
  CHECK(WireWriter().mpint(bytes({0, 0})).bytes() == bytes({0, 0, 0, 0}));
  CHECK(WireWriter().mpint(bytes({0x80})).bytes() == bytes({0, 0, 0, 2, 0, 0x80}));
  CHECK(WireWriter().mpint(bytes({0, 0x09, 0xa3, 0x78, 0xf9, 0xb2, 0xe3, 0x32, 0xa7})).bytes() ==
        bytes({0, 0, 0, 8, 0x09, 0xa3, 0x78, 0xf9, 0xb2, 0xe3, 0x32, 0xa7}));

  const std::string wire = bytes({0, 0, 0, 2, 'a', 'b', 7, 0, 0, 0, 9, 'x'});
  WireReader reader(wire);
  CHECK(reader.string() == "ab");
  CHECK(reader.byte() == 7);
  CHECK_FALSE(reader.string());  // announces 9 bytes, holds 1: nothing is read
  CHECK(reader.rest() == bytes({0, 0, 0, 9, 'x'}));
  const std::string short_wire = "\x00\x00"s;
  CHECK_FALSE(WireReader(short_wire).uint32());
}

TEST_CASE("bcrypt_pbkdf: OpenBSD's published vectors", "[unit][ssh]") {
  // From OpenBSD's regress suite, as golang.org/x/crypto and pyca/bcrypt test them.
  CHECK(bcrypt_pbkdf("password", "salt", 32, 4) ==
        bytes({0x5b, 0xbf, 0x0c, 0xc2, 0x93, 0x58, 0x7f, 0x1c, 0x36, 0x35, 0x55, 0x5c, 0x27, 0x79, 0x65, 0x98,
               0xd4, 0x7e, 0x57, 0x90, 0x71, 0xbf, 0x42, 0x7e, 0x9d, 0x8f, 0xbe, 0x84, 0x2a, 0xba, 0x34, 0xd9}));
  CHECK(bcrypt_pbkdf("pass2", "salt2", 12, 2) == bytes({214, 14, 48, 162, 131, 206, 121, 176, 50, 104, 231, 252}));
  CHECK(bcrypt_pbkdf("password", "\x00"s, 16, 4) ==
        bytes({0xc1, 0x2b, 0x56, 0x62, 0x35, 0xee, 0xe0, 0x4c, 0x21, 0x25, 0x98, 0x97, 0x0a, 0x57, 0x9a, 0x67}));
  // More than one 32-byte block: the blocks' bytes interleave.
  const auto long_key = bcrypt_pbkdf("password", "salt", 64, 8);
  REQUIRE(long_key);
  CHECK(long_key->substr(0, 8) == bytes({0xe1, 0x36, 0x7e, 0xc5, 0x15, 0x1a, 0x33, 0xfa}));
  CHECK_FALSE(bcrypt_pbkdf("", "salt", 32, 4));
  CHECK_FALSE(bcrypt_pbkdf("password", "", 32, 4));
  CHECK_FALSE(bcrypt_pbkdf("password", "salt", 32, 0));
  CHECK_FALSE(bcrypt_pbkdf("password", "salt", 0, 4));
  CHECK_FALSE(bcrypt_pbkdf("password", "salt", 1025, 4));
}

TEST_CASE("sshsig: the signed data and the blob as PROTOCOL.sshsig lays them out", "[unit][ssh]") {
  const std::string message = "{\"exp\":1700000000}";
  CHECK(sshsig_signed_data("v0@exe.dev", message) ==
        "SSHSIG" + ssh_string("v0@exe.dev") + ssh_string("") + ssh_string("sha512") + ssh_string(sha512(message)));
  const std::string key = ssh_string("ssh-ed25519") + ssh_string(std::string(32, 'k'));
  const std::string signature = ssh_string("ssh-ed25519") + ssh_string(std::string(64, 's'));
  CHECK(sshsig_blob(key, "v0@vm.exe.xyz", signature) == "SSHSIG" + bytes({0, 0, 0, 1}) + ssh_string(key) +
                                                            ssh_string("v0@vm.exe.xyz") + ssh_string("") +
                                                            ssh_string("sha512") + ssh_string(signature));
}

TEST_CASE("ssh-agent messages: requests, and answers parsed or refused", "[unit][ssh]") {
  CHECK(agent_identities_request() == bytes({0, 0, 0, 1, 11}));
  const std::string ed25519 = ssh_string("ssh-ed25519") + ssh_string(std::string(32, 'k'));
  const std::string rsa = ssh_string("ssh-rsa") + ssh_string("\x01\x00\x01"s) + ssh_string("n");
  const std::string data = "to sign";
  const auto body = [&](const std::string& key, int flags) {
    return bytes({13}) + ssh_string(key) + ssh_string(data) + bytes({0, 0, 0, flags});
  };
  CHECK(agent_sign_request(ed25519, data) == ssh_string(body(ed25519, 0)));
  CHECK(agent_sign_request(rsa, data) == ssh_string(body(rsa, 4)));  // SSH_AGENT_RSA_SHA2_512

  CHECK(agent_message_length(bytes({0, 0, 1, 0})) == 256u);
  CHECK_FALSE(agent_message_length(bytes({0, 0, 0, 0})));
  CHECK_FALSE(agent_message_length(bytes({0, 4, 0, 1})));  // over 256 KiB
  CHECK_FALSE(agent_message_length(bytes({0, 0})));

  const std::string two = bytes({12, 0, 0, 0, 2}) + ssh_string(ed25519) + ssh_string("laptop") + ssh_string(rsa) + ssh_string("");
  const auto identities = parse_agent_identities(two);
  REQUIRE(identities);
  REQUIRE(identities->size() == 2);
  CHECK((*identities)[0].key_blob == ed25519);
  CHECK((*identities)[0].comment == "laptop");
  CHECK((*identities)[1].key_blob == rsa);
  CHECK(parse_agent_identities(bytes({12, 0, 0, 0, 0})) == std::vector<AgentIdentity>{});
  for (const std::string& bad : {bytes({5}), bytes({12, 0, 0, 0, 1}), bytes({12, 0, 0, 0, 2}) + ssh_string(ed25519) + ssh_string(""),
                                 two + "x", bytes({14}) + ssh_string("sig"), std::string()}) {
    CHECK_FALSE(parse_agent_identities(bad));
  }

  const std::string signature = ssh_string("ssh-ed25519") + ssh_string(std::string(64, 's'));
  CHECK(parse_agent_signature(bytes({14}) + ssh_string(signature)) == signature);
  CHECK_FALSE(parse_agent_signature(bytes({5})));  // SSH_AGENT_FAILURE
  CHECK_FALSE(parse_agent_signature(bytes({14}) + ssh_string(signature) + "x"));
  CHECK_FALSE(parse_agent_signature(bytes({14, 0, 0, 0, 9})));
}
