#pragma once
// The fixture of the lobby's tests on the real host: a Lobby on a FileVmHost in a temporary
// state directory, and requests run through its three stages as the server would. (The tests
// on an in-memory host are in lobby_host_test.cpp.)

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
using exedev::emulator::Lobby;
using exedev::emulator::LobbyConfig;
using exedev::emulator::Reply;
using exedev::emulator::SshPlan;
using exedev::emulator::Prepared;
using Json = nlohmann::json;

inline std::filesystem::path make_temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "emulator-lobby-test-XXXXXX").string();
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  return pattern;
}

/// Requests run through the lobby's three stages as the server would, as `token` unless told.
struct LobbyDriver {
  std::unique_ptr<Lobby> lobby;
  std::string token;

  std::variant<Reply, SshPlan> run(const std::string& line, const std::string& as = {}) {
    const std::string who = as.empty() ? token : as;
    auto authorized = lobby->authorize("POST", "Bearer " + who);
    if (auto* reply = std::get_if<Reply>(&authorized)) return *reply;
    auto prepared = lobby->prepare(who, line);
    if (auto* reply = std::get_if<Reply>(&prepared)) return *reply;
    return lobby->execute(std::get<Prepared>(prepared), Lobby::Clock::now());
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
  FileVmHost host{dir};

  Fixture() {
    lobby = std::make_unique<Lobby>(LobbyConfig{}, host);
    token = lobby->default_token();
  }
  ~Fixture() {
    lobby->kill_all_processes();
    lobby.reset();  // before the host it uses
    std::filesystem::remove_all(dir);
  }

  /// A new lobby on the same state directory, as a restarted emulator.
  void restart() { lobby = std::make_unique<Lobby>(LobbyConfig{}, host); }
};

inline std::string header(const Reply& reply, const std::string& name) {
  for (const auto& [key, value] : reply.headers) {
    if (key == name) return value;
  }
  return {};
}

}  // namespace lobby_test
