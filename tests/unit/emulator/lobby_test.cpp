// The lobby without sockets: check order, every command's JSON, tokens and tag scope.
#include "emulator/lobby.hpp"
#include "lobby_fixture.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace exedev::emulator;
using namespace lobby_test;
using namespace std::chrono_literals;


TEST_CASE("lobby: check order and error statuses", "[lobby]") {
  Fixture f;
  SECTION("405 with Allow") {
    auto reply = std::get<Reply>(f.authorize("GET", "Bearer " + f.token));
    CHECK(reply.status == 405);
    CHECK(header(reply, "Allow") == "POST");
    CHECK(reply.body == "{\"error\":\"method not allowed\"}\n");
  }
  SECTION("401 for a missing, malformed or unknown token; scheme is case-insensitive") {
    for (const char* bad : {"", "Basic abc", "Bearer", "Bearer   ", "Bearerexe1.X"}) {
      auto reply = std::get<Reply>(f.authorize("POST", bad));
      CHECK(reply.status == 401);
      CHECK(header(reply, "WWW-Authenticate") == "Bearer");
      CHECK(reply.body == "{\"error\":\"missing or invalid Authorization header\"}\n");
    }
    auto unknown = std::get<Reply>(f.authorize("POST", "Bearer exe1.AAAAAAAAAAAAAAAAAAAAAAAAAA"));
    CHECK(unknown.status == 401);
    CHECK(std::holds_alternative<std::string>(f.authorize("POST", "bEaReR  " + f.token + " ")));
  }
  SECTION("expired token 401, expired key 403") {
    TokenSpec expired;
    expired.expires_at = f.now.wall - 1s;
    auto reply = std::get<Reply>(f.authorize("POST", "Bearer " + f.issue_token(expired)));
    CHECK(reply.status == 401);
    CHECK(reply.body == "{\"error\":\"invalid token: token has expired\"}\n");
    TokenSpec key_expired;
    key_expired.key_expires_at = f.now.wall - 1s;
    reply = std::get<Reply>(f.authorize("POST", "Bearer " + f.issue_token(key_expired)));
    CHECK(reply.status == 403);
    CHECK(reply.body == "{\"error\":\"SSH key has expired\"}\n");
  }
  SECTION("429 when the rate limiter is on") {
    Modes modes;
    modes.rate_limit = {true, 2, 0.001, 10};
    f.lobby->set_modes(modes);
    CHECK(std::holds_alternative<std::string>(f.authorize("POST", "Bearer " + f.token)));
    CHECK(std::holds_alternative<std::string>(f.authorize("POST", "Bearer " + f.token)));
    auto reply = std::get<Reply>(f.authorize("POST", "Bearer " + f.token));
    CHECK(reply.status == 429);
    CHECK(reply.body == "{\"error\":\"rate limit exceeded\"}\n");
  }
  SECTION("body checks, lexing, resolution and cmds") {
    CHECK(f.error(std::string("ls\0", 3), 400) == "request body must not contain null bytes");
    CHECK(f.error(" \n\t ", 400) == "missing command in request body");
    CHECK(f.error("ls 'open", 400) == "invalid command syntax");
    CHECK(f.error("frobnicate", 404) == "unknown command");
    CHECK(f.error("ssh-key", 404) == "unknown command");
    // Words that lex to nothing leave no command (exe.dev checks again after splitting).
    CHECK(f.error("''", 400) == "missing command in request body");
    CHECK(f.error("\"\" ''", 400) == "missing command in request body");
    const auto limited = f.issue_token({});  // the defaults: no rm, no ssh
    CHECK(f.error("rm x", 403, limited) == "command not allowed by token permissions");
    CHECK(f.error("ssh x true", 403, limited) == "command not allowed by token permissions");
    CHECK(f.ok("ls", limited).contains("vms"));
    TokenSpec none;
    none.cmds = std::vector<std::string>{};
    CHECK(f.error("ls", 403, f.issue_token(none)) == "command not allowed by token permissions");
  }
  SECTION("a failed command after the lobby deadline answers 504") {
    auto prepared = std::get<Prepared>(f.lobby->prepare(f.token, "rm"));
    auto reply = std::get<Reply>(f.complete(f.lobby->execute(prepared, f.now.steady - 31s, f.now)));
    CHECK(reply.status == 504);
    CHECK(reply.body == "{\"error\":\"command timed out\"}\n");
    auto success = std::get<Reply>(f.complete(f.lobby->execute(std::get<Prepared>(f.lobby->prepare(f.token, "ls")),
                                                               f.now.steady - 31s, f.now)));
    CHECK(success.status == 200);
  }
}

TEST_CASE("lobby: new, ls, cp, rm JSON", "[lobby]") {
  Fixture f;
  const Json created = f.ok("new --name=alpha-one --tag=zeta,beta --comment='hello there' --env=A=1 --json");
  CHECK(created.at("vm_name") == "alpha-one");
  CHECK(created.at("tags") == Json::array({"beta", "zeta"}));
  CHECK(created.at("ssh_dest") == "alpha-one.exe.xyz");
  CHECK(created.at("ssh_command") == "ssh alpha-one.exe.xyz");
  CHECK_FALSE(created.contains("ssh_port"));  // a host that serves no SSH: no endpoint
  CHECK(created.at("https_url") == "https://alpha-one.exe.xyz");
  CHECK(created.at("proxy_port") == 80);
  CHECK(created.contains("shelley_url"));

  const Json plain = f.ok("new --name=beta-two --image=ubuntu:24.04");
  CHECK(plain.at("tags") == Json::array());
  CHECK_FALSE(plain.contains("shelley_url"));

  CHECK(f.error("new --name=alpha-one") == "VM name \"alpha-one\" is not available");
  CHECK(f.error("new --name=Bad").rfind("invalid VM name", 0) == 0);
  CHECK(f.error("new --tag=Bad") == "invalid tag \"Bad\": tags must match ^[a-z][a-z0-9_-]*$");
  CHECK(f.error("new --memory=100M") == "--memory must be at least 1GB");
  CHECK(f.error("new --cpu=99") == "--cpu must be between 1 and 16");
  CHECK(f.error("new --comment='a<b'") == "comment must not contain any of < > & \" ' `");
  CHECK(f.error("new --env=novalue") == "invalid --env \"novalue\": must be KEY=VALUE");
  CHECK(f.error("new --egress=some") == "invalid --egress \"some\": must be all or integrations");
  CHECK(f.error("new --standalone --pool=x") == "--standalone cannot be combined with --pool or --no-pool");
  CHECK(f.error("new --bogus").rfind("flag parsing error: flag provided but not defined: -bogus", 0) == 0);
  const Json unnamed = f.ok("new");
  const auto unnamed_name = unnamed.at("vm_name").get<std::string>();
  CHECK(unnamed_name.size() >= 5);
  CHECK(f.ok("ls").at("vms").size() == 3);
  // Its random name may sort anywhere and match any glob: the listing checks below go without it.
  f.ok("rm " + unnamed_name);

  const Json listed = f.ok("ls");
  REQUIRE(listed.at("vms").size() == 2);
  const Json& alpha = listed.at("vms").at(0);
  CHECK(alpha.at("vm_name") == "alpha-one");
  CHECK(alpha.at("status") == "running");
  CHECK(alpha.at("comment") == "hello there");
  CHECK(alpha.at("tags") == Json::array({"beta", "zeta"}));
  CHECK_FALSE(alpha.contains("image"));
  CHECK(alpha.at("region") == "lax");
  CHECK(alpha.at("allocated_cpus") == 2);
  CHECK(alpha.at("memory_capacity_bytes") == 8ull << 30);
  const Json& beta = listed.at("vms").at(1);
  CHECK(beta.at("vm_name") == "beta-two");
  CHECK(beta.at("image") == "ubuntu:24.04");
  CHECK_FALSE(beta.contains("tags"));
  CHECK_FALSE(beta.contains("comment"));
  CHECK_FALSE(listed.contains("team_vms"));
  CHECK(f.ok("ls -a").at("team_vms") == Json::array());

  // Patterns match names or tags (globs), results sorted and de-duplicated.
  CHECK(f.ok("ls zeta").at("vms").size() == 1);
  CHECK(f.ok("ls 'b*'").at("vms").size() == 2);
  CHECK(f.ok("ls alpha-one 'alpha*' beta").at("vms").size() == 1);

  // cp: legacy shape by default, new-like as a mode.
  const Json copied = f.ok("cp alpha-one alpha-copy --copy-tags=false");
  CHECK(copied.at("name") == "alpha-copy");
  CHECK(copied.at("state") == "starting");
  CHECK(copied.at("source") == "alpha-one");
  CHECK(copied.at("ssh") == "alpha-copy.exe.xyz");
  CHECK(copied.at("elapsed").is_number());
  CHECK(f.vm("alpha-copy")->tags.empty());
  CHECK(f.vm("alpha-copy")->comment == "hello there");
  CHECK(f.error("cp alpha-one alpha-copy") == "name \"alpha-copy\" is not available");
  CHECK(f.error("cp nosuch-vm") == "VM \"nosuch-vm\" not found");
  Modes modes;
  modes.cp_response = CpResponse::new_like;
  f.lobby->set_modes(modes);
  const Json like_new = f.ok("cp alpha-one alpha-three");
  CHECK(like_new.at("vm_name") == "alpha-three");
  CHECK(like_new.at("ssh_host") == "alpha-three.exe.xyz");
  CHECK(like_new.at("tags") == Json::array({"beta", "zeta"}));

  // rm: one JSON object per failure, then the summary; still 200.
  const Reply removed = f.exec("rm beta-two nosuch-vm beta-two");
  CHECK(removed.status == 200);
  CHECK(removed.body ==
        "{\"error\":\"VM \\\"nosuch-vm\\\" not found\"}\n{\"deleted\":[\"beta-two\"],\"failed\":[\"nosuch-vm\"]}\n");
  CHECK(f.error("rm") == "please specify at least one VM name to delete");
  CHECK_FALSE(f.vm("beta-two"));
}

TEST_CASE("lobby: boot delay shows creating, then running", "[lobby]") {
  Fixture f;
  Modes modes;
  modes.boot_delay = 1h;
  f.lobby->set_modes(modes);
  f.ok("new --name=slow-boot");
  CHECK(f.ok("ls").at("vms").at(0).at("status") == "creating");
  CHECK(f.error("ssh slow-boot true").rfind("failed to connect to VM: ", 0) == 0);
  modes.unready_true_quirk = true;
  f.lobby->set_modes(modes);
  auto outcome = f.run("ssh slow-boot true");
  REQUIRE(std::holds_alternative<SshPlan>(outcome));
  CHECK(std::get<SshPlan>(outcome).answer_without_running);
  CHECK(f.error("ssh slow-boot echo token-1").rfind("failed to connect to VM: ", 0) == 0);
  // The lobby reads no clock: the VM runs once the time it is told passes the boot delay.
  f.now.wall += 1h;
  CHECK(f.ok("ls").at("vms").at(0).at("status") == "running");
  CHECK(std::holds_alternative<SshPlan>(f.run("ssh slow-boot echo token-1")));
}

TEST_CASE("lobby: pause, resume, restart, tag, comment, whoami, ssh", "[lobby]") {
  Fixture f;
  f.ok("new --name=gamma-vm");
  CHECK(f.ok("pause gamma-vm") == Json{{"vm_name", "gamma-vm"}, {"status", "paused"}});
  CHECK(f.ok("ls").at("vms").at(0).at("status") == "paused");
  CHECK(f.error("pause gamma-vm") == "VM \"gamma-vm\" is already paused");
  CHECK(f.error("ssh gamma-vm true") == "VM \"gamma-vm\" is paused");
  CHECK(f.ok("resume gamma-vm") == Json{{"vm_name", "gamma-vm"}, {"status", "running"}});
  CHECK(f.error("resume gamma-vm") == "VM \"gamma-vm\" is not paused");
  CHECK(f.ok("restart gamma-vm") == Json{{"vm_name", "gamma-vm"}, {"status", "restarted"}});
  CHECK(f.error("restart") == "usage: restart <vm>");
  CHECK(f.error("pause nosuch-vm") == "VM \"nosuch-vm\" not found");

  CHECK(f.ok("tag gamma-vm b a") == Json{{"vm_name", "gamma-vm"}, {"tags", {"a", "b"}}});
  CHECK(f.error("tag gamma-vm a") == "tag \"a\" already exists on vm");
  CHECK(f.error("tag gamma-vm c c") == "tag \"c\" specified more than once");
  CHECK(f.error("tag -d gamma-vm c") == "tag \"c\" not found on vm");
  CHECK(f.error("tag nosuch-vm a") == "vm \"nosuch-vm\" not found");
  CHECK(f.ok("tag -d gamma-vm a") == Json{{"vm_name", "gamma-vm"}, {"tags", {"b"}}});

  CHECK(f.ok("comment gamma-vm  a   new comment") == Json{{"vm_name", "gamma-vm"}, {"comment", "a new comment"}});
  CHECK(f.error("comment gamma-vm \"\"") == "usage: comment <vm> <text...>");
  CHECK(f.ok("comment gamma-vm ' '") == Json{{"vm_name", "gamma-vm"}, {"comment", ""}});

  const Json me = f.ok("whoami");
  CHECK(me.at("email") == "user@example.com");
  CHECK(me.at("ssh_keys").at(0).at("current") == false);
  CHECK(me.at("ssh_keys").at(0).at("public_key").get<std::string>().rfind("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI", 0) == 0);

  // ssh takes raw words: no flag handling after the VM name.
  auto plan = std::get<SshPlan>(f.run("ssh -l root gamma-vm.exe.xyz ls  -la --json 'a  b'"));
  CHECK(plan.vm == "gamma-vm");
  CHECK(plan.line == "ls -la --json a  b");
  CHECK(std::get<SshPlan>(f.run("ssh user@gamma-vm true")).line == "true");
  CHECK(f.error("ssh nosuch-vm true") == "VM \"nosuch-vm\" not found");
  CHECK(f.error("ssh gamma-vm").find("needs a command") != std::string::npos);

  Modes modes;
  modes.paused_vm_ssh = PausedVmSsh::auto_resume;
  f.lobby->set_modes(modes);
  f.ok("pause gamma-vm");
  CHECK(std::holds_alternative<SshPlan>(f.run("ssh gamma-vm true")));
  CHECK(f.vm("gamma-vm")->status == "running");
}

TEST_CASE("lobby: tag-scoped tokens", "[lobby]") {
  Fixture f;
  f.ok("new --name=outside-vm");
  TokenSpec spec;
  spec.tag = "agents";
  spec.cmds = std::vector<std::string>{"new", "ls", "ssh", "rm", "cp", "tag", "comment", "ssh-key generate-api-key",
                                       "whoami", "pause", "resume", "restart"};
  const std::string scoped = f.issue_token(spec);

  CHECK(f.ok("new --name=inside-vm", scoped).at("tags") == Json::array({"agents"}));
  CHECK(f.ok("new --name=inside-two --tag=agents", scoped).at("tags") == Json::array({"agents"}));
  CHECK(f.error("new --tag=other", 422, scoped) == "--tag SSH key scoped to tag \"agents\" can only use --tag=agents");
  const Json listed = f.ok("ls", scoped);
  REQUIRE(listed.at("vms").size() == 2);
  CHECK(f.error("ssh outside-vm true", 422, scoped) == "VM \"outside-vm\" not found");
  CHECK(f.error("comment outside-vm x", 422, scoped) == "VM \"outside-vm\" not found");
  CHECK(f.error("cp outside-vm", 422, scoped) == "VM \"outside-vm\" not found");
  CHECK(f.error("tag inside-vm x", 422, scoped) == "SSH key scoped to tag \"agents\" cannot modify tags");
  CHECK(f.ok("rm outside-vm inside-two", scoped) == Json{{"deleted", {"inside-two"}}, {"failed", {"outside-vm"}}});
  f.ok("tag outside-vm zzz");
  CHECK(f.ok("cp inside-vm inside-copy --copy-tags=false", scoped).at("name") == "inside-copy");
  CHECK(f.vm("inside-copy")->tags == std::vector<std::string>{"agents"});
  CHECK(f.ok("whoami", scoped).at("ssh_keys").size() == 1);
  // Deny-by-default: commands not marked AllowTagScoped are refused even on the key's own VMs.
  CHECK(f.error("pause inside-vm", 422, scoped) == "command not allowed by SSH key permissions");
  CHECK(f.error("resume inside-vm", 422, scoped) == "command not allowed by SSH key permissions");
  CHECK(f.ok("restart inside-vm", scoped).at("vm_name") == "inside-vm");
}

TEST_CASE("lobby: ssh-key generate-api-key and its inheritance rules", "[lobby]") {
  Fixture f;
  const Json created = f.ok("ssh-key generate-api-key --label=ci --cmds='ls, whoami' --exp=30d");
  CHECK(created.at("label") == "ci");
  CHECK(created.at("namespace") == "v0@exe.dev");
  CHECK(created.at("fingerprint").get<std::string>().rfind("SHA256:", 0) == 0);
  CHECK(created.contains("expires_at"));
  const std::string child = created.at("token");
  CHECK(child.size() == 31);
  CHECK(child.rfind("exe1.", 0) == 0);
  CHECK(child.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 5) == std::string::npos);
  CHECK(f.ok("ls", child).contains("vms"));
  CHECK(f.error("new", 403, child) == "command not allowed by token permissions");

  CHECK(f.error("ssh-key generate-api-key --label=ci") == "a key named \"ci\" already exists; use a different --label");
  CHECK(f.error("ssh-key generate-api-key --vm=x --tag=y") == "--vm and --tag cannot be used together");
  CHECK(f.error("ssh-key generate-api-key --exp=3q").rfind("invalid --exp \"3q\"", 0) == 0);
  CHECK_FALSE(f.ok("ssh-key generate-api-key --label=forever").contains("expires_at"));

  // A token with `ssh-key generate-api-key` but not `rm` cannot mint one with `rm`.
  TokenSpec spec;
  spec.cmds = std::vector<std::string>{"ls", "ssh-key generate-api-key"};
  spec.tag = "team";
  const auto parent = f.issue_token(spec);
  CHECK(f.error("ssh-key generate-api-key --label=x1 --cmds=rm", 422, parent).rfind("--cmds must be a subset", 0) == 0);
  CHECK(f.error("ssh-key generate-api-key --label=x2 --tag=other", 422, parent).rfind("SSH key scoped to tag", 0) == 0);
  const std::string inherited = f.ok("ssh-key generate-api-key --label=x3", parent).at("token");
  CHECK(f.error("new", 403, inherited) == "command not allowed by token permissions");
  f.ok("new --name=not-team");
  CHECK(f.ok("ls", inherited).at("vms").empty());  // tag scope inherited

  // `ssh <vm>` entries limit ssh to one VM.
  f.ok("new --name=only-this");
  TokenSpec one;
  one.cmds = std::vector<std::string>{"ssh only-this"};
  const auto single = f.issue_token(one);
  CHECK(std::holds_alternative<SshPlan>(f.run("ssh only-this true", single)));
  CHECK(f.error("ssh not-team true", 403, single) == "command not allowed by token permissions");
}

TEST_CASE("lobby: help", "[lobby]") {
  Fixture f;
  CHECK(f.ok("help").at("commands").size() >= 13);
  CHECK(f.ok("help new").at("command") == "new");
  CHECK(f.ok("new --help").at("command") == "new");
  CHECK(f.ok("ssh-key generate-api-key --help").at("command") == "ssh-key generate-api-key");
  // help takes raw arguments (addendum, correction 1): words starting with `-` are skipped, never parsed.
  CHECK(f.ok("help ls --bogus").at("command") == "ls");
  CHECK(f.ok("help --json").at("commands").size() >= 13);
}

TEST_CASE("lobby: state survives a restart", "[lobby]") {
  Fixture f;
  f.ok("new --name=persist-me --tag=keep --comment=remember");
  const auto issued = f.issue_token({});
  f.restart();
  CHECK(f.lobby->default_token() == f.token);
  const auto vm = f.vm("persist-me");
  REQUIRE(vm);
  CHECK(vm->tags == std::vector<std::string>{"keep"});
  CHECK(vm->comment == "remember");
  CHECK(std::filesystem::is_directory(vm->home));
  CHECK(std::holds_alternative<std::string>(f.authorize("POST", "Bearer " + issued)));
}

TEST_CASE("lobby: a corrupt state file is a clear error that quotes nothing from it", "[lobby]") {
  const auto dir = make_temp_dir();
  std::ofstream(dir / "emulator-state.json") << "{\"token\":\"exe1.SECRETSECRETSECRETSECRETSE\",";
  try {
    FileVmHost host(dir);
    Lobby lobby(LobbyConfig{}, host, host.load_state(), Instant::now());
    FAIL("the state was accepted");
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    CHECK(message.find("not valid JSON") != std::string::npos);
    CHECK(message.find("SECRET") == std::string::npos);
  }
  std::filesystem::remove_all(dir);
}
