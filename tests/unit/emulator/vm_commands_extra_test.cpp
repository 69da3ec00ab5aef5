// The lobby's commands beyond the sandbox's needs (resize, rename, stat, share, ssh-key list,
// exe0-to-exe1) and the deny-by-default rule for tag-scoped keys, without sockets.
#include "emulator/lobby.hpp"
#include "lobby_fixture.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace exedev::emulator;
using namespace lobby_test;

namespace {

constexpr std::uint64_t gib = 1024ull * 1024 * 1024;

}  // namespace

TEST_CASE("lobby: resize changes what ls reports, with exe.dev's limits and messages", "[lobby]") {
  Fixture f;
  f.ok("new --name=size-vm");
  const Json resized = f.ok("resize size-vm --memory=16 --cpu=4 --disk=40GB");
  CHECK(resized == Json{{"vm_name", "size-vm"}, {"old_memory", 8 * gib}, {"new_memory", 16 * gib}, {"old_cpus", 2},
                        {"new_cpus", 4}, {"disk_old_bytes", 20 * gib}, {"disk_new_bytes", 40 * gib}});
  // Go writes a map's keys sorted.
  CHECK(f.exec("resize size-vm --cpu=5").body ==
        "{\"new_cpus\":5,\"new_memory\":17179869184,\"old_cpus\":4,\"old_memory\":17179869184,\"vm_name\":\"size-vm\"}\n");
  const Json vm = f.ok("ls size-vm").at("vms").at(0);
  CHECK(vm.at("allocated_cpus") == 5);
  CHECK(vm.at("memory_capacity_bytes") == 16 * gib);
  CHECK(vm.at("disk_capacity_bytes") == 40 * gib);

  CHECK(f.error("resize size-vm --disk=40") == "--disk must be larger than current size (40 GB)");
  CHECK(f.error("resize size-vm --disk=300") == "disk growth cannot exceed 250 GB in a single operation");
  CHECK(f.error("resize size-vm --memory=1") == "--memory must be at least 2 GB");
  CHECK(f.error("resize size-vm").rfind("usage: resize <vmname> [--memory=<size>] [--cpu=<count>] [--disk=<size>]\n", 0) == 0);
  CHECK(f.error("resize").rfind("usage: resize <vmname> --disk=<size>\n", 0) == 0);
  CHECK(f.error("resize nosuch-vm --cpu=2") == "VM \"nosuch-vm\" not found");
}

TEST_CASE("lobby: rename renames the VM; its processes and directory stay", "[lobby]") {
  Fixture f;
  f.ok("new --name=old-name");
  const auto home = f.vm("old-name")->home;
  CHECK(f.exec("rename old-name new-name").body == "{\"new_name\":\"new-name\",\"old_name\":\"old-name\",\"status\":\"renamed\"}\n");
  CHECK_FALSE(f.vm("old-name"));
  REQUIRE(f.vm("new-name"));
  CHECK(f.vm("new-name")->home == home);
  CHECK(f.ok("ls").at("vms").at(0).at("vm_name") == "new-name");
  CHECK(f.ok("ls old-name").at("vms").empty());
  CHECK(f.error("ssh old-name true") == "VM \"old-name\" not found");

  f.ok("new --name=other-vm");
  CHECK(f.error("rename new-name other-vm") == "name \"other-vm\" is not available");
  CHECK(f.error("rename nosuch-vm fine-name") == "vm \"nosuch-vm\" not found");
  CHECK(f.error("rename new-name Bad_Name").rfind("invalid new name: ", 0) == 0);
  CHECK(f.error("rename new-name") == "usage: rename <oldname> <newname>");
  CHECK(f.exec("rename new-name new-name").body == "new-name is already named new-name\n");
  f.ok("pause new-name");
  CHECK(f.error("rename new-name third-name") == "vm rename not supported when vm is not running!");

  // The new name survives a restart of the emulator.
  f.restart();
  CHECK(f.vm("new-name"));
}

TEST_CASE("lobby: stat, share and ssh-key list answer in exe.dev's shapes", "[lobby]") {
  Fixture f;
  f.ok("new --name=share-vm");
  CHECK(f.ok("stat share-vm --range=7d") ==
        Json{{"name", "share-vm"}, {"status", "running"}, {"range", "7d"}, {"points", Json::array()}});
  CHECK(f.error("stat share-vm --range=1y") == "invalid range \"1y\" (use 24h, 7d, or 30d)");
  CHECK(f.error("stat nosuch-vm") == "VM not found: nosuch-vm");

  const Json shown = f.ok("share show share-vm");
  CHECK(shown == Json{{"vm_name", "share-vm"}, {"status", "private"}, {"port", 80}, {"url", "https://share-vm.exe.xyz"},
                      {"users", Json::array()}, {"links", Json::array()}, {"teams", Json::array()},
                      {"team_access", false}, {"team_ssh", false}, {"team_shelley", false}});
  CHECK(f.ok("share set-public share-vm") == Json{{"vm_name", "share-vm"}, {"port", 80}, {"share", "public"},
                                                  {"team_access", false}, {"team_ssh", false},
                                                  {"team_shelley", false}, {"status", "updated"}});
  CHECK(f.ok("share show share-vm").at("status") == "public");
  CHECK(f.ok("share set-private share-vm").at("share") == "private");
  const Json link = f.ok("share add-link share-vm");
  CHECK(link.at("status") == "success");
  const std::string token = link.at("token");
  CHECK(token.size() == 26);
  CHECK(link.at("url") == "https://share-vm.exe.xyz/?share=" + token);
  const Json links = f.ok("share show share-vm").at("links");
  REQUIRE(links.size() == 1);
  CHECK(links.at(0).at("token") == token);
  CHECK(links.at(0).at("use_count") == 0);
  CHECK(links.at(0).at("last_used_at").is_null());
  CHECK(f.error("share show nosuch-vm") == "VM \"nosuch-vm\" not found or access denied");
  CHECK(f.error("share set-public") == "usage: share set-public <vm>");

  const Json keys = f.ok("ssh-key list").at("ssh_keys");
  REQUIRE(keys.size() == 1);
  CHECK(keys.at(0).at("name") == "emulator");
  CHECK(keys.at(0).at("current") == false);
  CHECK(keys.at(0).at("fingerprint").get<std::string>().rfind("SHA256:", 0) == 0);
}

TEST_CASE("lobby: exe0-to-exe1 checks the token's form (the signed cases are in exe0_test.cpp)", "[lobby]") {
  Fixture f;
  CHECK(f.error("exe0-to-exe1") == "usage: exe0-to-exe1 [--vm=VMNAME] <exe0-token>");
  CHECK(f.error("exe0-to-exe1 exe1.AAAA") == "invalid token: invalid token format: missing exe0. prefix");
  CHECK(f.error("exe0-to-exe1 exe0.abc") == "invalid token: invalid token format: expected exe0.<payload>.<sigblob>");
  CHECK(f.error("exe0-to-exe1 exe0.e30.c2ln") == "invalid token: invalid token: malformed signature");
  CHECK(f.error("exe0-to-exe1 --vm=nosuch-vm exe0.e30.c2ln") == "VM \"nosuch-vm\" not found or access denied");
  // The token never lands in the request records.
  for (const auto& record : f.lobby->commands()) CHECK(record.vm.find("exe0.") == std::string::npos);
}

TEST_CASE("lobby: tag-scoped keys run only the commands exe.dev marks for them", "[lobby]") {
  Fixture f;
  f.ok("new --name=outside-vm");
  TokenSpec spec;
  spec.tag = "agents";
  spec.cmds = std::vector<std::string>{"new", "ls", "resize", "rename", "stat", "share show", "share add-link",
                                       "ssh-key list", "exe0-to-exe1"};
  const std::string scoped = f.issue_token(spec);
  f.ok("new --name=inside-vm", scoped);

  // Not marked AllowTagScoped: refused even on the key's own VM.
  CHECK(f.error("resize inside-vm --cpu=4", 422, scoped) == "command not allowed by SSH key permissions");
  CHECK(f.error("exe0-to-exe1 exe0.e30.c2ln", 422, scoped) == "command not allowed by SSH key permissions");
  // Marked: they run, and VMs without the tag are hidden.
  CHECK(f.ok("rename inside-vm inside-new", scoped).at("new_name") == "inside-new");
  CHECK(f.error("rename outside-vm outside-new", 422, scoped) == "VM \"outside-vm\" not found");
  CHECK(f.ok("share show inside-new", scoped).at("vm_name") == "inside-new");
  CHECK(f.error("share show outside-vm", 422, scoped) == "VM \"outside-vm\" not found");
  CHECK(f.ok("share add-link inside-new", scoped).at("status") == "success");
  CHECK(f.ok("ssh-key list", scoped).at("ssh_keys").size() == 1);  // its own key only
  // exe.dev's stat looks among all the account's VMs, tag scope or not.
  CHECK(f.ok("stat outside-vm", scoped).at("name") == "outside-vm");
}

TEST_CASE("lobby: the new shares survive a restart", "[lobby]") {
  Fixture f;
  f.ok("new --name=keep-share");
  f.ok("share set-public keep-share");
  const std::string token = f.ok("share add-link keep-share").at("token");
  f.restart();
  const Json shown = f.ok("share show keep-share");
  CHECK(shown.at("status") == "public");
  CHECK(shown.at("links").at(0).at("token") == token);
}

TEST_CASE("lobby: share port, add, remove, remove-link and access answer as exe.dev's ssh_share.go", "[lobby]") {
  Fixture f;
  f.ok("new --name=route-vm");
  CHECK(f.ok("share port route-vm") == Json{{"vm_name", "route-vm"}, {"port", 80}, {"share", "private"}});
  CHECK(f.exec("share port route-vm 8080").body ==
        "{\"port\":8080,\"share\":\"private\",\"status\":\"updated\",\"team_access\":false,\"team_shelley\":false,"
        "\"team_ssh\":false,\"vm_name\":\"route-vm\"}\n");
  CHECK(f.ok("share show route-vm").at("port") == 8080);
  CHECK(f.error("share port route-vm 80") == "port must be between 3000 and 9999, got \"80\"");
  CHECK(f.error("share port route-vm http") == "port must be between 3000 and 9999, got \"http\"");
  CHECK(f.error("share port") == "usage: share port <vm> [port]");

  CHECK(f.ok("share add route-vm ' Reviewer@Example.COM ' --message=hello") ==
        Json{{"status", "success"}, {"vm_name", "route-vm"}, {"shared_with", "reviewer@example.com"}, {"message", "Invitation sent"}});
  CHECK(f.error("share add route-vm reviewer@example.com") == "route-vm is already shared with reviewer@example.com");
  CHECK(f.error("share add route-vm not-an-address") == "invalid email address: \"not-an-address\"");
  CHECK(f.error("share add route-vm team") == "You're not in a team");
  const Json users = f.ok("share show route-vm").at("users");
  REQUIRE(users.size() == 1);
  CHECK(users.at(0).at("email") == "reviewer@example.com");
  CHECK(users.at(0).at("status") == "pending");
  CHECK(f.ok("share remove route-vm reviewer@example.com").at("message") == "Removed reviewer@example.com's access");
  CHECK(f.error("share remove route-vm reviewer@example.com") == "no share found for reviewer@example.com");

  const std::string token = f.ok("share add-link route-vm").at("token");
  CHECK(f.error("share remove-link route-vm WRONG") == "VM \"route-vm\" not found or share link 'WRONG' not found");
  CHECK(f.ok("share remove-link route-vm " + token) ==
        Json{{"status", "success"}, {"vm_name", "route-vm"}, {"message", "Share link removed"}});
  CHECK(f.ok("share show route-vm").at("links").empty());

  const Json allowed = f.ok("share access allow route-vm");
  CHECK(allowed.at("team_access") == true);
  CHECK(allowed.at("team_ssh") == true);
  CHECK(f.ok("share show route-vm").at("team_shelley") == true);
  CHECK(f.ok("share access disallow route-vm").at("team_access") == false);
}

TEST_CASE("lobby: the HTTPS proxy lets in a public proxy port and share links, nothing else", "[lobby]") {
  Fixture f;
  f.ok("new --name=proxy-vm");
  f.ok("share port proxy-vm 8080");
  CHECK(f.lobby->proxy_decision("nosuch-vm", 0, "", f.now.wall).status == 404);
  CHECK(f.lobby->proxy_decision("proxy-vm", 0, "", f.now.wall).status == 401);  // private
  f.ok("share set-public proxy-vm");
  const auto bare = f.lobby->proxy_decision("proxy-vm", 0, "", f.now.wall);
  CHECK(bare.status == 200);
  CHECK(bare.port == 8080);
  // Only the bare host name follows the share setting ("share port" in ssh_share.go): a URL
  // with a port, even the proxy port's, stays private.
  CHECK(f.lobby->proxy_decision("proxy-vm", 8080, "", f.now.wall).status == 401);
  CHECK(f.lobby->proxy_decision("proxy-vm", 3456, "", f.now.wall).status == 401);
  CHECK(f.lobby->proxy_decision("proxy-vm", 22, "", f.now.wall).status == 404);    // not forwarded at all
  const std::string token = f.ok("share add-link proxy-vm").at("token");
  const auto linked = f.lobby->proxy_decision("proxy-vm", 3456, token, f.now.wall);
  CHECK(linked.status == 200);
  CHECK(linked.port == 3456);
  f.ok("share set-private proxy-vm");
  CHECK(f.lobby->proxy_decision("proxy-vm", 0, token, f.now.wall).status == 200);
  CHECK(f.lobby->proxy_decision("proxy-vm", 0, "WRONG", f.now.wall).status == 401);
  f.ok("pause proxy-vm");
  CHECK(f.lobby->proxy_decision("proxy-vm", 0, token, f.now.wall).status == 502);
}
