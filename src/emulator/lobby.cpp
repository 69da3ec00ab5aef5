// The lobby's construction, its plans of host work (and the creations that wait on the host),
// the tokens of the public API, reload and shutdown, and the views of the VMs.
#include "emulator/lobby.hpp"
#include "emulator/lobby_internal.hpp"

#include "emulator/validation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace exedev::emulator {

Lobby::Lobby(LobbyConfig config, const VmHost& host, const std::optional<std::string>& saved_state, Instant now)
    : config_(std::move(config)), host_(host) {
  now_ = now;
  if (saved_state) adopt(parse_state(*saved_state));
  if (!config_.token.empty()) default_token_ = config_.token;
  if (default_token_.empty()) default_token_ = new_token();
  if (!keys_.count(default_token_)) {
    Key key;
    key.token = default_token_;
    key.all_commands = true;
    key.spec.label = "emulator";
    add_key(std::move(key));
  }
  // The second account's token, as the first's: configured, persisted, or new.
  if (!config_.second_token.empty()) second_token_ = config_.second_token;
  if (second_token_.empty()) second_token_ = new_token();
  if (!keys_.count(second_token_)) {
    Key key;
    key.token = second_token_;
    key.account = second_account;
    key.all_commands = true;
    key.spec.label = "emulator-second";
    add_key(std::move(key));
  }
  for (auto& [token, spec] : config_.tokens) {
    Key key;
    key.token = token;
    key.spec = spec;
    keys_.erase(token);
    add_key(std::move(key));
  }
  for (const auto& [lines, account] : {std::pair{&config_.ssh_authorized_keys, first_account},
                                        std::pair{&config_.second_ssh_authorized_keys, second_account}}) {
    for (const std::string& line : *lines) {
      const Reply added = add_ssh_key(line, account);
      // A key registered before (a restart on the same state) is no error.
      if (added.status != 200 && added.body.find("already associated") == std::string::npos) {
        throw std::invalid_argument("cannot register an SSH key of the emulator's options: " +
                                    nlohmann::json::parse(added.body).at("error").get<std::string>());
      }
    }
  }
  take_plan();  // what add_ssh_key planned is in startup_plan()
}

Lobby::~Lobby() = default;

HostPlan Lobby::startup_plan() const { return {SaveState{state_text(), ssh_landing_table()}}; }

void Lobby::adopt(StoredState stored) {
  vms_ = std::move(stored.vms);
  keys_ = std::move(stored.keys);
  ssh_keys_ = std::move(stored.ssh_keys);
  next_ssh_key_number_ = stored.next_ssh_key_number;
  default_token_ = std::move(stored.default_token);
  second_token_ = std::move(stored.second_token);
  next_generation_ = stored.next_generation;
  shard_ports_ = std::move(stored.shard_ports);
  names_port_ = stored.names_port;
}

// ---------------------------------------------------------------------------------------------
// Plans

void Lobby::persist() { persist_ = true; }

void Lobby::plan_host_work(HostCommand command) { planned_.push_back(std::move(command)); }

HostPlan Lobby::take_plan() {
  HostPlan taken = std::move(planned_);
  planned_.clear();
  // The state as it is after the change, saved after the change's other host work.
  if (persist_) taken.emplace_back(SaveState{state_text(), ssh_landing_table()});
  persist_ = false;
  return taken;
}

Reply Lobby::within_deadline(Reply reply, SteadyTime started, Instant now) const {
  if (reply.status != 200 && now.steady - started >= config_.modes.lobby_deadline) {
    return error_reply(504, "command timed out");
  }
  return reply;
}

Step Lobby::resume(std::uint64_t ticket, const std::vector<HostResult>& results, Instant now) {
  const auto it = awaiting_.find(ticket);
  if (it == awaiting_.end()) throw std::logic_error("no command waits for the host under this ticket");
  if (results.size() != 1) throw std::logic_error("a creation's step has one host command");
  NewVm& created = it->second;
  now_ = now;
  if (!created.directory_made) {
    if (const std::error_code failed = results.front().error) {
      const Reply refused = fail(fmt::format("failed to copy \"{}\": {}", created.source_name, failed.message()));
      const SteadyTime started = created.started;
      reserved_names_.erase(created.vm.record.name);
      awaiting_.erase(it);
      return Step{take_plan(), within_deadline(refused, started, now)};
    }
    created.directory_made = true;
    // The shard's endpoint: already served when another VM has the shard, else opened on the
    // port the shard had before.
    const auto known = shard_ports_.find(created.vm.shard);
    plan_host_work(OpenSshEndpoint{shard_endpoint(created.vm.shard), known == shard_ports_.end() ? std::uint16_t{0} : known->second});
    return Step{take_plan(), AwaitHost{ticket}};
  }
  created.vm.ssh_port = results.front().ssh_port;
  if (created.vm.ssh_port != 0) shard_ports_[created.vm.shard] = created.vm.ssh_port;
  created.vm.ready_at = now.wall + created.boot_delay;
  reserved_names_.erase(created.vm.record.name);
  const std::string name = created.vm.record.name;
  const Vm& vm = vms_.emplace(name, std::move(created.vm)).first->second;
  const Reply reply = created.reply(vm, now);
  const SteadyTime started = created.started;
  awaiting_.erase(it);
  persist();
  return Step{take_plan(), within_deadline(reply, started, now)};
}

void Lobby::abandon(std::uint64_t ticket) {
  const auto it = awaiting_.find(ticket);
  if (it == awaiting_.end()) return;
  reserved_names_.erase(it->second.vm.record.name);
  awaiting_.erase(it);
}

// ---------------------------------------------------------------------------------------------
// Tokens, reload, shutdown

std::pair<std::string, HostPlan> Lobby::issue_token(TokenSpec spec) {
  if (spec.tag) {
    if (auto message = validate_tag(*spec.tag)) throw std::invalid_argument(*message);
  }
  Key key;
  key.token = new_token();
  key.spec = std::move(spec);
  std::string token = add_key(std::move(key));
  persist();
  return {std::move(token), take_plan()};
}

HostPlan Lobby::revoke_token(const std::string& token) {
  keys_.erase(token);
  persist();
  return take_plan();
}

void Lobby::reload(const std::optional<std::string>& saved_state) {
  std::optional<StoredState> stored;
  if (saved_state) stored = parse_state(*saved_state);
  vms_.clear();
  keys_.clear();
  signed_keys_.clear();
  exe1_handles_.clear();
  faults_.clear();
  limiter_.clear();
  ssh_keys_.clear();
  reserved_names_.clear();
  awaiting_.clear();
  if (stored) adopt(std::move(*stored));
}

HostPlan Lobby::kill_all_processes() const {
  HostPlan kills;
  for (const auto& [name, vm] : vms_) kills.emplace_back(KillVmProcesses{vm.id});
  return kills;
}

// ---------------------------------------------------------------------------------------------
// Views

bool Lobby::vm_current(const std::string& vm_id, std::uint64_t generation) const {
  return std::any_of(vms_.begin(), vms_.end(),
                     [&](const auto& entry) { return entry.second.id == vm_id && entry.second.generation == generation; });
}

std::vector<std::pair<std::string, std::uint16_t>> Lobby::ssh_endpoints() const {
  std::vector<std::pair<std::string, std::uint16_t>> out = {{names_endpoint, names_port_}};
  std::set<unsigned> shards;
  for (const auto& [name, vm] : vms_) shards.insert(vm.shard);
  for (const unsigned shard : shards) {
    const auto known = shard_ports_.find(shard);
    out.emplace_back(shard_endpoint(shard), known == shard_ports_.end() ? std::uint16_t{0} : known->second);
  }
  return out;
}

HostPlan Lobby::set_ssh_port(const std::string& endpoint, std::uint16_t port) {
  if (endpoint == names_endpoint) {
    if (names_port_ != port) persist();
    names_port_ = port;
    return take_plan();
  }
  for (const auto& [shard, known] : shard_ports_) {
    if (shard_endpoint(shard) == endpoint && known == port) return take_plan();
  }
  for (auto& [name, vm] : vms_) {
    if (shard_endpoint(vm.shard) != endpoint) continue;
    shard_ports_[vm.shard] = port;
    vm.ssh_port = port;
    persist();
  }
  return take_plan();
}

unsigned Lobby::free_shard(const std::string& account) const {
  std::set<unsigned> taken;
  for (const auto& [name, vm] : vms_) {
    if (vm.account == account) taken.insert(vm.shard);
  }
  for (const auto& [ticket, made] : awaiting_) {
    if (made.vm.account == account) taken.insert(made.vm.shard);
  }
  unsigned shard = 0;
  while (taken.count(shard)) ++shard;
  return shard;
}

SshWhere Lobby::ssh_where(const Vm& vm) const { return SshWhere{vm.ssh_port, names_port_}; }

std::vector<VMRecord> Lobby::vms(WallTime now) const {
  std::vector<VMRecord> out;
  for (const auto& [name, vm] : vms_) {
    out.push_back(vm.record);
    out.back().status = vm_status(vm, now);
  }
  return out;
}

std::optional<VMRecord> Lobby::vm(const std::string& name, WallTime now) const {
  const auto it = vms_.find(name);
  if (it == vms_.end()) return std::nullopt;
  VMRecord record = it->second.record;
  record.status = vm_status(it->second, now);
  return record;
}

std::optional<std::string> Lobby::vm_id(const std::string& name) const {
  const auto it = vms_.find(name);
  return it == vms_.end() ? std::nullopt : std::optional(it->second.id);
}

std::string Lobby::default_token() const { return default_token_; }

std::string Lobby::second_token() const { return second_token_; }

}  // namespace exedev::emulator
