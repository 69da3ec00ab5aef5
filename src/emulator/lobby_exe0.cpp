// exe0 tokens: a token the user signs with an SSH key registered to an account (`ssh-key add`,
// Options::ssh_authorized_keys, Options::second_ssh_authorized_keys) authorizes /exec as that
// account, as exe.dev's validateToken does (execore/exec_handler.go, sshkey/token.go), and
// exe0-to-exe1 trades one signed by the caller's own key for an exe1 handle
// (execore/exe0_to_exe1_command.go). The rules are exe0_verify's; this unit keeps the keys and
// handles they make.
#include "emulator/lobby.hpp"
#include "emulator/lobby_internal.hpp"

#include "emulator/exe0_verify.hpp"
#include "emulator/ssh_keys.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace exedev::emulator {

namespace {

// The namespace of /exec, and of one VM's HTTPS proxy.
constexpr std::string_view exec_namespace = "v0@exe.dev";
std::string vm_namespace(const std::string& vm) { return "v0@" + host_of(vm); }

std::int64_t unix_seconds(WallTime t) { return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count(); }

// A token's Unix time on the wall clock, whose nanoseconds span 1677 to 2262: a time past either
// end (a token's exp is the caller's choice; exe.dev's handles without exp last until 3333) is
// that end, never an overflow.
WallTime wall_time_of(std::int64_t unix) {
  const std::int64_t least = unix_seconds(WallTime::min());
  const std::int64_t most = unix_seconds(WallTime::max());
  return WallTime(std::chrono::seconds(std::clamp(unix, least, most)));
}

// exe.dev's expiry of an exe1 handle made from a token without exp: 3333-03-03.
constexpr std::int64_t kHandleWithoutExp = 43017436800;

}  // namespace

const Lobby::SshKey* Lobby::ssh_key_by_fingerprint(const std::string& fingerprint) const {
  for (const SshKey& key : ssh_keys_) {
    if (key.fingerprint == fingerprint) return &key;
  }
  return nullptr;
}

const Lobby::Key* Lobby::key_of(const std::string& token) const {
  if (const auto it = keys_.find(token); it != keys_.end()) return &it->second;
  if (const auto it = signed_keys_.find(token); it != signed_keys_.end()) return &it->second;
  return nullptr;
}

std::variant<Reply, const Lobby::Key*> Lobby::authorize_signed(const std::string& presented, Instant now) {
  const auto unauthorized = [](const std::string& message) {
    Reply reply = error_reply(401, message);
    reply.headers.emplace_back("WWW-Authenticate", "Bearer");
    return reply;
  };
  const std::int64_t seconds = unix_seconds(now.wall);
  // Tokens kept for earlier requests go once they expire.
  std::erase_if(signed_keys_, [&](const auto& entry) {
    return entry.second.spec.expires_at && unix_seconds(*entry.second.spec.expires_at) < seconds;
  });
  std::string token = presented;
  if (presented.starts_with("exe1.")) {
    const auto handle = exe1_handles_.find(presented);
    if (handle == exe1_handles_.end() || unix_seconds(handle->second.second) < seconds) return unauthorized("invalid token");
    token = handle->second.first;
  }
  auto parsed = parse_exe0_token(token);
  if (auto* message = std::get_if<std::string>(&parsed)) return unauthorized(*message);
  const Exe0Token& exe0 = std::get<Exe0Token>(parsed);
  if (auto message = exe0_claims_error(exe0, seconds, false)) return unauthorized(*message);
  // The key embedded in the signature is looked up among every account's registered keys (a
  // fingerprint belongs to one account); the stored one verifies, and its account is the caller.
  const SshKey* ssh_key = ssh_key_by_fingerprint(exe0.fingerprint);
  const auto stored = ssh_key ? parse_public_key(ssh_key->public_key) : std::nullopt;
  if (!stored || !exe0_signature_valid(exe0, stored->blob, exec_namespace)) return unauthorized("invalid token");

  Key key;
  key.token = presented;
  key.account = ssh_key->account;
  key.spec.cmds = exe0.cmds;
  if (exe0.exp) key.spec.expires_at = wall_time_of(*exe0.exp);
  key.spec.label = ssh_key->name;
  key.fingerprint = ssh_key->fingerprint;
  key.public_key = ssh_key->public_key;
  return &(signed_keys_[presented] = std::move(key));
}

std::variant<Reply, SshPlan> Lobby::cmd_exe0_to_exe1(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (flags->positional.size() != 1) return fail("usage: exe0-to-exe1 [--vm=VMNAME] <exe0-token>");
  std::string name_space(exec_namespace);
  if (flags->has("vm") && !flags->str("vm").empty()) {
    if (find_visible(key, flags->str("vm")) == nullptr) {
      return fail(fmt::format("VM \"{}\" not found or access denied", flags->str("vm")));
    }
    name_space = vm_namespace(flags->str("vm"));
  }
  const std::string& token = flags->positional[0];
  auto parsed = parse_exe0_token(token);
  if (auto* message = std::get_if<std::string>(&parsed)) return fail("invalid token: " + *message);
  const Exe0Token& exe0 = std::get<Exe0Token>(parsed);
  // The signing key must be the caller's account's (exe.dev: keyOwnerID == the user).
  const SshKey* ssh_key = ssh_key_by_fingerprint(exe0.fingerprint);
  const auto stored = ssh_key && ssh_key->account == key.account ? parse_public_key(ssh_key->public_key) : std::nullopt;
  if (!stored || !exe0_signature_valid(exe0, stored->blob, name_space)) return fail("invalid token");
  // A trade checks exp only: an exe1 handle may be made before the token's nbf.
  if (exe0_claims_error(exe0, unix_seconds(now_.wall), true)) return fail("token has expired");
  for (const auto& [handle, target] : exe1_handles_) {
    if (target.first == token && unix_seconds(target.second) >= unix_seconds(now_.wall)) return ok({{"token", handle}});
  }
  const WallTime expires = wall_time_of(exe0.exp.value_or(kHandleWithoutExp));
  const std::string handle = new_token();
  exe1_handles_[handle] = {token, expires};
  return ok({{"token", handle}});
}

}  // namespace exedev::emulator
