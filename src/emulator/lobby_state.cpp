// The lobby's state: its JSON as the host persists it, the keys and names it makes, the views of
// a VM, and the reply helpers every command uses.
#include "emulator/lobby.hpp"
#include "emulator/lobby_internal.hpp"

#include "emulator/lexer.hpp"

#include "common/base64.hpp"
#include "common/random_ids.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <random>
#include <stdexcept>

namespace exedev::emulator {

const std::vector<std::string> default_cmds = {"help", "ls", "new", "whoami", "ssh-key list", "share show",
                                               "exe0-to-exe1"};

// ---------------------------------------------------------------------------------------------
// Replies and formats

std::string dump(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

Reply json_reply(unsigned status, std::string body) {
  Reply reply;
  reply.status = status;
  reply.headers = {{"Content-Type", "application/json; charset=utf-8"}, {"X-Content-Type-Options", "nosniff"}};
  // The lobby trims its output and ends it with one newline unless it is empty.
  const auto text = trim_space(body);
  reply.body = text.empty() ? std::string() : std::string(text) + "\n";
  return reply;
}

Reply ok(const Json& json) { return json_reply(200, dump(json)); }
Reply fail(const std::string& message) { return error_reply(422, message); }

Reply error_reply(unsigned status, const std::string& message) {
  return json_reply(status, dump(Json{{"error", message}}));
}

std::string rfc3339(WallTime t) {
  // The wall clock counts from the Unix epoch (C++20), as time_t does.
  const auto secs = static_cast<std::time_t>(std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

std::string host_of(const std::string& vm) { return vm + ".exe.xyz"; }

std::string shard_endpoint(unsigned shard) { return fmt::format("shard-{}", shard); }

void add_ssh_fields(Json& json, const std::string& vm, SshWhere where, const LobbyConfig& config) {
  if (where.shard_port == 0) {
    json["ssh_command"] = "ssh " + host_of(vm);
    json["ssh_dest"] = host_of(vm);
    json["ssh_host"] = host_of(vm);
    return;
  }
  if (config.modes.ssh_destination == SshDestination::vm_plus) {
    // exe.dev's newer answers: the host is exe.dev's, the user a routing name.
    const std::string user = "vm+" + vm;
    const std::string dest = user + "@" + config.ssh_domain;
    json["ssh_command"] = fmt::format("ssh -p {} {}", where.names_port, dest);
    json["ssh_dest"] = dest;
    json["ssh_host"] = config.ssh_domain;
    json["ssh_port"] = where.names_port;
    json["ssh_user"] = user;
    return;
  }
  // The older answers: the VM's own name, which resolves to its shard's address.
  const std::string host = vm + "." + config.ssh_domain;
  json["ssh_command"] = fmt::format("ssh -p {} {}", where.shard_port, host);
  json["ssh_dest"] = host;
  json["ssh_host"] = host;
  json["ssh_port"] = where.shard_port;
}

bool has_tag(const VMRecord& vm, const std::string& tag) {
  return std::find(vm.tags.begin(), vm.tags.end(), tag) != vm.tags.end();
}

std::string join(const std::vector<std::string>& words, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i) out += separator;
    out += words[i];
  }
  return out;
}

std::string new_token() { return "exe1." + detail::random_chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 26); }

namespace {

std::int64_t to_ms(WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
WallTime from_ms(std::int64_t ms) { return WallTime(std::chrono::milliseconds(ms)); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// The persisted state

std::string Lobby::state_text() const {
  Json state;
  state["version"] = 1;
  state["token"] = default_token_;
  state["second_token"] = second_token_;
  state["ssh_names_port"] = names_port_;
  state["ssh_shard_ports"] = Json::object();
  for (const auto& [shard, port] : shard_ports_) state["ssh_shard_ports"][std::to_string(shard)] = port;
  state["next_generation"] = next_generation_;
  state["vms"] = Json::array();
  for (const auto& [name, vm] : vms_) {
    state["vms"].push_back({{"id", vm.id}, {"name", name}, {"status", vm.record.status}, {"tags", vm.record.tags},
                            {"comment", vm.record.comment}, {"image", vm.record.image},
                            {"created_at", to_ms(vm.record.created_at)}, {"cpus", vm.record.cpus},
                            {"memory_bytes", vm.record.memory_bytes}, {"disk_bytes", vm.record.disk_bytes},
                            {"env", vm.record.env}, {"integrations", vm.record.integrations},
                            {"standalone", vm.record.standalone}, {"egress", vm.record.egress},
                            {"ready_at", to_ms(vm.ready_at)}, {"boot_status", vm.boot_status},
                            {"generation", vm.generation}, {"share", vm.share}, {"proxy_port", vm.proxy_port},
                            {"team_access", vm.team_access}, {"ssh_port", vm.ssh_port}, {"account", vm.account},
                            {"shard", vm.shard}});
    Json links = Json::array();
    for (const ShareLink& link : vm.share_links) links.push_back({{"token", link.token}, {"created_at", to_ms(link.created_at)}});
    state["vms"].back()["share_links"] = std::move(links);
    Json invites = Json::array();
    for (const ShareInvite& invite : vm.share_invites) {
      invites.push_back({{"email", invite.email}, {"invited_at", to_ms(invite.invited_at)}});
    }
    state["vms"].back()["share_invites"] = std::move(invites);
  }
  state["keys"] = Json::array();
  for (const auto& [token, key] : keys_) {
    Json j{{"token", token}, {"account", key.account}, {"all_commands", key.all_commands}, {"label", key.spec.label},
           {"fingerprint", key.fingerprint}, {"public_key", key.public_key}};
    if (key.spec.cmds) j["cmds"] = *key.spec.cmds;
    if (key.spec.tag) j["tag"] = *key.spec.tag;
    if (key.vm_scope) j["vm"] = *key.vm_scope;
    if (key.spec.expires_at) j["expires_at"] = to_ms(*key.spec.expires_at);
    if (key.spec.key_expires_at) j["key_expires_at"] = to_ms(*key.spec.key_expires_at);
    state["keys"].push_back(std::move(j));
  }
  state["next_ssh_key_number"] = next_ssh_key_number_;
  state["ssh_keys"] = Json::array();
  for (const SshKey& key : ssh_keys_) {
    state["ssh_keys"].push_back({{"public_key", key.public_key}, {"fingerprint", key.fingerprint}, {"name", key.name},
                                 {"added_at", to_ms(key.added_at)}, {"account", key.account}});
  }
  return state.dump(1) + '\n';
}

Lobby::StoredState Lobby::parse_state(const std::string& text) const {
  const auto where = host_.state_file().string();
  Json state;
  try {
    state = Json::parse(text);
  } catch (const Json::parse_error&) {
    // Not e.what(): it quotes the file, which holds tokens.
    throw std::runtime_error("cannot read the emulator state in " + where + ": not valid JSON");
  }
  try {
    StoredState stored;
    stored.default_token = state.value("token", std::string());
    stored.second_token = state.value("second_token", std::string());
    stored.names_port = state.value("ssh_names_port", std::uint16_t{0});
    const Json shard_ports = state.value("ssh_shard_ports", Json::object());
    for (const auto& item : shard_ports.items()) {
      stored.shard_ports[static_cast<unsigned>(std::stoul(item.key()))] = item.value().get<std::uint16_t>();
    }
    stored.next_generation = state.value("next_generation", std::uint64_t{1});
    for (const Json& j : state.at("vms")) {
      Vm vm;
      vm.id = j.at("id");
      vm.record.name = j.at("name");
      vm.record.status = j.at("status");
      vm.record.tags = j.at("tags").get<std::vector<std::string>>();
      vm.record.comment = j.at("comment");
      vm.record.image = j.at("image");
      vm.record.dir = host_.vm_directory(vm.id);
      vm.record.home = vm.record.dir / "home";
      vm.record.created_at = from_ms(j.at("created_at"));
      vm.record.cpus = j.at("cpus");
      vm.record.memory_bytes = j.at("memory_bytes");
      vm.record.disk_bytes = j.at("disk_bytes");
      vm.record.env = j.at("env").get<std::vector<std::string>>();
      vm.record.integrations = j.at("integrations").get<std::vector<std::string>>();
      vm.record.standalone = j.at("standalone");
      vm.record.egress = j.at("egress");
      vm.ready_at = from_ms(j.at("ready_at"));
      vm.boot_status = j.at("boot_status");
      vm.generation = j.at("generation");
      vm.share = j.value("share", std::string("private"));
      vm.proxy_port = j.value("proxy_port", 80u);
      vm.team_access = j.value("team_access", false);
      vm.ssh_port = j.value("ssh_port", std::uint16_t{0});
      vm.account = j.value("account", std::string(first_account));
      vm.shard = j.value("shard", 0u);
      for (const Json& link : j.value("share_links", Json::array())) {
        vm.share_links.push_back(ShareLink{link.at("token"), from_ms(link.at("created_at"))});
      }
      for (const Json& invite : j.value("share_invites", Json::array())) {
        vm.share_invites.push_back(ShareInvite{invite.at("email"), from_ms(invite.at("invited_at"))});
      }
      stored.vms.emplace(vm.record.name, std::move(vm));
    }
    for (const Json& j : state.at("keys")) {
      Key key;
      key.token = j.at("token");
      key.account = j.value("account", std::string(first_account));
      key.all_commands = j.at("all_commands");
      if (j.contains("cmds")) key.spec.cmds = j.at("cmds").get<std::vector<std::string>>();
      if (j.contains("tag")) key.spec.tag = j.at("tag").get<std::string>();
      if (j.contains("vm")) key.vm_scope = j.at("vm").get<std::string>();
      if (j.contains("expires_at")) key.spec.expires_at = from_ms(j.at("expires_at"));
      if (j.contains("key_expires_at")) key.spec.key_expires_at = from_ms(j.at("key_expires_at"));
      key.spec.label = j.at("label");
      key.fingerprint = j.at("fingerprint");
      key.public_key = j.at("public_key");
      stored.keys.emplace(key.token, std::move(key));
    }
    stored.next_ssh_key_number = state.value("next_ssh_key_number", std::uint64_t{1});
    for (const Json& j : state.value("ssh_keys", Json::array())) {
      stored.ssh_keys.push_back(SshKey{j.at("public_key"), j.at("fingerprint"), j.at("name"), from_ms(j.at("added_at")),
                                       j.value("account", std::string(first_account))});
    }
    return stored;
  } catch (const Json::exception& e) {
    throw std::runtime_error("cannot read the emulator state in " + where + ": " + e.what());
  }
}

// ---------------------------------------------------------------------------------------------
// Keys, names and views of a VM

std::string Lobby::add_key(Key key) {
  if (key.spec.label.empty()) key.spec.label = fmt::format("api-key-{}", keys_.size() + 1);
  // An OpenSSH ed25519 public key blob: length-prefixed type name, then 32 key bytes.
  std::string blob("\0\0\0\x0bssh-ed25519\0\0\0\x20", 19);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int i = 0; i < 32; ++i) blob += static_cast<char>(byte(detail::random_engine()));
  key.public_key = "ssh-ed25519 " + detail::base64_encode(blob);
  key.fingerprint = "SHA256:" + detail::random_chars("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 43);
  const std::string token = key.token;
  keys_[token] = std::move(key);
  return token;
}

Lobby::Vm* Lobby::find_visible(const Key& key, const std::string& name) {
  const auto it = vms_.find(name);
  if (it == vms_.end() || it->second.account != key.account) return nullptr;
  if (key.spec.tag && !has_tag(it->second.record, *key.spec.tag)) return nullptr;
  if (key.vm_scope && *key.vm_scope != name) return nullptr;
  return &it->second;
}

bool Lobby::in_account(const Key& key, const std::string& name) const {
  const auto it = vms_.find(name);
  return it != vms_.end() && it->second.account == key.account;
}

bool Lobby::vm_ready(const Vm& vm, WallTime now) { return now >= vm.ready_at; }

std::string Lobby::vm_status(const Vm& vm, WallTime now) { return vm_ready(vm, now) ? vm.record.status : vm.boot_status; }

bool Lobby::vm_ready(const Vm& vm) const { return vm_ready(vm, now_.wall); }

std::string Lobby::vm_status(const Vm& vm) const { return vm_status(vm, now_.wall); }

bool Lobby::name_taken(const std::string& name) const { return vms_.count(name) > 0 || reserved_names_.count(name) > 0; }

std::string Lobby::unused_name() const {
  static const char* const adjectives[] = {"amber", "brisk", "calm", "dusty", "eager", "fuzzy", "gentle", "hazy",
                                           "icy", "jolly", "keen", "lucky", "mellow", "nimble", "quiet", "rapid"};
  static const char* const nouns[] = {"otter", "falcon", "maple", "harbor", "comet", "meadow", "pebble", "raven",
                                      "summit", "tulip", "walrus", "willow", "yak", "zephyr", "badger", "cedar"};
  std::uniform_int_distribution<int> pick(0, 15);
  std::uniform_int_distribution<int> number(10, 9999);
  while (true) {
    std::string name = fmt::format("{}-{}-{}", adjectives[pick(detail::random_engine())], nouns[pick(detail::random_engine())], number(detail::random_engine()));
    if (!name_taken(name)) return name;
  }
}

}  // namespace exedev::emulator
