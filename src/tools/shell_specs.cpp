// The Shell tools as a model sees them: the reference's docstrings and signatures (the session
// tools' are in shell_sessions.cpp).
#include "tools/shell_specs.hpp"

#include <exedev/tools/shell.hpp>

#include "tools/shell_persistent.hpp"
#include "tools/shell_sessions.hpp"

#include <algorithm>

namespace exedev::tools::detail {

namespace {

Parameter optional_seconds(std::string name, std::string description) {
  return typed_parameter(std::move(name), JsonType::number, std::move(description), "null", true);
}

}  // namespace

ToolSpec shell_tool_spec(const std::string& name) {
  const auto& sessions = session_tool_names();
  if (std::find(sessions.begin(), sessions.end(), name) != sessions.end()) return session_tool_spec(name);
  ToolSpec spec;
  spec.name = name;
  auto& ps = spec.parameters;
  if (name == "run_command") {
    spec.description = tool_description("Execute a shell command and return its output.",
                                        "Labeled stdout/stderr output with exit code on non-zero exit.");
    ps.push_back(text_parameter("command", "The shell command to run."));
    // The reference's docstring says 30 whatever default_timeout is.
    ps.push_back(optional_seconds("timeout_seconds", "Maximum seconds to wait (default: 30)."));
  } else if (name == "start_command") {
    spec.description = tool_description(
        "Start a long-running command in the background (e.g. a server or watcher).\n\n"
        "The command keeps running, after this run too, until it exits or\n"
        "`stop_command(command_id)` stops it; call `stop_command` when done to\n"
        "also remove its output files.",
        "A message containing the unique command ID for later check/stop calls.");
    ps.push_back(text_parameter("command", "The shell command to run in the background."));
  } else if (name == "check_command") {
    spec.description = tool_description("Check the status and recent output of a background command.",
                                        "Status and recent output of the background command.");
    ps.push_back(text_parameter("command_id", "The ID returned by start_command."));
  } else if (name == "stop_command") {
    spec.description = tool_description("Stop a background command and return its final output.",
                                        "Final output and exit status of the stopped command.");
    ps.push_back(text_parameter("command_id", "The ID returned by start_command."));
  } else {
    spec.description = persistent_tool_description();
    ps.push_back(text_parameter("command", "The shell command to run."));
    auto mode = text_parameter("mode", "`foreground` to wait, `background` to return at once.");
    mode.choices = {"foreground", "background"};
    mode.default_json = "\"foreground\"";
    ps.push_back(std::move(mode));
    ps.push_back(optional_seconds("timeout", "Seconds to wait in foreground mode (default: the configured timeout)."));
  }
  return spec;
}

}  // namespace exedev::tools::detail
