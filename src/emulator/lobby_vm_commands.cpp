// The VM commands: new, cp, ls, rm, pause, resume, restart, tag, comment and ssh. Each handler
// changes the state and plans its host work as data (lobby.hpp); none touches the host.
#include "emulator/lobby.hpp"
#include "emulator/lobby_internal.hpp"

#include "emulator/flags.hpp"
#include "emulator/lexer.hpp"
#include "emulator/validation.hpp"

#include "common/random_ids.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fnmatch.h>
#include <set>
#include <tuple>

namespace exedev::emulator {

namespace {

// The egress flag is not documented by exe.dev; the emulator names it `--egress` (docs/emulator.md).
std::optional<Reply> refuse_egress(const std::string& egress) {
  if (egress == "all" || egress == "integrations") return std::nullopt;
  return fail(fmt::format("invalid --egress \"{}\": must be all or integrations", egress));
}

std::string new_id() { return detail::random_hex(8); }

Json new_details(const VMRecord& vm, SshWhere where, const LobbyConfig& config) {
  Json json;
  json["vm_name"] = vm.name;
  json["tags"] = vm.tags;
  add_ssh_fields(json, vm.name, where, config);
  json["https_url"] = "https://" + host_of(vm.name);
  json["proxy_port"] = 80;  // exedb.DefaultRoute's port: a new VM's proxy port
  if (vm.image == "exeuntu") {
    json["shelley_url"] = "https://" + vm.name + ".shelley.exe.xyz";
    json["vscode_url"] = "vscode://vscode-remote/ssh-remote+" + host_of(vm.name) + "/home/exedev";
  }
  json["xterm_url"] = "https://" + vm.name + ".xterm.exe.xyz";
  return json;
}

}  // namespace

Reply Lobby::create_vm(NewVm vm) {
  reserved_names_.insert(vm.vm.record.name);
  vm.vm.shard = free_shard(vm.vm.account);
  if (vm.copy_from.empty()) plan_host_work(CreateVmDirectory{vm.vm.record.dir});
  else plan_host_work(CopyVmDirectory{vm.copy_from, vm.vm.record.dir});
  const std::uint64_t ticket = next_ticket_++;
  awaiting_.emplace(ticket, std::move(vm));
  creating_ = ticket;
  return Reply{};
}

void Lobby::remove_vm(const std::string& name) {
  const auto it = vms_.find(name);
  plan_host_work(CloseSshConnections{it->second.id});
  // The shard's endpoint closes with the last VM of any account on it.
  const bool shard_used = std::any_of(vms_.begin(), vms_.end(), [&](const auto& entry) {
    return entry.first != name && entry.second.shard == it->second.shard;
  });
  if (!shard_used) plan_host_work(CloseSshEndpoint{shard_endpoint(it->second.shard)});
  plan_host_work(KillVmProcesses{it->second.id});
  plan_host_work(RemoveVmDirectory{it->second.record.dir});
  vms_.erase(it);
  persist();
}

std::variant<Reply, SshPlan> Lobby::cmd_new(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (!flags->positional.empty()) return fail(fmt::format("unexpected argument \"{}\"", flags->positional.front()));
  if (key.vm_scope) return fail(fmt::format("SSH key scoped to VM \"{}\" cannot create VMs", *key.vm_scope));
  for (const char* stdin_flag : {"prompt", "setup-script"}) {
    if (flags->str(stdin_flag) == "/dev/stdin") {
      return fail(fmt::format("--{}=/dev/stdin needs an SSH session; it is not available over HTTPS", stdin_flag));
    }
  }
  if (flags->str("setup-script").size() > 10 * 1024) return fail("--setup-script must be at most 10 KiB");
  const bool standalone = flags->boolean("standalone");
  if (standalone && (flags->has("pool") || flags->has("no-pool"))) {
    return fail("--standalone cannot be combined with --pool or --no-pool");
  }
  const std::string egress = flags->str("egress", "all");
  if (auto refused = refuse_egress(egress)) return *refused;

  std::string name = flags->str("name");
  if (name.empty()) {
    name = unused_name();
  } else {
    if (auto message = validate_vm_name(name)) return fail(*message);
    if (name_taken(name)) return fail(fmt::format("VM name \"{}\" is not available", name));
  }
  std::string image = flags->str("image", "exeuntu");
  if (image == "boldsoftware/exeuntu") image = "exeuntu";
  if (image.empty() || std::any_of(image.begin(), image.end(), [](unsigned char c) { return c <= ' ' || c == 0x7F; })) {
    return fail(fmt::format("invalid image: \"{}\"", image));
  }

  VMRecord record;
  record.name = name;
  record.image = image;
  record.cpus = static_cast<unsigned>(flags->uint("cpu").value_or(2));
  if (record.cpus < 1 || record.cpus > 16) return fail("--cpu must be between 1 and 16");
  record.memory_bytes = 8 * gib;
  record.disk_bytes = 20 * gib;
  for (const auto& [flag, target, min, max] :
       {std::tuple{"memory", &record.memory_bytes, 1 * gib, 64 * gib}, std::tuple{"disk", &record.disk_bytes, 4 * gib, 500 * gib}}) {
    if (!flags->has(flag)) continue;
    const auto size = parse_size(flags->str(flag));
    if (!size) return fail(fmt::format("invalid --{} \"{}\": use N, NGB, NMB, …", flag, flags->str(flag)));
    if (*size < min) return fail(fmt::format("--{} must be at least {}GB", flag, min / gib));
    if (*size > max) return fail(fmt::format("--{} cannot exceed {}GB", flag, max / gib));
    *target = *size;
  }
  record.comment = std::string(trim_space(flags->str("comment")));
  if (auto message = validate_comment(record.comment)) return fail(*message);
  for (const std::string& entry : flags->values("env")) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) return fail(fmt::format("invalid --env \"{}\": must be KEY=VALUE", entry));
    record.env.push_back(entry);
  }
  std::set<std::string> tags;
  for (const std::string& tag : flags->list("tag")) {
    if (auto message = validate_tag(tag)) return fail(*message);
    if (key.spec.tag && tag != *key.spec.tag) {
      return fail(fmt::format("--tag SSH key scoped to tag \"{}\" can only use --tag={}", *key.spec.tag, *key.spec.tag));
    }
    tags.insert(tag);
  }
  if (key.spec.tag) tags.insert(*key.spec.tag);
  record.tags.assign(tags.begin(), tags.end());
  for (const std::string& integration : flags->list("integration")) {
    if (!is_valid_tag(integration)) return fail(fmt::format("integration \"{}\" not found", integration));
    record.integrations.push_back(integration);
  }
  record.standalone = standalone;
  record.egress = egress;
  record.created_at = now_.wall;

  Vm vm;
  vm.id = new_id();
  vm.account = key.account;
  vm.record = std::move(record);
  vm.record.status = "running";
  vm.record.dir = host_.vm_directory(vm.id);
  vm.record.home = vm.record.dir / "home";
  vm.boot_status = "creating";
  vm.generation = next_generation_++;
  NewVm created;
  created.boot_delay = config_.modes.boot_delay;
  created.reply = [config = config_, names_port = names_port_](const Vm& made, Instant) {
    return ok(new_details(made.record, SshWhere{made.ssh_port, names_port}, config));
  };
  created.vm = std::move(vm);
  return create_vm(std::move(created));
}

std::variant<Reply, SshPlan> Lobby::cmd_cp(const Key& key, const Prepared& request) {
  const auto begun = now_.steady;
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  const auto& args = flags->positional;
  if (args.empty() || args.size() > 2) return fail("usage: cp <source-vm> [new-name] [--copy-tags=false]");
  const Vm* source = find_visible(key, args[0]);
  if (source == nullptr) return fail(fmt::format("VM \"{}\" not found", args[0]));
  if (key.vm_scope) return fail(fmt::format("SSH key scoped to VM \"{}\" cannot create VMs", *key.vm_scope));
  if (flags->boolean("standalone") && (flags->has("pool") || flags->has("no-pool"))) {
    return fail("--standalone cannot be combined with --pool or --no-pool");
  }
  std::string name = args.size() == 2 ? args[1] : unused_name();
  if (args.size() == 2) {
    if (auto message = validate_vm_name(name)) return fail(*message);
    if (name_taken(name)) return fail(fmt::format("name \"{}\" is not available", name));
  }
  Vm copy;
  copy.account = key.account;
  copy.record = source->record;
  copy.record.name = name;
  copy.record.status = "running";
  copy.record.created_at = now_.wall;
  if (flags->has("cpu")) {
    copy.record.cpus = static_cast<unsigned>(*flags->uint("cpu"));
    if (copy.record.cpus < 1 || copy.record.cpus > 16) return fail("--cpu must be between 1 and 16");
  }
  for (const auto& [flag, target] : {std::pair{"memory", &copy.record.memory_bytes}, std::pair{"disk", &copy.record.disk_bytes}}) {
    if (!flags->has(flag)) continue;
    const auto size = parse_size(flags->str(flag));
    if (!size || *size < gib) return fail(fmt::format("invalid --{} \"{}\"", flag, flags->str(flag)));
    *target = *size;
  }
  if (flags->has("standalone")) copy.record.standalone = flags->boolean("standalone");
  if (flags->has("egress")) {
    if (auto refused = refuse_egress(flags->str("egress"))) return *refused;
    copy.record.egress = flags->str("egress");
  }
  std::set<std::string> tags;
  if (flags->boolean("copy-tags", true)) tags.insert(copy.record.tags.begin(), copy.record.tags.end());
  if (key.spec.tag) tags.insert(*key.spec.tag);
  copy.record.tags.assign(tags.begin(), tags.end());
  copy.id = new_id();
  copy.record.dir = host_.vm_directory(copy.id);
  copy.record.home = copy.record.dir / "home";
  copy.boot_status = "starting";
  copy.generation = next_generation_++;
  NewVm created;
  created.copy_from = source->record.dir;
  created.source_name = args[0];
  created.boot_delay = config_.modes.boot_delay;
  if (config_.modes.cp_response == CpResponse::new_like) {
    created.reply = [config = config_, names_port = names_port_, source_name = source->record.name](const Vm& made, Instant) {
      Json json = new_details(made.record, SshWhere{made.ssh_port, names_port}, config);
      json["source"] = source_name;
      return ok(json);
    };
  } else {
    created.reply = [config = config_, names_port = names_port_, source_name = source->record.name, begun](const Vm& made,
                                                                                                             Instant now) {
      Json json{{"name", made.record.name}, {"state", "starting"}, {"source", source_name}};
      // `ssh` is the legacy form's destination; the endpoint's fields follow it (docs/emulator.md).
      Json where;
      add_ssh_fields(where, made.record.name, SshWhere{made.ssh_port, names_port}, config);
      json["ssh"] = where["ssh_dest"];
      if (made.ssh_port != 0) {
        for (const char* field : {"ssh_host", "ssh_port", "ssh_user"}) {
          if (where.contains(field)) json[field] = where[field];
        }
      }
      json["elapsed"] = std::chrono::duration<double>(now.steady - begun).count();
      return ok(json);
    };
  }
  created.vm = std::move(copy);
  return create_vm(std::move(created));
}

std::variant<Reply, SshPlan> Lobby::cmd_ls(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  Json list = Json::array();
  for (const auto& [name, vm] : vms_) {  // std::map: sorted by name, each VM once
    if (find_visible(key, name) == nullptr) continue;
    if (!flags->positional.empty()) {
      // Init-captures: Clang 14 cannot capture structured bindings.
      const bool matched = std::any_of(flags->positional.begin(), flags->positional.end(),
                                       [&name = name, &vm = vm](const std::string& pattern) {
        if (::fnmatch(pattern.c_str(), name.c_str(), 0) == 0) return true;
        return std::any_of(vm.record.tags.begin(), vm.record.tags.end(),
                           [&](const std::string& tag) { return ::fnmatch(pattern.c_str(), tag.c_str(), 0) == 0; });
      });
      if (!matched) continue;
    }
    Json item;
    item["vm_name"] = name;
    add_ssh_fields(item, name, ssh_where(vm), config_);
    item.erase("ssh_command");  // ls names no command
    item["status"] = vm_status(vm);
    item["region"] = region;
    item["region_display"] = region_display;
    item["https_url"] = "https://" + host_of(name);
    if (vm.record.image != "exeuntu") item["image"] = vm.record.image;
    else item["shelley_url"] = "https://" + name + ".shelley.exe.xyz";
    if (!vm.record.tags.empty()) item["tags"] = vm.record.tags;
    if (!vm.record.comment.empty()) item["comment"] = vm.record.comment;
    item["created_at"] = rfc3339(vm.record.created_at);
    item["disk_capacity_bytes"] = vm.record.disk_bytes;
    item["memory_capacity_bytes"] = vm.record.memory_bytes;
    item["allocated_cpus"] = vm.record.cpus;
    list.push_back(std::move(item));
  }
  Json json{{"vms", list}};
  if (flags->boolean("a")) json["team_vms"] = Json::array();
  return ok(json);
}

std::variant<Reply, SshPlan> Lobby::cmd_rm(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (flags->positional.empty()) return fail("please specify at least one VM name to delete");
  std::vector<std::string> names;
  for (const std::string& name : flags->positional) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  // rm reports each failure as its own JSON line and still succeeds (spec §3.4).
  std::string body;
  Json deleted = Json::array();
  Json failed = Json::array();
  for (const std::string& name : names) {
    if (find_visible(key, name) == nullptr) {
      body += dump(Json{{"error", fmt::format("VM \"{}\" not found", name)}}) + "\n";
      failed.push_back(name);
      continue;
    }
    remove_vm(name);
    deleted.push_back(name);
  }
  body += dump(Json{{"deleted", deleted}, {"failed", failed}});
  return json_reply(200, body);
}

Lobby::Vm* Lobby::only_vm_argument(const Key& key, const Prepared& request, const char* usage,
                                   std::optional<Reply>& error) {
  const auto flags = parse_command_flags(request, error);
  if (!flags) return nullptr;
  if (flags->positional.size() != 1) {
    error = fail(usage);
    return nullptr;
  }
  Vm* vm = find_visible(key, flags->positional[0]);
  if (vm == nullptr) error = fail(fmt::format("VM \"{}\" not found", flags->positional[0]));
  return vm;
}

std::variant<Reply, SshPlan> Lobby::cmd_pause(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  Vm* vm = only_vm_argument(key, request, "usage: pause <vm>", error);
  if (vm == nullptr) return *error;
  if (!vm_ready(*vm)) return fail(fmt::format("VM \"{}\" is in state \"{}\" and cannot be paused", vm->record.name, vm_status(*vm)));
  if (vm->record.status == "paused") return fail(fmt::format("VM \"{}\" is already paused", vm->record.name));
  // A paused VM serves no SSH: its connections close, new ones are denied (the landing table).
  plan_host_work(CloseSshConnections{vm->id});
  plan_host_work(StopVmProcesses{vm->id});
  vm->record.status = "paused";
  persist();
  return ok({{"vm_name", vm->record.name}, {"status", "paused"}});
}

std::variant<Reply, SshPlan> Lobby::cmd_resume(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  Vm* vm = only_vm_argument(key, request, "usage: resume <vm>", error);
  if (vm == nullptr) return *error;
  if (vm->record.status != "paused") return fail(fmt::format("VM \"{}\" is not paused", vm->record.name));
  plan_host_work(ContinueVmProcesses{vm->id});
  vm->record.status = "running";
  persist();
  return ok({{"vm_name", vm->record.name}, {"status", "running"}});
}

std::variant<Reply, SshPlan> Lobby::cmd_restart(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  Vm* vm = only_vm_argument(key, request, "usage: restart <vm>", error);
  if (vm == nullptr) return *error;
  if (!vm_ready(*vm)) return fail(fmt::format("VM is in state \"{}\" and cannot be restarted", vm_status(*vm)));
  plan_host_work(CloseSshConnections{vm->id});
  plan_host_work(KillVmProcesses{vm->id});
  vm->record.status = "running";
  vm->boot_status = "starting";
  vm->ready_at = now_.wall + config_.modes.boot_delay;
  vm->generation = next_generation_++;
  persist();
  return ok({{"vm_name", vm->record.name}, {"status", "restarted"}});
}

std::variant<Reply, SshPlan> Lobby::cmd_tag(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (key.spec.tag) return fail(fmt::format("SSH key scoped to tag \"{}\" cannot modify tags", *key.spec.tag));
  const auto& args = flags->positional;
  if (args.size() < 2) return fail("usage: tag [-d] <vm> <tag>...");
  Vm* vm = find_visible(key, args[0]);
  if (vm == nullptr) return fail(fmt::format("vm \"{}\" not found", args[0]));
  const bool remove = flags->boolean("d");
  std::set<std::string> seen;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (auto message = validate_tag(args[i])) return fail(*message);
    if (!seen.insert(args[i]).second) return fail(fmt::format("tag \"{}\" specified more than once", args[i]));
    const bool present = has_tag(vm->record, args[i]);
    if (!remove && present) return fail(fmt::format("tag \"{}\" already exists on vm", args[i]));
    if (remove && !present) return fail(fmt::format("tag \"{}\" not found on vm", args[i]));
  }
  auto& tags = vm->record.tags;
  for (const std::string& tag : seen) {
    if (remove) tags.erase(std::remove(tags.begin(), tags.end(), tag), tags.end());
    else tags.push_back(tag);
  }
  std::sort(tags.begin(), tags.end());
  persist();
  return ok({{"vm_name", vm->record.name}, {"tags", tags}});
}

std::variant<Reply, SshPlan> Lobby::cmd_comment(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  const auto& args = flags->positional;
  if (args.size() < 2) return fail("usage: comment <vm> <text...>");
  Vm* vm = find_visible(key, args[0]);
  if (vm == nullptr) return fail(fmt::format("VM \"{}\" not found", args[0]));
  const std::string text(trim_space(join(std::vector<std::string>(args.begin() + 1, args.end()), " ")));
  if (auto message = validate_comment(text)) return fail(*message);
  vm->record.comment = text;
  persist();
  return ok({{"vm_name", vm->record.name}, {"comment", text}});
}

std::variant<Reply, SshPlan> Lobby::cmd_ssh(const Key& key, const Prepared& request) {
  std::vector<std::string> words;
  const auto target = ssh_target(request.arguments, &words);
  if (!target || target->empty()) return fail("usage: ssh [-l user] [user@]vmname command...");
  Vm* vm = find_visible(key, *target);
  if (vm == nullptr) return fail(fmt::format("VM \"{}\" not found", *target));
  if (words.empty()) return fail("ssh over HTTPS needs a command: interactive sessions need a PTY");
  SshPlan plan;
  plan.line = join(words, " ");
  if (vm->record.status == "paused") {
    if (config_.modes.paused_vm_ssh == PausedVmSsh::refuse) return fail(fmt::format("VM \"{}\" is paused", vm->record.name));
    plan_host_work(ContinueVmProcesses{vm->id});
    vm->record.status = "running";
    persist();
  }
  if (!vm_ready(*vm)) {
    if (config_.modes.unready_true_quirk && plan.line == "true") {
      plan.answer_without_running = true;
    } else {
      return fail("failed to connect to VM: dial tcp: connect: connection refused");
    }
  }
  plan.vm = vm->record.name;
  plan.vm_id = vm->id;
  plan.generation = vm->generation;
  plan.home = vm->record.home;
  plan.env = vm->record.env;
  return plan;
}

}  // namespace exedev::emulator
