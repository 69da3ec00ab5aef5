#pragma once
// A connection to an ssh-agent's unix socket speaking agent_protocol's messages. Blocking, as
// libssh2's own agent client is: one short exchange with a local process per call, each read and
// write bounded by a timeout. Internal.

#include "ssh/agent_protocol.hpp"

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::ssh {

class AgentClient {
 public:
  /// Connects to the agent at `socket_path`. Throws SshKeyUnusableError (source "ssh-agent")
  /// when it cannot.
  explicit AgentClient(const std::string& socket_path, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~AgentClient();
  AgentClient(const AgentClient&) = delete;
  AgentClient& operator=(const AgentClient&) = delete;

  /// The agent's keys. Throws SshKeyUnusableError when the agent does not answer as it must.
  [[nodiscard]] std::vector<AgentIdentity> identities();
  /// The SSH signature blob of `data` by the agent's key `key_blob` (rsa-sha2-512 for RSA).
  /// Throws SshKeyUnusableError when the agent refuses or does not answer.
  [[nodiscard]] std::string sign(std::string_view key_blob, std::string_view data);

 private:
  std::string exchange(const std::string& request);
  std::string socket_path_;
  int fd_ = -1;
};

}  // namespace exedev::ssh
