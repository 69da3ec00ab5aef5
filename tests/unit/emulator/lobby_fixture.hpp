#pragma once
// The fixture of the lobby's tests on the real host: a Lobby on a FileVmHost in a temporary
// state directory, and requests run through its three stages, their plans run on the host, as
// the server does. The time the lobby is told is the driver's `now`, which only the test moves.
// (The tests on an in-memory host are in lobby_host_test.cpp.)

#include "emulator/host_runner.hpp"
#include "emulator/lobby.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <variant>

namespace lobby_test {

using exedev::emulator::FileVmHost;
using exedev::emulator::HostPlan;
using exedev::emulator::Instant;
using exedev::emulator::Lobby;
using exedev::emulator::LobbyConfig;
using exedev::emulator::Prepared;
using exedev::emulator::Reply;
using exedev::emulator::SshPlan;
using exedev::emulator::Step;
using exedev::emulator::TokenSpec;
using exedev::emulator::VMRecord;
using exedev::emulator::VmHost;
using Json = nlohmann::json;

inline std::filesystem::path make_temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "emulator-lobby-test-XXXXXX").string();
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  return pattern;
}

/// Requests run through the lobby's three stages as the server would, as `token` unless told,
/// with every plan run on `host` at once.
struct LobbyDriver {
  VmHost& host;
  std::unique_ptr<Lobby> lobby;
  std::string token;
  Instant now = Instant::now();  // read once; the lobby sees time pass only when a test moves it

  explicit LobbyDriver(VmHost& on) : host(on) {}

  /// A lobby on the host's saved state, its startup plan run, as the server makes it.
  void start(const LobbyConfig& config = {}) {
    lobby = std::make_unique<Lobby>(config, host, host.load_state(), now);
    exedev::emulator::run_host_plan(host, lobby->startup_plan());
    token = lobby->default_token();
  }
  void run_plan(const HostPlan& plan) { exedev::emulator::run_host_plan(host, plan); }
  std::variant<Reply, SshPlan> complete(Step step) {
    return exedev::emulator::complete_on_host(*lobby, host, std::move(step), [this] { return now; });
  }

  std::variant<Reply, std::string> authorize(std::string_view method, std::string_view authorization) {
    return lobby->authorize(method, authorization, now);
  }
  std::optional<VMRecord> vm(const std::string& name) const { return lobby->vm(name, now.wall); }
  std::vector<VMRecord> vms() const { return lobby->vms(now.wall); }
  std::string issue_token(TokenSpec spec) {
    auto [issued, plan] = lobby->issue_token(std::move(spec));
    run_plan(plan);
    return issued;
  }

  std::variant<Reply, SshPlan> run(const std::string& line, const std::string& as = {}) {
    const std::string who = as.empty() ? token : as;
    auto authorized = authorize("POST", "Bearer " + who);
    if (auto* reply = std::get_if<Reply>(&authorized)) return *reply;
    auto prepared = lobby->prepare(who, line);
    if (auto* reply = std::get_if<Reply>(&prepared)) return *reply;
    return complete(lobby->execute(std::get<Prepared>(prepared), now.steady, now));
  }
  Reply exec(const std::string& line, const std::string& as = {}) {
    auto outcome = run(line, as);
    REQUIRE(std::holds_alternative<Reply>(outcome));
    return std::get<Reply>(outcome);
  }
  // The last JSON object of a 200 body (rm writes several).
  Json ok(const std::string& line, const std::string& as = {}) {
    const Reply reply = exec(line, as);
    INFO(line << " -> " << reply.status << " " << reply.body);
    REQUIRE(reply.status == 200);
    REQUIRE(!reply.body.empty());
    REQUIRE(reply.body.back() == '\n');
    const auto trimmed = reply.body.substr(0, reply.body.size() - 1);
    return Json::parse(trimmed.substr(trimmed.rfind('\n') == std::string::npos ? 0 : trimmed.rfind('\n') + 1));
  }
  std::string error(const std::string& line, unsigned status = 422, const std::string& as = {}) {
    const Reply reply = exec(line, as);
    INFO(line << " -> " << reply.body);
    CHECK(reply.status == status);
    return Json::parse(reply.body).at("error").get<std::string>();
  }
};

/// A lobby on the real host, in a temporary state directory.
struct Fixture : LobbyDriver {
  std::filesystem::path dir = make_temp_dir();
  FileVmHost file_host{dir};

  Fixture() : LobbyDriver(file_host) { start(); }
  ~Fixture() {
    run_plan(lobby->kill_all_processes());
    lobby.reset();  // before the host it uses
    std::filesystem::remove_all(dir);
  }

  /// A new lobby on the same state directory, as a restarted emulator.
  void restart() { start(); }
};

inline std::string header(const Reply& reply, const std::string& name) {
  for (const auto& [key, value] : reply.headers) {
    if (key == name) return value;
  }
  return {};
}

}  // namespace lobby_test
