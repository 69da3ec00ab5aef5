// The Shell tool set's interactive session tools, on LocalBackend and on SandboxBackend (a VM of
// the in-process emulator): a Python REPL driven through a terminal, a program on pipes, the
// command policy on the start, the output cap with nothing lost between reads, read positions
// per run, and a second backend finding the session by name. Every wait is a read with a wait
// (bounded by the test's deadline), never a sleep. Sessions are per user per environment (a local
// one outlives the test's directory): each test names its own uniquely.
#include "integration/tools/shell_bench.hpp"

#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <tuple>

using namespace shell_test;

namespace {

/// `prefix` and a random suffix: a session name no other test run uses.
std::string unique_name(const std::string& prefix) {
  std::random_device random;
  return prefix + "-" + std::to_string(random());
}

tools::ShellOptions session_options() {
  tools::ShellOptions options;
  options.allow_interactive = true;
  options.tools = tools::session_tool_names();
  return options;
}

std::string name_args(const std::string& name) {
  nlohmann::json json;
  json["name"] = name;
  return json.dump();
}

std::string send_args(const std::string& name, const std::string& text) {
  nlohmann::json json;
  json["name"] = name;
  json["text"] = text;
  return json.dump();
}

std::string key_args(const std::string& name, const std::string& key) {
  nlohmann::json json;
  json["name"] = name;
  json["key"] = key;
  return json.dump();
}

/// read_session in `run_id` until the output read since `so_far` contains `needle`; returns all
/// answers joined.
Task<std::string> read_until(tools::Shell& shell, std::string name, std::string needle, std::string so_far = {},
                             std::string run_id = {}) {
  tools::ToolCallContext context;
  context.run_id = run_id;
  nlohmann::json json;
  json["name"] = name;
  json["wait_seconds"] = 5;
  while (so_far.find(needle) == std::string::npos) {
    so_far += co_await call_in(shell, "read_session", json.dump(), context);
  }
  co_return so_far;
}

/// The program's output in an answer: without the first line of a start or send, and without
/// the status lines the tool adds at the end.
std::string output_of(std::string answer) {
  if (answer.rfind("Started session ", 0) == 0 || answer.rfind("Sent ", 0) == 0) answer.erase(0, answer.find('\n') + 1);
  const auto status = answer.rfind("\n[session ");
  if (status != std::string::npos) answer.erase(status + 1);
  const auto cut = answer.find("[output cut at ");
  if (cut != std::string::npos) answer.erase(cut);
  return answer == "(no new output)\n" ? std::string() : answer;
}

}  // namespace

TEST_CASE("session tools drive a Python REPL in a terminal; another backend finds it by name",
          "[integration][tools][sessions]") {
  on_each_backend([&](Bench& bench) -> Task<void> {
    auto workspace = bench.first();
    tools::Shell shell(workspace, session_options());
    const auto py = unique_name("py");
    const auto quoted = "'" + py + "'";
    nlohmann::json start;
    start["name"] = py;
    start["command"] = "python3 -i -q";
    const auto started = co_await call(shell, "start_session", args(start));
    CHECK(started.rfind("Started session " + quoted + " in a 24x80 terminal: 'python3 -i -q'\n", 0) == 0);
    auto seen = co_await read_until(shell, py, ">>> ", started);

    seen = co_await call(shell, "send_to_session", send_args(py, "6 * 7"));
    seen = co_await read_until(shell, py, "42", seen);
    seen = co_await call(shell, "send_to_session", send_args(py, "word = 'ab' * 3"));
    seen = co_await call(shell, "send_to_session", send_args(py, "print(word.upper())"));
    CHECK(seen.rfind("Sent 'print(word.upper())\\n' to session " + quoted + ".\n", 0) == 0);
    seen = co_await read_until(shell, py, "ABABAB", seen);
    CHECK(seen.find("[session " + quoted + " is running]") != std::string::npos);

    const auto listed = co_await call(shell, "list_sessions", "{}");
    CHECK(listed.find(quoted + ": running, terminal, command 'python3 -i -q'") != std::string::npos);
    // Another run reads from the start: read positions are kept per run.
    co_await read_until(shell, py, "ABABAB", {}, "another-run");

    // A second backend, a new tool set: the session is found by name, its output read from the start.
    tools::Shell elsewhere(bench.second(), session_options());
    co_await read_until(elsewhere, py, "42");
    seen = co_await call(elsewhere, "send_to_session", key_args(py, "ctrl-d"));
    co_await read_until(elsewhere, py, "[session " + quoted + " exited: exit code 0]", seen);
    CHECK_TEXT(co_await call(elsewhere, "close_session", name_args(py)), "Closed session " + quoted + ".");
    const auto after = co_await call(shell, "list_sessions", "{}");
    CHECK(after.find(quoted) == std::string::npos);
    const auto gone = co_await call(shell, "read_session", name_args(py), ToolOutcome::retry);
    CHECK(gone == "process session " + quoted + ": no such session");
  });
}

TEST_CASE("the ctrl-c key interrupts the program in a terminal", "[integration][tools][sessions]") {
  on_each_backend([&](Bench& bench) -> Task<void> {
    tools::Shell shell(bench.first(), session_options());
    const auto name = unique_name("sleeper");
    nlohmann::json start;
    start["name"] = name;
    start["argv"] = {"python3", "-c",
                     "import time\nprint('sleeping', flush=True)\ntry:\n  time.sleep(60)\n"
                     "except KeyboardInterrupt:\n  print('interrupted')\n"};
    auto seen = co_await call(shell, "start_session", args(start));
    seen = co_await read_until(shell, name, "sleeping", seen);
    seen = co_await call(shell, "send_to_session", key_args(name, "ctrl-c"));
    CHECK(seen.rfind("Sent the key ctrl-c to session '" + name + "'.\n", 0) == 0);
    co_await read_until(shell, name, "interrupted\r\n", seen);
    co_await read_until(shell, name, "[session '" + name + "' exited: exit code 0]", seen);
    co_await call(shell, "close_session", name_args(name));
  });
}

TEST_CASE("session tools on pipes: argv, env without denied names, invalid UTF-8, end of input",
          "[integration][tools][sessions]") {
  on_each_backend([&](Bench& bench) -> Task<void> {
    auto options = session_options();
    options.env = ws::Env{{"GREETING", "hi"}, {"OPENAI_API_KEY", "sk-test"}};
    options.denied_env_patterns = tools::llm_api_key_env_patterns();
    tools::Shell shell(bench.first(), options);
    nlohmann::json start;
    const auto cat = unique_name("cat");
    start["name"] = cat;
    start["argv"] = {"sh", "-c", "echo \"$GREETING-$OPENAI_API_KEY\"; printf 'bad \\377\\n'; exec cat"};
    start["pty"] = false;
    auto seen = co_await call(shell, "start_session", args(start));
    CHECK(seen.find(" with pipes: ") != std::string::npos);
    seen = co_await read_until(shell, cat, "bad \xef\xbf\xbd\n", seen);
    CHECK(seen.find("hi-\n") != std::string::npos);

    seen = co_await call(shell, "send_to_session", send_args(cat, "echoed back"));
    seen = co_await read_until(shell, cat, "echoed back\n", seen);
    seen = co_await call(shell, "send_to_session", key_args(cat, "ctrl-d"));
    co_await read_until(shell, cat, "[session '" + cat + "' exited: exit code 0]", seen);
    CHECK_TEXT(co_await call(shell, "send_to_session", send_args(cat, ""), ToolOutcome::retry),
               "Nothing to send: give `text`, a `key`, or both.");
    co_await call(shell, "close_session", name_args(cat));
  });
}

TEST_CASE("a session's output is redacted, a value split between two reads too", "[integration][tools][sessions]") {
  on_each_backend([&](Bench& bench) -> Task<void> {
    auto options = session_options();
    // The halves of the value in variables of their own: no answer (the start's command line
    // included) shows either unless the redaction lets it through.
    options.env = ws::Env{{"FIRST_HALF", "tok-4f"}, {"SECOND_HALF", "9a1c"}};
    options.redacted_values = {"tok-4f9a1c"};
    tools::Shell shell(bench.first(), options);
    const auto name = unique_name("split");
    nlohmann::json start;
    start["name"] = name;
    // The program prints the first half, waits for a line, then prints the second half: the
    // halves come in different reads.
    start["argv"] = {"sh", "-c", "printf 'the token: %s' \"$FIRST_HALF\"; read line; printf '%s done\\n' \"$SECOND_HALF\""};
    start["pty"] = false;
    auto transcript = co_await call(shell, "start_session", args(start));
    transcript = co_await read_until(shell, name, "[6 bytes held back: they may begin a redacted value; the next read shows them]\n",
                                     transcript);
    CHECK(transcript.find("the token: ") != std::string::npos);
    transcript += co_await call(shell, "send_to_session", send_args(name, "go"));
    transcript = co_await read_until(shell, name, "[session '" + name + "' exited: exit code 0]", transcript);
    CHECK(transcript.find("the token: [redacted] done\n") == std::string::npos);  // the halves came apart
    CHECK(transcript.find("[redacted] done\n") != std::string::npos);
    CHECK(transcript.find("tok-4f") == std::string::npos);
    CHECK(transcript.find("9a1c") == std::string::npos);
    co_await call(shell, "close_session", name_args(name));
  });
}

TEST_CASE("session tools cap each read and lose nothing between reads; the start obeys the policy",
          "[integration][tools][sessions]") {
  on_each_backend([&](Bench& bench) -> Task<void> {
    auto workspace = bench.first();
    auto capped = session_options();
    capped.max_output_chars = 600;
    tools::Shell shell(workspace, capped);
    nlohmann::json start;
    const auto seq = unique_name("seq");
    start["name"] = seq;
    start["command"] = "seq 1 400";
    start["pty"] = false;
    start["wait_seconds"] = 0;
    std::string answer = co_await call(shell, "start_session", args(start));
    std::string output = output_of(answer);
    bool cut = answer.find(" bytes: call read_session for the rest]") != std::string::npos;
    while (answer.find("[session '" + seq + "' exited: exit code 0]") == std::string::npos) {
      answer = co_await call(shell, "read_session", name_args(seq));
      CHECK(answer.size() <= 600);
      CHECK(answer.find("[... output truncated") == std::string::npos);
      cut = cut || answer.find(" bytes: call read_session for the rest]") != std::string::npos;
      output += output_of(answer);
    }
    CHECK(cut);
    std::string numbers;
    for (int i = 1; i <= 400; ++i) numbers += std::to_string(i) + "\n";
    CHECK(output == numbers);
    co_await call(shell, "close_session", name_args(seq));

    // The start obeys the command policy: (options, the command, the refusal).
    auto allow = session_options();
    allow.allowed_commands = {"python3"};
    auto operators = session_options();
    operators.denied_operators = {"|"};
    const std::vector<std::tuple<tools::ShellOptions, std::string, std::string>> refusals{
        {allow, "bash -i", "Command 'bash' is not in the allowed list."},
        {operators, "cat | cat", "Shell operator '|' is not allowed."}};
    for (const auto& refused : refusals) {
      tools::Shell refusing(workspace, std::get<0>(refused));
      start["command"] = std::get<1>(refused);
      CHECK_TEXT(co_await call(refusing, "start_session", args(start), ToolOutcome::retry), std::get<2>(refused));
    }
    tools::Shell defaults(workspace, session_options());
    start.erase("command");
    start["argv"] = {"rm", "-rf", "x"};
    CHECK_TEXT(co_await call(defaults, "start_session", args(start), ToolOutcome::retry), "Command 'rm' is denied.");
    start["argv"] = nlohmann::json::array();
    CHECK_TEXT(co_await call(defaults, "start_session", args(start), ToolOutcome::retry), "argv must name a program first.");
    start["argv"] = {"true"};
    start["name"] = "-bad";
    const auto bad_name = co_await call(defaults, "start_session", args(start), ToolOutcome::retry);
    CHECK(bad_name.find("1 to 64 of") != std::string::npos);
    const auto listed = co_await call(defaults, "list_sessions", "{}");
    CHECK(listed.find("'" + seq + "'") == std::string::npos);
  });
}

TEST_CASE("a session whose holder is gone reads and lists as lost", "[integration][tools][sessions]") {
  on_each_backend([&](Bench& bench) -> Task<void> {
    tools::Shell shell(bench.first(), session_options());
    const auto name = unique_name("lost");
    nlohmann::json start;
    start["name"] = name;
    start["command"] = "echo up; exec sleep 100";
    start["pty"] = false;
    auto seen = co_await call(shell, "start_session", args(start));
    seen = co_await read_until(shell, name, "up\n", seen);
    // As a reboot's cleanup would: the holder, then the program (the VMs of the emulator and
    // this machine share /tmp, where the state is).
    const auto state = "/tmp/exedev-sessions-" + std::to_string(::getuid()) + "/" + name + "/";
    pid_t holder = 0, program = 0;
    std::ifstream(state + "holder.pid") >> holder;
    std::ifstream(state + "pid") >> program;
    CO_REQUIRE(holder > 0);
    CO_REQUIRE(program > 0);
    CO_REQUIRE(::kill(holder, SIGKILL) == 0);
    CO_REQUIRE(::kill(-program, SIGKILL) == 0);
    co_await read_until(shell, name, "[session '" + name + "' was lost: its holder is gone and no end was recorded]");
    const auto listed = co_await call(shell, "list_sessions", "{}");
    CO_CHECK(listed.find("'" + name + "': lost (its holder is gone, no end recorded), pipes") != std::string::npos);
    co_await call(shell, "close_session", name_args(name));
  });
}
