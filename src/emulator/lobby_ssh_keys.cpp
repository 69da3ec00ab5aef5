// The `ssh-key` commands that manage the account's SSH keys: list, add and remove, with the
// shapes, messages and matching rules of exe.dev's execore/ssh_key_command.go (read at the
// commit exedev-api.md §0 names; docs/emulator.md). The account's keys are the API tokens' keys
// (`ssh-key generate-api-key`) and the public keys registered here; the registered ones route
// connections at the VMs' SSH endpoints through the landing table, saved with the state.
#include "emulator/lobby.hpp"
#include "emulator/lobby_internal.hpp"

#include "emulator/lexer.hpp"
#include "emulator/processes.hpp"
#include "emulator/ssh_keys.hpp"

#include "common/shell_quote.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace exedev::emulator {

namespace {

// Go encodes a map with its keys sorted, as nlohmann::json (not ordered_json) does.
Reply ok_sorted(const nlohmann::json& json) {
  return json_reply(200, json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// A key of the account as the ssh-key commands see it: a registered SSH key or an API token's.
struct AccountKey {
  std::string public_key;
  std::string fingerprint;
  std::string name;
  const std::string* token = nullptr;  // an API token's key
  std::size_t ssh_index = 0;           // a registered key: its place in ssh_keys_
};

}  // namespace

std::vector<Lobby::Command> Lobby::ssh_key_commands() {
  using K = FlagKind;
  const FlagSpec json{"json", K::boolean, {}, "JSON output (always on over HTTPS)"};
  return {
      {"ssh-key list", &Lobby::cmd_ssh_key_list, false, {json}, "ssh-key list",
       "List all SSH keys associated with your account"},
      {"ssh-key add", &Lobby::cmd_ssh_key_add, false,
       {{"cmds", K::string, {}, "[hidden] comma-separated list of allowed commands (empty = all)"},
        {"vm", K::string, {}, "[hidden] scope key to a VM"}, {"tag", K::string, {}, "[hidden] scope key to VMs with this tag"},
        {"exp", K::string, {}, "[hidden] expiry duration (e.g. 30d, 1y) or 'never'"}, json},
       "ssh-key add <public-key>", "Add a new SSH key to your account"},
      {"ssh-key remove", &Lobby::cmd_ssh_key_remove, false, {json}, "ssh-key remove <name|fingerprint|public-key>",
       "Remove an SSH key from your account"},
  };
}

namespace {

std::string sh_quoted(const std::string& text) { return detail::sh_single_quote(text); }

}  // namespace

std::map<std::string, std::string> Lobby::ssh_landing_table() const {
  std::map<std::string, std::string> files;
  for (const SshKey& key : ssh_keys_) {
    std::string name = key.fingerprint;
    std::replace(name.begin(), name.end(), '/', '_');
    files["keys/" + name] = key.account + "\n";
  }
  std::string hosts = "127.0.0.1 " + config_.ssh_domain;
  for (const auto& [name, vm] : vms_) hosts += " " + name + "." + config_.ssh_domain;
  files["hosts"] = hosts + "\n";
  for (const auto& [name, vm] : vms_) {
    std::string entry = "vm_id=" + sh_quoted(vm.id) + "\nvm_name=" + sh_quoted(name) + "\nvm_state=" +
                        sh_quoted(vm.record.status) + "\n";
    entry += fmt::format("vm_ready={}\n",
                         std::chrono::duration_cast<std::chrono::milliseconds>(vm.ready_at.time_since_epoch()).count());
    entry += "exedev_home=" + sh_quoted(vm.record.home.string()) + "\nexedev_shell=" + sh_quoted(config_.login_shell) + "\nset --";
    for (const std::string& variable : vm_environment(vm.id, name, vm.record.home, vm.record.env, config_.login_shell)) {
      entry += ' ';
      entry += sh_quoted(variable);
    }
    entry += '\n';
    if (vm.ssh_port != 0) files[fmt::format("{}/shards/{}", vm.account, vm.ssh_port)] = entry;
    files[vm.account + "/names/" + name] = entry;
  }
  return files;
}

Reply Lobby::add_ssh_key(std::string_view line, const std::string& account) {
  const std::string text(trim_space(line));
  if (text.empty()) return fail("please provide the SSH public key to add");
  if (text.find("PRIVATE KEY") != std::string::npos) {
    return fail("this is a private key, please use the public key instead (typically found in a .pub file)");
  }
  const auto key = parse_public_key(text);
  if (!key) return fail("invalid SSH public key: ssh: no key found");
  // exe.dev counts every attempt that gets this far, and names a key without a comment by it.
  const std::uint64_t number = next_ssh_key_number_++;
  persist();
  const std::string canonical = key->canonical();
  const bool known = std::any_of(ssh_keys_.begin(), ssh_keys_.end(), [&](const SshKey& k) { return k.public_key == canonical; }) ||
                     std::any_of(keys_.begin(), keys_.end(), [&](const auto& entry) { return entry.second.public_key == canonical; });
  if (known) return fail("this SSH key is already associated with your account");
  SshKey added;
  added.public_key = canonical;
  added.fingerprint = key->fingerprint();
  added.name = sanitize_key_name(key->comment);
  if (added.name.empty()) added.name = fmt::format("key-{}", number);
  added.added_at = now_.wall;
  added.account = account;
  ssh_keys_.push_back(added);
  return ok_sorted({{"name", added.name}, {"public_key", added.public_key}, {"status", "added"}});
}

Json Lobby::account_keys(const Key& key, KeyListing listing) const {
  Json keys = Json::array();
  // Registered SSH keys carry no tag, so a tag-scoped key sees only its peers, the API keys of
  // its tag.
  if (!key.spec.tag) {
    for (const SshKey& registered : ssh_keys_) {
      if (registered.account != key.account) continue;
      Json item{{"public_key", registered.public_key}, {"fingerprint", registered.fingerprint},
                {"name", registered.name}};
      if (listing == KeyListing::ssh_key_list) item["added_at"] = rfc3339(registered.added_at);
      item["current"] = false;
      keys.push_back(std::move(item));
    }
  }
  for (const auto& [token, other] : keys_) {
    if (other.account != key.account) continue;
    if (key.spec.tag && other.spec.tag != key.spec.tag) continue;
    // The emulator keeps no added_at / last_used_at for API keys (exe.dev omits them when unset);
    // `ssh-key list` always names a key, whoami only a labelled one.
    Json item{{"public_key", other.public_key}, {"fingerprint", other.fingerprint}};
    if (listing == KeyListing::ssh_key_list || !other.spec.label.empty()) item["name"] = other.spec.label;
    item["current"] = false;  // over /exec there is no session key
    keys.push_back(std::move(item));
  }
  return keys;
}

std::variant<Reply, SshPlan> Lobby::cmd_ssh_key_list(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  return ok(Json{{"ssh_keys", account_keys(key, KeyListing::ssh_key_list)}});
}

std::variant<Reply, SshPlan> Lobby::cmd_ssh_key_add(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  for (const char* restricted : {"cmds", "vm", "tag", "exp"}) {
    if (!flags->str(restricted).empty()) {
      return fail("--cmds, --vm, --tag, and --exp flags require root support privileges or scoped SSH key feature access");
    }
  }
  // A tag-scoped key would make a key of its tag, which the emulator's endpoints cannot scope.
  if (key.spec.tag) return fail(fmt::format("SSH key scoped to tag \"{}\" cannot add SSH keys in the emulator", *key.spec.tag));
  return add_ssh_key(join(flags->positional, " "), key.account);
}

std::variant<Reply, SshPlan> Lobby::cmd_ssh_key_remove(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  const std::string identifier(trim_space(join(flags->positional, " ")));
  if (identifier.empty()) return fail("please specify a key to remove (name, fingerprint, or full public key)");

  std::vector<AccountKey> account;
  for (std::size_t i = 0; i < ssh_keys_.size(); ++i) {
    if (ssh_keys_[i].account != key.account) continue;
    account.push_back(AccountKey{ssh_keys_[i].public_key, ssh_keys_[i].fingerprint, ssh_keys_[i].name, nullptr, i});
  }
  for (const auto& [token, other] : keys_) {
    if (other.account != key.account) continue;
    account.push_back(AccountKey{other.public_key, other.fingerprint, other.spec.label, &token, 0});
  }
  // As exe.dev resolves it: a whole public key by its fingerprint, then a fingerprint (with or
  // without `SHA256:`), then a name.
  const auto matching = [&](auto predicate) {
    std::vector<const AccountKey*> out;
    for (const AccountKey& candidate : account) {
      if (predicate(candidate)) out.push_back(&candidate);
    }
    return out;
  };
  std::vector<const AccountKey*> found;
  if (const auto parsed = parse_public_key(identifier)) {
    found = matching([fingerprint = parsed->fingerprint()](const AccountKey& k) { return k.fingerprint == fingerprint; });
  } else {
    std::string fingerprint = identifier;
    for (const char* prefix : {"SHA256:", "sha256:"}) {
      if (fingerprint.rfind(prefix, 0) == 0) fingerprint = fingerprint.substr(7);
    }
    if (fingerprint.size() == 43 && fingerprint.find(' ') == std::string::npos) {
      found = matching([&](const AccountKey& k) { return k.fingerprint == "SHA256:" + fingerprint; });
    }
    if (found.empty()) found = matching([&](const AccountKey& k) { return k.name == identifier; });
  }
  const std::string none = fmt::format("no matching SSH key found for \"{}\"", identifier);
  if (found.empty()) return fail(none);
  if (found.size() > 1) {
    std::string message = "multiple keys match, please specify by fingerprint:";
    for (const AccountKey* match : found) {
      message += "\n  " + match->fingerprint;
      if (!match->name.empty()) message += " (" + match->name + ")";
    }
    return fail(message);
  }
  const AccountKey& target = *found.front();
  // A tag-scoped key removes only API keys of its own tag.
  if (key.spec.tag && (target.token == nullptr || keys_.at(*target.token).spec.tag != key.spec.tag)) return fail(none);

  nlohmann::json json{{"public_key", target.public_key}, {"fingerprint", target.fingerprint}, {"status", "deleted"}};
  if (!target.name.empty()) json["name"] = target.name;
  if (target.token != nullptr) {
    keys_.erase(*target.token);  // an API key removed: its token stops working
  } else {
    ssh_keys_.erase(ssh_keys_.begin() + static_cast<std::ptrdiff_t>(target.ssh_index));
  }
  persist();
  return ok_sorted(json);
}

}  // namespace exedev::emulator
