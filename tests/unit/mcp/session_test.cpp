// The MCP session core, sans-IO: JSON-RPC lines in, messages and actions out.
#include "mcp/session.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using nlohmann::json;
using namespace exedev::mcp;
using exedev::tools::ToolOutcome;
using exedev::tools::ToolResult;

namespace {

std::vector<json> messages(const Actions& actions) {
  std::vector<json> out;
  for (const auto& action : actions)
    if (const auto* send = std::get_if<SendMessage>(&action)) out.push_back(json::parse(send->json));
  return out;
}

json only_message(const Actions& actions) {
  const auto out = messages(actions);
  REQUIRE(out.size() == 1);
  REQUIRE(actions.size() == 1);
  return out.front();
}

int error_code(const json& message) {
  REQUIRE(message.contains("error"));
  return message["error"]["code"].get<int>();
}

template <typename T>
T only_action(const Actions& actions) {
  REQUIRE(actions.size() == 1);
  const T* action = std::get_if<T>(&actions.front());
  REQUIRE(action != nullptr);
  return *action;
}

std::string request(const json& id, const std::string& method, const json& params = json::object()) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump();
}

Session initialized_session() {
  Session session(ServerInfo{.name = "exedev-mcp", .version = "0.1.0", .instructions = {}});
  const auto reply = only_message(session.receive(request(0, "initialize", {{"protocolVersion", "2025-11-25"}})));
  REQUIRE(reply.contains("result"));
  REQUIRE(session.receive(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").empty());
  return session;
}

WorkId start_call(Session& session, const json& id, const json& params) {
  return only_action<StartCall>(session.receive(request(id, "tools/call", params))).work;
}

}  // namespace

TEST_CASE("initialize answers with the requested revision when supported, else the latest") {
  for (const auto& version : supported_protocol_versions()) {
    Session session(ServerInfo{.name = "exedev-mcp", .version = "1.2.3", .instructions = "use the tools"});
    const auto reply = only_message(session.receive(request("init", "initialize", {{"protocolVersion", version}})));
    CHECK(reply["jsonrpc"] == "2.0");
    CHECK(reply["id"] == "init");
    CHECK(reply["result"]["protocolVersion"] == version);
    CHECK(reply["result"]["capabilities"]["tools"].is_object());
    CHECK(reply["result"]["serverInfo"]["name"] == "exedev-mcp");
    CHECK(reply["result"]["serverInfo"]["version"] == "1.2.3");
    CHECK(reply["result"]["instructions"] == "use the tools");
    CHECK(session.protocol_version() == version);
  }
  Session session(ServerInfo{});
  const auto reply = only_message(session.receive(request(1, "initialize", {{"protocolVersion", "1999-01-01"}})));
  CHECK(reply["result"]["protocolVersion"] == supported_protocol_versions().front());
  CHECK(supported_protocol_versions().front() == "2025-11-25");

  SECTION("a second initialize is refused") {
    CHECK(error_code(only_message(session.receive(request(2, "initialize", {{"protocolVersion", "2025-11-25"}})))) ==
          invalid_request);
  }
  SECTION("initialize without a protocolVersion is invalid params") {
    Session fresh(ServerInfo{});
    CHECK(error_code(only_message(fresh.receive(request(1, "initialize", json::object())))) == invalid_params);
    CHECK_FALSE(fresh.initialized());
  }
}

TEST_CASE("ping is answered before and after initialize; tools wait for initialize") {
  Session session(ServerInfo{});
  const auto pong = only_message(session.receive(request(7, "ping")));
  CHECK(pong["id"] == 7);
  CHECK(pong["result"] == json::object());
  const auto refused = only_message(session.receive(request(8, "tools/list")));
  CHECK(error_code(refused) == invalid_request);
  CHECK(refused["id"] == 8);
}

TEST_CASE("malformed messages get JSON-RPC errors and the session goes on") {
  Session session = initialized_session();
  SECTION("not JSON: parse error with a null id") {
    const auto reply = only_message(session.receive("{\"jsonrpc\": \"2.0\", "));
    CHECK(error_code(reply) == parse_error);
    CHECK(reply["id"].is_null());
  }
  SECTION("not an object, or a batch: invalid request") {
    CHECK(error_code(only_message(session.receive("42"))) == invalid_request);
    CHECK(error_code(only_message(session.receive(R"("text")"))) == invalid_request);
    CHECK(error_code(only_message(session.receive(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])"))) == invalid_request);
  }
  SECTION("a wrong jsonrpc, method or id: invalid request") {
    const auto wrong_version = only_message(session.receive(R"({"jsonrpc":"1.0","id":3,"method":"ping"})"));
    CHECK(error_code(wrong_version) == invalid_request);
    CHECK(wrong_version["id"] == 3);
    CHECK(error_code(only_message(session.receive(R"({"jsonrpc":"2.0","id":4,"method":5})"))) == invalid_request);
    CHECK(error_code(only_message(session.receive(R"({"jsonrpc":"2.0","id":4})"))) == invalid_request);
    const auto bad_id = only_message(session.receive(R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})"));
    CHECK(error_code(bad_id) == invalid_request);
    CHECK(bad_id["id"].is_null());
    CHECK(error_code(only_message(session.receive(R"({"jsonrpc":"2.0","id":null,"method":"ping"})"))) == invalid_request);
    CHECK(error_code(only_message(session.receive(R"({"jsonrpc":"2.0","id":5,"method":"ping","params":3})"))) ==
          invalid_request);
  }
  SECTION("an unknown method: method not found") {
    const auto reply = only_message(session.receive(request("x", "resources/list")));
    CHECK(error_code(reply) == method_not_found);
    CHECK(reply["id"] == "x");
  }
  SECTION("bad tools/call params: invalid params") {
    CHECK(error_code(only_message(session.receive(request(1, "tools/call", json::object())))) == invalid_params);
    CHECK(error_code(only_message(session.receive(request(2, "tools/call", {{"name", 3}})))) == invalid_params);
    CHECK(error_code(only_message(session.receive(request(3, "tools/call", {{"name", "t"}, {"arguments", "[]"}})))) ==
          invalid_params);
    CHECK(error_code(only_message(session.receive(request(4, "tools/call", json::array({1, 2}))))) == invalid_params);
    CHECK(error_code(only_message(session.receive(
              request(5, "tools/call", {{"name", "t"}, {"_meta", {{"progressToken", 1.5}}}})))) == invalid_params);
  }
  SECTION("an oversized line: parse error") {
    const auto reply = only_message(session.oversized_message(1024));
    CHECK(error_code(reply) == parse_error);
    CHECK(reply["error"]["message"].get<std::string>().find("1024") != std::string::npos);
  }
  SECTION("blank lines, notifications and responses need no answer") {
    CHECK(session.receive("").empty());
    CHECK(session.receive("  \r").empty());
    CHECK(session.receive(R"({"jsonrpc":"2.0","method":"notifications/roots/list_changed"})").empty());
    CHECK(session.receive(R"({"jsonrpc":"2.0","id":9,"result":{}})").empty());
    CHECK(session.receive(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":77}})").empty());
  }
  // Whatever came before, the session still answers.
  CHECK(only_message(session.receive(request(100, "ping")))["result"] == json::object());
}

TEST_CASE("tools/list asks the I/O layer, then lists each tool with its schema") {
  Session session = initialized_session();
  const auto list = only_action<ListTools>(session.receive(request(1, "tools/list")));
  CHECK(session.work_in_flight() == 1);
  const std::vector<exedev::tools::ToolDefinition> tools{
      {"read_file", "Reads a file.", R"({"type":"object","properties":{"path":{"type":"string"}}})"},
      {"run_command", "Runs a command.", R"({"type":"object"})"}};
  const auto reply = only_message(session.tools_listed(list.work, tools));
  CHECK(reply["id"] == 1);
  REQUIRE(reply["result"]["tools"].size() == 2);
  CHECK(reply["result"]["tools"][0]["name"] == "read_file");
  CHECK(reply["result"]["tools"][0]["description"] == "Reads a file.");
  CHECK(reply["result"]["tools"][0]["inputSchema"]["properties"]["path"]["type"] == "string");
  CHECK(reply["result"]["tools"][1]["name"] == "run_command");
  CHECK(session.work_in_flight() == 0);

  SECTION("a tool set that fails to list: internal error") {
    const auto again = only_action<ListTools>(session.receive(request(2, "tools/list")));
    CHECK(error_code(only_message(session.tools_list_failed(again.work, "no workspace"))) == internal_error);
  }
}

TEST_CASE("tools/call: success is a result, retry and failed are tool errors") {
  Session session = initialized_session();
  const auto reply_for = [&](ToolOutcome outcome) {
    const auto& call =
        only_action<StartCall>(session.receive(request("c", "tools/call", {{"name", "t"}, {"arguments", {{"x", 1}}}})));
    CHECK(call.name == "t");
    CHECK(json::parse(call.arguments) == json{{"x", 1}});
    CHECK(call.tool_call_id == R"("c")");
    return only_message(session.call_finished(call.work, ToolResult{.outcome = outcome, .text = "said", .error = {}}));
  };
  const auto success = reply_for(ToolOutcome::success);
  CHECK(success["id"] == "c");
  CHECK(success["result"]["isError"] == false);
  CHECK(success["result"]["content"] == json::parse(R"([{"type":"text","text":"said"}])"));
  CHECK(reply_for(ToolOutcome::retry)["result"]["isError"] == true);
  CHECK(reply_for(ToolOutcome::failed)["result"]["isError"] == true);

  SECTION("no arguments are an empty object") {
    const auto& call = only_action<StartCall>(session.receive(request(1, "tools/call", {{"name", "t"}})));
    CHECK(call.arguments == "{}");
  }
  SECTION("an unknown tool is invalid params; a throwing tool an internal error") {
    const auto unknown = start_call(session, 1, {{"name", "nope"}});
    const auto reply = only_message(session.call_unknown_tool(unknown));
    CHECK(error_code(reply) == invalid_params);
    CHECK(reply["error"]["message"].get<std::string>().find("nope") != std::string::npos);
    const auto crashing = start_call(session, 2, {{"name", "t"}});
    CHECK(error_code(only_message(session.call_crashed(crashing, "boom"))) == internal_error);
  }
  SECTION("a request id in progress cannot be reused") {
    start_call(session, 5, {{"name", "t"}});
    CHECK(error_code(only_message(session.receive(request(5, "ping")))) == invalid_request);
  }
  CHECK(!session.shutting_down());
}

TEST_CASE("live output becomes progress notifications when the client sent a progressToken") {
  Session session = initialized_session();
  const auto with_token = start_call(session, 1, {{"name", "t"}, {"_meta", {{"progressToken", "tok"}}}});
  const auto first = only_message(session.call_output(with_token, "hello "));
  CHECK(first["method"] == "notifications/progress");
  CHECK_FALSE(first.contains("id"));
  CHECK(first["params"]["progressToken"] == "tok");
  CHECK(first["params"]["message"] == "hello ");
  const auto second = only_message(session.call_output(with_token, "world\n"));
  CHECK(second["params"]["message"] == "world\n");
  CHECK(second["params"]["progress"].get<double>() > first["params"]["progress"].get<double>());
  CHECK(session.call_output(with_token, "").empty());

  const auto numeric_token = start_call(session, 2, {{"name", "t"}, {"_meta", {{"progressToken", 42}}}});
  CHECK(only_message(session.call_output(numeric_token, "x"))["params"]["progressToken"] == 42);

  const auto without_token = start_call(session, 3, {{"name", "t"}});
  CHECK(session.call_output(without_token, "quiet").empty());
}

TEST_CASE("notifications/cancelled cancels the call and its answer is never sent") {
  Session session = initialized_session();
  const auto work = start_call(session, "slow", {{"name", "t"}, {"_meta", {{"progressToken", 1}}}});
  const auto& cancel =
      only_action<CancelCall>(session.receive(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow"}})"));
  CHECK(cancel.work == work);
  CHECK(session.call_output(work, "late output").empty());
  CHECK(session.call_finished(work, ToolResult{.outcome = ToolOutcome::success, .text = "late", .error = {}}).empty());
  CHECK(session.work_in_flight() == 0);
  // The id is free again.
  CHECK(only_message(session.receive(request("slow", "ping")))["result"] == json::object());
}

TEST_CASE("end_run answers with an error, cancels the rest and shuts down with status 1") {
  Session session = initialized_session();
  const auto other = start_call(session, 1, {{"name", "t"}});
  const auto ending = start_call(session, 2, {{"name", "t"}});
  const auto actions =
      session.call_finished(ending, ToolResult{.outcome = ToolOutcome::end_run, .text = "VM gone", .error = {}});
  REQUIRE(actions.size() == 3);
  const auto error = json::parse(std::get<SendMessage>(actions[0]).json);
  CHECK(error["id"] == 2);
  CHECK(error_code(error) == workspace_unavailable);
  CHECK(error["error"]["message"].get<std::string>().find("VM gone") != std::string::npos);
  CHECK(std::get<CancelCall>(actions[1]).work == other);
  CHECK(std::get<Shutdown>(actions[2]).exit_code == 1);
  CHECK(session.shutting_down());
  CHECK(session.receive(request(3, "ping")).empty());
  CHECK(session.call_finished(other, ToolResult{}).empty());
}

TEST_CASE("the end of input cancels what runs and shuts down with status 0") {
  Session session = initialized_session();
  const auto running = start_call(session, 1, {{"name", "t"}});
  const auto actions = session.end_of_input();
  REQUIRE(actions.size() == 2);
  CHECK(std::get<CancelCall>(actions[0]).work == running);
  CHECK(std::get<Shutdown>(actions[1]).exit_code == 0);
  CHECK(session.end_of_input().empty());
  CHECK(session.call_finished(running, ToolResult{}).empty());
}
