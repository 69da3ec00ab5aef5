#pragma once
// The sans-IO core of the emulator: everything /exec does except the sockets, the processes
// of `ssh` and the host's blocking work. The server calls authorize() before it reads the body,
// prepare() after, then execute(). Lobby commands answer a Reply; `ssh` answers an SshPlan the
// server runs.
//
// The VMs' directories, processes and the persisted state belong to a VmHost (vm_host.hpp). The
// lobby never calls it (but for the pure vm_directory and state_file): each change of its state
// answers a HostPlan, plain data, which the server runs on the host before it answers the
// request. A command that needs the host's result to answer (new and cp: the VM exists once its
// directory is made and its SSH endpoint listens) answers AwaitHost; the server runs the plan and
// feeds the results back to resume(), which answers the next step.
//
// The lobby reads no clock: every call that depends on the time takes the server's Instant
// (instant.hpp). It holds no lock and is not thread-safe: one strand calls it, the server's
// thread while it serves (server.cpp), and runs the plans in the order they were made.
//
// The implementation is split by seam: lobby.cpp (construction, plans, tokens, views),
// lobby_state.cpp (the state, its JSON, replies), lobby_pipeline.cpp (the command table and the
// three stages), lobby_vm_commands.cpp, lobby_meta_commands.cpp (help, whoami, ssh-key
// generate-api-key), vm_commands_extra.cpp, lobby_ssh_keys.cpp (ssh-key list, add, remove),
// lobby_exe0.cpp (exe0 tokens and exe0-to-exe1) and lobby_instrumentation.cpp (faults, modes,
// records).

#include <exedev/emulator/emulator.hpp>

#include "emulator/flags.hpp"
#include "emulator/instant.hpp"
#include "emulator/rate_limiter.hpp"
#include "emulator/vm_host.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace exedev::emulator {

struct Reply {
  unsigned status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

/// A JSON error reply `{"error":message}\n` with the lobby's headers.
Reply error_reply(unsigned status, const std::string& message);

/// What the server must run for `ssh <vm> <words…>`.
struct SshPlan {
  std::string vm;
  std::string vm_id;
  std::uint64_t generation = 0;  ///< changes on restart and rm: the stream then ends without trailer
  std::filesystem::path home;
  std::vector<std::string> env;  ///< the VM's KEY=VALUE variables
  std::string line;              ///< the words joined with single spaces
  /// unready_true_quirk: answer exit 0 without running anything.
  bool answer_without_running = false;
};

/// Where a VM's SSH endpoint is: its shard's port (0: no SSH endpoint) and the name endpoint's.
struct SshWhere {
  std::uint16_t shard_port = 0;
  std::uint16_t names_port = 0;
};

/// A request that passed every check up to execution.
struct Prepared {
  std::string token;
  std::vector<std::string> words;
  std::string command;                 ///< canonical name, e.g. "ssh-key generate-api-key"
  std::vector<std::string> arguments;  ///< the words after the command name
  std::string vm;                      ///< the VM it names, if any (for faults and records)
};

struct LobbyConfig {
  std::string token;  ///< empty = reuse the persisted one or make one
  std::map<std::string, TokenSpec> tokens;
  Modes modes;
  std::string email = "user@example.com";
  /// Public keys (authorized_keys lines) registered at start, as `ssh-key add` registers them.
  std::vector<std::string> ssh_authorized_keys;
  /// The second account: its token (empty = reuse the persisted one or make one), its email
  /// and the public keys registered to it at start.
  std::string second_token;
  std::string second_email = "second@example.com";
  std::vector<std::string> second_ssh_authorized_keys;
  /// The domain of the SSH names in the answers (`<domain>`, `<vm>.<domain>`).
  std::string ssh_domain = "exe.localhost";
  /// The VMs' login shell, which an SSH session of the landing table runs.
  std::string login_shell = "/bin/sh";
};

/// A command waiting for the host: run the step's plan, then pass its results to resume().
struct AwaitHost {
  std::uint64_t ticket = 0;
  bool operator==(const AwaitHost&) const = default;
};

/// What execute() and resume() answer: host work to run first, in order, then the answer.
struct Step {
  HostPlan plan;
  std::variant<Reply, SshPlan, AwaitHost> answer;
};

class Lobby {
 public:
  /// Reads `saved_state` (the text the host persisted, if any: VMs, tokens) and registers the
  /// configured SSH keys; startup_plan() then says what to save. Only the pure members of `host`
  /// are used (vm_directory, state_file); it must outlive the lobby.
  Lobby(LobbyConfig config, const VmHost& host, const std::optional<std::string>& saved_state, Instant now);
  ~Lobby();
  Lobby(const Lobby&) = delete;
  Lobby& operator=(const Lobby&) = delete;

  /// What the host must save before the lobby serves: the state and its SSH landing table.
  HostPlan startup_plan() const;

  /// Steps 1-4 of the check order (method, Authorization, token, key expiry, rate limit). On
  /// success returns the token.
  std::variant<Reply, std::string> authorize(std::string_view method, std::string_view authorization, Instant now);
  /// Steps 5-8 (NUL, empty, lex, resolve, cmds) on a body already within the size limit.
  std::variant<Reply, Prepared> prepare(const std::string& token, std::string_view body) const;
  /// Step 9, at `now`. A failed lobby command answers 504 once `started` (when the server
  /// began executing it) is older than the lobby deadline.
  Step execute(const Prepared& request, SteadyTime started, Instant now);
  /// The next step of the command execute() answered AwaitHost{ticket} for, given the results
  /// of the plan that came with it (one per command), at `now`.
  Step resume(std::uint64_t ticket, const std::vector<HostResult>& results, Instant now);
  /// Forgets a waiting command whose plan threw: the VM it was making does not exist.
  void abandon(std::uint64_t ticket);

  /// Removes and returns the first injected fault matching the request, counting it down.
  std::optional<Fault> take_fault(const std::string& command, const std::string& vm);
  void inject(Fault fault);
  void clear_faults();

  Modes modes() const;
  void set_modes(Modes modes);

  /// True while the VM with this id exists and has not been restarted since `generation`.
  bool vm_current(const std::string& vm_id, std::uint64_t generation) const;

  void record(CommandRecord record);
  std::vector<CommandRecord> commands() const;
  void clear_commands();

  /// The VMs with their status at `now` (booting until their ready time).
  std::vector<VMRecord> vms(WallTime now) const;
  std::optional<VMRecord> vm(const std::string& name, WallTime now) const;
  std::optional<std::string> vm_id(const std::string& name) const;
  std::string default_token() const;
  std::string second_token() const;
  /// A new token, and the plan that saves it.
  std::pair<std::string, HostPlan> issue_token(TokenSpec spec);
  /// Revokes the token; answers the plan that saves the change.
  HostPlan revoke_token(const std::string& token);

  /// Whether and where the emulator's HTTPS proxy (vm_proxy.hpp) sends a request for VM `vm`
  /// at `requested_port` (0: the bare https://<vm>.exe.xyz/, which serves the proxy port)
  /// carrying share link `share_token` (empty: none) at `now`: status 200 and the VM port, or the
  /// refusal's status and reason (404: no such VM or a port the proxy does not forward; 401:
  /// private and no valid share link; 502: the VM is not running). Only the bare host name follows
  /// the share setting: a URL with a port (3000-9999, even the proxy port) is private, as on
  /// exe.dev; the emulator has no exe.dev login, so only a share link opens a private route. Defined with the share commands (vm_commands_extra.cpp).
  struct ProxyDecision {
    unsigned status = 200;
    std::string reason;
    std::uint16_t port = 0;
  };
  ProxyDecision proxy_decision(const std::string& vm, std::uint16_t requested_port, const std::string& share_token,
                               WallTime now) const;

  /// The SSH endpoints to serve (each shard some VM uses, `shard-<n>`, and the name endpoint
  /// `names`) and the port each had (0: none yet), to serve them again.
  std::vector<std::pair<std::string, std::uint16_t>> ssh_endpoints() const;
  /// Records the port an SSH endpoint now listens on; answers the plan that saves it.
  HostPlan set_ssh_port(const std::string& endpoint, std::uint16_t port);
  /// The SSH landing table (files by path relative to the table's directory), saved with the
  /// state (SaveState): what sshd's key script reads to route a connection by the key it offers
  /// (docs/emulator.md, "SSH endpoints"):
  ///  - `keys/<fingerprint, / as _>`: the account the registered key belongs to;
  ///  - `hosts`: a hosts(5) file, 127.0.0.1 for `<domain>` and every `<vm>.<domain>`;
  ///  - `<account>/shards/<endpoint port>` and `<account>/names/<vm>`: the account's VM there,
  ///    shell assignments `vm_id`, `vm_name`, `vm_state` (running, paused), `vm_ready` (Unix
  ///    milliseconds from which it runs), then the session's home, login shell and environment
  ///    (`exedev_home`, `exedev_shell`, `set -- VAR=value…`) that the session wrapper sources.
  /// A pure function of the lobby's state.
  std::map<std::string, std::string> ssh_landing_table() const;

  /// The plan that kills the processes of every VM (the emulator is shutting down).
  HostPlan kill_all_processes() const;
  /// Forgets the VMs, tokens, faults, rate-limit buckets and waiting commands held in memory
  /// and reads `saved_state` (what the host persisted), as a new emulator process would.
  /// Records and modes stay.
  void reload(const std::optional<std::string>& saved_state);

  struct Vm;
  struct Key;
  struct SshKey;

 private:
  struct Command;
  struct NewVm;
  struct StoredState;
  using Handler = std::variant<Reply, SshPlan> (Lobby::*)(const Key&, const Prepared&);

  static const std::vector<Command>& command_table();
  /// The commands of vm_commands_extra.cpp (resize, rename, stat, share, exe0-to-exe1),
  /// appended to the table.
  static std::vector<Command> extra_commands();
  static nlohmann::ordered_json command_help(const Command& command);
  std::optional<ParsedFlags> parse_command_flags(const Prepared& request, std::optional<Reply>& error) const;
  const Command* resolve(const std::vector<std::string>& words, std::size_t& length) const;

  std::variant<Reply, SshPlan> cmd_help(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_new(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_cp(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_ls(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_rm(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_pause(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_resume(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_restart(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_tag(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_comment(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_whoami(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_ssh(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_generate_api_key(const Key&, const Prepared&);
  // vm_commands_extra.cpp
  std::variant<Reply, SshPlan> cmd_resize(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_rename(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_stat(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_share_show(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_share_set_public(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_share_set_private(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_share_add_link(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_share_port(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_share_remove_link(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_share_add(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_share_remove(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_share_access_allow(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_share_access_disallow(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> share_access(const Key&, const Prepared&, bool allow);
  // lobby_ssh_keys.cpp
  std::variant<Reply, SshPlan> cmd_ssh_key_list(const Key&, const Prepared&);
  // The account's keys as whoami and `ssh-key list` show them (registered SSH keys, then API keys).
  enum class KeyListing { whoami, ssh_key_list };
  [[nodiscard]] nlohmann::ordered_json account_keys(const Key& key, KeyListing listing) const;
  std::variant<Reply, SshPlan> cmd_ssh_key_add(const Key&, const Prepared&);
  std::variant<Reply, SshPlan> cmd_ssh_key_remove(const Key&, const Prepared&);
  /// The `ssh-key` commands, appended to the table.
  static std::vector<Command> ssh_key_commands();
  /// Registers a public key line as `ssh-key add` does and answers its reply (422 with
  /// exe.dev's message when refused).
  Reply add_ssh_key(std::string_view line, const std::string& account);
  /// The smallest shard no VM of the account has (nor one being made for it).
  unsigned free_shard(const std::string& account) const;
  /// Where the VM's SSH endpoint is, for the answers.
  SshWhere ssh_where(const Vm& vm) const;
  /// Whether a VM of this name belongs to the key's account.
  bool in_account(const Key& key, const std::string& name) const;
  // lobby_exe0.cpp: exe0 tokens signed by the accounts' SSH keys, and their exe1 handles.
  std::variant<Reply, SshPlan> cmd_exe0_to_exe1(const Key&, const Prepared&);
  /// Authorizes a signed token (`exe0.…`, or an exe1 handle exe0-to-exe1 made) as exe.dev's
  /// validateToken does: the key it names on success (kept until the token expires), else the
  /// 401 or 403 reply.
  std::variant<Reply, const Key*> authorize_signed(const std::string& token, Instant now);
  /// The key a token authorized: an API token's, or a signed token's.
  const Key* key_of(const std::string& token) const;
  /// The registered SSH key with this fingerprint ("SHA256:…"), or nullptr.
  const SshKey* ssh_key_by_fingerprint(const std::string& fingerprint) const;
  std::variant<Reply, SshPlan> share_visibility(const Key&, const Prepared&, const std::string& share);
  /// The VM named by `share …`'s first argument, owned and in the key's tag scope; nullptr with
  /// `error` set otherwise.
  Vm* shared_vm(const Key& key, const std::string& name, std::optional<Reply>& error);

  Vm* find_visible(const Key& key, const std::string& name);
  /// For commands taking exactly one VM: the VM, or nullptr with `error` set (bad flags, the
  /// usage line, or "not found").
  Vm* only_vm_argument(const Key& key, const Prepared& request, const char* usage, std::optional<Reply>& error);
  /// The status and readiness at `now`; without it, at the time of the command being executed.
  static std::string vm_status(const Vm& vm, WallTime now);
  static bool vm_ready(const Vm& vm, WallTime now);
  std::string vm_status(const Vm& vm) const;
  bool vm_ready(const Vm& vm) const;
  /// Whether a VM has the name or is being created under it.
  bool name_taken(const std::string& name) const;
  std::string unused_name() const;
  /// Plans the VM's creation: its name is reserved now; the VM exists once the host has made
  /// its directory and opened its SSH endpoint, and resume() then answers `vm.reply()`. Returns
  /// a placeholder reply that execute() replaces with AwaitHost.
  Reply create_vm(NewVm vm);
  void remove_vm(const std::string& name);
  std::string add_key(Key key);

  // Plans. The handlers add to planned_; execute() answers it with the reply.
  /// The state is to be saved once this change's host work has run.
  void persist();
  /// `command` is to run on the host, after what was planned before it.
  void plan_host_work(HostCommand command);
  /// The plan made since the last call: its commands, then the state saved if persist() was called.
  HostPlan take_plan();
  /// A lobby command's answer after its plan: 504 for a failure past the lobby deadline.
  Reply within_deadline(Reply reply, SteadyTime started, Instant now) const;

  // The state as persisted (lobby_state.cpp).
  /// The state as the text the host saves.
  std::string state_text() const;
  StoredState parse_state(const std::string& text) const;
  /// Replaces the state held in memory by the one read from `text`.
  void adopt(StoredState stored);

  LobbyConfig config_;
  const VmHost& host_;
  std::map<std::string, Vm> vms_;           // by name
  std::set<std::string> reserved_names_;    // VMs being created
  std::map<std::string, Key> keys_;         // by token
  // Signed tokens that authorized a request (by token), and the exe1 handles of exe0 tokens
  // (exe1 → exe0, expiry); in memory only.
  std::map<std::string, Key> signed_keys_;
  std::map<std::string, std::pair<std::string, WallTime>> exe1_handles_;
  std::vector<SshKey> ssh_keys_;            // in the order registered
  std::uint64_t next_ssh_key_number_ = 1;   // names `key-N` for keys without a comment
  std::string default_token_;
  std::string second_token_;
  std::map<unsigned, std::uint16_t> shard_ports_;  // the port of each shard's endpoint, kept
  std::uint16_t names_port_ = 0;                   // the vm+ name endpoint's
  RateLimiter limiter_;
  std::deque<Fault> faults_;
  std::vector<CommandRecord> records_;
  std::uint64_t next_generation_ = 1;
  HostPlan planned_;        // by the command being executed, in order
  bool persist_ = false;    // its change is to be saved after planned_
  Instant now_{};           // the time of the command being executed (execute's `now`)
  std::map<std::uint64_t, NewVm> awaiting_;  // new, cp: VMs being made by the host, by ticket
  std::uint64_t next_ticket_ = 1;
  std::optional<std::uint64_t> creating_;    // the ticket create_vm gave the command being executed
};

}  // namespace exedev::emulator
