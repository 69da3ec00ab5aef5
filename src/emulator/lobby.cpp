// The lobby's construction, its host work (planned under the mutex, run after it in turns), the
// tokens of the public API, reload and shutdown, and the views of the VMs.
#include "emulator/lobby.hpp"
#include "emulator/lobby_internal.hpp"

#include "emulator/validation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace exedev::emulator {

Lobby::Lobby(LobbyConfig config, VmHost& host)
    : config_(std::move(config)), host_(host), planned_(std::make_unique<HostWork>()) {
  // No other thread knows the lobby yet: the host is called directly.
  if (auto stored = load_state()) {
    vms_ = std::move(stored->vms);
    keys_ = std::move(stored->keys);
    ssh_keys_ = std::move(stored->ssh_keys);
    next_ssh_key_number_ = stored->next_ssh_key_number;
    default_token_ = std::move(stored->default_token);
    next_generation_ = stored->next_generation;
  }
  if (!config_.token.empty()) default_token_ = config_.token;
  if (default_token_.empty()) default_token_ = new_token();
  if (!keys_.count(default_token_)) {
    Key key;
    key.token = default_token_;
    key.all_commands = true;
    key.spec.label = "emulator";
    add_key(std::move(key));
  }
  for (auto& [token, spec] : config_.tokens) {
    Key key;
    key.token = token;
    key.spec = spec;
    keys_.erase(token);
    add_key(std::move(key));
  }
  for (const std::string& line : config_.ssh_authorized_keys) {
    const Reply added = add_ssh_key(line);
    // A key registered before (a restart on the same state) is no error.
    if (added.status != 200 && added.body.find("already associated") == std::string::npos) {
      throw std::invalid_argument("cannot register an SSH key of the emulator's options: " +
                                  nlohmann::json::parse(added.body).at("error").get<std::string>());
    }
  }
  *planned_ = HostWork{};  // what add_ssh_key planned is done here
  host_.save_state(state_text());
  host_.save_authorized_keys(authorized_keys());
}

Lobby::~Lobby() = default;

// ---------------------------------------------------------------------------------------------
// Host work

void Lobby::persist() { planned_->persist = true; }

void Lobby::plan_host_work(std::function<void(VmHost&)> action) { planned_->actions.push_back(std::move(action)); }

std::pair<Lobby::HostWork, TurnQueue::Place> Lobby::take_planned() {
  HostWork work = std::move(*planned_);
  *planned_ = HostWork{};
  return {std::move(work), turns_.take()};
}

void Lobby::save_state() {
  std::string text;
  {
    std::lock_guard lock(mutex_);
    text = state_text();
  }
  host_.save_state(text);
}

std::optional<Reply> Lobby::run(std::pair<HostWork, TurnQueue::Place> planned) {
  auto& [work, place] = planned;
  place.wait_for_turn();
  for (const auto& action : work.actions) action(host_);
  std::optional<Reply> reply;
  bool persist = work.persist;
  if (work.created) {
    NewVm& created = *work.created;
    std::error_code failed;
    try {
      if (created.copy_from.empty()) host_.create_vm_directory(created.vm.record.dir);
      else failed = host_.copy_vm_directory(created.copy_from, created.vm.record.dir);
      if (!failed) created.vm.ssh_port = host_.open_ssh_endpoint(created.vm.id, 0);
    } catch (...) {
      std::lock_guard lock(mutex_);
      reserved_names_.erase(created.vm.record.name);
      throw;
    }
    std::lock_guard lock(mutex_);
    reserved_names_.erase(created.vm.record.name);
    if (failed) {
      reply = fail(fmt::format("failed to copy \"{}\": {}", created.source_name, failed.message()));
    } else {
      created.vm.ready_at = SysClock::now() + created.boot_delay;
      const std::string name = created.vm.record.name;
      const Vm& vm = vms_.emplace(name, std::move(created.vm)).first->second;
      reply = created.reply(vm);
      persist = true;
    }
  }
  // The state as it is now, so a save never writes an older state over a newer one.
  if (persist) save_state();
  return reply;
}

// ---------------------------------------------------------------------------------------------
// Tokens, reload, shutdown

std::string Lobby::issue_token(TokenSpec spec) {
  std::unique_lock lock(mutex_);
  if (spec.tag) {
    if (auto message = validate_tag(*spec.tag)) throw std::invalid_argument(*message);
  }
  Key key;
  key.token = new_token();
  key.spec = std::move(spec);
  const std::string token = add_key(std::move(key));
  persist();
  auto planned = take_planned();
  lock.unlock();
  run(std::move(planned));
  return token;
}

void Lobby::revoke_token(const std::string& token) {
  std::unique_lock lock(mutex_);
  keys_.erase(token);
  persist();
  auto planned = take_planned();
  lock.unlock();
  run(std::move(planned));
}

void Lobby::reload() {
  std::unique_lock lock(mutex_);
  auto planned = take_planned();
  lock.unlock();
  run(std::move(planned));  // the saves planned before this one are on the host
  auto stored = load_state();
  lock.lock();
  vms_.clear();
  keys_.clear();
  faults_.clear();
  limiter_.clear();
  ssh_keys_.clear();
  if (stored) {
    vms_ = std::move(stored->vms);
    keys_ = std::move(stored->keys);
    ssh_keys_ = std::move(stored->ssh_keys);
    next_ssh_key_number_ = stored->next_ssh_key_number;
    default_token_ = std::move(stored->default_token);
    next_generation_ = stored->next_generation;
  }
}

void Lobby::kill_all_processes() {
  std::unique_lock lock(mutex_);
  for (const auto& [name, vm] : vms_) plan_host_work([id = vm.id](VmHost& host) { host.kill_vm_processes(id); });
  auto planned = take_planned();
  lock.unlock();
  run(std::move(planned));
}

// ---------------------------------------------------------------------------------------------
// Views

bool Lobby::vm_current(const std::string& vm_id, std::uint64_t generation) const {
  std::lock_guard lock(mutex_);
  return std::any_of(vms_.begin(), vms_.end(),
                     [&](const auto& entry) { return entry.second.id == vm_id && entry.second.generation == generation; });
}

std::optional<SshRoute> Lobby::ssh_route(const std::string& vm_id) const {
  std::lock_guard lock(mutex_);
  for (const auto& [name, vm] : vms_) {
    if (vm.id != vm_id) continue;
    // A paused VM does not serve SSH, nor does one still booting (docs/emulator.md, "SSH").
    if (vm.record.status != "running" || !vm_ready(vm)) return std::nullopt;
    return SshRoute{name, vm.id, vm.generation, vm.record.home, vm.record.env};
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, std::uint16_t>> Lobby::ssh_endpoints() const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, std::uint16_t>> out;
  for (const auto& [name, vm] : vms_) out.emplace_back(vm.id, vm.ssh_port);
  return out;
}

void Lobby::set_ssh_port(const std::string& vm_id, std::uint16_t port) {
  std::unique_lock lock(mutex_);
  for (auto& [name, vm] : vms_) {
    if (vm.id == vm_id && vm.ssh_port != port) {
      vm.ssh_port = port;
      persist();
    }
  }
  auto planned = take_planned();
  lock.unlock();
  run(std::move(planned));
}

std::vector<VMRecord> Lobby::vms() const {
  std::lock_guard lock(mutex_);
  std::vector<VMRecord> out;
  for (const auto& [name, vm] : vms_) {
    out.push_back(vm.record);
    out.back().status = vm_status(vm);
  }
  return out;
}

std::optional<VMRecord> Lobby::vm(const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto it = vms_.find(name);
  if (it == vms_.end()) return std::nullopt;
  VMRecord record = it->second.record;
  record.status = vm_status(it->second);
  return record;
}

std::optional<std::string> Lobby::vm_id(const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto it = vms_.find(name);
  return it == vms_.end() ? std::nullopt : std::optional(it->second.id);
}

std::string Lobby::default_token() const {
  std::lock_guard lock(mutex_);
  return default_token_;
}

}  // namespace exedev::emulator
