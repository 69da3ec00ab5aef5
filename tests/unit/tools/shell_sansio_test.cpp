// The Shell tools' sans-IO parts: Python's text forms, the command policy, the scripts'
// arguments and the parsers of what the job files hold.
#include "tools/text.hpp"
#include "tools/shell_policy.hpp"
#include "tools/shell_scripts.hpp"
#include "tools/utf8_stream.hpp"

#include <exedev/workspace/types.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

using namespace exedev::tools::detail;

TEST_CASE("python_repr quotes and escapes as Python's repr does", "[unit][tools]") {
  CHECK(python_repr("echo hi") == "'echo hi'");
  CHECK(python_repr("it's") == "\"it's\"");
  CHECK(python_repr("both ' and \"") == "'both \\' and \"'");
  CHECK(python_repr("a\tb\nc\rd\\e") == "'a\\tb\\nc\\rd\\\\e'");
  CHECK(python_repr(std::string("nul\0x", 5)) == "'nul\\x00x'");
  CHECK(python_repr("\x1b[0m\x7f") == "'\\x1b[0m\\x7f'");
  CHECK(python_repr("caf\xc3\xa9 \xe2\x9c\x93") == "'caf\xc3\xa9 \xe2\x9c\x93'");  // printable: kept
  CHECK(python_repr("\xc2\xa0|\xe2\x80\x8b|\xe2\x80\xa8") == "'\\xa0|\\u200b|\\u2028'");
  CHECK(python_repr("bad\xff") == "'bad\\udcff'");  // surrogate-escaped byte
  CHECK(python_repr("") == "''");
}

TEST_CASE("python_float writes floats as Python's repr does", "[unit][tools]") {
  CHECK(python_float(30.0) == "30.0");
  CHECK(python_float(0.5) == "0.5");
  CHECK(python_float(1.25) == "1.25");
  CHECK(python_float(100000.0) == "100000.0");
  CHECK(python_float(1e15) == "1000000000000000.0");
  CHECK(python_float(1e16) == "1e+16");
  CHECK(python_float(0.0001) == "0.0001");
  CHECK(python_float(0.00001) == "1e-05");
  CHECK(python_float(0.1) == "0.1");
  CHECK(python_float(270.0) == "270.0");
  CHECK(python_float(1.5e300) == "1.5e+300");
  CHECK(python_float(-2.0) == "-2.0");
  CHECK(python_g(270.0) == "270");
  CHECK(python_g(0.5) == "0.5");
}

TEST_CASE("shlex_split splits as Python's shlex.split does", "[unit][tools]") {
  using V = std::vector<std::string>;
  CHECK(shlex_split("rm -rf /") == V{"rm", "-rf", "/"});
  CHECK(shlex_split("  'r'm  x") == V{"rm", "x"});
  CHECK(shlex_split("\"a\\\"b\\\\c\\d\" e") == V{"a\"b\\c\\d", "e"});
  CHECK(shlex_split("a\\ b c") == V{"a b", "c"});
  CHECK(shlex_split("'' x") == V{"", "x"});
  CHECK(shlex_split("") == V{});
  CHECK_FALSE(shlex_split("echo 'unclosed"));
  CHECK_FALSE(shlex_split("echo \"unclosed"));
  CHECK_FALSE(shlex_split("trailing \\"));
}

TEST_CASE("is_interactive_command matches the reference's patterns", "[unit][tools]") {
  for (const char* command : {"vim x", "vi", "  less file", "top", "man ls", "sudo ls", "sudo\tls", "passwd",
                              "ssh host", "telnet h", "ftp h", "emacs", "nano f", "more f", "htop", "vim.tiny x"}) {
    INFO(command);
    CHECK(is_interactive_command(command));
  }
  for (const char* command : {"vimdiff a b", "sudo", "sudoku", "echo vim", "topology", "mans", "sshd", "lesson",
                              "ftps", "./vim", "vi_x"}) {
    INFO(command);
    CHECK_FALSE(is_interactive_command(command));
  }
}

TEST_CASE("command_refusal applies the policy in the reference's order", "[unit][tools]") {
  CommandPolicy deny;
  deny.denied_commands = {"rm", "dd"};
  deny.denied_operators = {"&&", "|"};
  CHECK(command_refusal(deny, std::string("echo \0", 6)) ==
        "The command contains a NUL byte, which cannot be passed to a process.");
  CHECK(command_refusal(deny, "echo \xff") ==
        "The command contains characters that cannot be encoded for the operating system.");
  CHECK(command_refusal(deny, "vim && rm x") == "Interactive commands are not allowed. Command: 'vim && rm x'");
  CHECK(command_refusal(deny, "echo a | rm x && b") == "Shell operator '&&' is not allowed.");
  CHECK(command_refusal(deny, "rm -rf x") == "Command 'rm' is denied.");
  CHECK(command_refusal(deny, "'dd' if=x") == "Command 'dd' is denied.");
  CHECK_FALSE(command_refusal(deny, "echo rm"));
  CHECK_FALSE(command_refusal(deny, "rm 'unclosed"));  // shlex cannot split it: allowed
  CHECK_FALSE(command_refusal(deny, "   "));

  deny.allow_interactive = true;
  CHECK_FALSE(command_refusal(deny, "vim x"));

  CommandPolicy allow;
  allow.allowed_commands = {"ls", "cat"};
  CHECK_FALSE(command_refusal(allow, "ls -la"));
  CHECK(command_refusal(allow, "python3 x.py") == "Command 'python3' is not in the allowed list.");
}

TEST_CASE("filter_env drops names matching the denied globs, case-sensitively", "[unit][tools]") {
  exedev::workspace::Env env{{"OPENAI_API_KEY", "a"}, {"openai_api_key", "b"}, {"PATH_X", "c"}, {"K[1]", "d"},
                             {"A\\B", "e"}};
  const auto kept = filter_env(env, {"OPENAI_*", "K[[]1]", "A\\B"});
  CHECK(kept == exedev::workspace::Env{{"openai_api_key", "b"}, {"PATH_X", "c"}});
  CHECK(filter_env(env, {}) == env);
}

TEST_CASE("file size limits: the script prefix and the exit code notes", "[unit][tools]") {
  CHECK(limited_script("make", std::nullopt) == "make");
  const auto script = limited_script("make", 4096);
  CHECK(script.rfind(limit_function() + "\n__harness_limit_files 4096 || { echo 'Unable to apply max_file_bytes.' >&2; exit 1; }\nmake", 0) == 0);
  CHECK(file_limit_status(0, 10) == "");
  CHECK(file_limit_status(1, std::nullopt) == "");
  for (int code : {-25, 153, 281}) {
    CHECK(file_limit_status(code, 10) ==
          "\n[File-size limit exceeded: max_file_bytes=10. Reduce file output before retrying.]");
  }
  CHECK(file_limit_status(1, 10) ==
        "\n[Command failed with max_file_bytes=10; file writes may have reached the per-file limit.]");
}

TEST_CASE("run_command scripts: the cd prefix, the cwd capture and the labels", "[unit][tools]") {
  CHECK(in_directory("/w/my dir", "ls") == "cd '/w/my dir' || exit\nls");
  CHECK(capture_cwd_script("cd sub", "/w/.p/cwd-1") == "cd sub\n__harness_ec=$?\npwd > /w/.p/cwd-1\nexit $__harness_ec");
  CHECK(labelled("out\n", "err\n", "(no output)") == "[stdout]\nout\n\n[stderr]\nerr\n");
  CHECK(labelled("out", "", "(no output)") == "[stdout]\nout");
  CHECK(labelled("", "err", "(no output)") == "[stderr]\nerr");
  CHECK(labelled("", "", "(no output)") == "(no output)");
  CHECK(labelled("", "", std::nullopt, "[Command timed out after 1.0s]") == "[Command timed out after 1.0s]");
  CHECK(labelled("x", "", std::nullopt, "[T]") == "[stdout]\nx\n[T]");
}

TEST_CASE("the launcher quotes every value it assigns", "[unit][tools]") {
  LaunchRequest request;
  request.cwd = "/w";
  request.directory = "/w/.pydantic-ai-harness/shell/0123";
  request.exclusive = true;
  request.combined = false;
  request.command = "echo 'hi' $HOME";
  request.file_limit = 100;
  const auto script = launcher_script(request);
  CHECK(script.rfind("cd /w || exit\ndir=/w/.pydantic-ai-harness/shell/0123 exclusive=1 mode=separate "
                     "cmd='echo '\"'\"'hi'\"'\"' $HOME' limit=100 wrapper='",
                     0) == 0);
  request.exclusive = false;
  request.combined = true;
  request.file_limit.reset();
  const auto second = launcher_script(request);
  CHECK(second.find(" exclusive=0 mode=combined ") != std::string::npos);
  CHECK(second.find(" limit='' wrapper=") != std::string::npos);
  // A prelude runs first, in a subshell whose failure ends the command with its status.
  request.prelude = "exit 113";
  CHECK(launcher_script(request) == "(\nexit 113\n) || exit $?\n" + second);
  CHECK(signal_argv("TERM", "-42", "/j/stop") ==
        std::vector<std::string>{"sh", "-c", "true 2> /dev/null > \"$3\"; kill -s \"$1\" -- \"$2\"", "kill", "TERM",
                                 "-42", "/j/stop"});
  CHECK(read_log_script("/j/a b.log", 10, 5) ==
        "test -f '/j/a b.log' || exit 66; test -r '/j/a b.log' || exit 67; tail -c +11 '/j/a b.log' | head -c 5 | base64");
}

TEST_CASE("job files: handles, status and command ids", "[unit][tools]") {
  const auto both = parse_handle("123 123\n");
  REQUIRE(both);
  CHECK(both->pid == 123);
  CHECK(both->pgid == 123);
  const auto pid_only = parse_handle("77 -");
  REQUIRE(pid_only);
  CHECK(pid_only->pid == 77);
  CHECK_FALSE(pid_only->pgid);
  CHECK_FALSE(parse_handle(""));
  CHECK_FALSE(parse_handle("12"));
  CHECK_FALSE(parse_handle("x 12"));
  CHECK_FALSE(parse_handle("1 2 3"));

  CHECK(parse_exit_code(R"({"pid": 5, "exit_code": 0})") == 0);
  CHECK(parse_exit_code(R"({"pid": 5, "exit_code": 143})") == 143);
  CHECK(parse_exit_code(R"({"pid": 5, "exit_code": -1})") == -1);
  CHECK_FALSE(parse_exit_code(R"({"pid": 5, "exit_code": null})"));
  CHECK_FALSE(parse_exit_code(R"({"pid": 5, "exit_code": true})"));
  CHECK_FALSE(parse_exit_code(R"({"pid": 5, "exit_code": 1.5})"));
  CHECK_FALSE(parse_exit_code(R"({"pid": 5})"));
  CHECK_FALSE(parse_exit_code(R"({"pid": 5, "exit)"));
  CHECK_FALSE(parse_exit_code("[]"));

  CHECK(is_command_id("0123456789abcdef0123456789abcdef"));
  CHECK_FALSE(is_command_id("0123456789ABCDEF0123456789abcdef"));
  CHECK_FALSE(is_command_id("0123456789abcdef0123456789abcde"));
  CHECK_FALSE(is_command_id("../../0123456789abcdef0123456789"));
}

TEST_CASE("Utf8Stream decodes pieces split inside a character", "[unit][tools]") {
  Utf8Stream stream;
  const std::string check_mark = "\xe2\x9c\x93";
  CHECK(stream.feed("a" + check_mark.substr(0, 1)) == "a");
  CHECK(stream.feed(check_mark.substr(1, 1)) == "");
  CHECK(stream.feed(check_mark.substr(2) + "b") == check_mark + "b");
  CHECK(stream.feed("\xff" "c") == "\xef\xbf\xbd" "c");
  CHECK(stream.feed("\xe2\x9c") == "");
  CHECK(stream.finish() == "\xef\xbf\xbd");
  CHECK(stream.finish() == "");
}

TEST_CASE("a job report: status, tails and the end marker; anything else is no report", "[tools][shell]") {
  // "{"pid": 7, "exit_code": 0}" and "out\n", "err" in base64, as the script prints them.
  const std::string whole = "#status\neyJwaWQiOiA3LCAiZXhpdF9jb2RlIjogMH0=\n#out\nb3V0Cg==\n#err\nZXJy\n#end\n";
  const auto report = parse_job_report(whole);
  REQUIRE(report);
  CHECK(report->status == std::optional<std::string>(R"({"pid": 7, "exit_code": 0})"));
  CHECK(report->stdout_tail == "out\n");
  CHECK(report->stderr_tail == "err");
  const auto running = parse_job_report("#running\n#out\n#err\n#end\n");
  REQUIRE(running);
  CHECK_FALSE(running->status);
  CHECK(running->stdout_tail.empty());
  CHECK_FALSE(parse_job_report("#running\n#out\nb3V0Cg==\n"));           // cut before the end
  CHECK_FALSE(parse_job_report("#running\n#out\n#err\n#end\nextra\n"));  // output after it
  CHECK_FALSE(parse_job_report("#running\n#out\n*bad*\n#err\n#end\n"));  // not base64
  CHECK_FALSE(parse_job_report("#running\n#what\n#end\n"));              // an unknown section
  const auto script = job_report_script("/w/.pydantic-ai-harness/shell/ab", 4096, true);
  CHECK(script.rfind("dir=" + exedev::workspace::shell_quote("/w/.pydantic-ai-harness/shell/ab") + " max=4096 stop=1\n", 0) == 0);
}
