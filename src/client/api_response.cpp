#include "client/api_response.hpp"

#include <exedev/errors.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace exedev {

VMStatus VMStatus::parse(std::string_view text) {
  static constexpr std::pair<std::string_view, Kind> known[] = {
      {"creating", Kind::creating}, {"starting", Kind::starting}, {"pending", Kind::pending},
      {"running", Kind::running},   {"paused", Kind::paused},     {"stopped", Kind::stopped},
      {"failed", Kind::failed},     {"building", Kind::building}, {"unknown", Kind::unknown},
  };
  VMStatus status;
  status.raw = std::string(text);
  status.kind = text.empty() ? Kind::unknown : Kind::other;
  for (const auto& [name, kind] : known) {
    if (text == name) status.kind = kind;
  }
  return status;
}

namespace detail {

namespace {

using nlohmann::json;

std::string mask(std::string text, const std::vector<std::string>& secrets) {
  for (const auto& secret : secrets) {
    if (secret.size() < 3) continue;  // too short to mask without mangling ordinary words
    for (auto pos = text.find(secret); pos != std::string::npos; pos = text.find(secret, pos + 3)) {
      text.replace(pos, secret.size(), "***");
    }
  }
  return text;
}

// All JSON values of a body: one object, or NDJSON (rm writes error lines before its result).
std::vector<json> parse_values(std::string_view body) {
  std::vector<json> values;
  std::size_t start = 0;
  while (start < body.size()) {
    auto end = body.find('\n', start);
    if (end == std::string_view::npos) end = body.size();
    const auto line = body.substr(start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
      values.push_back(json::parse(line));  // throws json::parse_error
    }
    start = end + 1;
  }
  return values;
}

json last_object(std::string_view body, const std::string& command) {
  try {
    auto values = parse_values(body);
    if (values.empty() || !values.back().is_object()) {
      throw ProtocolError(fmt::format("exe.dev answered \"{}\" without a JSON object", command));
    }
    return std::move(values.back());
  } catch (const json::exception&) {
    throw ProtocolError(fmt::format("exe.dev answered \"{}\" with unreadable JSON", command));
  }
}

std::optional<std::string> error_only(const json& object) {
  if (object.is_object() && object.size() == 1 && object.contains("error") && object["error"].is_string()) {
    return object["error"].get<std::string>();
  }
  return std::nullopt;
}

std::string str(const json& o, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    const auto it = o.find(key);
    if (it != o.end() && it->is_string()) return it->get<std::string>();
  }
  return {};
}

template <typename T>
std::optional<T> number(const json& o, const char* key) {
  const auto it = o.find(key);
  if (it != o.end() && it->is_number_integer() && it->get<std::int64_t>() >= 0) return it->get<T>();
  return std::nullopt;
}

std::vector<std::string> strings(const json& o, const char* key) {
  std::vector<std::string> out;
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return out;
  if (!it->is_array()) throw ProtocolError(fmt::format("exe.dev answer field \"{}\" is not a list", key));
  for (const auto& v : *it) {
    if (!v.is_string()) throw ProtocolError(fmt::format("exe.dev answer field \"{}\" holds a non-string", key));
    out.push_back(v.get<std::string>());
  }
  return out;
}

// A TCP port (1-65535), or nullopt when absent or out of range.
std::optional<std::uint16_t> port_of(const json& o, const char* key) {
  const auto port = number<std::uint64_t>(o, key);
  if (port && *port > 0 && *port <= 65535) return static_cast<std::uint16_t>(*port);
  return std::nullopt;
}

bool flag(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_boolean() && it->get<bool>();
}

// Array `key` of objects, each read by `read`; absent or null is empty.
template <typename T, typename Read>
std::vector<T> objects(const json& o, const char* key, Read read) {
  std::vector<T> out;
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return out;
  if (!it->is_array()) throw ProtocolError(fmt::format("exe.dev answer field \"{}\" is not a list", key));
  for (const auto& v : *it) {
    if (!v.is_object()) throw ProtocolError(fmt::format("exe.dev answer field \"{}\" holds a non-object", key));
    out.push_back(read(v));
  }
  return out;
}

VMInfo vm_from(const json& o, const std::string& command) {
  if (!o.is_object()) throw ProtocolError(fmt::format("exe.dev answered \"{}\" with a VM that is not an object", command));
  VMInfo vm;
  // `new` and newer `cp` say vm_name; the legacy `cp` says name (and state, ssh).
  vm.name = str(o, {"vm_name", "name", "vm"});
  if (vm.name.empty()) throw ProtocolError(fmt::format("exe.dev answered \"{}\" without a VM name", command));
  vm.status = VMStatus::parse(str(o, {"status", "state"}));
  vm.tags = strings(o, "tags");
  vm.comment = str(o, {"comment"});
  vm.image = str(o, {"image"});
  vm.region = str(o, {"region"});
  vm.region_display = str(o, {"region_display"});
  vm.shelley_url = str(o, {"shelley_url"});
  vm.created_at = str(o, {"created_at"});
  vm.ssh_dest = str(o, {"ssh_dest", "ssh"});
  vm.ssh_host = str(o, {"ssh_host"});
  vm.ssh_user = str(o, {"ssh_user"});
  vm.ssh_port = port_of(o, "ssh_port");
  vm.https_url = str(o, {"https_url"});
  vm.proxy_port = port_of(o, "proxy_port");
  vm.disk_capacity_bytes = number<std::uint64_t>(o, "disk_capacity_bytes");
  vm.memory_capacity_bytes = number<std::uint64_t>(o, "memory_capacity_bytes");
  vm.allocated_cpus = number<unsigned>(o, "allocated_cpus");
  return vm;
}

// Runs a parse step, turning nlohmann's type errors into ProtocolError.
template <typename F>
auto guarded(const std::string& command, F&& f) {
  try {
    return f();
  } catch (const json::exception&) {
    throw ProtocolError(fmt::format("exe.dev answered \"{}\" with JSON of an unexpected shape", command));
  }
}

}  // namespace

std::string server_message(std::string_view body, const std::vector<std::string>& secrets) {
  try {
    const auto values = parse_values(body);
    if (!values.empty()) {
      if (auto msg = error_only(values.back())) return mask(*msg, secrets);
      if (values.back().is_object() && values.back().contains("error") && values.back()["error"].is_string()) {
        return mask(values.back()["error"].get<std::string>(), secrets);
      }
    }
  } catch (const json::exception&) {
    // Not JSON (a proxy's page, say): its content is never repeated, only its size.
  }
  return body.empty() ? std::string() : fmt::format("an answer that is not exe.dev's JSON ({} bytes)", body.size());
}

void throw_api_error(unsigned status, const std::string& command, std::string_view body,
                     const std::vector<std::string>& secrets, std::optional<std::chrono::milliseconds> retry_after) {
  auto msg = server_message(body, secrets);
  switch (errc_for_status(status)) {
    case errc::bad_request: throw BadRequestError(status, command, std::move(msg));
    case errc::authentication_failed: throw AuthenticationError(status, command, std::move(msg));
    case errc::permission_denied: throw PermissionError(status, command, std::move(msg));
    case errc::unknown_command: throw NotFoundError(status, command, std::move(msg));
    case errc::command_failed: throw CommandFailedError(status, command, std::move(msg));
    case errc::rate_limited: throw RateLimitedError(command, std::move(msg), retry_after);
    case errc::gateway_timeout: throw GatewayTimeoutError(status, command, std::move(msg));
    case errc::server_error: throw ServerError(status, command, std::move(msg));
    default: throw APIError(status, command, std::move(msg));
  }
}

void check_lobby_answer(unsigned status, const std::string& command, std::string_view body,
                        const std::vector<std::string>& secrets, std::optional<std::chrono::milliseconds> retry_after) {
  if (status != 200) throw_api_error(status, command, body, secrets, retry_after);
  // A key "error" is spelt out or escaped: a body with neither is no error answer, and its
  // command's own parser reads it (not parsing it twice saves most of this check's cost).
  if (body.find("error") == std::string_view::npos && body.find('\\') == std::string_view::npos) return;
  std::optional<std::string> error;
  try {
    const auto values = parse_values(body);
    if (!values.empty()) error = error_only(values.back());
  } catch (const json::exception&) {
    return;  // the command's own parser reports unreadable JSON
  }
  if (!error) return;
  if (*error == "unknown command") throw NotFoundError(404, command, *error);
  throw CommandFailedError(200, command, mask(*error, secrets));
}

VMInfo parse_vm_answer(std::string_view body, const std::string& command) {
  const auto o = last_object(body, command);
  return guarded(command, [&] { return vm_from(o, command); });
}

std::vector<VMInfo> parse_list_answer(std::string_view body) {
  const auto o = last_object(body, "ls");
  return guarded("ls", [&] {
    std::vector<VMInfo> vms;
    const auto it = o.find("vms");
    if (it == o.end() || !it->is_array()) throw ProtocolError("exe.dev answered \"ls\" without a \"vms\" list");
    for (const auto& v : *it) vms.push_back(vm_from(v, "ls"));
    return vms;
  });
}

RemoveResult parse_remove_answer(std::string_view body) {
  const auto o = last_object(body, "rm");
  return guarded("rm", [&] {
    if (!o.contains("deleted") && !o.contains("failed")) {
      throw ProtocolError("exe.dev answered \"rm\" without \"deleted\" or \"failed\"");
    }
    return RemoveResult{strings(o, "deleted"), strings(o, "failed")};
  });
}

std::vector<std::string> parse_tags_answer(std::string_view body) {
  const auto o = last_object(body, "tag");
  return guarded("tag", [&] {
    if (!o.contains("tags")) throw ProtocolError("exe.dev answered \"tag\" without \"tags\"");
    return strings(o, "tags");
  });
}

WhoAmI parse_whoami_answer(std::string_view body) {
  const auto o = last_object(body, "whoami");
  return guarded("whoami", [&] {
    WhoAmI who;
    who.email = str(o, {"email"});
    who.region = str(o, {"region"});
    who.ssh_keys = objects<AccountKey>(o, "ssh_keys", [](const json& key) {
      return AccountKey{str(key, {"public_key"}), str(key, {"fingerprint"}), str(key, {"name"})};
    });
    if (who.email.empty()) throw ProtocolError("exe.dev answered \"whoami\" without an email");
    return who;
  });
}

ResizeResult parse_resize_answer(std::string_view body) {
  const auto o = last_object(body, "resize");
  return guarded("resize", [&] {
    ResizeResult result;
    result.old_memory_bytes = number<std::uint64_t>(o, "old_memory");
    result.new_memory_bytes = number<std::uint64_t>(o, "new_memory");
    result.old_cpus = number<unsigned>(o, "old_cpus");
    result.new_cpus = number<unsigned>(o, "new_cpus");
    result.old_disk_bytes = number<std::uint64_t>(o, "disk_old_bytes");
    result.new_disk_bytes = number<std::uint64_t>(o, "disk_new_bytes");
    return result;
  });
}

ShareInfo parse_share_show_answer(std::string_view body) {
  const std::string command = "share show";
  const auto o = last_object(body, command);
  return guarded(command, [&] {
    ShareInfo info;
    info.vm_name = str(o, {"vm_name"});
    if (info.vm_name.empty()) throw ProtocolError("exe.dev answered \"share show\" without a VM name");
    info.visibility = str(o, {"status"});
    info.port = port_of(o, "port").value_or(0);
    info.url = str(o, {"url"});
    info.users = objects<ShareUser>(o, "users", [](const json& u) {
      return ShareUser{str(u, {"email"}), str(u, {"status"}), str(u, {"invited_at"})};
    });
    info.links = objects<ShareLinkInfo>(o, "links", [](const json& l) {
      ShareLinkInfo link;
      link.token = str(l, {"token"});
      link.created_at = str(l, {"created_at"});
      link.use_count = number<std::int64_t>(l, "use_count").value_or(0);
      if (const auto it = l.find("last_used_at"); it != l.end() && it->is_string()) link.last_used_at = it->get<std::string>();
      return link;
    });
    info.teams = objects<ShareTeam>(o, "teams", [](const json& t) {
      return ShareTeam{str(t, {"team_id"}), str(t, {"team_name"})};
    });
    info.team_access = flag(o, "team_access");
    info.team_ssh = flag(o, "team_ssh");
    info.team_shelley = flag(o, "team_shelley");
    info.support_has_root = flag(o, "support_has_root");
    return info;
  });
}

ShareRoute parse_share_route_answer(std::string_view body, const std::string& command) {
  const auto o = last_object(body, command);
  return guarded(command, [&] {
    ShareRoute route;
    route.vm_name = str(o, {"vm_name"});
    const auto port = port_of(o, "port");
    if (route.vm_name.empty() || !port) {
      throw ProtocolError(fmt::format("exe.dev answered \"{}\" without the VM name and port", command));
    }
    route.port = *port;
    route.visibility = str(o, {"share"});
    route.team_access = flag(o, "team_access");
    route.team_ssh = flag(o, "team_ssh");
    route.team_shelley = flag(o, "team_shelley");
    return route;
  });
}

ShareLinkCreated parse_share_link_answer(std::string_view body) {
  const std::string command = "share add-link";
  const auto o = last_object(body, command);
  return guarded(command, [&] {
    ShareLinkCreated link{str(o, {"vm_name"}), str(o, {"token"}), str(o, {"url"})};
    if (link.token.empty() || link.url.empty()) {
      throw ProtocolError("exe.dev answered \"share add-link\" without the link's token and URL");
    }
    return link;
  });
}

ShareChange parse_share_change_answer(std::string_view body, const std::string& command) {
  const auto o = last_object(body, command);
  return guarded(command, [&] {
    if (str(o, {"status"}) != "success") {
      throw ProtocolError(fmt::format("exe.dev answered \"{}\" without \"status\": \"success\"", command));
    }
    return ShareChange{str(o, {"vm_name"}), str(o, {"shared_with"}), str(o, {"team_name"}), str(o, {"message"})};
  });
}

void parse_object_answer(std::string_view body, const std::string& command) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return;  // an empty success is fine
  (void)last_object(body, command);
}

}  // namespace detail
}  // namespace exedev
