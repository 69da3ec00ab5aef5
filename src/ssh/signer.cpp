#include "ssh/signer.hpp"

#include <exedev/ssh/errors.hpp>

#include "ssh/agent_client.hpp"
#include "ssh/key_sources.hpp"
#include "ssh/known_hosts.hpp"
#include "ssh/private_key.hpp"
#include "ssh/signing_key.hpp"
#include "ssh/sshsig.hpp"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <vector>

namespace exedev::ssh {

namespace fs = std::filesystem;

namespace {

class KeyFileSigner final : public Signer {
 public:
  KeyFileSigner(SigningKey key, std::string description)
      : Signer(key.public_key_blob(), std::move(description)), key_(std::move(key)) {}
  std::string sign(std::string_view data) const override { return key_.sign(data); }

 private:
  SigningKey key_;
};

// Each signature is one connection to the agent: the agent may be restarted or its keys
// changed between tokens minutes apart.
class AgentSigner final : public Signer {
 public:
  AgentSigner(std::string socket_path, const AgentIdentity& identity)
      : Signer(identity.key_blob, fmt::format("ssh-agent key \"{}\"", identity.comment)),
        socket_path_(std::move(socket_path)) {}
  std::string sign(std::string_view data) const override {
    AgentClient agent(socket_path_);
    return agent.sign(public_key_blob(), data);
  }

 private:
  std::string socket_path_;
};

bool usable_type(std::string_view blob) {
  const auto type = key_type_of_blob(blob);
  return type && (*type == "ssh-ed25519" || *type == "ssh-rsa" || *type == "ecdsa-sha2-nistp256" ||
                  *type == "ecdsa-sha2-nistp384" || *type == "ecdsa-sha2-nistp521");
}

}  // namespace

Signer::Signer(std::string public_key_blob, std::string description)
    : public_key_blob_(std::move(public_key_blob)),
      fingerprint_(sha256_fingerprint(public_key_blob_)),
      description_(std::move(description)) {}

std::string Signer::sshsig(std::string_view name_space, std::string_view message) const {
  return sshsig_blob(public_key_blob_, name_space, sign(sshsig_signed_data(name_space, message)));
}

std::shared_ptr<const Signer> Signer::choose(const SshKeySource& source, const std::string& host,
                                             const std::function<void(std::string_view)>& warn) {
  if (source.private_key_pem) {
    return std::make_shared<KeyFileSigner>(SigningKey::load(*source.private_key_pem, source.passphrase, "private_key_pem"),
                                           "private_key_pem");
  }
  const auto keys = key_choice(source, host, warn);
  if (const auto& path = keys.explicit_key_file) {
    const auto content = read_text_file(*path);
    if (content.error != 0) {
      throw SshKeyUnusableError(fmt::format("SSH: the private key {} cannot be used: it cannot be read: {}", path->string(),
                                            std::strerror(content.error)),
                                path->string());
    }
    return std::make_shared<KeyFileSigner>(SigningKey::load(content.text, source.passphrase, path->string()), path->string());
  }
  std::vector<std::string> tried;
  // The first key file of `files` that exists and loads without a passphrase, as the transport
  // tries them (a missing one is named when ssh_config names it).
  const auto first_file = [&tried](const std::vector<fs::path>& files, bool named_in_config) -> std::shared_ptr<const Signer> {
    for (const auto& path : files) {
      const auto text = key_file_text(path, named_in_config, tried);
      if (!text) continue;
      const auto info = inspect_private_key(*text);
      if (!info.problem.empty() || info.encrypted) {
        tried.push_back(fmt::format("{} (skipped: {})", path.string(), info.encrypted ? "encrypted" : info.problem));
        continue;
      }
      try {
        return std::make_shared<KeyFileSigner>(SigningKey::load(*text, std::nullopt, path.string()), path.string());
      } catch (const SshKeyUnusableError& e) {
        tried.push_back(fmt::format("{} (skipped: {})", path.string(), e.what()));
      }
    }
    return nullptr;
  };
  if (auto by_config = first_file(keys.identity_files, true)) return by_config;
  if (const auto socket = keys.use_agent ? agent_socket() : std::nullopt) {
    AgentClient agent(*socket);
    for (const auto& identity : agent.identities()) {
      if (usable_type(identity.key_blob)) return std::make_shared<AgentSigner>(*socket, identity);
    }
    tried.push_back(fmt::format("agent at {} (no key of a usable type)", *socket));
  }
  if (auto by_default = first_file(keys.default_key_files, false)) return by_default;
  std::string list;
  for (const auto& attempt : tried) list += (list.empty() ? "" : "; ") + attempt;
  if (list.empty()) list = "no explicit key, no ssh_config IdentityFile, no agent, no default key file";
  throw SshAuthenticationError(fmt::format("SSH: no key to sign exe0 tokens with: {}", list), std::move(tried));
}

}  // namespace exedev::ssh
