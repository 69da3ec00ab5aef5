// The Shell tool set's session tools without a program running: which options allow them, when
// they are offered, their schemas as a model sees them, the named keys, and the arguments a
// model gets wrong. (Sessions running on LocalBackend and SandboxBackend:
// tests/integration/tools/shell_sessions_test.cpp.)
#include "unit/workspace/support.hpp"
#include "tools/shell_sessions.hpp"

#include <exedev/testing/run.hpp>
#include <exedev/tools/shell.hpp>
#include <exedev/workspace/local_backend.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

namespace ws = exedev::workspace;
namespace tools = exedev::tools;
using exedev::test::TempDir;

namespace {

tools::ShellOptions session_options() {
  tools::ShellOptions options;
  options.allow_interactive = true;
  options.tools = tools::session_tool_names();
  return options;
}

std::vector<std::string> offered(tools::Shell& shell) {
  std::vector<std::string> names;
  exedev::testing::run([&](boost::asio::any_io_executor) -> boost::asio::awaitable<void> {
    for (const auto& definition : co_await shell.tools()) names.push_back(definition.name);
  });
  return names;
}

}  // namespace

TEST_CASE("session tools need allow_interactive and exclude max_file_bytes", "[unit][tools][sessions]") {
  TempDir dir;
  const auto workspace = std::make_shared<ws::Workspace>(std::make_shared<ws::LocalBackend>(dir.path()));
  auto options = session_options();
  options.allow_interactive = false;
  try {
    tools::Shell refused(workspace, options);
    FAIL("no std::invalid_argument");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == "The session tools drive interactive programs: they need allow_interactive=True.");
  }
  auto limited = session_options();
  limited.max_file_bytes = 1000;
  try {
    tools::Shell refused(workspace, limited);
    FAIL("no std::invalid_argument");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == "max_file_bytes is not supported with the session tools.");
  }
}

TEST_CASE("session tools are offered where process sessions can start", "[unit][tools][sessions]") {
  TempDir dir;
  const auto workspace = std::make_shared<ws::Workspace>(std::make_shared<ws::LocalBackend>(dir.path()));
  tools::Shell shell(workspace, session_options());
  CHECK(offered(shell) == tools::session_tool_names());
  auto both = session_options();
  both.tools.insert(both.tools.begin(), "run_command");
  tools::Shell commands_too(workspace, both);
  CHECK(offered(commands_too).front() == "run_command");
  CHECK(offered(commands_too).size() == 6);
  tools::Shell defaults(workspace);
  const auto default_names = offered(defaults);
  CHECK(std::find(default_names.begin(), default_names.end(), "start_session") == default_names.end());
  // A read-only workspace starts nothing: no tools.
  tools::Shell read_only(std::make_shared<ws::ReadOnlyWorkspace>(workspace), session_options());
  CHECK(offered(read_only).empty());
}

TEST_CASE("session tool schemas: argv a list of strings, keys by name, defaults stated", "[unit][tools][sessions]") {
  using exedev::tools::detail::definition_of;
  using exedev::tools::detail::session_tool_spec;
  const auto start = nlohmann::json::parse(definition_of(session_tool_spec("start_session")).parameters_schema);
  CHECK(start["required"] == nlohmann::json::array({"name"}));
  CHECK(start["properties"]["argv"]["anyOf"][0] == nlohmann::json({{"items", {{"type", "string"}}}, {"type", "array"}}));
  CHECK(start["properties"]["pty"]["default"] == true);
  CHECK(start["properties"]["wait_seconds"]["default"] == 2);
  const auto send = nlohmann::json::parse(definition_of(session_tool_spec("send_to_session")).parameters_schema);
  CHECK(send["properties"]["key"]["anyOf"][0]["enum"] ==
        nlohmann::json::array({"enter", "tab", "escape", "backspace", "up", "down", "left", "right", "ctrl-c", "ctrl-d"}));
  const auto list = nlohmann::json::parse(definition_of(session_tool_spec("list_sessions")).parameters_schema);
  CHECK(list["properties"].empty());
  for (const auto& name : tools::session_tool_names()) {
    CHECK_FALSE(definition_of(session_tool_spec(name)).description.empty());
  }
}

TEST_CASE("named keys are bytes, except the ones that signal or end input", "[unit][tools][sessions]") {
  using exedev::tools::detail::key_bytes;
  CHECK(key_bytes("enter") == "\n");
  CHECK(key_bytes("escape") == "\x1b");
  CHECK(key_bytes("up") == "\x1b[A");
  CHECK(key_bytes("backspace") == "\x7f");
  CHECK_FALSE(key_bytes("ctrl-c"));
  CHECK_FALSE(key_bytes("ctrl-d"));
  CHECK_FALSE(key_bytes("f13"));
}

TEST_CASE("session tool arguments a model gets wrong are retries that say why", "[unit][tools][sessions]") {
  TempDir dir;
  const auto workspace = std::make_shared<ws::Workspace>(std::make_shared<ws::LocalBackend>(dir.path()));
  tools::Shell shell(workspace, session_options());
  const auto retry = [&](std::string name, std::string arguments) {
    tools::ToolResult result;
    exedev::testing::run([&](boost::asio::any_io_executor) -> boost::asio::awaitable<void> {
      tools::ToolCallContext context;
      result = co_await shell.call(name, arguments, context);
    });
    CHECK(result.outcome == tools::ToolOutcome::retry);
    return result.text;
  };
  CHECK(retry("start_session", R"({"name": "a", "argv": ["python3", 3]})") ==
        "Invalid arguments for tool 'start_session':\n- argv: 1: Input should be a valid string\nFix the errors and try again.");
  CHECK(retry("start_session", R"({"name": "a"})") == "Give the program to run: `command` (a shell line) or `argv`.");
  CHECK(retry("start_session", R"({"name": "a", "command": "x", "argv": ["x"]})") == "Give either `command` or `argv`, not both.");
  CHECK(retry("start_session", R"({"name": "a", "command": "x", "rows": 0})") == "rows must be between 1 and 9999.");
  CHECK(retry("start_session", R"({"name": "a", "command": "x", "wait_seconds": 21})") == "wait_seconds must be between 0 and 20.");
  CHECK(retry("send_to_session", R"({"name": "a", "key": "f13"})").find("key: Input should be 'enter', 'tab'") != std::string::npos);
  CHECK(retry("read_session", R"({"name": "no-such-session-here", "wait_seconds": 0})") ==
        "process session 'no-such-session-here': no such session");
}
