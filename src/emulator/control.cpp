#include "emulator/control.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <charconv>

namespace exedev::emulator {
namespace {

using Json = nlohmann::ordered_json;
using std::chrono::milliseconds;

Json modes_json(const Modes& m) {
  return {{"ssh_time_limit_ms", m.ssh_time_limit ? Json(m.ssh_time_limit->count()) : Json(nullptr)},
          {"lobby_deadline_ms", m.lobby_deadline.count()},
          {"paused_vm_ssh", m.paused_vm_ssh == PausedVmSsh::refuse ? "refuse" : "auto-resume"},
          {"on_client_disconnect", m.on_client_disconnect == OnClientDisconnect::keep_running ? "keep-running" : "kill"},
          {"trailers", m.trailers == Trailers::send ? "send" : "strip"},
          {"ssh_nonzero_exit", m.ssh_nonzero_exit == SshNonzeroExit::stream ? "stream" : "unprocessable"},
          {"cut_exit_code", m.cut_exit_code ? Json(*m.cut_exit_code) : Json(nullptr)},
          {"unready_true_quirk", m.unready_true_quirk},
          {"cp_response", m.cp_response == CpResponse::legacy ? "legacy" : "new-like"},
          {"rate_limit", {{"enabled", m.rate_limit.enabled}, {"burst", m.rate_limit.burst},
                          {"refill_per_second", m.rate_limit.refill_per_second}, {"overdraft", m.rate_limit.overdraft},
                          {"retry_after", m.rate_limit.retry_after}}},
          {"latency_ms", m.latency.count()},
          {"ssh_silent", m.ssh_silent},
          {"ssh_destination", m.ssh_destination == SshDestination::vm_plus ? "vm-plus" : "vm-domain"},
          {"boot_delay_ms", m.boot_delay.count()}};
}

template <typename T>
T required(std::optional<T> value, const std::string& what) {
  if (!value) throw std::invalid_argument("invalid " + what);
  return *value;
}

Modes apply_modes(Modes m, const Json& j) {
  if (j.contains("ssh_time_limit_ms")) {
    const Json& v = j.at("ssh_time_limit_ms");
    m.ssh_time_limit = v.is_null() ? std::nullopt : std::optional(milliseconds(v.get<long long>()));
  }
  if (j.contains("lobby_deadline_ms")) m.lobby_deadline = milliseconds(j.at("lobby_deadline_ms").get<long long>());
  if (j.contains("paused_vm_ssh")) m.paused_vm_ssh = required(paused_vm_ssh_from(j.at("paused_vm_ssh").get<std::string>()), "paused_vm_ssh");
  if (j.contains("on_client_disconnect")) {
    m.on_client_disconnect = required(on_disconnect_from(j.at("on_client_disconnect").get<std::string>()), "on_client_disconnect");
  }
  if (j.contains("trailers")) m.trailers = required(trailers_from(j.at("trailers").get<std::string>()), "trailers");
  if (j.contains("ssh_nonzero_exit")) {
    m.ssh_nonzero_exit = required(ssh_nonzero_exit_from(j.at("ssh_nonzero_exit").get<std::string>()), "ssh_nonzero_exit");
  }
  if (j.contains("cut_exit_code")) {
    const Json& v = j.at("cut_exit_code");
    m.cut_exit_code = required(cut_exit_code_from(v.is_null() ? "none" : std::to_string(v.get<int>())), "cut_exit_code");
  }
  if (j.contains("unready_true_quirk")) m.unready_true_quirk = j.at("unready_true_quirk").get<bool>();
  if (j.contains("cp_response")) m.cp_response = required(cp_response_from(j.at("cp_response").get<std::string>()), "cp_response");
  if (j.contains("rate_limit")) {
    const Json& r = j.at("rate_limit");
    m.rate_limit.enabled = r.value("enabled", m.rate_limit.enabled);
    m.rate_limit.burst = r.value("burst", m.rate_limit.burst);
    m.rate_limit.refill_per_second = r.value("refill_per_second", m.rate_limit.refill_per_second);
    m.rate_limit.overdraft = r.value("overdraft", m.rate_limit.overdraft);
    m.rate_limit.retry_after = r.value("retry_after", m.rate_limit.retry_after);
  }
  if (j.contains("latency_ms")) m.latency = milliseconds(j.at("latency_ms").get<long long>());
  if (j.contains("ssh_silent")) m.ssh_silent = j.at("ssh_silent").get<bool>();
  if (j.contains("ssh_destination")) {
    m.ssh_destination = required(ssh_destination_from(j.at("ssh_destination").get<std::string>()), "ssh_destination");
  }
  if (j.contains("boot_delay_ms")) m.boot_delay = milliseconds(j.at("boot_delay_ms").get<long long>());
  return m;
}

Json vm_json(const VMRecord& vm) {
  return {{"name", vm.name}, {"status", vm.status}, {"tags", vm.tags}, {"comment", vm.comment}, {"image", vm.image},
          {"dir", vm.dir.string()}, {"home", vm.home.string()}};
}

Reply json_ok(const Json& json) {
  Reply reply;
  reply.headers = {{"Content-Type", "application/json; charset=utf-8"}};
  reply.body = json.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  return reply;
}

}  // namespace

std::optional<PausedVmSsh> paused_vm_ssh_from(std::string_view name) {
  if (name == "refuse") return PausedVmSsh::refuse;
  if (name == "auto-resume") return PausedVmSsh::auto_resume;
  return std::nullopt;
}
std::optional<OnClientDisconnect> on_disconnect_from(std::string_view name) {
  if (name == "keep-running") return OnClientDisconnect::keep_running;
  if (name == "kill") return OnClientDisconnect::kill;
  return std::nullopt;
}
std::optional<Trailers> trailers_from(std::string_view name) {
  if (name == "send") return Trailers::send;
  if (name == "strip") return Trailers::strip;
  return std::nullopt;
}
std::optional<SshNonzeroExit> ssh_nonzero_exit_from(std::string_view name) {
  if (name == "stream") return SshNonzeroExit::stream;
  if (name == "unprocessable") return SshNonzeroExit::unprocessable;
  return std::nullopt;
}
std::optional<std::optional<int>> cut_exit_code_from(std::string_view text) {
  std::optional<std::optional<int>> parsed(std::in_place);  // "none"
  if (text == "none") return parsed;
  int code = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), code);
  if (ec != std::errc() || end != text.data() + text.size() || code < 0 || code > 255) return std::nullopt;
  parsed->emplace(code);
  return parsed;
}
std::optional<CpResponse> cp_response_from(std::string_view name) {
  if (name == "legacy") return CpResponse::legacy;
  if (name == "new-like") return CpResponse::new_like;
  return std::nullopt;
}
std::optional<SshDestination> ssh_destination_from(std::string_view name) {
  if (name == "vm-plus") return SshDestination::vm_plus;
  if (name == "vm-domain") return SshDestination::vm_domain;
  return std::nullopt;
}
std::optional<FaultKind> fault_kind_from(std::string_view name) {
  if (name == "reset-before-run") return FaultKind::reset_before_run;
  if (name == "reset-after-run") return FaultKind::reset_after_run;
  if (name == "http-status") return FaultKind::http_status;
  if (name == "truncate-stream") return FaultKind::truncate_stream;
  if (name == "bad-json") return FaultKind::bad_json;
  if (name == "stall") return FaultKind::stall;
  return std::nullopt;
}

std::optional<std::optional<milliseconds>> duration_from(std::string_view text) {
  if (text == "none") return std::optional<milliseconds>{};
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return std::nullopt;
  long long n = 0;
  std::from_chars(text.data(), text.data() + digits, n);
  const std::string_view unit = text.substr(digits);
  if (unit.empty() || unit == "ms") return std::optional(milliseconds(n));
  if (unit == "s") return std::optional(milliseconds(n * 1000));
  if (unit == "m") return std::optional(milliseconds(n * 60000));
  return std::nullopt;
}

Reply control_request(Lobby& lobby, std::string_view action, std::string_view body, const ServerStats& stats,
                      Instant now, HostPlan& plan) {
  try {
    const Json input = body.empty() ? Json::object() : Json::parse(body);
    if (action == "fault") {
      Fault fault;
      fault.kind = required(fault_kind_from(input.at("kind").get<std::string>()), "fault kind");
      fault.command = input.value("command", std::string());
      fault.vm = input.value("vm", std::string());
      fault.count = input.value("count", std::size_t{1});
      fault.status = input.value("status", 500u);
      fault.after_bytes = input.value("after_bytes", std::size_t{0});
      fault.skip = input.value("skip", std::size_t{0});
      fault.duration = milliseconds(input.value("duration_ms", 60000ll));
      lobby.inject(fault);
      return json_ok({{"ok", true}});
    }
    if (action == "faults/clear") {
      lobby.clear_faults();
      return json_ok({{"ok", true}});
    }
    if (action == "modes") {
      Modes modes = apply_modes(lobby.modes(), input);
      lobby.set_modes(modes);
      return json_ok(modes_json(modes));
    }
    if (action == "token") {
      TokenSpec spec;
      if (input.contains("cmds")) spec.cmds = input.at("cmds").get<std::vector<std::string>>();
      if (input.contains("tag")) spec.tag = input.at("tag").get<std::string>();
      if (input.contains("expires_in_s")) {
        spec.expires_at = now.wall + std::chrono::seconds(input.at("expires_in_s").get<long long>());
      }
      spec.label = input.value("label", std::string());
      auto [token, saved] = lobby.issue_token(std::move(spec));
      plan.insert(plan.end(), saved.begin(), saved.end());
      return json_ok({{"token", token}});
    }
    if (action == "state") {
      Json vms = Json::array();
      for (const VMRecord& vm : lobby.vms(now.wall)) vms.push_back(vm_json(vm));
      Json commands = Json::array();
      for (const CommandRecord& record : lobby.commands()) {
        Json item{{"words", record.words}, {"command", record.command}, {"vm", record.vm}, {"http_status", record.http_status}};
        if (record.exit_code) item["exit_code"] = *record.exit_code;
        commands.push_back(std::move(item));
      }
      return json_ok({{"vms", vms}, {"commands", commands}, {"modes", modes_json(lobby.modes())},
                      {"connections_accepted", stats.connections_accepted}, {"open_connections", stats.open_connections}});
    }
    return error_reply(404, fmt::format("unknown control action \"{}\"", action));
  } catch (const nlohmann::json::parse_error&) {
    return error_reply(400, "bad control request: the body is not JSON");  // never echo the body
  } catch (const std::exception& e) {
    return error_reply(400, std::string("bad control request: ") + e.what());
  }
}

}  // namespace exedev::emulator
