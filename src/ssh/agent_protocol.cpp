#include "ssh/agent_protocol.hpp"

#include "ssh/known_hosts.hpp"
#include "common/ssh_wire.hpp"

namespace exedev::ssh {

using detail::WireReader;
using detail::WireWriter;

namespace {

std::string framed(const std::string& message) {
  WireWriter out;
  out.string(message);
  return std::move(out).bytes();
}

}  // namespace

std::string agent_identities_request() {
  WireWriter message;
  message.byte(agentc_request_identities);
  return framed(message.bytes());
}

std::string agent_sign_request(std::string_view key_blob, std::string_view data) {
  const bool rsa = key_type_of_blob(key_blob) == "ssh-rsa";
  WireWriter message;
  message.byte(agentc_sign_request).string(key_blob).string(data).uint32(rsa ? agent_rsa_sha2_512 : 0);
  return framed(message.bytes());
}

std::optional<std::uint32_t> agent_message_length(std::string_view header) {
  WireReader reader(header);
  const auto length = reader.uint32();
  if (!length || *length == 0 || *length > agent_max_message) return std::nullopt;
  return length;
}

std::optional<std::vector<AgentIdentity>> parse_agent_identities(std::string_view message) {
  WireReader reader(message);
  const auto type = reader.byte();
  const auto count = reader.uint32();
  if (type != agent_identities_answer || !count) return std::nullopt;
  std::vector<AgentIdentity> identities;
  for (std::uint32_t i = 0; i < *count; ++i) {
    const auto blob = reader.string();
    const auto comment = reader.string();
    if (!blob || !comment) return std::nullopt;
    identities.push_back({std::string(*blob), std::string(*comment)});
  }
  if (!reader.empty()) return std::nullopt;
  return identities;
}

std::optional<std::string> parse_agent_signature(std::string_view message) {
  WireReader reader(message);
  const auto type = reader.byte();
  if (type != agent_sign_response) return std::nullopt;
  const auto signature = reader.string();
  if (!signature || !reader.empty()) return std::nullopt;
  return std::string(*signature);
}

}  // namespace exedev::ssh
