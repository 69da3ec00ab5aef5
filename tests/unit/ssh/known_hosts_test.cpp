// known_hosts parsing and matching, fingerprints: table-driven, sans-IO.
#include "common/base64.hpp"
#include "ssh/known_hosts.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace exedev::ssh;
using exedev::detail::base64_decode;
using exedev::detail::base64_encode;

namespace {

// Two ed25519 keys made with ssh-keygen, with the fingerprints `ssh-keygen -l -E sha256` printed.
const std::string key_a = "AAAAC3NzaC1lZDI1NTE5AAAAIBgCBv7W4eWYyE3HID1A2pKxQxNG+qYQQN9C9HHvf/VA";
const std::string fingerprint_a = "SHA256:i/CbocWAZ7EUJYaoOK+p2Euy7o9UqWl0sBt4L5GylY4";
const std::string key_b = "AAAAC3NzaC1lZDI1NTE5AAAAIG+aPDfRVWYXK5ock83J41s1QfxydGkww9yO3v9YZR07";
const std::string fingerprint_b = "SHA256:KWVNH/EV3/naug4LMHzGHz0p4QFpRIJq3NfujQtQeMw";
// `ssh-keygen -H` of "[example.com]:2222 ssh-ed25519 <key_a>".
const std::string hashed_by_ssh_keygen = "|1|bqzMxcCGDK+UzpyIzJNbQ6LS7iI=|8WrG7D+AkThq5ZEAqA2Trws1grE=";

std::string blob(const std::string& base64) { return base64_decode(base64).value(); }

std::vector<KnownHostEntry> parse_ok(const std::string& text) {
  auto parsed = parse_known_hosts(text);
  for (const auto& skipped : parsed.malformed) FAIL("line " << skipped.line << ": " << skipped.reason);
  return std::move(parsed.entries);
}

// The hashed form computed here with OpenSSL directly, independently of hashed_host_name().
std::string hash_with_openssl(const std::string& name, const std::string& salt) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha1(), salt.data(), static_cast<int>(salt.size()), reinterpret_cast<const unsigned char*>(name.data()),
       name.size(), digest, &length);
  return "|1|" + base64_encode(salt) + "|" + base64_encode(std::string(reinterpret_cast<char*>(digest), length));
}

}  // namespace

TEST_CASE("ssh fingerprint: SHA256 of the key blob in base64 without padding, as ssh-keygen prints it") {
  CHECK(sha256_fingerprint(blob(key_a)) == fingerprint_a);
  CHECK(sha256_fingerprint(blob(key_b)) == fingerprint_b);
  CHECK(key_type_of_blob(blob(key_a)) == "ssh-ed25519");
  CHECK_FALSE(key_type_of_blob("\x00\x00"));
  CHECK_FALSE(key_type_of_blob(std::string("\x00\x00\x00\x09ssh", 7)));
}

TEST_CASE("ssh known_hosts: names are host on port 22 and [host]:port otherwise, lowercased") {
  CHECK(known_hosts_name("vm.exe.xyz", 22) == "vm.exe.xyz");
  CHECK(known_hosts_name("VM.Exe.XYZ", 2222) == "[vm.exe.xyz]:2222");
  CHECK(known_hosts_name("127.0.0.1", 40022) == "[127.0.0.1]:40022");
  CHECK(known_hosts_line("[127.0.0.1]:40022", blob(key_a)) == "[127.0.0.1]:40022 ssh-ed25519 " + key_a + "\n");
}

TEST_CASE("ssh known_hosts: which lines name which host") {
  struct Row {
    std::string hosts;
    std::string name;
    bool names;
  };
  const std::vector<Row> rows = {
      {"vm.exe.xyz", "vm.exe.xyz", true},
      {"vm.exe.xyz", "other.exe.xyz", false},
      {"VM.EXE.XYZ", "vm.exe.xyz", true},
      {"a.example,vm.exe.xyz,10.0.0.1", "vm.exe.xyz", true},
      {"a.example,10.0.0.1", "vm.exe.xyz", false},
      {"[vm.exe.xyz]:2222", "[vm.exe.xyz]:2222", true},
      {"vm.exe.xyz", "[vm.exe.xyz]:2222", false},
      {"[vm.exe.xyz]:2222", "vm.exe.xyz", false},
      {"*.exe.xyz", "vm.exe.xyz", true},
      {"*.exe.xyz,!bad.exe.xyz", "bad.exe.xyz", false},
      {"!bad.exe.xyz,*.exe.xyz", "good.exe.xyz", true},
      {"v?.exe.xyz", "vm.exe.xyz", true},
      {"v?.exe.xyz", "vmm.exe.xyz", false},
      {hashed_by_ssh_keygen, "[example.com]:2222", true},
      {hashed_by_ssh_keygen, "example.com", false},
      {hash_with_openssl("vm.exe.xyz", std::string(20, '\x5a')), "vm.exe.xyz", true},
      {hash_with_openssl("vm.exe.xyz", std::string(20, '\x5a')), "vn.exe.xyz", false},
  };
  for (const auto& row : rows) {
    INFO(row.hosts << " vs " << row.name);
    KnownHostEntry entry;
    entry.hosts = row.hosts;
    CHECK(entry_names_host(entry, row.name) == row.names);
  }
  // The library's own hashing agrees with OpenSSL's HMAC-SHA1 computed here.
  CHECK(hashed_host_name("vm.exe.xyz", std::string(20, '\x5a')) == hash_with_openssl("vm.exe.xyz", std::string(20, '\x5a')));
}

TEST_CASE("ssh known_hosts: parsing skips comments and blank lines and keeps markers") {
  const auto entries = parse_ok("# a comment\n\n   \n"
                                "vm.exe.xyz ssh-ed25519 " + key_a + " comment words\r\n"
                                "@revoked * ssh-ed25519 " + key_b + "\n"
                                "@cert-authority *.exe.xyz ssh-ed25519 " + key_b + "\n"
                                "\t[h]:2 \t ssh-ed25519\t" + key_b);
  REQUIRE(entries.size() == 4);
  CHECK(entries[0].line == 4);
  CHECK(entries[0].hosts == "vm.exe.xyz");
  CHECK(entries[0].key_type == "ssh-ed25519");
  CHECK(entries[0].key_blob == blob(key_a));
  CHECK(entries[1].marker == KnownHostEntry::Marker::revoked);
  CHECK(entries[2].marker == KnownHostEntry::Marker::cert_authority);
  CHECK(entries[3].hosts == "[h]:2");
  CHECK(entries[3].line == 7);
}

TEST_CASE("ssh known_hosts: a line that does not parse is skipped with its number and why; the rest is used") {
  struct Row {
    std::string text;
    std::size_t line;
    std::string reason_part;
  };
  const std::string good = "good.example ssh-ed25519 " + key_a + "\n";
  const std::vector<Row> rows = {
      {"vm ssh-ed25519\n", 1, "expected a host list"},
      {"# ok\nvm ssh-ed25519 !!!notbase64\n", 2, "not valid base64"},
      {"vm ssh-ed25519 " + key_a + "\n@bogus vm ssh-ed25519 " + key_a + "\n", 2, "unknown marker"},
      {"vm ssh-rsa " + key_a + "\n", 1, "differs from the type the key names"},
      {"|1|notbase64|x ssh-ed25519 " + key_a + "\n", 1, "malformed hashed host name"},
      {"vm ssh-ed25519 AAAA\n", 1, "too short"},
      {"\n\n@revoked\n", 3, "expected a host list"},
  };
  for (const auto& row : rows) {
    INFO(row.text);
    const auto parsed = parse_known_hosts(row.text + good);
    REQUIRE(parsed.malformed.size() == 1);
    CHECK(parsed.malformed[0].line == row.line);
    CHECK_THAT(parsed.malformed[0].reason, Catch::Contains(row.reason_part));
    // The good line after the bad one is kept.
    REQUIRE_FALSE(parsed.entries.empty());
    CHECK(parsed.entries.back().hosts == "good.example");
    CHECK(check_host_key(parsed.entries, "good.example", blob(key_a)).status == HostKeyVerdict::Status::known);
  }
}

TEST_CASE("ssh known_hosts: one warning names the file and the skipped lines, never their content") {
  const std::string secretish = "VISIBLE-CONTENT";
  std::string text = "vm ssh-ed25519 " + key_a + "\n";
  for (int i = 0; i < 7; ++i) text += "@" + secretish + " x y z\n";
  const auto parsed = parse_known_hosts(text);
  REQUIRE(parsed.malformed.size() == 7);
  const auto warning = malformed_lines_warning("/home/u/.ssh/known_hosts", parsed.malformed);
  INFO(warning);
  CHECK_THAT(warning, Catch::Contains("/home/u/.ssh/known_hosts") && Catch::Contains("7 lines") &&
                          Catch::Contains("line 2 (an unknown marker)") && Catch::Contains("line 6") &&
                          Catch::Contains("and 2 more") && !Catch::Contains("line 7") && !Catch::Contains(secretish));
  CHECK_THAT(malformed_lines_warning("f", {{4, "why"}}), Catch::Contains("1 line that does not parse") && Catch::Contains("line 4 (why)"));
  CHECK(malformed_lines_warning("f", {}).empty());
}

TEST_CASE("ssh known_hosts: the verdict on an offered key") {
  using Status = HostKeyVerdict::Status;
  struct Row {
    std::string file;
    std::string name;
    std::string offered;
    Status status;
    std::string recorded;  // base64 of the recorded key for `changed`
  };
  const std::string a = " ssh-ed25519 " + key_a + "\n";
  const std::string b = " ssh-ed25519 " + key_b + "\n";
  const std::vector<Row> rows = {
      {"vm" + a, "vm", key_a, Status::known, ""},
      {"vm" + b, "vm", key_a, Status::changed, key_b},
      {"other" + b, "vm", key_a, Status::unknown, ""},
      {"", "vm", key_a, Status::unknown, ""},
      {"vm" + b + "vm" + a, "vm", key_a, Status::known, ""},  // several keys recorded: any matches
      {"[vm]:2222" + b, "vm", key_a, Status::unknown, ""},     // another port is another host
      {"[vm]:2222" + b, "[vm]:2222", key_a, Status::changed, key_b},
      {"@cert-authority vm" + b, "vm", key_a, Status::unknown, ""},
      {"@cert-authority vm" + a, "vm", key_a, Status::unknown, ""},  // a CA key never makes a host key known
      {"@revoked *" + a + "vm" + a, "vm", key_a, Status::revoked, ""},
      {"vm" + a + "@revoked vm" + a, "vm", key_a, Status::revoked, ""},
      {"vm" + a + "@revoked other" + a, "vm", key_a, Status::known, ""},  // revoked for another host only
      {"vm" + a + "@revoked *.exe.xyz,!vm" + a, "vm", key_a, Status::known, ""},
      {"@revoked *" + b + "vm" + a, "vm", key_a, Status::known, ""},
      {hashed_by_ssh_keygen + a, "[example.com]:2222", key_a, Status::known, ""},
      {hashed_by_ssh_keygen + a, "[example.com]:2222", key_b, Status::changed, key_a},
      {"vm ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC7\n", "vm", key_a, Status::unknown, ""},  // another type only
  };
  for (const auto& row : rows) {
    INFO(row.file << "offered for " << row.name);
    const auto entries = parse_ok(row.file);
    const auto verdict = check_host_key(entries, row.name, blob(row.offered));
    CHECK(verdict.status == row.status);
    if (row.status == Status::changed) {
      REQUIRE(verdict.recorded_blob);
      CHECK(*verdict.recorded_blob == blob(row.recorded));
      CHECK(verdict.recorded_line >= 1);
    }
  }
}

TEST_CASE("ssh known_hosts: a @cert-authority line naming the host is reported with its line") {
  const std::string ca = " ssh-ed25519 " + key_b + "\n";
  const auto entries = parse_ok("# exe.dev's published line\n@cert-authority exe.xyz,*.exe.xyz" + ca);
  const auto verdict = check_host_key(entries, "vm.exe.xyz", blob(key_a));
  CHECK(verdict.status == HostKeyVerdict::Status::unknown);
  CHECK(verdict.cert_authority_line == 2);
  CHECK(check_host_key(entries, "exe.dev", blob(key_a)).cert_authority_line == 0);
  CHECK(check_host_key(entries, "[vm.exe.xyz]:2222", blob(key_a)).cert_authority_line == 0);
}

TEST_CASE("ssh known_hosts: accept_new records one line for the host's domain") {
  struct Row {
    std::string host;
    std::uint16_t port;
    std::string pattern;
  };
  const std::vector<Row> rows = {
      {"a.exe.xyz", 22, "*.exe.xyz"},
      {"A.EXE.XYZ", 22, "*.exe.xyz"},
      {"a.exe.xyz", 2222, "[*.exe.xyz]:*"},
      {"deep.a.exe.xyz", 22, "*.a.exe.xyz"},
      {"exe.dev", 22, "exe.dev"},  // two labels: never `*.dev`
      {"localhost", 22, "localhost"},
      {"localhost", 2200, "[localhost]:2200"},
      {"127.0.0.1", 40022, "[127.0.0.1]:40022"},
      {"10.1.2.3", 22, "10.1.2.3"},
      {"::1", 22, "::1"},
      {"fe80::1:2", 2222, "[fe80::1:2]:2222"},
  };
  for (const auto& row : rows) {
    INFO(row.host << ":" << row.port);
    CHECK(domain_host_pattern(row.host, row.port) == row.pattern);
  }
}

TEST_CASE("ssh known_hosts: the line accept_new appends, if any") {
  const std::string salt(20, '\x11');
  const auto empty = parse_known_hosts("");
  CHECK(line_to_record(empty, "a.exe.xyz", 22, blob(key_a), salt) == "*.exe.xyz ssh-ed25519 " + key_a + "\n");
  CHECK(line_to_record(empty, "a.exe.xyz", 2222, blob(key_a), salt) == "[*.exe.xyz]:* ssh-ed25519 " + key_a + "\n");
  CHECK(line_to_record(empty, "127.0.0.1", 40022, blob(key_a), salt) == "[127.0.0.1]:40022 ssh-ed25519 " + key_a + "\n");

  // The second and third VM of the domain: the first one's line names them, nothing is added.
  const auto recorded = parse_known_hosts(*line_to_record(empty, "a.exe.xyz", 22, blob(key_a), salt));
  CHECK_FALSE(line_to_record(recorded, "b.exe.xyz", 22, blob(key_a), salt));
  CHECK_FALSE(line_to_record(recorded, "c.exe.xyz", 22, blob(key_a), salt));
  // On other ports than 22, VMs at different ports (the emulator's shards) share the line too.
  const auto any_port = parse_known_hosts(*line_to_record(empty, "a.exe.xyz", 2222, blob(key_a), salt));
  CHECK_FALSE(line_to_record(any_port, "b.exe.xyz", 2223, blob(key_a), salt));
  // A per-VM line from before names only its VM: the next VM records the domain line.
  const auto per_vm = parse_known_hosts("a.exe.xyz ssh-ed25519 " + key_a + "\n");
  CHECK_FALSE(line_to_record(per_vm, "a.exe.xyz", 22, blob(key_a), salt));
  CHECK(line_to_record(per_vm, "b.exe.xyz", 22, blob(key_a), salt) == "*.exe.xyz ssh-ed25519 " + key_a + "\n");
  // Another key type beside the recorded one is added.
  CHECK(line_to_record(recorded, "b.exe.xyz", 22, blob(key_b), salt) == "*.exe.xyz ssh-ed25519 " + key_b + "\n");

  // A hashed file gets the exact name hashed: a hash cannot hold a pattern.
  const auto hashed = parse_known_hosts(hashed_by_ssh_keygen + " ssh-ed25519 " + key_b + "\n");
  CHECK(hashed.uses_hashed_names());
  CHECK_FALSE(empty.uses_hashed_names());
  const auto line = line_to_record(hashed, "a.exe.xyz", 22, blob(key_a), salt);
  REQUIRE(line);
  CHECK(*line == hash_with_openssl("a.exe.xyz", salt) + " ssh-ed25519 " + key_a + "\n");
  const auto with_it = parse_known_hosts(hashed_by_ssh_keygen + " ssh-ed25519 " + key_b + "\n" + *line);
  CHECK(check_host_key(with_it.entries, "a.exe.xyz", blob(key_a)).status == HostKeyVerdict::Status::known);
  CHECK(check_host_key(with_it.entries, "b.exe.xyz", blob(key_a)).status == HostKeyVerdict::Status::unknown);
  CHECK(line_to_record(hashed, "a.exe.xyz", 2222, blob(key_a), salt) ==
        hash_with_openssl("[a.exe.xyz]:2222", salt) + " ssh-ed25519 " + key_a + "\n");
}
