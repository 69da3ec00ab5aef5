// The meta commands: help, whoami and ssh-key generate-api-key. None has host work but saving
// the state.
#include "emulator/lobby.hpp"
#include "emulator/lobby_internal.hpp"

#include "emulator/flags.hpp"
#include "emulator/validation.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iterator>

namespace exedev::emulator {

std::variant<Reply, SshPlan> Lobby::cmd_help(const Key&, const Prepared& request) {
  std::vector<std::string> topic;
  std::copy_if(request.arguments.begin(), request.arguments.end(), std::back_inserter(topic),
               [](const std::string& word) { return word.empty() || word[0] != '-'; });
  if (!topic.empty()) {
    std::size_t length = 0;
    const Command* command = resolve(topic, length);
    if (command == nullptr) return fail(fmt::format("unknown command \"{}\"", join(topic, " ")));
    return ok(command_help(*command));
  }
  Json commands = Json::array();
  for (const Command& command : command_table()) {
    commands.push_back({{"name", command.name}, {"usage", command.usage}, {"description", command.description}});
  }
  return ok({{"commands", commands}});
}

std::variant<Reply, SshPlan> Lobby::cmd_whoami(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  // The account's keys (execore/ssh_command_handlers.go handleWhoamiCommand).
  const Json keys = account_keys(key, KeyListing::whoami);
  const std::string& email = key.account == second_account ? config_.second_email : config_.email;
  return ok({{"email", email}, {"region", region}, {"region_display", region_display}, {"ssh_keys", keys}});
}

std::variant<Reply, SshPlan> Lobby::cmd_generate_api_key(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (!flags->positional.empty()) return fail(fmt::format("unexpected argument \"{}\"", flags->positional.front()));
  std::optional<std::string> vm = flags->has("vm") ? std::optional(flags->str("vm")) : std::nullopt;
  std::optional<std::string> tag = flags->has("tag") ? std::optional(flags->str("tag")) : std::nullopt;
  if (vm && tag) return fail("--vm and --tag cannot be used together");
  if (tag) {
    if (auto message = validate_tag(*tag)) return fail(*message);
  }
  // A new key is never less restricted than the calling one.
  if (key.spec.tag) {
    if (vm || (tag && *tag != *key.spec.tag)) {
      return fail(fmt::format("SSH key scoped to tag \"{}\" can only create keys with --tag={}", *key.spec.tag, *key.spec.tag));
    }
    tag = key.spec.tag;
  }
  if (key.vm_scope) {
    if (tag || (vm && *vm != *key.vm_scope)) {
      return fail(fmt::format("SSH key scoped to VM \"{}\" can only create keys with --vm={}", *key.vm_scope, *key.vm_scope));
    }
    vm = key.vm_scope;
  }
  if (vm && find_visible(key, *vm) == nullptr) return fail(fmt::format("VM \"{}\" not found", *vm));
  const std::string label = flags->str("label", vm ? "api-key-" + *vm : "api-key");
  for (const auto& [token, other] : keys_) {
    if (other.spec.label == label) return fail(fmt::format("a key named \"{}\" already exists; use a different --label", label));
  }
  Key created;
  created.token = new_token();
  created.account = key.account;
  created.spec.label = label;
  created.spec.tag = tag;
  created.vm_scope = vm;
  const std::vector<std::string> cmds = flags->list("cmds");
  const auto caller_allows = [&](const std::string& command) {
    if (key.all_commands) return true;
    const auto& allowed = key.spec.cmds ? *key.spec.cmds : default_cmds;
    return std::find(allowed.begin(), allowed.end(), command) != allowed.end();
  };
  for (const std::string& command : cmds) {
    if (!caller_allows(command)) {
      return fail(fmt::format("--cmds must be a subset of this key's commands; \"{}\" is not allowed", command));
    }
  }
  if (!cmds.empty()) created.spec.cmds = cmds;
  else if (!key.all_commands) created.spec.cmds = key.spec.cmds;  // the caller's (or the defaults)
  if (flags->has("exp")) {
    const auto expiry = parse_expiry(flags->str("exp"));
    if (!expiry.ok) return fail(fmt::format("invalid --exp \"{}\": use <N>h, <N>d, <N>w, <N>m, <N>y or never", flags->str("exp")));
    if (expiry.duration) created.spec.expires_at = now_.wall + *expiry.duration;
  }
  if (key.spec.expires_at && (!created.spec.expires_at || *created.spec.expires_at > *key.spec.expires_at)) {
    created.spec.expires_at = key.spec.expires_at;
  }
  const std::string token = add_key(std::move(created));
  persist();
  const Key& stored = keys_.at(token);
  Json json{{"label", label}, {"token", token}, {"namespace", "v0@exe.dev"}, {"fingerprint", stored.fingerprint}};
  if (stored.spec.expires_at) json["expires_at"] = rfc3339(*stored.spec.expires_at);
  return ok(json);
}

}  // namespace exedev::emulator
