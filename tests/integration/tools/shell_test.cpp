// The Shell tool set against workspaces-api.md §4.3-§4.5, on both backends: every test body
// runs on LocalBackend (a temporary directory) and on SandboxBackend (a VM of the in-process
// emulator). Background jobs are started through one backend and checked and stopped
// through a second backend attached to the same environment by ref.
#include "integration/tools/shell_bench.hpp"

using namespace shell_test;

TEST_CASE("run_command labels output, reports exit codes and timeouts", "[integration][tools]") {
  on_each_backend([&](Bench& bench) -> Task<void> {
    auto workspace = bench.first();
    tools::Shell shell(workspace);
    const auto wd = co_await workspace->working_dir();
    CHECK_TEXT(co_await run(shell, "printf 'out\\n'"), "[stdout]\nout\n");
    CHECK_TEXT(co_await run(shell, "printf 'err\\n' >&2"), "[stderr]\nerr\n");
    CHECK_TEXT(co_await run(shell, "printf 'o\\n'; printf 'e\\n' >&2; exit 3"), "[stdout]\no\n\n[stderr]\ne\n\n[exit code: 3]");
    CHECK_TEXT(co_await run(shell, "true"), "(no output)");
    CHECK_TEXT(co_await run(shell, "exit 5"), "(no output)\n[exit code: 5]");
    CHECK_TEXT(co_await run(shell, "kill -9 $$"), "(no output)\n[exit code: 137]");
    CHECK_TEXT(co_await run(shell, "pwd"), "[stdout]\n" + wd + "\n");
    CHECK_TEXT(co_await run(shell, "printf '\\377\\n'"), "[stdout]\n\xef\xbf\xbd\n");

    nlohmann::json timed;
    timed["command"] = "echo before; exec sleep 30";
    timed["timeout_seconds"] = 1;
    CHECK_TEXT(co_await call(shell, "run_command", args(timed)), "[stdout]\nbefore\n\n[Command timed out after 1.0s]");
    timed["command"] = "exec sleep 30";
    timed["timeout_seconds"] = 0.5;
    CHECK_TEXT(co_await call(shell, "run_command", args(timed)), "[Command timed out after 0.5s]");
    timed["timeout_seconds"] = 0;
    CHECK_TEXT(co_await call(shell, "run_command", args(timed), ToolOutcome::retry), "timeout_seconds must be a positive finite number.");

    tools::ShellOptions short_default;
    short_default.default_timeout = ws::Seconds(1.0);
    tools::Shell quick(workspace, short_default);
    CHECK_TEXT(co_await run(quick, "exec sleep 30"), "[Command timed out after 1.0s]");
  });
}

TEST_CASE("run_command refuses what the command policy denies, before running it", "[integration][tools]") {
  on_each_backend([&](Bench& bench) -> Task<void> {
    auto workspace = bench.first();
    tools::ShellOptions options;
    options.denied_operators = {">"};
    tools::Shell shell(workspace, options);
    CHECK_TEXT(co_await run(shell, "rm -rf x", ToolOutcome::retry), "Command 'rm' is denied.");
    CHECK_TEXT(co_await run(shell, "shutdown now", ToolOutcome::retry), "Command 'shutdown' is denied.");
    CHECK_TEXT(co_await run(shell, "vim notes.txt", ToolOutcome::retry), "Interactive commands are not allowed. Command: 'vim notes.txt'");
    CHECK_TEXT(co_await run(shell, "echo x > marker", ToolOutcome::retry), "Shell operator '>' is not allowed.");
    CHECK_TEXT(co_await run(shell, std::string("echo \0", 6), ToolOutcome::retry), "The command contains a NUL byte, which cannot be passed to a process.");
    CO_CHECK_FALSE(co_await workspace->exists("marker"));
    CHECK_TEXT(co_await call(shell, "start_command", command_args("dd if=/dev/zero"), ToolOutcome::retry), "Command 'dd' is denied.");

    tools::ShellOptions allow;
    allow.allowed_commands = {"echo"};
    tools::Shell allowing(workspace, allow);
    CHECK_TEXT(co_await run(allowing, "echo rm"), "[stdout]\nrm\n");
    CHECK_TEXT(co_await run(allowing, "ls", ToolOutcome::retry), "Command 'ls' is not in the allowed list.");

    tools::ShellOptions interactive;
    interactive.allow_interactive = true;
    interactive.denied_commands = std::vector<std::string>{};
    tools::Shell lenient(workspace, interactive);
    CHECK_TEXT(co_await run(lenient, "man 2>/dev/null; echo ran"), "[stdout]\nran\n");
  });
}

TEST_CASE("results keep their tail under max_output_chars; max_file_bytes limits files", "[integration][tools]") {
  on_each_backend([&](Bench& bench) -> Task<void> {
    auto workspace = bench.first();
    tools::ShellOptions options;
    options.max_output_chars = 100;
    tools::Shell shell(workspace, options);
    const auto long_text = co_await run(shell, "seq 1 500; exit 1");
    CHECK(long_text.size() == 100);
    CHECK(long_text.rfind("[... output truncated, showing last 54 chars]\n", 0) == 0);
    const std::string end = "\n499\n500\n\n[exit code: 1]";
    CHECK(long_text.substr(long_text.size() - end.size()) == end);
    const auto check_text = co_await call(shell, "check_command", id_args(std::string(32, 'a')));
    CHECK(check_text == "[Error: unknown command ID '" + std::string(32, 'a') + "']");

    tools::ShellOptions limited;
    limited.max_file_bytes = 1000;
    tools::Shell files(workspace, limited);
    const auto refused = co_await run(files, "head -c 5000 /dev/zero > big.bin");
    CHECK(refused.find("[exit code: 153]\n[File-size limit exceeded: max_file_bytes=1000. Reduce file output "
                       "before retrying.]") != std::string::npos);
    const auto size = (co_await workspace->stat("big.bin")).size;
    REQUIRE(size);
    CHECK(*size <= 1024);
    CHECK_TEXT(co_await run(files, "head -c 900 /dev/zero > small.bin && wc -c < small.bin"), "[stdout]\n900\n");
    CHECK_TEXT(co_await run(files, "exit 2"),
               "(no output)\n[exit code: 2]\n[Command failed with max_file_bytes=1000; file writes may have reached the "
               "per-file limit.]");
  });
}

TEST_CASE("env is passed without the denied names; persist_cwd follows cd", "[integration][tools]") {
  on_each_backend([&](Bench& bench) -> Task<void> {
    auto workspace = bench.first();
    const auto wd = co_await workspace->working_dir();
    tools::ShellOptions with_env;
    with_env.env = ws::Env{{"GREETING", "hi"}, {"OPENAI_API_KEY", "sk-test"}};
    with_env.denied_env_patterns = tools::llm_api_key_env_patterns();
    tools::Shell env_shell(workspace, with_env);
    CHECK_TEXT(co_await run(env_shell, "echo \"$GREETING-$OPENAI_API_KEY\""), "[stdout]\nhi-\n");

    tools::ShellOptions persist;
    persist.persist_cwd = true;
    tools::Shell shell(workspace, persist);
    CHECK_TEXT(co_await run(shell, "mkdir -p sub/deeper && cd sub"), "(no output)");
    CHECK_TEXT(co_await run(shell, "pwd"), "[stdout]\n" + wd + "/sub\n");
    CHECK_TEXT(co_await run(shell, "cd deeper; false"), "(no output)\n[exit code: 1]");  // failed: not kept
    CHECK_TEXT(co_await run(shell, "pwd"), "[stdout]\n" + wd + "/sub\n");

    // With a run id the directory is kept in the workspace: a new Shell (a later worker of the
    // same run, through another backend) continues there.
    tools::ToolCallContext in_run;
    in_run.run_id = "run/1";
    CHECK_TEXT(co_await call_in(shell, "run_command", command_args("cd sub/deeper"), in_run), "(no output)");
    tools::Shell resumed(bench.second(), persist);
    CHECK_TEXT(co_await call_in(resumed, "run_command", command_args("pwd"), in_run), "[stdout]\n" + wd + "/sub/deeper\n");
    co_await workspace->remove("sub/deeper");
    CHECK_TEXT(co_await call_in(resumed, "run_command", command_args("pwd"), in_run, ToolOutcome::retry), "The previous directory was removed; now in " + wd + ".");
    CHECK_TEXT(co_await call_in(resumed, "run_command", command_args("pwd"), in_run), "[stdout]\n" + wd + "\n");
    co_await resumed.clear_run_cwd("run/1");
    const auto leftovers = co_await run(env_shell, "ls -A .pydantic-ai-harness/shell .pydantic-ai-harness/shell/run-state");
    CHECK(leftovers.find("cwd-") == std::string::npos);
    CHECK_TEXT(co_await workspace->read_text(".pydantic-ai-harness/.gitignore"), "*\n");
  });
}

TEST_CASE("redacted values and the redact hook keep what commands print from the model", "[integration][tools]") {
  on_each_backend([&](Bench& bench) -> Task<void> {
    auto workspace = bench.first();
    tools::ShellOptions options;
    options.env = ws::Env{{"DEPLOY_TOKEN", "tok-4f9a1c"}};
    options.redacted_values = {"tok-4f9a1c"};
    options.redact = [](std::string text) {
      const std::string host = "db.internal.example";
      for (auto at = text.find(host); at != std::string::npos; at = text.find(host, at)) text.replace(at, host.size(), "<host>");
      return text;
    };
    tools::Shell shell(workspace, options);
    CHECK_TEXT(co_await run(shell, "echo \"token=$DEPLOY_TOKEN\"; echo \"$DEPLOY_TOKEN at db.internal.example\" >&2; exit 3"),
               "[stdout]\ntoken=[redacted]\n\n[stderr]\n[redacted] at <host>\n\n[exit code: 3]");
    // A background job's output, and the command line its answer repeats.
    const auto started = co_await call(shell, "start_command", command_args("echo \"$DEPLOY_TOKEN\"; echo tok-4f9a1c"));
    CHECK(started.rfind("Started background command: 'echo \"$DEPLOY_TOKEN\"; echo [redacted]'\nID: ", 0) == 0);
    const auto id = started_id(started);
    CHECK_TEXT(co_await check_until(shell, id, "finished"), "[stdout]\n[redacted]\n[redacted]\n\n[status: finished]\n[exit code: 0]");
    CHECK_TEXT(co_await call(shell, "stop_command", id_args(id)), "[stdout]\n[redacted]\n[redacted]\n\n[stopped]\n[exit code: 0]");
    // Without the options, the same command shows the value: the redaction is the options'.
    tools::ShellOptions plain;
    plain.env = options.env;
    tools::Shell unredacted(workspace, plain);
    CHECK_TEXT(co_await run(unredacted, "echo \"$DEPLOY_TOKEN\""), "[stdout]\ntok-4f9a1c\n");
  });
}

TEST_CASE("a background job started through one backend is checked and stopped through another", "[integration][tools]") {
  on_each_backend([&](Bench& bench) -> Task<void> {
    auto workspace = bench.first();
    tools::Shell starter(workspace);
    const auto started = co_await call(starter, "start_command",
                                       command_args("echo started; echo oops >&2; sleep 300 & echo $! > grandchild.pid; wait"));
    const auto id = started_id(started);
    CHECK(started.rfind("Started background command: 'echo started; echo oops >&2; sleep 300 & echo $! > grandchild.pid; wait'\nID: ", 0) == 0);
    auto grandchild = co_await wait_for_file(*workspace, "grandchild.pid");
    grandchild.pop_back();
    CO_CHECK(co_await process_alive(*workspace, grandchild));
    CO_CHECK(co_await workspace->exists(".pydantic-ai-harness/shell/" + id + "/handle"));

    auto other = bench.second();
    tools::Shell checker(other);
    CHECK_TEXT(co_await check_until(checker, id, "oops"), "[stdout]\nstarted\n\n[stderr]\noops\n\n[status: running]");
    CHECK_TEXT(co_await call(checker, "stop_command", id_args(id)), "[stdout]\nstarted\n\n[stderr]\noops\n\n[stopped]\n[exit code: 143]");
    // The whole process group is gone, the grandchild too, and so is the job directory.
    CO_CHECK_FALSE(co_await process_alive(*other, grandchild));
    CO_CHECK_FALSE(co_await workspace->exists(".pydantic-ai-harness/shell/" + id));
    CHECK_TEXT(co_await call(starter, "check_command", id_args(id)), "[Error: unknown command ID '" + id + "']");
    CHECK_TEXT(co_await call(checker, "stop_command", id_args(id)), "[Error: unknown command ID '" + id + "']");
    CHECK_TEXT(co_await call(checker, "check_command", id_args("../../etc")), "[Error: unknown command ID '../../etc']");

    // A job that finishes reports its exit code; stopping it then removes its files.
    const auto finished_id = started_id(co_await call(starter, "start_command", command_args("echo done; exit 7")));
    CHECK_TEXT(co_await check_until(checker, finished_id, "[status: finished]"), "[stdout]\ndone\n\n[status: finished]\n[exit code: 7]");
    const auto quiet_id = started_id(co_await call(starter, "start_command", command_args("exit 0")));
    CHECK_TEXT(co_await check_until(checker, quiet_id, "finished"), "(no output yet)\n[status: finished]\n[exit code: 0]");
    CHECK_TEXT(co_await call(checker, "stop_command", id_args(quiet_id)), "(no output)\n[stopped]\n[exit code: 0]");
    CHECK_TEXT(co_await call(starter, "stop_command", id_args(finished_id)), "[stdout]\ndone\n\n[stopped]\n[exit code: 7]");
  });
}

TEST_CASE("a job's id derives from the run and tool call ids; a retried start attaches to it", "[integration][tools]") {
  on_each_backend([&](Bench& bench) -> Task<void> {
    auto workspace = bench.first();
    tools::Shell shell(workspace);
    tools::ToolCallContext context;
    context.run_id = "run-7";
    context.tool_call_id = "call-3";
    // sha256("run-7:call-3"), first 32 hex digits.
    const std::string expected = "00145ab852273063bafdb7d390884986";
    const auto first = co_await call_in(shell, "start_command", command_args("sleep 300"), context);
    CHECK(started_id(first) == expected);
    const auto handle = co_await workspace->read_text(".pydantic-ai-harness/shell/" + expected + "/handle");
    tools::Shell retried(bench.second());
    CHECK_TEXT(co_await call_in(retried, "start_command", command_args("sleep 300"), context), first);
    CHECK_TEXT(co_await workspace->read_text(".pydantic-ai-harness/shell/" + expected + "/handle"), handle);
    CHECK_TEXT(co_await call(retried, "stop_command", id_args(expected)), "(no output)\n[stopped]\n[exit code: 143]");
  });
}

TEST_CASE("a job's metadata directory reached through a symlink is refused, and nothing starts", "[integration][tools]") {
  on_each_backend([&](Bench& bench) -> Task<void> {
    auto workspace = bench.first();
    const auto wd = co_await workspace->working_dir();
    // The first job's launch carries the metadata checks (one command): a symlinked
    // .pydantic-ai-harness, then a symlinked shell/ below a real one, are refused there.
    tools::Shell linked_base(workspace);
    CHECK_TEXT(co_await run(linked_base, "mkdir elsewhere && ln -s elsewhere .pydantic-ai-harness"), "(no output)");
    CHECK_TEXT(co_await call(linked_base, "start_command", command_args("touch started"), ToolOutcome::failed),
               "Refusing to use " + wd + "/.pydantic-ai-harness: it is a symlink.");
    co_await workspace->remove(".pydantic-ai-harness");  // the link, not where it points
    CHECK_TEXT(co_await run(linked_base, "mkdir .pydantic-ai-harness && ln -s ../elsewhere .pydantic-ai-harness/shell"),
               "(no output)");
    tools::Shell linked_dir(workspace);
    CHECK_TEXT(co_await call(linked_dir, "start_command", command_args("touch started"), ToolOutcome::failed),
               "Refusing to use " + wd + "/.pydantic-ai-harness/shell: it is a symlink.");
    CHECK_TEXT(co_await run(linked_dir, "ls -A elsewhere; test -e started || echo none"), "[stdout]\nnone\n");
    // With a real directory the first job starts, and the .gitignore is written.
    co_await workspace->remove(".pydantic-ai-harness/shell");
    tools::Shell fresh(workspace);
    const auto id = started_id(co_await call(fresh, "start_command", command_args("sleep 300")));
    CHECK_TEXT(co_await workspace->read_text(".pydantic-ai-harness/.gitignore"), "*\n");
    // Stopped at once after its start: the exit code a stop reports is checked where the job
    // has run (above); here, under load, the stop's grace can end before it is published.
    const auto stopped = co_await call(fresh, "stop_command", id_args(id));
    CHECK(stopped.rfind("(no output)\n[stopped]", 0) == 0);
  });
}

TEST_CASE("the persistent shell tool returns output and handles", "[integration][tools]") {
  on_each_backend([&](Bench& bench) -> Task<void> {
    auto workspace = bench.first();
    const auto wd = co_await workspace->working_dir();
    tools::ShellOptions options;
    options.tools = {tools::persistent_tool_name};
    tools::Shell shell(workspace, options);
    std::string live;
    tools::ToolCallContext context;
    context.on_output = [&live](std::string_view text) { live += text; };
    const auto foreground = co_await call_in(shell, "shell", command_args("echo hello; echo oops >&2; exit 4"), context);
    const std::regex handles(
        "hello\noops\nPID: ([0-9]+) \\(supervisor; use `kill -- -\\1` to stop the whole process tree\\)\n"
        "Output: (.*)/\\.pydantic-ai-harness/shell/[0-9a-f]{32}/output\\.log\n"
        "Status: .*/status\\.json\n\\{\"pid\": \\1, \"exit_code\": 4\\}");
    std::smatch match;
    INFO(foreground);
    CHECK(std::regex_match(foreground, match, handles));
    CHECK(match[2] == wd);
    CHECK(live == "hello\noops\n");

    nlohmann::json background;
    background["command"] = "sleep 300";
    background["mode"] = "background";
    const auto text = co_await call(shell, "shell", args(background));
    const std::regex running("PID: ([0-9]+) \\(supervisor; use `(kill -- -\\1)` to stop the whole process tree\\)\n"
                             "Output: .*\nStatus: .*\n\\{\"pid\": \\1, \"exit_code\": null\\}");
    INFO(text);
    REQUIRE(std::regex_match(text, match, running));
    auto stop = ws::Command::shell(match[2].str());
    CHECK_TEXT((co_await workspace->run(std::move(stop))).exit_code, 0);

    nlohmann::json too_long;
    too_long["command"] = "true";
    too_long["timeout"] = 300;
    CHECK_TEXT(co_await call(shell, "shell", args(too_long), ToolOutcome::retry), "timeout must be greater than zero and at most 270 seconds.");
    const auto unknown = co_await call(shell, "run_command", command_args("true"), ToolOutcome::retry);
    CHECK(unknown.rfind("Unknown tool name: 'run_command'.", 0) == 0);
  });
}

TEST_CASE("tools() offers the configured tools only where commands can run", "[integration][tools]") {
  on_each_backend([&](Bench& bench) -> Task<void> {
    auto workspace = bench.first();
    tools::Shell shell(workspace);
    const auto definitions = co_await shell.tools();
    std::vector<std::string> names;
    for (const auto& d : definitions) names.push_back(d.name);
    CHECK(names == tools::run_scoped_tool_names());
    const auto schema = nlohmann::json::parse(definitions.at(0).parameters_schema);
    CHECK(schema["additionalProperties"] == false);
    CHECK(schema["required"] == nlohmann::json::array({"command"}));
    CHECK(schema["properties"]["timeout_seconds"]["default"].is_null());
    CHECK(definitions.at(0).description ==
          "<summary>Execute a shell command and return its output.</summary>\n<returns>\n"
          "<description>Labeled stdout/stderr output with exit code on non-zero exit.</description>\n</returns>");
    CHECK(shell.id() == "shell");

    tools::Shell read_only(std::make_shared<ws::ReadOnlyWorkspace>(workspace));
    CO_CHECK((co_await read_only.tools()).empty());
    CHECK_TEXT(co_await call(shell, "run_command", "{\"command\": 1}", ToolOutcome::retry), "Invalid arguments for tool 'run_command':\n- command: Input should be a valid string\nFix the errors and try again.");
    CHECK_TEXT(co_await call(shell, "run_command", "not json", ToolOutcome::retry), "Invalid arguments for tool 'run_command': the arguments are not valid JSON. Send a JSON object.");
  });
}

TEST_CASE("Shell validates its options and needs an attached workspace", "[unit][tools]") {
  auto workspace = std::make_shared<ws::Workspace>(std::make_shared<ws::LocalBackend>("."));
  const auto invalid = [&](tools::ShellOptions options, const std::string& message) {
    try {
      tools::Shell shell(workspace, std::move(options));
      FAIL("accepted: " << message);
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()) == message);
    }
  };
  tools::ShellOptions both;
  both.allowed_commands = {"ls"};
  both.denied_commands = std::vector<std::string>{"rm"};
  invalid(both, "Specify allowed_commands or denied_commands, not both.");
  tools::ShellOptions zero;
  zero.max_output_chars = 0;
  invalid(zero, "max_output_chars must be a positive integer.");
  tools::ShellOptions empty_value;
  empty_value.redacted_values = {"sk-1", ""};
  invalid(empty_value, "redacted_values must not contain an empty string.");
  tools::ShellOptions unknown;
  unknown.tools = {"run_command", "zap", "bash"};
  invalid(unknown, "Unknown shell tools: bash, zap. Available: run_command, start_command, check_command, "
                   "stop_command, shell, start_session, send_to_session, read_session, list_sessions, close_session.");
  tools::ShellOptions slow_shell;
  slow_shell.tools = {"shell"};
  slow_shell.default_timeout = ws::Seconds(271);
  invalid(slow_shell, "default_timeout must be greater than zero and at most 270 seconds for the shell tool.");
  tools::ShellOptions limit_zero;
  limit_zero.max_file_bytes = 0;
  invalid(limit_zero, "max_file_bytes must be a positive integer.");
  tools::ShellOptions limit_shell;
  limit_shell.max_file_bytes = 10;
  limit_shell.tools = {"shell"};
  invalid(limit_shell, "max_file_bytes is not supported with the persistent shell tool.");
  tools::ShellOptions limit_cwd;
  limit_cwd.max_file_bytes = 10;
  limit_cwd.persist_cwd = true;
  invalid(limit_cwd, "max_file_bytes is not supported with persist_cwd; cwd capture writes a file in the child.");
  tools::ShellOptions allow_only;
  allow_only.allowed_commands = {"ls"};
  CHECK_NOTHROW(tools::Shell(workspace, allow_only));

  tools::Shell detached(ws::no_workspace());
  CHECK_THROWS_AS(exedev::testing::run([&](Executor) -> Task<void> { co_await detached.tools(); }),
                  tools::UserError);
}
