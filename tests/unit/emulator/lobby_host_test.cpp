// The lobby on an in-memory host (fake_vm_host.hpp): no sockets, no processes, no filesystem.
// What each command asks of the host, what it must not ask, when the state is saved, and that
// host work runs without the lobby's mutex, in the order of the state changes.
#include "emulator/lobby.hpp"
#include "emulator/turns.hpp"
#include "fake_vm_host.hpp"
#include "lobby_fixture.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

using namespace exedev::emulator;
using namespace lobby_test;
using namespace std::chrono_literals;
using Calls = std::vector<std::string>;

namespace {

/// A bound on waits that only a failing test reaches.
constexpr auto failure_bound = 20s;

struct FakeFixture : LobbyDriver {
  FakeVmHost host;

  FakeFixture() {
    lobby = std::make_unique<Lobby>(LobbyConfig{}, host);
    token = lobby->default_token();
    host.clear_calls();
  }
  ~FakeFixture() { lobby.reset(); }

  std::string id(const std::string& vm) {
    const auto found = lobby->vm_id(vm);
    REQUIRE(found);
    return *found;
  }
  std::string dir(const std::string& vm) { return "/fake/vms/" + id(vm); }
  /// `new --name=<vm>`, then forgets the host calls it made.
  void make(const std::string& vm) {
    ok("new --name=" + vm);
    host.clear_calls();
  }
};

}  // namespace

TEST_CASE("lobby on a fake host: new asks for the VM's directory, then saves the state", "[lobby][host]") {
  FakeFixture f;
  CHECK(f.ok("new --name=first-vm").at("vm_name") == "first-vm");
  const auto vm = f.lobby->vm("first-vm");
  REQUIRE(vm);
  CHECK(vm->dir == f.dir("first-vm"));
  CHECK(vm->home == vm->dir / "home");
  CHECK(f.host.calls() == Calls{"create " + f.dir("first-vm"), "open ssh " + f.id("first-vm") + " 0", "save"});
  CHECK(nlohmann::json::parse(*f.host.saved_state()).at("vms").at(0).at("name") == "first-vm");

  f.host.clear_calls();
  CHECK(f.error("new --name=first-vm") == "VM name \"first-vm\" is not available");
  CHECK(f.error("new --name=Bad").rfind("invalid VM name", 0) == 0);
  CHECK(f.ok("ls").at("vms").size() == 1);
  CHECK(f.host.calls().empty());
}

TEST_CASE("lobby on a fake host: cp copies the source's directory; a failed copy leaves no VM", "[lobby][host]") {
  FakeFixture f;
  f.make("source-vm");
  CHECK(f.ok("cp source-vm copy-vm").at("name") == "copy-vm");
  CHECK(f.id("copy-vm") != f.id("source-vm"));
  CHECK(f.host.calls() ==
        Calls{"copy " + f.dir("source-vm") + " " + f.dir("copy-vm"), "open ssh " + f.id("copy-vm") + " 0", "save"});

  f.host.clear_calls();
  f.host.copy_error = std::make_error_code(std::errc::no_space_on_device);
  const std::string message = f.error("cp source-vm broken-copy");
  CHECK(message.rfind("failed to copy \"source-vm\": ", 0) == 0);
  CHECK(message.find(std::make_error_code(std::errc::no_space_on_device).message()) != std::string::npos);
  CHECK_FALSE(f.lobby->vm("broken-copy"));
  const Calls calls = f.host.calls();
  REQUIRE(calls.size() == 1);  // the copy, and no endpoint, no save
  CHECK(calls[0].rfind("copy " + f.dir("source-vm") + " /fake/vms/", 0) == 0);

  // The name a failed copy reserved is free again.
  f.host.copy_error = {};
  CHECK(f.ok("cp source-vm broken-copy").at("name") == "broken-copy");
}

TEST_CASE("lobby on a fake host: rm kills each VM's processes, removes its directory, saves once", "[lobby][host]") {
  FakeFixture f;
  f.make("rm-one");
  f.make("rm-two");
  const auto one = f.id("rm-one");
  const auto two = f.id("rm-two");
  const Reply removed = f.exec("rm rm-one nosuch-vm rm-two");
  CHECK(removed.status == 200);
  CHECK(removed.body.find("\"deleted\":[\"rm-one\",\"rm-two\"]") != std::string::npos);
  CHECK(f.host.calls() ==
        Calls{"close ssh " + one, "kill " + one, "remove /fake/vms/" + one, "close ssh " + two, "kill " + two,
              "remove /fake/vms/" + two, "save"});
  CHECK(f.lobby->vms().empty());
  CHECK(nlohmann::json::parse(*f.host.saved_state()).at("vms").empty());
}

TEST_CASE("lobby on a fake host: rename keeps the VM's id and directory and only saves", "[lobby][host]") {
  FakeFixture f;
  f.make("old-name");
  const auto id = f.id("old-name");
  CHECK(f.ok("rename old-name new-name").at("status") == "renamed");
  CHECK(f.id("new-name") == id);
  CHECK(f.lobby->vm("new-name")->dir == "/fake/vms/" + id);
  CHECK(f.host.calls() == Calls{"save"});
}

TEST_CASE("lobby on a fake host: pause, resume, restart and ssh to a paused VM signal its processes", "[lobby][host]") {
  FakeFixture f;
  f.make("signal-vm");
  const auto id = f.id("signal-vm");
  f.ok("pause signal-vm");
  CHECK(f.host.calls() == Calls{"disconnect ssh " + id, "stop " + id, "stopped " + id, "save"});
  f.host.clear_calls();
  f.ok("resume signal-vm");
  CHECK(f.host.calls() == Calls{"continue " + id, "save"});
  f.host.clear_calls();
  f.ok("restart signal-vm");
  CHECK(f.host.calls() == Calls{"disconnect ssh " + id, "kill " + id, "save"});

  f.host.clear_calls();
  auto plan = f.run("ssh signal-vm true");
  REQUIRE(std::holds_alternative<SshPlan>(plan));
  CHECK(std::get<SshPlan>(plan).vm_id == id);
  CHECK(std::get<SshPlan>(plan).home == f.lobby->vm("signal-vm")->home);
  CHECK(f.host.calls().empty());  // the server runs the command; the lobby asks nothing

  Modes modes;
  modes.paused_vm_ssh = PausedVmSsh::auto_resume;
  f.lobby->set_modes(modes);
  f.ok("pause signal-vm");
  f.host.clear_calls();
  REQUIRE(std::holds_alternative<SshPlan>(f.run("ssh signal-vm true")));
  CHECK(f.host.calls() == Calls{"continue " + id, "save"});
  CHECK(f.lobby->vm("signal-vm")->status == "running");
}

TEST_CASE("lobby on a fake host: a command on a missing VM fails and asks nothing of the host", "[lobby][host]") {
  FakeFixture f;
  f.make("present-vm");
  CHECK(f.error("pause nosuch-vm") == "VM \"nosuch-vm\" not found");
  CHECK(f.error("resume nosuch-vm") == "VM \"nosuch-vm\" not found");
  CHECK(f.error("restart nosuch-vm") == "VM \"nosuch-vm\" not found");
  CHECK(f.error("cp nosuch-vm") == "VM \"nosuch-vm\" not found");
  CHECK(f.error("rename nosuch-vm fine-name") == "vm \"nosuch-vm\" not found");
  CHECK(f.error("ssh nosuch-vm true") == "VM \"nosuch-vm\" not found");
  CHECK(f.error("tag nosuch-vm a") == "vm \"nosuch-vm\" not found");
  CHECK(f.ok("rm nosuch-vm") == Json{{"deleted", Json::array()}, {"failed", {"nosuch-vm"}}});
  CHECK(f.host.calls().empty());
  CHECK(f.lobby->vm("present-vm"));
}

TEST_CASE("lobby on a fake host: tag-scoped keys are refused before any host work", "[lobby][host]") {
  FakeFixture f;
  f.make("outside-vm");
  TokenSpec spec;
  spec.tag = "agents";
  spec.cmds = std::vector<std::string>{"new", "ls", "rm", "cp", "tag", "pause", "resize"};
  const std::string scoped = f.lobby->issue_token(spec);
  f.ok("new --name=inside-vm", scoped);
  f.host.clear_calls();

  // Commands exe.dev does not mark AllowTagScoped: refused even on the key's own VMs.
  CHECK(f.error("pause inside-vm", 422, scoped) == "command not allowed by SSH key permissions");
  CHECK(f.error("resize inside-vm --cpu=4", 422, scoped) == "command not allowed by SSH key permissions");
  // VMs without the tag are invisible to it.
  CHECK(f.ok("rm outside-vm", scoped) == Json{{"deleted", Json::array()}, {"failed", {"outside-vm"}}});
  CHECK(f.error("cp outside-vm", 422, scoped) == "VM \"outside-vm\" not found");
  CHECK(f.error("new --tag=other", 422, scoped) == "--tag SSH key scoped to tag \"agents\" can only use --tag=agents");
  CHECK(f.error("tag inside-vm x", 422, scoped) == "SSH key scoped to tag \"agents\" cannot modify tags");
  CHECK(f.host.calls().empty());
  CHECK(f.lobby->vm("outside-vm"));
  CHECK(f.lobby->vm("inside-vm")->status == "running");
}

TEST_CASE("lobby on a fake host: a rate-limited request is answered 429 before its command runs", "[lobby][host]") {
  FakeFixture f;
  Modes modes;
  modes.rate_limit = {true, 1, 0.001, 10};
  f.lobby->set_modes(modes);
  f.ok("new --name=allowed-vm");
  f.host.clear_calls();
  const Reply refused = f.exec("new --name=refused-vm");
  CHECK(refused.status == 429);
  CHECK(refused.body == "{\"error\":\"rate limit exceeded\"}\n");
  CHECK_FALSE(f.lobby->vm("refused-vm"));
  CHECK(f.host.calls().empty());
  // Another token has its own bucket.
  const auto other = f.lobby->issue_token({});
  f.host.clear_calls();
  CHECK(f.ok("new --name=other-vm", other).at("vm_name") == "other-vm");
  CHECK(f.host.calls() == Calls{"create " + f.dir("other-vm"), "open ssh " + f.id("other-vm") + " 0", "save"});
}

TEST_CASE("lobby on a fake host: changes save the state, reads do not, a new lobby loads it", "[lobby][host]") {
  FakeVmHost host;
  auto lobby = std::make_unique<Lobby>(LobbyConfig{}, host);
  // Nothing saved yet: the lobby saves its token, and the authorized_keys of its SSH keys.
  CHECK(host.calls() == Calls{"load", "save", "keys"});
  LobbyDriver driver{std::move(lobby), {}};
  driver.token = driver.lobby->default_token();
  host.clear_calls();

  driver.ok("new --name=kept-vm --tag=keep");
  driver.ok("comment kept-vm remember this");
  driver.ok("share set-public kept-vm");
  const auto issued = driver.lobby->issue_token({});
  CHECK(host.calls() == Calls{"create /fake/vms/" + *driver.lobby->vm_id("kept-vm"), "open ssh " + *driver.lobby->vm_id("kept-vm") + " 0",
                             "save", "save", "save", "save"});
  host.clear_calls();
  driver.ok("ls");
  driver.ok("whoami");
  driver.ok("help");
  driver.ok("share show kept-vm");
  driver.ok("stat kept-vm");
  CHECK(driver.lobby->vms().size() == 1);
  CHECK(host.calls().empty());

  // A restarted emulator: the same host, a new lobby.
  const std::string token = driver.token;
  driver.lobby = std::make_unique<Lobby>(LobbyConfig{}, host);
  CHECK(driver.lobby->default_token() == token);
  const auto vm = driver.lobby->vm("kept-vm");
  REQUIRE(vm);
  CHECK(vm->tags == std::vector<std::string>{"keep"});
  CHECK(vm->comment == "remember this");
  CHECK(driver.ok("share show kept-vm").at("status") == "public");
  CHECK(std::holds_alternative<std::string>(driver.lobby->authorize("POST", "Bearer " + issued)));

  // revoke_token saves; reload() reads what was saved, forgetting what was not.
  host.clear_calls();
  driver.lobby->revoke_token(issued);
  CHECK(host.calls() == Calls{"save"});
  host.clear_calls();
  driver.lobby->reload();
  CHECK(host.calls() == Calls{"load"});
  CHECK(std::holds_alternative<Reply>(driver.lobby->authorize("POST", "Bearer " + issued)));
  CHECK(driver.lobby->vm("kept-vm"));

  host.clear_calls();
  driver.lobby->kill_all_processes();
  CHECK(host.calls() == Calls{"kill " + *driver.lobby->vm_id("kept-vm")});
}

TEST_CASE("lobby on a fake host: unreadable saved state is an error that quotes nothing from it", "[lobby][host]") {
  FakeVmHost host;
  host.set_saved_state("{\"token\":\"exe1.SECRETSECRETSECRETSECRETSE\",");
  try {
    Lobby lobby(LobbyConfig{}, host);
    FAIL("the state was accepted");
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    CHECK(message == "cannot read the emulator state in /fake/emulator-state.json: not valid JSON");
  }
  host.set_saved_state("{\"vms\":[{\"id\":1}],\"keys\":[]}");
  CHECK_THROWS_WITH(Lobby(LobbyConfig{}, host), Catch::StartsWith("cannot read the emulator state in /fake/emulator-state.json: "));
}

TEST_CASE("lobby on a fake host: host work runs without the lobby's mutex", "[lobby][host]") {
  FakeFixture f;
  f.make("held-vm");
  const auto id = f.id("held-vm");
  Gate gate;
  f.host.on_call = [&](const std::string& call) {
    if (call == "stop " + id) gate.hold();
  };
  auto pause = std::async(std::launch::async, [&] { return f.exec("pause held-vm"); });
  REQUIRE(gate.wait_reached(failure_bound));
  // While pause waits on the host, the lobby answers readers: its state says paused already.
  auto reader = std::async(std::launch::async, [&] {
    std::vector<std::string> seen;
    seen.push_back(f.lobby->vm("held-vm")->status);
    seen.push_back(std::holds_alternative<std::string>(f.lobby->authorize("POST", "Bearer " + f.token)) ? "authorized" : "refused");
    return seen;
  });
  const bool answered = reader.wait_for(failure_bound) == std::future_status::ready;
  gate.release();
  CHECK(answered);
  CHECK(reader.get() == std::vector<std::string>{"paused", "authorized"});
  CHECK(pause.get().status == 200);
  CHECK(f.host.calls() == Calls{"disconnect ssh " + id, "stop " + id, "stopped " + id, "save"});
}

TEST_CASE("lobby on a fake host: host work runs in the order of the state changes", "[lobby][host]") {
  FakeFixture f;
  f.make("ordered-vm");
  const auto id = f.id("ordered-vm");
  Gate gate;
  f.host.on_call = [&](const std::string& call) {
    if (call == "stop " + id) gate.hold();
  };
  auto pause = std::async(std::launch::async, [&] { return f.exec("pause ordered-vm"); });
  REQUIRE(gate.wait_reached(failure_bound));
  // resume changes the state at once (the VM is paused) but its SIGCONT waits for the stop.
  auto resume = std::async(std::launch::async, [&] { return f.exec("resume ordered-vm"); });
  const auto until = std::chrono::steady_clock::now() + failure_bound;
  while (f.lobby->vm("ordered-vm")->status != "running" && std::chrono::steady_clock::now() < until) {
    std::this_thread::yield();
  }
  CHECK(f.lobby->vm("ordered-vm")->status == "running");
  CHECK(resume.wait_for(0s) == std::future_status::timeout);  // it answers after its host work
  gate.release();
  CHECK(pause.get().status == 200);
  CHECK(resume.get().status == 200);
  CHECK(f.host.calls() == Calls{"disconnect ssh " + id, "stop " + id, "stopped " + id, "save", "continue " + id, "save"});
}

TEST_CASE("turn queue: a place's turn comes once every earlier place is released", "[lobby][host]") {
  TurnQueue queue;
  std::vector<int> order;
  auto first = std::make_unique<TurnQueue::Place>(queue.take());
  auto second = std::make_unique<TurnQueue::Place>(queue.take());
  auto later = std::async(std::launch::async, [&] {
    second->wait_for_turn();
    order.push_back(2);
  });
  CHECK(later.wait_for(0s) == std::future_status::timeout);
  order.push_back(1);
  first.reset();  // released without waiting explicitly: the destructor takes the turn
  later.get();
  CHECK(order == std::vector<int>{1, 2});
  second.reset();
  auto third = queue.take();
  third.wait_for_turn();  // nothing earlier is left: returns at once
}

TEST_CASE("lobby on a fake host: each VM's SSH endpoint is in its answers and decides its connections", "[lobby][host]") {
  FakeFixture f;
  const Json created = f.ok("new --name=ssh-vm");
  CHECK(created.at("ssh_host") == "127.0.0.1");
  CHECK(created.at("ssh_port") == 2201);
  CHECK(created.at("ssh_user") == "exedev");
  CHECK(created.at("ssh_dest") == "exedev@127.0.0.1");
  CHECK(created.at("ssh_command") == "ssh -p 2201 exedev@127.0.0.1");
  const Json listed = f.ok("ls ssh-vm").at("vms").at(0);
  CHECK(listed.at("ssh_port") == 2201);
  CHECK(listed.at("ssh_host") == "127.0.0.1");
  CHECK(listed.at("ssh_user") == "exedev");
  CHECK_FALSE(listed.contains("ssh_command"));
  const Json copied = f.ok("cp ssh-vm ssh-copy");
  CHECK(copied.at("ssh") == "exedev@127.0.0.1");
  CHECK(copied.at("ssh_port") == 2202);

  // The route a connection gets: the VM's session while it runs, nothing while paused.
  const auto id = f.id("ssh-vm");
  const auto route = f.lobby->ssh_route(id);
  REQUIRE(route);
  CHECK(route->vm == "ssh-vm");
  CHECK(route->home == f.lobby->vm("ssh-vm")->home);
  f.ok("pause ssh-vm");
  CHECK_FALSE(f.lobby->ssh_route(id));
  f.ok("resume ssh-vm");
  CHECK(f.lobby->ssh_route(id));
  CHECK_FALSE(f.lobby->ssh_route("no-such-id"));

  // The port is persisted and served again after a restart (the same port asked for).
  f.lobby = std::make_unique<Lobby>(LobbyConfig{}, f.host);
  const auto endpoints = f.lobby->ssh_endpoints();
  CHECK(std::find(endpoints.begin(), endpoints.end(), std::pair<std::string, std::uint16_t>(id, 2201)) != endpoints.end());
  f.lobby->set_ssh_port(id, 2301);
  CHECK(f.ok("ls ssh-vm").at("vms").at(0).at("ssh_port") == 2301);
}

TEST_CASE("lobby on a fake host: ssh-key add and remove rewrite authorized_keys", "[lobby][host]") {
  FakeFixture f;
  const std::string key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEXxjFCV/Ox+etysxQ+wLsYP4mbIVxXgyly9Hs2zDHac";
  f.ok("ssh-key add '" + key + " my laptop'");
  CHECK(f.host.calls() == Calls{"keys", "save"});
  CHECK(f.host.authorized_keys() == key + " my-laptop\n");
  f.host.clear_calls();
  f.ok("ssh-key remove my-laptop");
  CHECK(f.host.calls() == Calls{"keys", "save"});
  CHECK(f.host.authorized_keys().empty());
}
