// agent_tool_loop: the loop of an agent runtime around the FileSystem and Shell tool sets, on a
// VM of an in-process emulator. A scripted model stands in for the LLM: its tool calls come
// as an LLM API sends them (id, name, arguments as a JSON object or as JSON text), from a file,
// from inline JSON, or from the script below. Each call is dispatched to the tool set that
// offers it, and the program prints what the model would see.
//
//   agent_tool_loop                      # the built-in script
//   agent_tool_loop calls.json           # a JSON array of calls in a file
//   agent_tool_loop '[{"id": "1", "name": "run_command", "arguments": {"command": "uname -a"}}]'
//
// Against real exe.dev: drop the emulator and the client_options below; the client reads
// EXE_TOKEN.
#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/exedev.hpp>
#include <exedev/tools/file_system.hpp>
#include <exedev/tools/shell.hpp>
#include <exedev/workspace/workspace.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace asio = boost::asio;
using nlohmann::json;
using exedev::tools::ToolOutcome;

constexpr const char* scripted_model = R"([
  {"id": "call_1", "name": "write_file",
   "arguments": {"path": "greet.sh", "content": "for who in world VM agent; do echo \"hello, $who\"; done\n"}},
  {"id": "call_2", "name": "run_command", "arguments": "{\"command\": \"sh greet.sh\"}"},
  {"id": "call_3", "name": "edit_file", "arguments": {"path": "greet.sh", "old_text": "hello", "new_text": "goodbye"}},
  {"id": "call_4", "name": "read_file", "arguments": {"path": "greet.sh"}},
  {"id": "call_5", "name": "start_command", "arguments": {"command": "sh greet.sh; sleep 600"}},
  {"id": "call_6", "name": "list_directory", "arguments": {}},
  {"id": "call_7", "name": "read_file", "arguments": {"path": 42}},
  {"id": "call_8", "name": "fly_to_the_moon", "arguments": {}}
])";

const char* outcome_name(ToolOutcome outcome) {
  switch (outcome) {
    case ToolOutcome::success: return "result";
    case ToolOutcome::retry: return "retry (the model is asked to correct the call)";
    case ToolOutcome::failed: return "tool failed";
    case ToolOutcome::end_run: return "end of run";
  }
  return "?";
}

json load_calls(int argc, char** argv) {
  if (argc < 2) return json::parse(scripted_model);
  const std::string source = argv[1];
  if (!source.empty() && (source.front() == '[' || source.front() == '{')) return json::parse(source);
  std::ifstream file(source);
  if (!file) throw std::runtime_error("cannot read " + source);
  std::stringstream text;
  text << file.rdbuf();
  return json::parse(text.str());
}

asio::awaitable<void> agent(std::shared_ptr<exedev::workspace::Workspace> workspace, json calls) {
  const std::vector<std::shared_ptr<exedev::tools::Toolset>> toolsets{
      std::make_shared<exedev::tools::FileSystem>(workspace), std::make_shared<exedev::tools::Shell>(workspace)};

  // What the model is offered, and which tool set answers each tool.
  std::map<std::string, std::shared_ptr<exedev::tools::Toolset>> owners;
  std::cout << "the model is offered:";
  for (const auto& toolset : toolsets) {
    for (const auto& tool : co_await toolset->tools()) {
      owners[tool.name] = toolset;
      std::cout << " " << tool.name;
    }
  }
  std::cout << "\n";

  for (const auto& call : calls) {
    const std::string id = call.at("id").get<std::string>();
    const std::string name = call.at("name").get<std::string>();
    // OpenAI-style APIs send the arguments as JSON text, Anthropic-style ones as an object.
    const json& arguments = call.at("arguments");
    const std::string arguments_text = arguments.is_string() ? arguments.get<std::string>() : arguments.dump();
    std::cout << "\n> " << id << ": " << name << " " << arguments_text << "\n";

    exedev::tools::ToolResult result;
    const auto owner = owners.find(name);
    if (owner == owners.end()) {
      result.outcome = ToolOutcome::retry;
      result.text = "Unknown tool " + name + ". Call one of the tools offered.";
    } else {
      exedev::tools::ToolCallContext context;
      context.run_id = "example-run";
      context.tool_call_id = id;
      context.on_output = [](std::string_view text) { std::cout << "  (live) " << text; };
      const std::shared_ptr<exedev::tools::Toolset> toolset = owner->second;
      result = co_await toolset->call(name, arguments_text, context);
    }
    std::cout << "< " << outcome_name(result.outcome) << ":\n" << result.text << "\n";
    if (result.outcome == ToolOutcome::end_run) std::rethrow_exception(result.error);
  }
}

int main(int argc, char** argv) {
  try {
    const json calls = load_calls(argc, argv);
    if (!calls.is_array()) throw std::runtime_error("the tool calls must be a JSON array");

    exedev::emulator::Emulator emulator;
    exedev::SandboxBackendOptions options;
    options.spec = exedev::VMSpec({.tags = {"examples"}, .working_dir = "agent"});
    options.client_options = exedev::emulator::client_options(emulator);
    const auto backend = std::make_shared<exedev::SandboxBackend>(options);
    const auto workspace = std::make_shared<exedev::workspace::Workspace>(backend);

    asio::io_context io;
    std::exception_ptr failure;
    asio::co_spawn(io, agent(workspace, calls), [&](std::exception_ptr e) { failure = e; });
    io.run();
    // The backend made its own client; close it (the emulator's VM goes with the emulator).
    io.restart();
    asio::co_spawn(io, backend->close(), [&](std::exception_ptr e) { failure = failure ? failure : e; });
    io.run();
    if (failure) std::rethrow_exception(failure);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "agent_tool_loop failed: " << e.what() << "\n";
    return 1;
  }
}
