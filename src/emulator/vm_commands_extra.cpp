// The lobby commands beyond the ones the sandbox layer needs: resize, rename, stat, share
// (show, port, set-public, set-private, add, remove, add-link, remove-link, access) and
// exe0-to-exe1. Shapes, errors and
// tag-scope rules follow exe.dev's server code at the commit exedev-api.md §0 names
// (docs/emulator.md lists each detail and its file). Each handler changes the state and plans
// its host work as data (lobby.hpp).
#include "emulator/lobby.hpp"
#include "emulator/lobby_internal.hpp"

#include "emulator/validation.hpp"

#include "common/random_ids.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace exedev::emulator {

namespace {

// Resize limits: at least 2 GiB and 1 CPU (stage/stage.go); this emulator's plan allows what
// `new` allows (16 CPUs, 64 GiB memory, 500 GiB disk); a disk grows by at most 250 GiB at once.
constexpr std::uint64_t min_memory = 2 * gib;
constexpr std::uint64_t max_memory = 64 * gib;
constexpr unsigned long long max_cpus = 16;
constexpr std::uint64_t max_disk = 500 * gib;
constexpr std::uint64_t max_disk_growth = 250 * gib;

// exe.dev's byte formatting (execore/format.go): 1024-based units labelled GB/MB/KB.
std::string format_bytes(std::uint64_t bytes) {
  const auto with_unit = [&](std::uint64_t unit, const char* label) {
    if (bytes % unit == 0) return fmt::format("{} {}", bytes / unit, label);
    return fmt::format("{:.1f} {}", static_cast<double>(bytes) / static_cast<double>(unit), label);
  };
  if (bytes >= gib) return with_unit(gib, "GB");
  if (bytes >= 1024 * 1024) return with_unit(1024 * 1024, "MB");
  if (bytes >= 1024) return with_unit(1024, "KB");
  return fmt::format("{} B", bytes);
}

// Go encodes a map with its keys sorted, as nlohmann::json (not ordered_json) does.
Reply ok_sorted(const nlohmann::json& json) { return json_reply(200, json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)); }

std::string proxy_url(const std::string& vm) { return "https://" + host_of(vm); }

// updateBoxRoute's answer (execore/ssh_share.go) after a route change.
Reply route_updated(const std::string& vm, unsigned port, const std::string& share, bool team_access) {
  return ok_sorted({{"vm_name", vm}, {"port", port}, {"share", share}, {"team_access", team_access},
                    {"team_ssh", team_access}, {"team_shelley", team_access}, {"status", "updated"}});
}

// isValidEmail (execore): one @ with text on both sides and a dot in the domain.
bool valid_email(const std::string& email) {
  const auto at = email.find('@');
  if (at == std::string::npos || at == 0 || email.find('@', at + 1) != std::string::npos) return false;
  const auto dot = email.find('.', at + 1);
  return dot != std::string::npos && dot > at + 1 && dot + 1 < email.size() &&
         email.find_first_of(" \t\r\n") == std::string::npos;
}

std::string lowercase_trimmed(std::string text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  const auto last = text.find_last_not_of(" \t\r\n");
  text = first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace

bool allowed_for_tag_scoped_keys(const std::string& command) {
  // exe.dev's command tree marks these AllowTagScoped (execore/ssh_command_handlers.go,
  // ssh_share.go, ssh_key_command.go). `pause` and `resume` are newer than that code; like every
  // command not marked they are refused (deny-by-default), and so are resize and exe0-to-exe1.
  static const std::set<std::string> allowed = {"help", "doc", "ls", "new", "rm", "restart", "rename", "tag", "stat",
                                                "cp", "comment", "whoami", "ssh"};
  return allowed.count(command) > 0 || command.rfind("share ", 0) == 0 || command.rfind("ssh-key ", 0) == 0;
}

std::vector<Lobby::Command> Lobby::extra_commands() {
  using K = FlagKind;
  const FlagSpec json{"json", K::boolean, {}, "JSON output (always on over HTTPS)"};
  return {
      {"resize", &Lobby::cmd_resize, false,
       {{"memory", K::string, {}, "memory allocation (e.g., 4, 4GB, 8G)"}, {"cpu", K::uint, {}, "number of CPUs"},
        {"disk", K::string, {}, "new total disk size (e.g., 25, 25GB) - must be larger than current size"}, json},
       "resize <vmname> [--memory=<size>] [--cpu=<count>] [--disk=<size>]", "Resize a VM's resources (memory, CPU, disk)"},
      {"rename", &Lobby::cmd_rename, false, {json}, "rename <oldname> <newname>", "rename a vm"},
      {"stat", &Lobby::cmd_stat, false, {{"range", K::string, {}, "time range: 24h, 7d, or 30d"}, json},
       "stat <vm-name> [--range=24h|7d|30d]", "Show CPU, memory, disk, and IO metrics for a VM"},
      {"share show", &Lobby::cmd_share_show, false, {json, {"qr", K::boolean, {}, "show a QR code"}}, "share show <vm>",
       "Show current shares for a VM"},
      {"share set-public", &Lobby::cmd_share_set_public, false, {json}, "share set-public <vm>",
       "Make the HTTP proxy publicly accessible"},
      {"share set-private", &Lobby::cmd_share_set_private, false, {json}, "share set-private <vm>",
       "Restrict the HTTP proxy to authenticated users"},
      {"share add-link", &Lobby::cmd_share_add_link, false, {json, {"qr", K::boolean, {}, "show a QR code"}},
       "share add-link <vm>", "Create a shareable link for a VM"},
      {"share port", &Lobby::cmd_share_port, false, {json}, "share port <vm> [port]", "Set the HTTP proxy port for a VM"},
      {"share remove-link", &Lobby::cmd_share_remove_link, false, {json}, "share remove-link <vm> <token>",
       "Revoke a shareable link"},
      {"share add", &Lobby::cmd_share_add, false,
       {json, {"message", K::string, {}, "message to include in share invitation"}, {"qr", K::boolean, {}, "show a QR code"}},
       "share add <vm> <email|team> [--message='...']", "Share VM with a user via email"},
      {"share remove", &Lobby::cmd_share_remove, false, {json}, "share remove <vm> <email|team>",
       "Revoke a user's access to a VM"},
      {"share access allow", &Lobby::cmd_share_access_allow, false, {json}, "share access allow <vm>",
       "Allow team SSH and Shelley access"},
      {"share access disallow", &Lobby::cmd_share_access_disallow, false, {json}, "share access disallow <vm>",
       "Disallow team SSH and Shelley access"},
      {"exe0-to-exe1", &Lobby::cmd_exe0_to_exe1, false, {{"vm", K::string, {}, "scope token to a specific VM"}, json},
       "exe0-to-exe1 [--vm=VMNAME] <exe0-token>", "trade an exe0 token for an exe1 token"},
  };
}

std::variant<Reply, SshPlan> Lobby::cmd_resize(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (flags->positional.size() != 1) {
    return fail("usage: resize <vmname> --disk=<size>\nDisk size is in GiB (e.g., '25' for 25 GiB). Disk can only be grown, not shrunk.");
  }
  const std::string& name = flags->positional[0];
  const std::string memory = flags->str("memory");
  const auto cpus = flags->uint("cpu").value_or(0);
  const std::string disk = flags->str("disk");
  if (memory.empty() && cpus == 0 && disk.empty()) {
    return fail("usage: resize <vmname> [--memory=<size>] [--cpu=<count>] [--disk=<size>]\nAt least one of --memory, --cpu, or --disk must be specified.");
  }
  Vm* vm = find_visible(key, name);
  if (vm == nullptr) return fail(fmt::format("VM \"{}\" not found", name));
  if (!vm_ready(*vm) && vm->boot_status == "creating") return fail(fmt::format("VM \"{}\" has no container ID", name));

  nlohmann::json result{{"vm_name", name}};
  // As exe.dev does: the disk grows (and stays grown) before memory and CPU are checked.
  if (!disk.empty()) {
    const auto size = parse_size(disk);
    if (!size) return fail(fmt::format("invalid --disk value: \"{}\" is not a size", disk));
    if (*size > max_disk) {
      return fail(fmt::format("requested size {} exceeds the {} limit — contact support@exe.dev if you need more",
                              format_bytes(*size), format_bytes(max_disk)));
    }
    const std::uint64_t current = vm->record.disk_bytes;
    if (*size <= current) return fail(fmt::format("--disk must be larger than current size ({})", format_bytes(current)));
    if (*size - current > max_disk_growth) {
      return fail(fmt::format("disk growth cannot exceed {} in a single operation", format_bytes(max_disk_growth)));
    }
    vm->record.disk_bytes = *size;
    persist();
    result["disk_old_bytes"] = current;
    result["disk_new_bytes"] = *size;
  }
  if (!memory.empty() || cpus > 0) {
    std::uint64_t new_memory = vm->record.memory_bytes;
    if (!memory.empty()) {
      const auto size = parse_size(memory);
      if (!size) return fail(fmt::format("invalid --memory value: \"{}\" is not a size", memory));
      if (*size < min_memory) return fail(fmt::format("--memory must be at least {}", format_bytes(min_memory)));
      if (*size > max_memory) {
        return fail(fmt::format("--memory cannot exceed {} — contact support@exe.dev if you need more", format_bytes(max_memory)));
      }
      new_memory = *size;
    }
    if (cpus > max_cpus) return fail(fmt::format("--cpu cannot exceed {} — contact support@exe.dev if you need more", max_cpus));
    result["old_memory"] = vm->record.memory_bytes;
    result["new_memory"] = new_memory;
    result["old_cpus"] = vm->record.cpus;
    result["new_cpus"] = cpus > 0 ? static_cast<unsigned>(cpus) : vm->record.cpus;
    vm->record.memory_bytes = new_memory;
    if (cpus > 0) vm->record.cpus = static_cast<unsigned>(cpus);
    persist();
  }
  return ok_sorted(result);
}

std::variant<Reply, SshPlan> Lobby::cmd_rename(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (flags->positional.size() != 2) return fail("usage: rename <oldname> <newname>");
  const std::string old_name = flags->positional[0];
  const std::string new_name = flags->positional[1];
  if (old_name == new_name) return json_reply(200, fmt::format("{} is already named {}", old_name, new_name));
  if (auto message = validate_vm_name(new_name)) return fail("invalid new name: " + *message);
  if (!in_account(key, old_name)) return fail(fmt::format("vm \"{}\" not found", old_name));
  Vm* vm = find_visible(key, old_name);
  if (vm == nullptr) return fail(fmt::format("VM \"{}\" not found", old_name));  // out of the key's scope
  if (name_taken(new_name)) return fail(fmt::format("name \"{}\" is not available", new_name));
  if (!vm_ready(*vm) && vm->boot_status == "creating") {
    return fail(fmt::format("can't rename \"{}\" while it is still being created", old_name));
  }
  if (vm_status(*vm) != "running") return fail("vm rename not supported when vm is not running!");
  // The VM's directory is named by its id, so it stays; commands started from now on see the
  // new name in EXEDEV_EMULATOR_VM_NAME.
  auto node = vms_.extract(old_name);
  node.key() = new_name;
  node.mapped().record.name = new_name;
  vms_.insert(std::move(node));
  persist();
  return ok_sorted({{"old_name", old_name}, {"new_name", new_name}, {"status", "renamed"}});
}

std::variant<Reply, SshPlan> Lobby::cmd_stat(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (flags->positional.empty()) return fail("usage: stat <vm-name> [--range=24h|7d|30d]");
  const std::string range = flags->str("range", "24h");
  std::string label;
  if (range == "24h" || range == "24H") label = "24h";
  else if (range == "7d" || range == "7D") label = "7d";
  else if (range == "30d" || range == "30D") label = "30d";
  else return fail(fmt::format("invalid range \"{}\" (use 24h, 7d, or 30d)", range));
  // exe.dev looks the name up among all the user's VMs, without the key's tag scope.
  const auto it = vms_.find(flags->positional[0]);
  if (it == vms_.end() || it->second.account != key.account) return fail("VM not found: " + flags->positional[0]);
  // The emulator collects no metrics: the series is empty.
  Json json;
  json["name"] = it->first;
  json["status"] = vm_status(it->second);
  json["range"] = label;
  json["points"] = Json::array();
  return ok(json);
}

Lobby::Vm* Lobby::shared_vm(const Key& key, const std::string& name, std::optional<Reply>& error) {
  if (!in_account(key, name)) {
    error = fail(fmt::format("VM \"{}\" not found or access denied", name));
    return nullptr;
  }
  Vm* vm = find_visible(key, name);
  if (vm == nullptr) error = fail(fmt::format("VM \"{}\" not found", name));
  return vm;
}

std::variant<Reply, SshPlan> Lobby::cmd_share_show(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (flags->positional.empty()) return fail("usage: share show <vm>");
  Vm* vm = shared_vm(key, flags->positional[0], error);
  if (vm == nullptr) return *error;
  Json users = Json::array();
  for (const ShareInvite& invite : vm->share_invites) {
    users.push_back(Json{{"email", invite.email}, {"status", "pending"}, {"invited_at", rfc3339(invite.invited_at)}});
  }
  Json links = Json::array();
  for (const ShareLink& link : vm->share_links) {
    links.push_back(Json{{"token", link.token}, {"created_at", rfc3339(link.created_at)}, {"use_count", 0},
                         {"last_used_at", nullptr}});
  }
  // A Go map: keys in sorted order (the links are structs: field order).
  Json json;
  json["links"] = std::move(links);
  json["port"] = vm->proxy_port;
  json["status"] = vm->share;
  json["team_access"] = vm->team_access;
  json["team_shelley"] = vm->team_access;
  json["team_ssh"] = vm->team_access;
  json["teams"] = Json::array();
  json["url"] = proxy_url(vm->record.name);
  json["users"] = std::move(users);
  json["vm_name"] = vm->record.name;
  return ok(json);
}

std::variant<Reply, SshPlan> Lobby::share_visibility(const Key& key, const Prepared& request, const std::string& share) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (flags->positional.size() != 1) return fail(fmt::format("usage: share set-{} <vm>", share));
  Vm* vm = shared_vm(key, flags->positional[0], error);
  if (vm == nullptr) return *error;
  vm->share = share;
  persist();
  return route_updated(vm->record.name, vm->proxy_port, vm->share, vm->team_access);
}

std::variant<Reply, SshPlan> Lobby::cmd_share_set_public(const Key& key, const Prepared& request) {
  return share_visibility(key, request, "public");
}

std::variant<Reply, SshPlan> Lobby::cmd_share_set_private(const Key& key, const Prepared& request) {
  return share_visibility(key, request, "private");
}

std::variant<Reply, SshPlan> Lobby::cmd_share_add_link(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (flags->positional.empty()) return fail("usage: share add-link <vm>");
  Vm* vm = shared_vm(key, flags->positional[0], error);
  if (vm == nullptr) return *error;
  // crypto/rand.Text(): 26 characters of the base32 alphabet.
  const std::string token = detail::random_chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 26);
  vm->share_links.push_back(ShareLink{token, now_.wall});
  persist();
  return ok_sorted({{"status", "success"}, {"vm_name", vm->record.name}, {"token", token},
                    {"url", proxy_url(vm->record.name) + "/?share=" + token}});
}

std::variant<Reply, SshPlan> Lobby::cmd_share_port(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (flags->positional.empty()) return fail("usage: share port <vm> [port]");
  Vm* vm = shared_vm(key, flags->positional[0], error);
  if (vm == nullptr) return *error;
  if (flags->positional.size() == 1) {
    return ok_sorted({{"vm_name", vm->record.name}, {"port", vm->proxy_port}, {"share", vm->share}});
  }
  const std::string& text = flags->positional[1];
  const bool digits = !text.empty() && text.size() <= 5 && text.find_first_not_of("0123456789") == std::string::npos;
  const unsigned port = digits ? static_cast<unsigned>(std::stoul(text)) : 0;
  if (port < 3000 || port > 9999) return fail(fmt::format("port must be between 3000 and 9999, got \"{}\"", text));
  vm->proxy_port = port;
  persist();
  return route_updated(vm->record.name, vm->proxy_port, vm->share, vm->team_access);
}

std::variant<Reply, SshPlan> Lobby::cmd_share_remove_link(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (flags->positional.size() < 2) return fail("usage: share remove-link <vm> <token>");
  const std::string& name = flags->positional[0];
  const std::string& token = flags->positional[1];
  const std::string not_found = fmt::format("VM \"{}\" not found or share link '{}' not found", name, token);
  if (!in_account(key, name)) return fail(not_found);
  Vm* vm = shared_vm(key, name, error);
  if (vm == nullptr) return *error;
  auto& links = vm->share_links;
  const auto it = std::find_if(links.begin(), links.end(), [&](const ShareLink& link) { return link.token == token; });
  if (it == links.end()) return fail(not_found);
  links.erase(it);
  persist();
  return ok_sorted({{"status", "success"}, {"vm_name", vm->record.name}, {"message", "Share link removed"}});
}

std::variant<Reply, SshPlan> Lobby::cmd_share_add(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (flags->positional.size() < 2) return fail("usage: share add <vm> <email|team> [--message='...']");
  Vm* vm = shared_vm(key, flags->positional[0], error);
  if (vm == nullptr) return *error;
  const std::string email = lowercase_trimmed(flags->positional[1]);
  // The emulator's account belongs to no team.
  if (email == "team") return fail("You're not in a team");
  if (!valid_email(email)) return fail(fmt::format("invalid email address: \"{}\"", email));
  auto& invites = vm->share_invites;
  if (std::any_of(invites.begin(), invites.end(), [&](const ShareInvite& invite) { return invite.email == email; })) {
    return fail(fmt::format("{} is already shared with {}", vm->record.name, email));
  }
  // Nobody else has an account here: the share is pending, and no email is sent.
  invites.push_back(ShareInvite{email, now_.wall});
  persist();
  return ok_sorted({{"status", "success"}, {"vm_name", vm->record.name}, {"shared_with", email}, {"message", "Invitation sent"}});
}

std::variant<Reply, SshPlan> Lobby::cmd_share_remove(const Key& key, const Prepared& request) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (flags->positional.size() < 2) return fail("usage: share remove <vm> <email|team>");
  Vm* vm = shared_vm(key, flags->positional[0], error);
  if (vm == nullptr) return *error;
  const std::string email = lowercase_trimmed(flags->positional[1]);
  if (email == "team") return fail("You're not in a team");
  auto& invites = vm->share_invites;
  const auto it = std::find_if(invites.begin(), invites.end(), [&](const ShareInvite& invite) { return invite.email == email; });
  if (it == invites.end()) return fail("no share found for " + email);
  invites.erase(it);
  persist();
  return ok_sorted({{"status", "success"}, {"vm_name", vm->record.name}, {"message", fmt::format("Removed {}'s access", email)}});
}

std::variant<Reply, SshPlan> Lobby::share_access(const Key& key, const Prepared& request, bool allow) {
  std::optional<Reply> error;
  const auto flags = parse_command_flags(request, error);
  if (!flags) return *error;
  if (flags->positional.empty()) return fail(fmt::format("usage: share access {} <vm>", allow ? "allow" : "disallow"));
  Vm* vm = shared_vm(key, flags->positional[0], error);
  if (vm == nullptr) return *error;
  vm->team_access = allow;
  persist();
  return route_updated(vm->record.name, vm->proxy_port, vm->share, vm->team_access);
}

std::variant<Reply, SshPlan> Lobby::cmd_share_access_allow(const Key& key, const Prepared& request) {
  return share_access(key, request, true);
}

std::variant<Reply, SshPlan> Lobby::cmd_share_access_disallow(const Key& key, const Prepared& request) {
  return share_access(key, request, false);
}

Lobby::ProxyDecision Lobby::proxy_decision(const std::string& vm, std::uint16_t requested_port,
                                           const std::string& share_token, WallTime now) const {
  const auto it = vms_.find(vm);
  if (it == vms_.end()) return {404, "Not Found", 0};
  const Vm& found = it->second;
  const bool bare = requested_port == 0 || requested_port == found.proxy_port;
  if (!bare && (requested_port < 3000 || requested_port > 9999)) return {404, "Not Found", 0};
  const bool linked = !share_token.empty() &&
                      std::any_of(found.share_links.begin(), found.share_links.end(),
                                  [&](const ShareLink& link) { return link.token == share_token; });
  const bool public_route = requested_port == 0 && found.share == "public";
  if (!public_route && !linked) return {401, "Unauthorized", 0};
  if (found.record.status != "running" || !vm_ready(found, now)) return {502, "Bad Gateway", 0};
  return {200, "OK", static_cast<std::uint16_t>(bare ? found.proxy_port : requested_port)};
}

}  // namespace exedev::emulator
