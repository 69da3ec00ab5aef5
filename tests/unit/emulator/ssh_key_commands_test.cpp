// The lobby's ssh-key list, add and remove in exe.dev's shapes (execore/ssh_key_command.go), the
// parsing and naming of public keys, and the landing table the SSH endpoints route keys by. No sockets.
#include "emulator/lobby.hpp"
#include "emulator/ssh_keys.hpp"
#include "lobby_fixture.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <iterator>

using namespace exedev::emulator;
using namespace lobby_test;

namespace {

// Made with ssh-keygen; the fingerprints are what `ssh-keygen -l` prints for them.
const std::string laptop_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEXxjFCV/Ox+etysxQ+wLsYP4mbIVxXgyly9Hs2zDHac";
const std::string laptop_fingerprint = "SHA256:i5YCR5ra3ApnIDduGinDywqzXF/ki6sp8HEq6ksCw50";
const std::string other_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOoqsxMRBLru1K4kbdLN3H9p6ssRZsv5FMYMtDvahDfz";
const std::string other_fingerprint = "SHA256:CpKtVhuJuoydvXhMnuSdIcfPxAX+rkc8h6k4IW3h/rI";
const std::string rsa_key = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDLCCFlm34wmOXbgpIKg2qxiatXC0BFO9IdKn5J4OydOU1QEz3WOzwYYg/tZgqGBVYp2PaRHj8+++8F0wO8JrPM/oZRC3TwyJoFRJr/bAH8E8NXyWbOi4lHpaa+5a1XnezhLDww2jJXXg8K8mP31BnMMWL9kTZkcedTaYwWBRlYuw==";
const std::string rsa_fingerprint = "SHA256:tgkvD9axAscoA0SW8VawEKp278Kz/4C/cOd2yGPuhb4";

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

namespace {

// The fingerprints the landing table routes (`ssh/landing/keys/<fingerprint, / as _>` holding
// the account), as `SHA256:…`.
std::set<std::string> landing_keys(const std::filesystem::path& state_dir) {
  std::set<std::string> fingerprints;
  std::error_code none;
  for (const auto& entry : std::filesystem::directory_iterator(state_dir / "ssh" / "landing" / "keys", none)) {
    if (read_file(entry.path()) != "first\n") continue;
    std::string fingerprint = entry.path().filename().string();
    std::replace(fingerprint.begin(), fingerprint.end(), '_', '/');
    fingerprints.insert(fingerprint);
  }
  return fingerprints;
}

}  // namespace

TEST_CASE("ssh keys: parsing, fingerprints and names as exe.dev makes them", "[lobby][ssh]") {
  const auto key = parse_public_key("  " + laptop_key + " my laptop  \n");
  REQUIRE(key);
  CHECK(key->type == "ssh-ed25519");
  CHECK(key->canonical() == laptop_key);
  CHECK(key->fingerprint() == laptop_fingerprint);
  CHECK(key->comment == "my laptop");
  REQUIRE(parse_public_key(rsa_key));
  CHECK(parse_public_key(rsa_key)->fingerprint() == rsa_fingerprint);
  // An options field is skipped, as in authorized_keys.
  const auto with_options = parse_public_key("restrict,command=\"echo hi there\" " + other_key + " c");
  REQUIRE(with_options);
  CHECK(with_options->fingerprint() == other_fingerprint);
  CHECK_FALSE(parse_public_key(""));
  CHECK_FALSE(parse_public_key("# " + laptop_key));
  CHECK_FALSE(parse_public_key("ssh-ed25519 not-base64!"));
  CHECK_FALSE(parse_public_key("ssh-rsa " + laptop_key.substr(12)));  // the blob says ed25519
  CHECK_FALSE(parse_public_key("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEXx"));  // too short

  // exe.dev's own cases (sshkey/comment_test.go).
  CHECK(sanitize_key_name("") == "");
  CHECK(sanitize_key_name("user@hostname") == "user@hostname");
  CHECK(sanitize_key_name("my laptop key") == "my-laptop-key");
  CHECK(sanitize_key_name("---test") == "test");
  CHECK(sanitize_key_name("key;rm -rf") == "keyrm--rf");
  CHECK(sanitize_key_name("key`whoami`$HOME") == "keywhoamiHOME");
  CHECK(sanitize_key_name("key|cat>/etc/passwd") == "keycatetcpasswd");
  CHECK(sanitize_key_name("key[0](test){value}") == "key0testvalue");
  CHECK(sanitize_key_name("  my   laptop   key  ") == "my-laptop-key");
  CHECK(sanitize_key_name("this-is-a-very-very-long-ssh-key-comment-that-exceeds-64-characters") ==
        "this-is-a-very-very-long-ssh-key-comment-that-exceeds-64-charact");
}

TEST_CASE("lobby: ssh-key add answers exe.dev's JSON and refuses what exe.dev refuses", "[lobby][ssh]") {
  Fixture f;
  CHECK(f.exec("ssh-key add '" + laptop_key + " my laptop'").body ==
        "{\"name\":\"my-laptop\",\"public_key\":\"" + laptop_key + "\",\"status\":\"added\"}\n");
  // Unquoted words are joined again; a key without comment is named key-<N>, N counting every
  // add that got as far as a parsed key (this is the second).
  CHECK(f.ok("ssh-key add " + other_key) ==
        Json{{"name", "key-2"}, {"public_key", other_key}, {"status", "added"}});
  CHECK(f.error("ssh-key add " + laptop_key + " again") == "this SSH key is already associated with your account");
  CHECK(f.ok("ssh-key add " + rsa_key).at("name") == "key-4");  // the refused duplicate counted
  CHECK(f.error("ssh-key add") == "please provide the SSH public key to add");
  CHECK(f.error("ssh-key add ssh-ed25519 AAAA") == "invalid SSH public key: ssh: no key found");
  CHECK(f.error("ssh-key add '-----BEGIN OPENSSH PRIVATE KEY----- abc'") ==
        "this is a private key, please use the public key instead (typically found in a .pub file)");
  CHECK(f.error("ssh-key add --cmds=ls " + laptop_key) ==
        "--cmds, --vm, --tag, and --exp flags require root support privileges or scoped SSH key feature access");

  // ssh-key list: the registered keys (with added_at), then the API keys.
  const Json keys = f.ok("ssh-key list --json").at("ssh_keys");
  REQUIRE(keys.size() == 4);
  CHECK(keys.at(0).at("public_key") == laptop_key);
  CHECK(keys.at(0).at("fingerprint") == laptop_fingerprint);
  CHECK(keys.at(0).at("name") == "my-laptop");
  CHECK(keys.at(0).at("current") == false);
  CHECK(keys.at(0).contains("added_at"));
  CHECK(keys.at(2).at("fingerprint") == rsa_fingerprint);
  CHECK(keys.at(3).at("name") == "emulator");

  // The landing table names each registered key's account, by fingerprint.
  CHECK(landing_keys(f.dir) == std::set<std::string>{laptop_fingerprint, other_fingerprint, rsa_fingerprint});
  // They stay across a restart.
  f.restart();
  CHECK(f.ok("ssh-key list").at("ssh_keys").size() == 4);
  CHECK(f.error("ssh-key add " + laptop_key) == "this SSH key is already associated with your account");
}

TEST_CASE("lobby: ssh-key remove by name, fingerprint or public key, in exe.dev's shapes", "[lobby][ssh]") {
  Fixture f;
  f.ok("ssh-key add " + laptop_key + " same-name");
  f.ok("ssh-key add " + other_key + " same-name");
  f.ok("ssh-key add " + rsa_key + " rsa-key");
  CHECK(f.error("ssh-key remove same-name") == "multiple keys match, please specify by fingerprint:\n  " +
                                                    laptop_fingerprint + " (same-name)\n  " + other_fingerprint +
                                                    " (same-name)");
  CHECK(f.exec("ssh-key remove " + laptop_fingerprint).body ==
        "{\"fingerprint\":\"" + laptop_fingerprint + "\",\"name\":\"same-name\",\"public_key\":\"" + laptop_key +
            "\",\"status\":\"deleted\"}\n");
  // Without the SHA256: prefix; then a whole public key line.
  CHECK(f.ok("ssh-key remove " + other_fingerprint.substr(7)).at("public_key") == other_key);
  CHECK(f.ok("ssh-key remove '" + rsa_key + " whatever comment'").at("name") == "rsa-key");
  CHECK(landing_keys(f.dir).empty());
  CHECK(f.error("ssh-key remove rsa-key") == "no matching SSH key found for \"rsa-key\"");
  CHECK(f.error("ssh-key remove") == "please specify a key to remove (name, fingerprint, or full public key)");

  // An API key is a key of the account too: removing it ends its token.
  const std::string token = f.issue_token(TokenSpec{.label = "ci-key"});
  CHECK(f.exec("whoami", token).status == 200);
  CHECK(f.ok("ssh-key remove ci-key").at("status") == "deleted");
  CHECK(f.exec("whoami", token).status == 401);
}
