// Live output of run_command, on both backends: the command waits on a FIFO that only the
// on_output callback writes to, so it ends before its timeout only if its output arrived while
// it ran. Needs RunOptions::on_stdout delivered live by LocalBackend and SandboxBackend. The
// same wait splits a redacted value between two pieces of that output.
#include "integration/tools/shell_bench.hpp"

#include <fstream>

using namespace shell_test;

namespace {

/// run_command of `command` (30 s at most) with an on_output that collects what comes into
/// `seen` and writes a line to the FIFO `<wd>/go` once "ready" has come: the command, reading
/// that FIFO, goes on only after its output arrived. (The command makes the FIFO before it
/// prints "ready" and opens it right after, so the callback's open waits at most for that.)
Task<std::string> run_released_on_ready(tools::Shell& shell, const std::string& command, const std::string& wd,
                                        std::string& seen) {
  tools::ToolCallContext context;
  context.on_output = [&seen, wd](std::string_view text) {
    const bool before = seen.find("ready") != std::string::npos;
    seen += text;
    if (!before && seen.find("ready") != std::string::npos) std::ofstream(wd + "/go") << "go\n";
  };
  nlohmann::json arguments;
  arguments["command"] = command;
  arguments["timeout_seconds"] = 30;
  co_return co_await call_in(shell, "run_command", args(arguments), std::move(context));
}

}  // namespace

TEST_CASE("run_command delivers output while the command runs", "[integration][tools][live-output]") {
  on_each_backend([&](Bench& bench) -> Task<void> {
    auto workspace = bench.first();
    const auto wd = co_await workspace->working_dir();
    tools::Shell shell(workspace);
    // The command waits for a line only on_output writes, once it has seen "ready": it ends
    // before its timeout only if its output arrived while it ran.
    const std::string command = "mkfifo go && echo ready && read line < go && echo finished";
    std::string seen;
    CHECK_TEXT(co_await run_released_on_ready(shell, command, wd, seen), "[stdout]\nready\nfinished\n");
    CHECK(seen == "ready\nfinished\n");
  });
}

TEST_CASE("run_command's live output is redacted, a value split between two pieces too", "[integration][tools][live-output]") {
  on_each_backend([&](Bench& bench) -> Task<void> {
    auto workspace = bench.first();
    const auto wd = co_await workspace->working_dir();
    tools::ShellOptions options;
    options.redacted_values = {"tok-4f9a1c"};
    tools::Shell shell(workspace, options);
    // The command prints the value's first half and waits for a line only on_output writes once
    // it has seen "ready": the second half is printed after the first was delivered, so the two
    // come in different pieces. The first half never reaches the callback on its own.
    const std::string command = "mkfifo go && printf 'ready tok-4f' && read line < go && echo '9a1c done'";
    std::string seen;
    CHECK_TEXT(co_await run_released_on_ready(shell, command, wd, seen), "[stdout]\nready [redacted] done\n");
    CHECK(seen == "ready [redacted] done\n");
  });
}
