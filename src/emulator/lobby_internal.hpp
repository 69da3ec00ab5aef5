#pragma once
// The lobby's internals shared by the files that implement it (lobby.hpp lists them): the VM,
// key and command records, the VMs the host is making, and the reply helpers.

#include "emulator/flags.hpp"
#include "emulator/lobby.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::emulator {

using Json = nlohmann::ordered_json;

/// A link made by `share add-link` (its token is what the URL carries).
struct ShareLink {
  std::string token;
  WallTime created_at;
};

/// A person invited by `share add <vm> <email>`: pending, as nobody else has an account here.
struct ShareInvite {
  std::string email;
  WallTime invited_at;
};

/// The emulator's two accounts, as the landing table names them.
inline constexpr const char* first_account = "first";    // the token of Options::token, its keys
inline constexpr const char* second_account = "second";  // Options::second_token's

/// The SSH endpoint of shard `shard` (a port every account's VM of that shard shares), and the
/// one endpoint that routes by `vm+<name>`, as the host's SshEndpointService names them.
std::string shard_endpoint(unsigned shard);
inline constexpr const char* names_endpoint = "names";

struct Lobby::Vm {
  VMRecord record;  // record.status holds the stored status: running or paused
  std::string id;
  std::string account = first_account;
  unsigned shard = 0;  // the smallest free one of its account when made
  WallTime ready_at;
  std::string boot_status;  // shown until ready_at: creating (new) or starting (cp, restart)
  std::uint64_t generation = 0;
  // The VM's HTTPS proxy route (exedb.DefaultRoute: port 80, private) and its share links.
  std::string share = "private";
  unsigned proxy_port = 80;
  std::vector<ShareLink> share_links;
  std::vector<ShareInvite> share_invites;
  bool team_access = false;  // `share access allow`: the route's TeamSSH and TeamShelley
  // The port of its shard's SSH endpoint (0: none), as Lobby::shard_ports_ has it.
  std::uint16_t ssh_port = 0;
};

/// An SSH public key registered with `ssh-key add` (or Options::ssh_authorized_keys): it may
/// log in to every VM's SSH endpoint.
struct Lobby::SshKey {
  std::string public_key;   // canonical: `<type> <base64>`
  std::string fingerprint;  // SHA256:…
  std::string name;
  WallTime added_at;
  std::string account = first_account;
};

struct Lobby::Key {
  std::string token;
  std::string account = first_account;
  TokenSpec spec;
  bool all_commands = false;  // the emulator's own token
  std::optional<std::string> vm_scope;
  std::string fingerprint;
  std::string public_key;
};

struct Lobby::Command {
  std::string name;
  Handler handler;
  bool raw_args = false;  // ssh: no flag handling at all (addendum, correction 1)
  std::vector<FlagSpec> flags;
  std::string usage;
  std::string description;
};

/// A VM that exists once the host has made its directory (step 1) and opened its SSH endpoint
/// (step 2).
struct Lobby::NewVm {
  Vm vm;
  std::filesystem::path copy_from;  // cp: the source's directory; empty for new
  std::string source_name;          // cp: named by the error when the copy fails
  std::chrono::milliseconds boot_delay{0};  // counted from the moment the VM exists
  std::function<Reply(const Vm&, Instant now)> reply;  // the command's answer once the VM exists
  SteadyTime started{};             // when the command began, for the lobby deadline
  bool directory_made = false;      // step 1 done: the endpoint is asked for
};

/// The state as the host persists it.
struct Lobby::StoredState {
  std::map<std::string, Vm> vms;
  std::map<std::string, Key> keys;
  std::vector<SshKey> ssh_keys;
  std::uint64_t next_ssh_key_number = 1;
  std::string default_token;
  std::string second_token;
  std::uint64_t next_generation = 1;
  std::map<unsigned, std::uint16_t> shard_ports;
  std::uint16_t names_port = 0;
};

/// The commands a token without `cmds` may run.
extern const std::vector<std::string> default_cmds;
inline constexpr const char* region = "lax";
inline constexpr const char* region_display = "Los Angeles, USA";
inline constexpr std::uint64_t gib = 1024ull * 1024 * 1024;

/// `json` as one line (invalid UTF-8 replaced).
std::string dump(const Json& json);
/// A lobby reply: the body trimmed and ended with one newline, the lobby's headers.
Reply json_reply(unsigned status, std::string body);
Reply ok(const Json& json);
/// 422 {"error": message}.
Reply fail(const std::string& message);
std::string rfc3339(WallTime t);
/// `<vm>.exe.xyz`.
std::string host_of(const std::string& vm);
/// Sets the fields that say where the VM's SSH endpoint is: `ssh_dest`, `ssh_host`, `ssh_port`,
/// `ssh_user` (vm_plus only) and `ssh_command`; without an endpoint only `ssh_dest` and
/// `ssh_host` (`<vm>.exe.xyz`, which reach nothing) and `ssh_command`.
void add_ssh_fields(Json& json, const std::string& vm, SshWhere where, const LobbyConfig& config);
bool has_tag(const VMRecord& vm, const std::string& tag);
std::string join(const std::vector<std::string>& words, std::string_view separator);
/// A new exe1 token: `exe1.` and 26 characters of the base32 alphabet.
std::string new_token();
/// The target of `ssh [-l user] [user@]vmname[.exe.xyz] …`; sets `rest` (if given) to the
/// command words.
std::optional<std::string> ssh_target(const std::vector<std::string>& args, std::vector<std::string>* rest);

/// Whether a tag-scoped key may run the command: exe.dev's commands marked AllowTagScoped.
bool allowed_for_tag_scoped_keys(const std::string& command);

}  // namespace exedev::emulator
