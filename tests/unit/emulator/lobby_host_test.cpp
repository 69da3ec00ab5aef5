// The lobby on an in-memory host (fake_vm_host.hpp): no sockets, no processes, no filesystem, no
// threads, no clock. What each command plans for the host, as data and as the calls its plan
// makes, what it must not ask, when the state is saved, the exchange of new and cp with the host,
// and that the time is the one the test gives.
#include "emulator/lobby.hpp"
#include "fake_vm_host.hpp"
#include "lobby_fixture.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

using namespace exedev::emulator;
using namespace lobby_test;
using namespace std::chrono_literals;
using Calls = std::vector<std::string>;

namespace {

struct FakeFixture : LobbyDriver {
  FakeVmHost fake;

  FakeFixture() : LobbyDriver(fake) {
    start();
    fake.clear_calls();
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
    fake.clear_calls();
  }
  /// The step `line` answers, its plan not run.
  Step step(const std::string& line) {
    auto prepared = lobby->prepare(token, line);
    REQUIRE(std::holds_alternative<Prepared>(prepared));
    return lobby->execute(std::get<Prepared>(prepared), now.steady, now);
  }
};

/// The state a SaveState carries, parsed.
Json saved(const HostCommand& command) {
  REQUIRE(std::holds_alternative<SaveState>(command));
  return Json::parse(std::get<SaveState>(command).text);
}

}  // namespace

TEST_CASE("lobby on a fake host: new asks for the VM's directory, then saves the state", "[lobby][host]") {
  FakeFixture f;
  CHECK(f.ok("new --name=first-vm").at("vm_name") == "first-vm");
  const auto vm = f.vm("first-vm");
  REQUIRE(vm);
  CHECK(vm->dir == f.dir("first-vm"));
  CHECK(vm->home == vm->dir / "home");
  CHECK(f.fake.calls() == Calls{"create " + f.dir("first-vm"), "open ssh shard-0 0", "save"});
  CHECK(nlohmann::json::parse(*f.fake.saved_state()).at("vms").at(0).at("name") == "first-vm");

  f.fake.clear_calls();
  CHECK(f.error("new --name=first-vm") == "VM name \"first-vm\" is not available");
  CHECK(f.error("new --name=Bad").rfind("invalid VM name", 0) == 0);
  CHECK(f.ok("ls").at("vms").size() == 1);
  CHECK(f.fake.calls().empty());
}

TEST_CASE("lobby on a fake host: cp copies the source's directory; a failed copy leaves no VM", "[lobby][host]") {
  FakeFixture f;
  f.make("source-vm");
  CHECK(f.ok("cp source-vm copy-vm").at("name") == "copy-vm");
  CHECK(f.id("copy-vm") != f.id("source-vm"));
  CHECK(f.fake.calls() ==
        Calls{"copy " + f.dir("source-vm") + " " + f.dir("copy-vm"), "open ssh shard-1 0", "save"});

  f.fake.clear_calls();
  f.fake.copy_error = std::make_error_code(std::errc::no_space_on_device);
  const std::string message = f.error("cp source-vm broken-copy");
  CHECK(message.rfind("failed to copy \"source-vm\": ", 0) == 0);
  CHECK(message.find(std::make_error_code(std::errc::no_space_on_device).message()) != std::string::npos);
  CHECK_FALSE(f.vm("broken-copy"));
  const Calls calls = f.fake.calls();
  REQUIRE(calls.size() == 1);  // the copy, and no endpoint, no save
  CHECK(calls[0].rfind("copy " + f.dir("source-vm") + " /fake/vms/", 0) == 0);

  // The name a failed copy reserved is free again.
  f.fake.copy_error = {};
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
  CHECK(f.fake.calls() ==
        Calls{"disconnect ssh " + one, "close ssh shard-0", "kill " + one, "remove /fake/vms/" + one, "disconnect ssh " + two,
              "close ssh shard-1", "kill " + two, "remove /fake/vms/" + two, "save"});
  CHECK(f.vms().empty());
  CHECK(nlohmann::json::parse(*f.fake.saved_state()).at("vms").empty());
}

TEST_CASE("lobby on a fake host: rename keeps the VM's id and directory and only saves", "[lobby][host]") {
  FakeFixture f;
  f.make("old-name");
  const auto id = f.id("old-name");
  CHECK(f.ok("rename old-name new-name").at("status") == "renamed");
  CHECK(f.id("new-name") == id);
  CHECK(f.vm("new-name")->dir == "/fake/vms/" + id);
  CHECK(f.fake.calls() == Calls{"save"});
}

TEST_CASE("lobby on a fake host: pause, resume, restart and ssh to a paused VM signal its processes", "[lobby][host]") {
  FakeFixture f;
  f.make("signal-vm");
  const auto id = f.id("signal-vm");
  f.ok("pause signal-vm");
  CHECK(f.fake.calls() == Calls{"disconnect ssh " + id, "stop " + id, "save"});
  f.fake.clear_calls();
  f.ok("resume signal-vm");
  CHECK(f.fake.calls() == Calls{"continue " + id, "save"});
  f.fake.clear_calls();
  f.ok("restart signal-vm");
  CHECK(f.fake.calls() == Calls{"disconnect ssh " + id, "kill " + id, "save"});

  f.fake.clear_calls();
  auto plan = f.run("ssh signal-vm true");
  REQUIRE(std::holds_alternative<SshPlan>(plan));
  CHECK(std::get<SshPlan>(plan).vm_id == id);
  CHECK(std::get<SshPlan>(plan).home == f.vm("signal-vm")->home);
  CHECK(f.fake.calls().empty());  // the server runs the command; the lobby asks nothing

  Modes modes;
  modes.paused_vm_ssh = PausedVmSsh::auto_resume;
  f.lobby->set_modes(modes);
  f.ok("pause signal-vm");
  f.fake.clear_calls();
  REQUIRE(std::holds_alternative<SshPlan>(f.run("ssh signal-vm true")));
  CHECK(f.fake.calls() == Calls{"continue " + id, "save"});
  CHECK(f.vm("signal-vm")->status == "running");
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
  CHECK(f.fake.calls().empty());
  CHECK(f.vm("present-vm"));
}

TEST_CASE("lobby on a fake host: tag-scoped keys are refused before any host work", "[lobby][host]") {
  FakeFixture f;
  f.make("outside-vm");
  TokenSpec spec;
  spec.tag = "agents";
  spec.cmds = std::vector<std::string>{"new", "ls", "rm", "cp", "tag", "pause", "resize"};
  const std::string scoped = f.issue_token(spec);
  f.ok("new --name=inside-vm", scoped);
  f.fake.clear_calls();

  // Commands exe.dev does not mark AllowTagScoped: refused even on the key's own VMs.
  CHECK(f.error("pause inside-vm", 422, scoped) == "command not allowed by SSH key permissions");
  CHECK(f.error("resize inside-vm --cpu=4", 422, scoped) == "command not allowed by SSH key permissions");
  // VMs without the tag are invisible to it.
  CHECK(f.ok("rm outside-vm", scoped) == Json{{"deleted", Json::array()}, {"failed", {"outside-vm"}}});
  CHECK(f.error("cp outside-vm", 422, scoped) == "VM \"outside-vm\" not found");
  CHECK(f.error("new --tag=other", 422, scoped) == "--tag SSH key scoped to tag \"agents\" can only use --tag=agents");
  CHECK(f.error("tag inside-vm x", 422, scoped) == "SSH key scoped to tag \"agents\" cannot modify tags");
  CHECK(f.fake.calls().empty());
  CHECK(f.vm("outside-vm"));
  CHECK(f.vm("inside-vm")->status == "running");
}

TEST_CASE("lobby on a fake host: a rate-limited request is answered 429 before its command runs", "[lobby][host]") {
  FakeFixture f;
  Modes modes;
  modes.rate_limit = {true, 1, 0.001, 10};
  f.lobby->set_modes(modes);
  f.ok("new --name=allowed-vm");
  f.fake.clear_calls();
  const Reply refused = f.exec("new --name=refused-vm");
  CHECK(refused.status == 429);
  CHECK(refused.body == "{\"error\":\"rate limit exceeded\"}\n");
  CHECK_FALSE(f.vm("refused-vm"));
  CHECK(f.fake.calls().empty());
  // Another token has its own bucket.
  const auto other = f.issue_token({});
  f.fake.clear_calls();
  CHECK(f.ok("new --name=other-vm", other).at("vm_name") == "other-vm");
  CHECK(f.fake.calls() == Calls{"create " + f.dir("other-vm"), "open ssh shard-1 0", "save"});
}

TEST_CASE("lobby on a fake host: changes save the state, reads do not, a new lobby loads it", "[lobby][host]") {
  FakeVmHost host;
  LobbyDriver driver(host);
  driver.start();
  // Nothing saved yet: the lobby saves its token (and the SSH landing table with it).
  CHECK(host.calls() == Calls{"load", "save"});
  host.clear_calls();

  driver.ok("new --name=kept-vm --tag=keep");
  driver.ok("comment kept-vm remember this");
  driver.ok("share set-public kept-vm");
  const auto issued = driver.issue_token({});
  CHECK(host.calls() == Calls{"create /fake/vms/" + *driver.lobby->vm_id("kept-vm"), "open ssh shard-0 0",
                             "save", "save", "save", "save"});
  host.clear_calls();
  driver.ok("ls");
  driver.ok("whoami");
  driver.ok("help");
  driver.ok("share show kept-vm");
  driver.ok("stat kept-vm");
  CHECK(driver.vms().size() == 1);
  CHECK(host.calls().empty());

  // A restarted emulator: the same host, a new lobby.
  const std::string token = driver.token;
  driver.start();
  CHECK(driver.lobby->default_token() == token);
  const auto vm = driver.vm("kept-vm");
  REQUIRE(vm);
  CHECK(vm->tags == std::vector<std::string>{"keep"});
  CHECK(vm->comment == "remember this");
  CHECK(driver.ok("share show kept-vm").at("status") == "public");
  CHECK(std::holds_alternative<std::string>(driver.authorize("POST", "Bearer " + issued)));

  // revoke_token plans a save; reload() reads the text it is given, as the host saved it.
  const HostPlan revoked = driver.lobby->revoke_token(issued);
  REQUIRE(revoked.size() == 1);
  CHECK(std::holds_alternative<Reply>(driver.authorize("POST", "Bearer " + issued)));
  driver.lobby->reload(host.saved_state());  // the revocation's plan never ran: forgotten
  CHECK(std::holds_alternative<std::string>(driver.authorize("POST", "Bearer " + issued)));
  driver.run_plan(driver.lobby->revoke_token(issued));
  driver.lobby->reload(host.saved_state());
  CHECK(std::holds_alternative<Reply>(driver.authorize("POST", "Bearer " + issued)));
  CHECK(driver.vm("kept-vm"));

  CHECK(driver.lobby->kill_all_processes() == HostPlan{KillVmProcesses{*driver.lobby->vm_id("kept-vm")}});
}

TEST_CASE("lobby on a fake host: unreadable saved state is an error that quotes nothing from it", "[lobby][host]") {
  FakeVmHost host;
  const Instant now{};
  try {
    Lobby lobby(LobbyConfig{}, host, std::string("{\"token\":\"exe1.SECRETSECRETSECRETSECRETSE\","), now);
    FAIL("the state was accepted");
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    CHECK(message == "cannot read the emulator state in /fake/emulator-state.json: not valid JSON");
  }
  CHECK_THROWS_WITH(Lobby(LobbyConfig{}, host, std::string("{\"vms\":[{\"id\":1}],\"keys\":[]}"), now),
                    Catch::StartsWith("cannot read the emulator state in /fake/emulator-state.json: "));
  CHECK(host.calls().empty());  // the lobby reads the text it is given, never the host
}

TEST_CASE("lobby on a fake host: a command answers its host work as data; the state changes at once", "[lobby][host]") {
  FakeFixture f;
  f.make("held-vm");
  const auto id = f.id("held-vm");
  const Step paused = f.step("pause held-vm");
  REQUIRE(std::holds_alternative<Reply>(paused.answer));
  CHECK(std::get<Reply>(paused.answer).status == 200);
  REQUIRE(paused.plan.size() == 3);
  CHECK(paused.plan[0] == HostCommand{CloseSshConnections{id}});
  CHECK(paused.plan[1] == HostCommand{StopVmProcesses{id}});
  CHECK(saved(paused.plan[2]).at("vms").at(0).at("status") == "paused");
  // Nothing has run on the host, and the lobby answers readers from its state: paused already.
  CHECK(f.fake.calls().empty());
  CHECK(f.vm("held-vm")->status == "paused");
  CHECK(std::holds_alternative<std::string>(f.authorize("POST", "Bearer " + f.token)));
  f.run_plan(paused.plan);
  CHECK(f.fake.calls() == Calls{"disconnect ssh " + id, "stop " + id, "save"});
}

TEST_CASE("lobby on a fake host: plans follow the order of the state changes", "[lobby][host]") {
  FakeFixture f;
  f.make("ordered-vm");
  const auto id = f.id("ordered-vm");
  // Two commands before any host work runs: each plan saves the state as its change left it.
  const Step paused = f.step("pause ordered-vm");
  const Step resumed = f.step("resume ordered-vm");
  CHECK(f.vm("ordered-vm")->status == "running");
  REQUIRE(resumed.plan.size() == 2);
  CHECK(resumed.plan[0] == HostCommand{ContinueVmProcesses{id}});
  CHECK(saved(paused.plan.back()).at("vms").at(0).at("status") == "paused");
  CHECK(saved(resumed.plan.back()).at("vms").at(0).at("status") == "running");
  // Run in the order made (as the server's strand runs them), the host ends with the newer state.
  f.run_plan(paused.plan);
  f.run_plan(resumed.plan);
  CHECK(f.fake.calls() == Calls{"disconnect ssh " + id, "stop " + id, "save", "continue " + id, "save"});
  CHECK(Json::parse(*f.fake.saved_state()).at("vms").at(0).at("status") == "running");
}

TEST_CASE("lobby on a fake host: new and cp answer once the host has made the VM", "[lobby][host]") {
  FakeFixture f;
  const Step made = f.step("new --name=two-step-vm");
  REQUIRE(std::holds_alternative<AwaitHost>(made.answer));
  const auto ticket = std::get<AwaitHost>(made.answer).ticket;
  REQUIRE(made.plan.size() == 1);
  REQUIRE(std::holds_alternative<CreateVmDirectory>(made.plan[0]));
  const auto dir = std::get<CreateVmDirectory>(made.plan[0]).dir;
  // Until the host has made it, the VM does not exist, yet its name is taken.
  CHECK_FALSE(f.vm("two-step-vm"));
  CHECK(f.error("new --name=two-step-vm") == "VM name \"two-step-vm\" is not available");

  // The directory is made: the lobby asks for its shard's SSH endpoint (the account's first: 0).
  const Step endpoint = f.lobby->resume(ticket, {HostResult{}}, f.now);
  REQUIRE(std::holds_alternative<AwaitHost>(endpoint.answer));
  CHECK(std::get<AwaitHost>(endpoint.answer).ticket == ticket);
  REQUIRE(endpoint.plan.size() == 1);
  const auto& open = std::get<OpenSshEndpoint>(endpoint.plan[0]);
  CHECK(open.endpoint == "shard-0");
  CHECK(open.port == 0);

  // The endpoint listens on 2345: the VM exists, is saved, and the reply says where.
  const Step answered = f.lobby->resume(ticket, {HostResult{{}, 2345}}, f.now);
  REQUIRE(std::holds_alternative<Reply>(answered.answer));
  CHECK(Json::parse(std::get<Reply>(answered.answer).body).at("ssh_dest") == "vm+two-step-vm@exe.localhost");
  REQUIRE(answered.plan.size() == 1);
  CHECK(saved(answered.plan[0]).at("vms").at(0).at("ssh_port") == 2345);
  CHECK(f.vm("two-step-vm"));
  CHECK(f.fake.calls().empty());

  // A failed copy answers its error and asks for no endpoint; the name it reserved is free again.
  const Step copying = f.step("cp two-step-vm copy-vm");
  const auto copy_ticket = std::get<AwaitHost>(copying.answer).ticket;
  CHECK(std::get<CopyVmDirectory>(copying.plan.at(0)).from == dir);
  const HostResult no_space{std::make_error_code(std::errc::no_space_on_device), 0};
  const Step refused = f.lobby->resume(copy_ticket, {no_space}, f.now);
  CHECK(refused.plan.empty());
  REQUIRE(std::holds_alternative<Reply>(refused.answer));
  CHECK(std::get<Reply>(refused.answer).status == 422);
  CHECK_FALSE(f.vm("copy-vm"));
  CHECK(std::holds_alternative<AwaitHost>(f.step("cp two-step-vm copy-vm").answer));

  // A creation whose host work threw is abandoned: no VM, the name free.
  const Step thrown = f.step("new --name=abandoned-vm");
  f.lobby->abandon(std::get<AwaitHost>(thrown.answer).ticket);
  CHECK_FALSE(f.vm("abandoned-vm"));
  CHECK(f.ok("new --name=abandoned-vm").at("vm_name") == "abandoned-vm");
}

TEST_CASE("lobby on a fake host: the time is the one the lobby is given", "[lobby][host]") {
  FakeFixture f;
  Modes modes;
  modes.boot_delay = 10s;
  f.lobby->set_modes(modes);
  f.make("clocked-vm");
  const auto id = f.id("clocked-vm");
  CHECK(f.vm("clocked-vm")->status == "creating");
  // The landing entry carries the ready time, for the key script to compare with its clock.
  const auto ready_ms = std::chrono::duration_cast<std::chrono::milliseconds>((f.now.wall + 10s).time_since_epoch()).count();
  CHECK(f.fake.ssh_landing().at("first/names/clocked-vm").find("\nvm_ready=" + std::to_string(ready_ms) + "\n") !=
        std::string::npos);
  f.now.wall += 10s;
  CHECK(f.vm("clocked-vm")->status == "running");

  // cp's legacy answer measures `elapsed` from its first step to its last, on the steady time.
  const Step copying = f.step("cp clocked-vm timed-copy");
  const auto ticket = std::get<AwaitHost>(copying.answer).ticket;
  f.lobby->resume(ticket, {HostResult{}}, f.now);
  Instant later = f.now;
  later.steady += 1500ms;
  const Step answered = f.lobby->resume(ticket, {HostResult{{}, 2301}}, later);
  CHECK(Json::parse(std::get<Reply>(answered.answer).body).at("elapsed") == 1.5);

  // The lobby deadline runs from `started` to the `now` of the failed answer.
  modes.lobby_deadline = 30s;
  f.lobby->set_modes(modes);
  const auto prepared = std::get<Prepared>(f.lobby->prepare(f.token, "pause nosuch-vm"));
  CHECK(std::get<Reply>(f.lobby->execute(prepared, f.now.steady - 29s, f.now).answer).status == 422);
  CHECK(std::get<Reply>(f.lobby->execute(prepared, f.now.steady - 30s, f.now).answer).status == 504);
}

TEST_CASE("lobby on a fake host: the SSH fields of the answers, in either shape, and the landing entries", "[lobby][host]") {
  FakeFixture f;
  f.run_plan(f.lobby->set_ssh_port("names", 2299));
  // vm_plus (the default): exe.dev's newer answers, a routing name at the domain's name endpoint.
  const Json created = f.ok("new --name=ssh-vm");
  CHECK(created.at("ssh_host") == "exe.localhost");
  CHECK(created.at("ssh_port") == 2299);
  CHECK(created.at("ssh_user") == "vm+ssh-vm");
  CHECK(created.at("ssh_dest") == "vm+ssh-vm@exe.localhost");
  CHECK(created.at("ssh_command") == "ssh -p 2299 vm+ssh-vm@exe.localhost");
  const Json listed = f.ok("ls ssh-vm").at("vms").at(0);
  CHECK(listed.at("ssh_port") == 2299);
  CHECK(listed.at("ssh_host") == "exe.localhost");
  CHECK(listed.at("ssh_user") == "vm+ssh-vm");
  CHECK_FALSE(listed.contains("ssh_command"));
  const Json copied = f.ok("cp ssh-vm ssh-copy");
  CHECK(copied.at("ssh") == "vm+ssh-copy@exe.localhost");
  CHECK(copied.at("ssh_port") == 2299);
  // vm_domain: the VM's own name and its shard's endpoint (the copy is shard 1: port 2202).
  Modes modes = f.lobby->modes();
  modes.ssh_destination = SshDestination::vm_domain;
  f.lobby->set_modes(modes);
  const Json by_name = f.ok("ls ssh-copy").at("vms").at(0);
  CHECK(by_name.at("ssh_host") == "ssh-copy.exe.localhost");
  CHECK(by_name.at("ssh_dest") == "ssh-copy.exe.localhost");
  CHECK(by_name.at("ssh_port") == 2202);
  CHECK_FALSE(by_name.contains("ssh_user"));
  CHECK(f.ok("cp ssh-vm legacy-copy").at("ssh") == "legacy-copy.exe.localhost");

  // The landing entry of a connection to it: the VM's session, and its state, saved with each change.
  const auto id = f.id("ssh-vm");
  const std::string entry = f.fake.ssh_landing().at("first/shards/2201");
  CHECK(entry == f.fake.ssh_landing().at("first/names/ssh-vm"));
  CHECK(entry.rfind("vm_id='" + id + "'\nvm_name='ssh-vm'\nvm_state='running'\nvm_ready=", 0) == 0);
  CHECK(entry.find("\nexedev_home='" + f.vm("ssh-vm")->home.string() + "'\n") != std::string::npos);
  CHECK(entry.find(" 'EXEDEV_EMULATOR_VM=" + id + "'") != std::string::npos);
  CHECK(f.fake.ssh_landing().at("hosts") ==
        "127.0.0.1 exe.localhost legacy-copy.exe.localhost ssh-copy.exe.localhost ssh-vm.exe.localhost\n");
  f.ok("pause ssh-vm");
  CHECK(f.fake.ssh_landing().at("first/shards/2201").find("\nvm_state='paused'\n") != std::string::npos);
  f.ok("resume ssh-vm");
  CHECK(f.fake.ssh_landing().at("first/shards/2201").find("\nvm_state='running'\n") != std::string::npos);
  f.fake.clear_calls();
  const auto copy_id = f.id("ssh-copy");
  f.ok("rm ssh-copy");
  // Its connections close, and its shard's endpoint with it: no other VM is on shard 1.
  CHECK(f.fake.calls() == Calls{"disconnect ssh " + copy_id, "close ssh shard-1", "kill " + copy_id,
                                "remove /fake/vms/" + copy_id, "save"});
  CHECK(f.fake.ssh_landing().count("first/shards/2202") == 0);
  CHECK(f.fake.ssh_landing().count("first/names/ssh-copy") == 0);

  // The ports are persisted and served again after a restart (the same ports asked for).
  f.start();
  const auto endpoints = f.lobby->ssh_endpoints();
  using Served = std::pair<std::string, std::uint16_t>;
  CHECK(std::find(endpoints.begin(), endpoints.end(), Served("shard-0", 2201)) != endpoints.end());
  CHECK(std::find(endpoints.begin(), endpoints.end(), Served("names", 2299)) != endpoints.end());
  const Json stored = saved(f.lobby->set_ssh_port("shard-0", 2301).at(0)).at("vms");
  CHECK(std::any_of(stored.begin(), stored.end(), [&](const Json& vm) { return vm.at("id") == id && vm.at("ssh_port") == 2301; }));
  CHECK(f.lobby->set_ssh_port("shard-0", 2301).empty());  // no change, nothing to save
  f.lobby->set_modes(modes);  // vm_domain: the answers name the shard's port
  CHECK(f.ok("ls ssh-vm").at("vms").at(0).at("ssh_port") == 2301);
}

TEST_CASE("lobby on a fake host: two accounts, each with its VMs, keys and shards", "[lobby][host]") {
  FakeFixture f;
  const std::string second = f.lobby->second_token();
  CHECK(second != f.token);
  f.ok("new --name=first-a");
  f.ok("new --name=first-b");
  f.ok("new --name=second-a", second);
  // Each account sees and touches only its own VMs; names are one namespace.
  CHECK(f.ok("ls").at("vms").size() == 2);
  CHECK(f.ok("ls", second).at("vms").size() == 1);
  CHECK(f.exec("rm first-a", second).body.find("{\"error\":\"VM \\\"first-a\\\" not found\"}") == 0);
  CHECK(f.vm("first-a"));
  CHECK(f.exec("new --name=first-a", second).status == 422);
  CHECK(f.exec("restart first-a", second).status == 422);
  // Shards: each account's first VM is shard 0, so second-a shares first-a's endpoint port.
  CHECK(f.ok("ls second-a", second).at("vms").at(0).at("ssh_port") == f.ok("ls first-a").at("vms").at(0).at("ssh_port"));
  const auto& landing = f.fake.ssh_landing();
  CHECK(landing.at("first/shards/2201").find("vm_name='first-a'") != std::string::npos);
  CHECK(landing.at("first/shards/2202").find("vm_name='first-b'") != std::string::npos);
  CHECK(landing.at("second/shards/2201").find("vm_name='second-a'") != std::string::npos);
  CHECK(landing.count("second/shards/2202") == 0);
  // Keys: registered to the account of the token that adds them; whoami lists them.
  const std::string key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEXxjFCV/Ox+etysxQ+wLsYP4mbIVxXgyly9Hs2zDHac";
  f.ok("ssh-key add '" + key + " second laptop'", second);
  const Json whoami = f.ok("whoami --json", second);
  CHECK(whoami.at("email") == "second@example.com");
  CHECK(whoami.at("ssh_keys").at(0).at("public_key") == key);
  CHECK(whoami.at("ssh_keys").at(0).at("fingerprint") == "SHA256:i5YCR5ra3ApnIDduGinDywqzXF/ki6sp8HEq6ksCw50");
  CHECK(f.ok("ssh-key list").at("ssh_keys").size() == 1);  // the first account's token only
  CHECK(landing.at("keys/SHA256:i5YCR5ra3ApnIDduGinDywqzXF_ki6sp8HEq6ksCw50") == "second\n");
  // rm of first-a leaves shard 0's endpoint open: second-a is on it.
  f.fake.clear_calls();
  const auto first_a = f.id("first-a");
  f.ok("rm first-a");
  CHECK(f.fake.calls() == Calls{"disconnect ssh " + first_a, "kill " + first_a, "remove /fake/vms/" + first_a, "save"});
}

TEST_CASE("lobby on a fake host: ssh-key add and remove change the landing table's keys", "[lobby][host]") {
  FakeFixture f;
  const std::string key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEXxjFCV/Ox+etysxQ+wLsYP4mbIVxXgyly9Hs2zDHac";
  f.ok("ssh-key add '" + key + " my laptop'");
  CHECK(f.fake.calls() == Calls{"save"});
  std::string fingerprint = f.ok("ssh-key list").at("ssh_keys").at(0).at("fingerprint");
  std::replace(fingerprint.begin(), fingerprint.end(), '/', '_');
  const std::string file = "keys/" + fingerprint;
  CHECK(f.fake.ssh_landing().at(file) == "first\n");
  f.fake.clear_calls();
  f.ok("ssh-key remove my-laptop");
  CHECK(f.fake.calls() == Calls{"save"});
  CHECK(f.fake.ssh_landing().count(file) == 0);
}
