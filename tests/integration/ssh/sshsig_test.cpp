// SSHSIG signatures made by the library, checked by OpenSSH's own `ssh-keygen -Y verify`: key
// files of every type (OpenSSH format plain and encrypted, PEM, PKCS#8) and an ssh-agent holding
// each type, started by the test on a private socket.
#include "common/base64.hpp"
#include "ssh/signer.hpp"
#include "support/sshd_server.hpp"

#include <exedev/ssh/errors.hpp>

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

using namespace exedev;
namespace fs = std::filesystem;
using test_support::run_program;

namespace {

struct TempDirectory {
  fs::path path;
  TempDirectory() {
    std::string pattern = (fs::temp_directory_path() / "exedev-sshsig-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = pattern;
  }
  ~TempDirectory() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

struct KeyKind {
  std::string type;
  std::string bits;  // empty: ssh-keygen's default
};

const std::vector<KeyKind> key_kinds = {
    {"ed25519", ""}, {"ecdsa", "256"}, {"ecdsa", "384"}, {"ecdsa", "521"}, {"rsa", "2048"}};

// A key made by ssh-keygen: `format` "" (OpenSSH), "PEM" or "PKCS8".
fs::path make_key(const fs::path& directory, const KeyKind& kind, const std::string& passphrase, const std::string& format) {
  const auto path = directory / (kind.type + kind.bits + format + (passphrase.empty() ? "" : "-encrypted"));
  std::vector<std::string> argv = {"/usr/bin/ssh-keygen", "-q", "-t", kind.type, "-N", passphrase, "-C", "test key", "-f",
                                   path.string()};
  if (!kind.bits.empty()) argv.insert(argv.end(), {"-b", kind.bits});
  if (!format.empty()) argv.insert(argv.end(), {"-m", format});
  std::string output;
  REQUIRE(run_program(argv, &output) == 0);
  return path;
}

// The armor `ssh-keygen -Y sign` writes around the blob.
std::string armored(const std::string& blob) {
  const auto base64 = detail::base64_encode(blob);
  std::string out = "-----BEGIN SSH SIGNATURE-----\n";
  for (std::size_t i = 0; i < base64.size(); i += 70) out += base64.substr(i, 70) + "\n";
  return out + "-----END SSH SIGNATURE-----\n";
}

// `ssh-keygen -Y verify`'s exit code for `blob` over `message` by the key of `public_line`.
int ssh_keygen_verifies(const fs::path& directory, const std::string& public_line, const std::string& name_space,
                        const std::string& message, const std::string& blob, std::string* output) {
  const auto fields = public_line.substr(0, public_line.find(' ', public_line.find(' ') + 1));
  std::ofstream(directory / "allowed_signers") << "signer@test " << fields << "\n";
  std::ofstream(directory / "message", std::ios::binary) << message;
  std::ofstream(directory / "message.sig") << armored(blob);
  const auto d = directory.string();
  return run_program({"/bin/sh", "-c",
                      "/usr/bin/ssh-keygen -Y verify -n '" + name_space + "' -f '" + d + "/allowed_signers' -I signer@test -s '" +
                          d + "/message.sig' < '" + d + "/message'"},
                     output);
}

std::string public_line_of(const fs::path& key) {
  auto line = read_file(fs::path(key.string() + ".pub"));
  while (!line.empty() && line.back() == '\n') line.pop_back();
  return line;
}

std::string blob_base64_of(const std::string& public_line) {
  const auto first = public_line.find(' ');
  return public_line.substr(first + 1, public_line.find(' ', first + 1) - first - 1);
}

// Only the key a test names: no agent, no ~/.ssh.
SshKeySource file_source(const fs::path& key, const std::optional<std::string>& passphrase) {
  ::unsetenv("EXE_SSH_KEY");
  SshKeySource source;
  source.private_key_file = key;
  source.passphrase = passphrase;
  source.use_agent = false;
  return source;
}

// The key exe0 tokens are signed with: the choice for exe.dev's ssh_config section.
std::shared_ptr<const ssh::Signer> choose(const SshKeySource& source) { return ssh::Signer::choose(source, "exe.dev", nullptr); }

void check_signs_and_verifies(const fs::path& directory, const ssh::Signer& signer, const std::string& public_line) {
  CHECK(detail::base64_encode(signer.public_key_blob()) == blob_base64_of(public_line));
  const std::string message = R"({"exp":1893456000,"cmds":["ls","ssh"]})";
  const auto blob = signer.sshsig("v0@exe.dev", message);
  std::string output;
  CHECK(ssh_keygen_verifies(directory, public_line, "v0@exe.dev", message, blob, &output) == 0);
  INFO(output);
  CHECK_THAT(output, Catch::Contains("Good \"v0@exe.dev\" signature for signer@test"));
  // The oracle can say no: another namespace, another message.
  CHECK(ssh_keygen_verifies(directory, public_line, "v0@vm.exe.xyz", message, blob, &output) != 0);
  CHECK(ssh_keygen_verifies(directory, public_line, "v0@exe.dev", message + " ", blob, &output) != 0);
}

// An ssh-agent on a socket of the test's own, killed (by its pid) at the end; SSH_AUTH_SOCK
// points at it meanwhile.
struct Agent {
  TempDirectory directory;
  fs::path socket = directory.path / "agent.sock";
  pid_t pid = -1;
  std::optional<std::string> previous_socket;

  Agent() {
    if (const char* value = std::getenv("SSH_AUTH_SOCK")) previous_socket = value;
    std::string output;
    REQUIRE(run_program({"/usr/bin/ssh-agent", "-s", "-a", socket.string()}, &output) == 0);
    const auto at = output.find("SSH_AGENT_PID=");
    REQUIRE(at != std::string::npos);
    pid = static_cast<pid_t>(std::stol(output.substr(at + 14)));
    ::setenv("SSH_AUTH_SOCK", socket.c_str(), 1);
  }
  ~Agent() {
    if (pid > 0) ::kill(pid, SIGTERM);
    if (previous_socket) ::setenv("SSH_AUTH_SOCK", previous_socket->c_str(), 1);
    else ::unsetenv("SSH_AUTH_SOCK");
  }
  void hold_only(const fs::path& key) const {
    std::string output;
    REQUIRE(run_program({"/usr/bin/ssh-add", "-D"}, &output) == 0);
    REQUIRE(run_program({"/usr/bin/ssh-add", key.string()}, &output) == 0);
  }
};

}  // namespace

TEST_CASE("sshsig: key files of every type sign what ssh-keygen -Y verify accepts", "[integration][ssh]") {
  TempDirectory directory;
  for (const auto& kind : key_kinds) {
    for (const std::string passphrase : {"", "correct horse"}) {
      const auto key = make_key(directory.path, kind, passphrase, "");
      INFO(key.filename().string());
      const auto signer = choose(file_source(key, passphrase.empty() ? std::nullopt : std::optional(passphrase)));
      CHECK(signer->description() == key.string());
      check_signs_and_verifies(directory.path, *signer, public_line_of(key));
    }
  }
}

TEST_CASE("sshsig: PEM and PKCS#8 keys (read by OpenSSL) sign as well", "[integration][ssh]") {
  TempDirectory directory;
  for (const auto& kind : {KeyKind{"ecdsa", "256"}, KeyKind{"rsa", "2048"}}) {
    for (const std::string format : {"PEM", "PKCS8"}) {
      const auto key = make_key(directory.path, kind, "", format);
      INFO(key.filename().string());
      check_signs_and_verifies(directory.path, *choose(file_source(key, std::nullopt)), public_line_of(key));
    }
  }
}

TEST_CASE("sshsig: a key that cannot sign is refused before anything is sent, naming only its path", "[integration][ssh]") {
  TempDirectory directory;
  const auto key = make_key(directory.path, key_kinds[0], "correct horse", "");
  const auto refused = [&](const std::optional<std::string>& passphrase, const std::string& why) {
    try {
      (void)choose(file_source(key, passphrase));
      FAIL("the key was accepted");
    } catch (const SshKeyUnusableError& e) {
      CHECK(e.source() == key.string());
      CHECK_THAT(e.what(), Catch::Contains(why));
      CHECK_THAT(e.what(), !Catch::Contains("correct horse") && !Catch::Contains("battery staple"));
    }
  };
  refused(std::nullopt, "encrypted and no passphrase was given");
  refused(std::string("battery staple"), "the passphrase is wrong");
  std::ofstream(directory.path / "not-a-key") << "hello\n";
  try {
    (void)choose(file_source(directory.path / "not-a-key", std::nullopt));
    FAIL("the file was accepted");
  } catch (const SshKeyUnusableError& e) {
    CHECK_THAT(e.what(), Catch::Contains("not a private key"));
  }
}

TEST_CASE("sshsig: an ssh-agent holding each type signs through SSH2_AGENTC_SIGN_REQUEST", "[integration][ssh]") {
  TempDirectory directory;
  const Agent agent;
  ::unsetenv("EXE_SSH_KEY");
  SshKeySource source;
  source.default_key_files = {directory.path / "no-such-key"};
  source.config_file = directory.path / "no-ssh-config";  // not the user's ~/.ssh/config
  for (const auto& kind : key_kinds) {
    const auto key = make_key(directory.path, kind, "", "");
    INFO(key.filename().string());
    agent.hold_only(key);
    const auto signer = choose(source);
    CHECK_THAT(signer->description(), Catch::StartsWith("ssh-agent key"));
    check_signs_and_verifies(directory.path, *signer, public_line_of(key));
  }
  // The default key files come after the agent, as for SSH authentication.
  std::string output;
  REQUIRE(run_program({"/usr/bin/ssh-add", "-D"}, &output) == 0);
  const auto file_key = make_key(directory.path, KeyKind{"ecdsa", "256"}, "", "PEM");
  source.default_key_files = {directory.path / "no-such-key", file_key};
  CHECK(choose(source)->description() == file_key.string());
}

TEST_CASE("sshsig: the key is chosen as an SSH connection to exe.dev chooses it, ~/.ssh/config included",
          "[integration][ssh]") {
  TempDirectory directory;
  const Agent agent;
  ::unsetenv("EXE_SSH_KEY");
  const auto agent_key = make_key(directory.path, KeyKind{"ed25519", ""}, "", "");
  agent.hold_only(agent_key);
  const auto config_key = make_key(directory.path, KeyKind{"ecdsa", "256"}, "", "PEM");
  const auto config = directory.path / "ssh_config";
  SshKeySource source;
  source.default_key_files = {directory.path / "no-such-key"};
  source.config_file = config;

  // ssh_config's IdentityFile for exe.dev comes before the agent, as for authentication.
  std::ofstream(config) << "Host exe.dev\n  IdentityFile " << config_key.string() << "\n";
  CHECK(choose(source)->description() == config_key.string());
  // Another host's section does not apply: the agent's key.
  std::ofstream(config) << "Host other.example\n  IdentityFile " << config_key.string() << "\n";
  CHECK_THAT(choose(source)->description(), Catch::StartsWith("ssh-agent key"));
  // use_config = false: the file is not read.
  std::ofstream(config) << "Host exe.dev\n  IdentityFile " << config_key.string() << "\n";
  source.use_config = false;
  CHECK_THAT(choose(source)->description(), Catch::StartsWith("ssh-agent key"));
  source.use_config = true;
  // IdentitiesOnly yes: never the agent, even when the named file is missing.
  std::ofstream(config) << "Host exe.dev\n  IdentitiesOnly yes\n  IdentityFile " << (directory.path / "gone").string()
                        << "\n";
  try {
    (void)choose(source);
    FAIL("a key was chosen");
  } catch (const SshAuthenticationError& e) {
    CHECK_THAT(e.what(), Catch::Contains("ssh_config IdentityFile: no such file"));
    CHECK_THAT(e.what(), !Catch::Contains("agent"));
  }
}
