#include "client/api_response.hpp"

#include <exedev/errors.hpp>

#include <catch2/catch.hpp>

using namespace exedev;
using namespace exedev::detail;

TEST_CASE("new answer") {
  const auto vm = parse_vm_answer(
      R"({"vm_name":"x-one","tags":[],"ssh_command":"ssh x-one.exe.xyz","ssh_dest":"x-one.exe.xyz","ssh_port":22,)"
      R"("https_url":"https://x-one.exe.xyz","proxy_port":80,"ssh_host":"exe.dev","ssh_user":"vm+x-one"})" "\n",
      "new");
  CHECK(vm.name == "x-one");
  CHECK(vm.tags.empty());
  CHECK(vm.ssh_dest == "x-one.exe.xyz");
  CHECK(vm.ssh_host == "exe.dev");
  CHECK(vm.ssh_user == "vm+x-one");
  CHECK(vm.ssh_port == std::optional<std::uint16_t>(22));
  CHECK(vm.https_url == "https://x-one.exe.xyz");
  CHECK(vm.proxy_port == std::optional<std::uint16_t>(80));
  CHECK(vm.status.kind == VMStatus::Kind::unknown);
}

TEST_CASE("cp answers: legacy and new-like") {
  const auto legacy = parse_vm_answer(
      R"({"name":"copy-1","state":"starting","source":"golden","ssh":"copy-1.exe.xyz","elapsed":1.5})", "cp");
  CHECK(legacy.name == "copy-1");
  CHECK(legacy.status.kind == VMStatus::Kind::starting);
  CHECK(legacy.ssh_dest == "copy-1.exe.xyz");
  CHECK_FALSE(legacy.ssh_port);
  const auto modern = parse_vm_answer(
      R"({"vm_name":"copy-2","ssh_dest":"copy-2.exe.xyz","ssh_host":"copy-2.exe.xyz","tags":["a"],"source":"golden"})", "cp");
  CHECK(modern.name == "copy-2");
  CHECK(modern.tags == std::vector<std::string>{"a"});
  CHECK_THROWS_AS(parse_vm_answer(R"({"source":"golden"})", "cp"), ProtocolError);
}

TEST_CASE("an emulator's answers: the SSH endpoint's port, user and host") {
  const auto vm = parse_vm_answer(
      R"({"vm_name":"e-vm","ssh_dest":"root@127.0.0.1","ssh_host":"127.0.0.1","ssh_port":40227,"ssh_user":"root"})", "ls");
  CHECK(vm.ssh_port == std::optional<std::uint16_t>(40227));
  CHECK(vm.ssh_user == "root");
  CHECK(vm.ssh_host == "127.0.0.1");
  // A port out of range is not a port.
  CHECK_FALSE(parse_vm_answer(R"({"vm_name":"e-vm","ssh_port":70000})", "ls").ssh_port);
  CHECK_FALSE(parse_vm_answer(R"({"vm_name":"e-vm","ssh_port":"22"})", "ls").ssh_port);
}

TEST_CASE("ls answer, with open status set") {
  const auto vms = parse_list_answer(
      R"({"vms":[{"vm_name":"a-vm","status":"running","tags":["t1","t2"],"comment":"hi","region":"lax",)"
      R"("created_at":"2026-01-01T00:00:00Z","disk_capacity_bytes":1073741824,"memory_capacity_bytes":2147483648,"allocated_cpus":2},)"
      R"({"vm_name":"b-vm","status":"creating"},{"vm_name":"c-vm","status":"hibernating"},{"vm_name":"d-vm","status":"paused","image":"ubuntu:24.04"}]})");
  REQUIRE(vms.size() == 4);
  CHECK(vms[0].status.kind == VMStatus::Kind::running);
  CHECK(vms[0].tags == std::vector<std::string>{"t1", "t2"});
  CHECK(vms[0].comment == "hi");
  CHECK_FALSE(vms[0].ssh_port);  // exe.dev's ls names no port
  CHECK(vms[0].disk_capacity_bytes == 1073741824u);
  CHECK(vms[0].allocated_cpus == 2u);
  CHECK(vms[1].status.kind == VMStatus::Kind::creating);
  CHECK(vms[1].tags.empty());
  CHECK(vms[2].status.kind == VMStatus::Kind::other);
  CHECK(vms[2].status.raw == "hibernating");
  CHECK(vms[3].status.kind == VMStatus::Kind::paused);
  CHECK(vms[3].image == "ubuntu:24.04");
  CHECK(parse_list_answer(R"({"vms":[]})").empty());
  CHECK_THROWS_AS(parse_list_answer(R"({"nope":1})"), ProtocolError);
  CHECK_THROWS_AS(parse_list_answer(R"({"vms":[{"vm_name":"a","tags":"x"}]})"), ProtocolError);
  CHECK_THROWS_AS(parse_list_answer("not json"), ProtocolError);
}

TEST_CASE("VMStatus::parse knows every documented value") {
  for (const auto* word : {"creating", "starting", "pending", "running", "paused", "stopped", "failed", "building", "unknown"}) {
    const auto s = VMStatus::parse(word);
    CHECK(s.raw == word);
    CHECK(s.kind != VMStatus::Kind::other);
  }
  CHECK(VMStatus::parse("").kind == VMStatus::Kind::unknown);
}

TEST_CASE("rm answer is NDJSON: the last object wins") {
  const auto r = parse_remove_answer("{\"error\":\"VM \\\"x\\\" not found\"}\n{\"deleted\":[\"a\"],\"failed\":[\"x\"]}\n");
  CHECK(r.deleted == std::vector<std::string>{"a"});
  CHECK(r.failed == std::vector<std::string>{"x"});
  CHECK_NOTHROW(check_lobby_answer(200, "rm", "{\"error\":\"x\"}\n{\"deleted\":[],\"failed\":[\"x\"]}\n", {}));
}

TEST_CASE("tag, whoami and untyped answers") {
  CHECK(parse_tags_answer(R"({"vm_name":"x","tags":["a","b"]})") == std::vector<std::string>{"a", "b"});
  const auto who = parse_whoami_answer(
      R"({"email":"me@example.com","region":"lax","region_display":"Los Angeles, USA","ssh_keys":[]})");
  CHECK(who.email == "me@example.com");
  CHECK(who.region == "lax");
  CHECK(who.ssh_keys.empty());
  const auto keyed = parse_whoami_answer(
      R"({"email":"me@example.com","ssh_keys":[{"public_key":"ssh-ed25519 AAAA","fingerprint":"SHA256:abc",)"
      R"("name":"laptop","current":false},{"public_key":"ssh-rsa BBBB","fingerprint":"SHA256:def","current":true}]})");
  REQUIRE(keyed.ssh_keys.size() == 2);
  CHECK(keyed.ssh_keys[0].public_key == "ssh-ed25519 AAAA");
  CHECK(keyed.ssh_keys[0].fingerprint == "SHA256:abc");
  CHECK(keyed.ssh_keys[0].name == "laptop");
  CHECK(keyed.ssh_keys[1].fingerprint == "SHA256:def");
  CHECK(keyed.ssh_keys[1].name.empty());
  CHECK_THROWS_AS(parse_whoami_answer(R"({"email":"me@example.com","ssh_keys":{}})"), ProtocolError);
  CHECK_NOTHROW(parse_object_answer(R"({"vm_name":"x","status":"paused"})", "pause"));
  CHECK_NOTHROW(parse_object_answer("", "pause"));
  CHECK_THROWS_AS(parse_object_answer("<html>", "pause"), ProtocolError);
}

TEST_CASE("every status maps to its error type") {
  const auto kind = [](unsigned status) -> std::string {
    try {
      throw_api_error(status, "ls", R"({"error":"boom"})", {});
    } catch (const BadRequestError&) { return "bad_request"; }
    catch (const AuthenticationError&) { return "auth"; }
    catch (const PermissionError&) { return "permission"; }
    catch (const NotFoundError&) { return "not_found"; }
    catch (const CommandFailedError&) { return "command_failed"; }
    catch (const RateLimitedError&) { return "rate_limited"; }
    catch (const GatewayTimeoutError&) { return "gateway_timeout"; }
    catch (const ServerError&) { return "server"; }
    catch (const APIError&) { return "api"; }
    return "none";
  };
  CHECK(kind(400) == "bad_request");
  CHECK(kind(405) == "bad_request");
  CHECK(kind(413) == "bad_request");
  CHECK(kind(401) == "auth");
  CHECK(kind(403) == "permission");
  CHECK(kind(404) == "not_found");
  CHECK(kind(422) == "command_failed");
  CHECK(kind(429) == "rate_limited");
  CHECK(kind(500) == "server");
  CHECK(kind(502) == "server");
  CHECK(kind(503) == "server");
  CHECK(kind(504) == "gateway_timeout");
  CHECK(kind(409) == "api");
}

TEST_CASE("error messages carry the server's message, never a body or a secret") {
  try {
    throw_api_error(422, "new", "{\"error\":\"VM name \\\"x-one\\\" is not available\"}\n", {});
  } catch (const CommandFailedError& e) {
    CHECK(e.status() == 422);
    CHECK(e.command() == "new");
    CHECK(e.server_message() == "VM name \"x-one\" is not available");
    CHECK(std::string(e.what()) == "exe.dev command \"new\" failed with HTTP 422: VM name \"x-one\" is not available");
  }
  // A body that is not JSON is never repeated: only its size is said.
  CHECK(server_message("<html><body>secret page</body></html>", {}) == "an answer that is not exe.dev's JSON (37 bytes)");
  CHECK(server_message("502 Bad Gateway\n\nupstream connect error", {}) ==
        "an answer that is not exe.dev's JSON (39 bytes)");
  CHECK(server_message("", {}).empty());
  // Secrets echoed by the server are masked.
  CHECK(server_message(R"({"error":"\"new --env=K=hunter22\": internal error"})", {"hunter22"}) ==
        "\"new --env=K=***\": internal error");
}

TEST_CASE("a 200 with {\"error\":\"unknown command\"} is a 404") {
  try {
    check_lobby_answer(200, "frobnicate", "{\"error\":\"unknown command\"}\n", {});
    FAIL("no exception");
  } catch (const NotFoundError& e) {
    CHECK(e.status() == 404);
  }
  CHECK_THROWS_AS(check_lobby_answer(200, "x", "{\"error\":\"other\"}\n", {}), CommandFailedError);
  CHECK_NOTHROW(check_lobby_answer(200, "ls", "{\"vms\":[]}\n", {}));
  // The key spelt with an escape is the same key.
  CHECK_THROWS_AS(check_lobby_answer(200, "x", R"({"\u0065rror":"other"})", {}), CommandFailedError);
}

// The share answers, as exe.dev's execore/ssh_share.go writes them (Go maps: keys sorted).
TEST_CASE("share show answer: users, links with and without a last use, teams, team access") {
  const auto info = parse_share_show_answer(
      R"({"links":[{"token":"ABCDEFGHIJKLMNOPQRSTUVWXYZ","created_at":"2026-05-01T10:00:00Z","use_count":3,)"
      R"("last_used_at":"2026-05-02T11:00:00Z"},{"token":"BCD","created_at":"2026-05-03T10:00:00Z","use_count":0,)"
      R"("last_used_at":null}],"port":8080,"status":"public","support_has_root":true,"team_access":true,)"
      R"("team_shelley":true,"team_ssh":true,"teams":[{"team_id":"tm1","team_name":"Builders"}],)"
      R"("url":"https://web.exe.xyz","users":[{"email":"a@example.com","status":"pending",)"
      R"("invited_at":"2026-05-01T09:00:00Z"},{"email":"b@example.com","status":"active","invited_at":"2026-05-01T09:30:00Z"}],)"
      R"("vm_name":"web"})");
  CHECK(info.vm_name == "web");
  CHECK(info.visibility == "public");
  CHECK(info.port == 8080);
  CHECK(info.url == "https://web.exe.xyz");
  REQUIRE(info.users.size() == 2);
  CHECK(info.users[0].email == "a@example.com");
  CHECK(info.users[0].status == "pending");
  CHECK(info.users[1].status == "active");
  CHECK(info.users[1].invited_at == "2026-05-01T09:30:00Z");
  REQUIRE(info.links.size() == 2);
  CHECK(info.links[0].use_count == 3);
  CHECK(info.links[0].last_used_at == std::optional<std::string>("2026-05-02T11:00:00Z"));
  CHECK_FALSE(info.links[1].last_used_at);
  REQUIRE(info.teams.size() == 1);
  CHECK(info.teams[0].team_name == "Builders");
  CHECK(info.team_access);
  CHECK(info.team_ssh);
  CHECK(info.team_shelley);
  CHECK(info.support_has_root);

  const auto bare = parse_share_show_answer(
      R"({"links":[],"port":80,"status":"private","team_access":false,"team_shelley":false,"team_ssh":false,)"
      R"("teams":[],"url":"https://x.exe.xyz","users":[],"vm_name":"x"})");
  CHECK(bare.visibility == "private");
  CHECK(bare.links.empty());
  CHECK_FALSE(bare.support_has_root);
  CHECK_THROWS_AS(parse_share_show_answer(R"({"port":80})"), ProtocolError);
  CHECK_THROWS_AS(parse_share_show_answer(R"({"vm_name":"x","links":{}})"), ProtocolError);
}

TEST_CASE("share route answers: updated, and share port's reading form") {
  const auto updated = parse_share_route_answer(
      R"({"port":8080,"share":"public","status":"updated","team_access":false,"team_shelley":false,"team_ssh":false,"vm_name":"web"})",
      "share set-public");
  CHECK(updated.vm_name == "web");
  CHECK(updated.port == 8080);
  CHECK(updated.visibility == "public");
  CHECK_FALSE(updated.team_ssh);
  const auto read = parse_share_route_answer(R"({"port":80,"share":"private","vm_name":"web"})", "share port");
  CHECK(read.port == 80);
  CHECK(read.visibility == "private");
  CHECK_THROWS_AS(parse_share_route_answer(R"({"vm_name":"web"})", "share port"), ProtocolError);
  CHECK_THROWS_AS(parse_share_route_answer("not json", "share port"), ProtocolError);
}

TEST_CASE("share add-link, add, remove and remove-link answers") {
  const auto link = parse_share_link_answer(
      R"({"status":"success","token":"QWERTYUIOPASDFGHJKLZXCVBNM","url":"https://web.exe.xyz/?share=QWERTYUIOPASDFGHJKLZXCVBNM","vm_name":"web"})");
  CHECK(link.vm_name == "web");
  CHECK(link.token == "QWERTYUIOPASDFGHJKLZXCVBNM");
  CHECK(link.url == "https://web.exe.xyz/?share=QWERTYUIOPASDFGHJKLZXCVBNM");
  CHECK_THROWS_AS(parse_share_link_answer(R"({"status":"success","vm_name":"web"})"), ProtocolError);

  const auto invited = parse_share_change_answer(
      R"({"message":"Invitation sent","shared_with":"a@example.com","status":"success","vm_name":"web"})", "share add");
  CHECK(invited.shared_with == "a@example.com");
  CHECK(invited.message == "Invitation sent");
  const auto team = parse_share_change_answer(R"({"status":"success","team_name":"Builders","vm_name":"web"})", "share add");
  CHECK(team.team_name == "Builders");
  const auto removed = parse_share_change_answer(R"({"message":"Share link removed","status":"success","vm_name":"web"})",
                                                 "share remove-link");
  CHECK(removed.message == "Share link removed");
  CHECK_THROWS_AS(parse_share_change_answer(R"({"vm_name":"web"})", "share remove"), ProtocolError);
}
