// What SandboxBackend sends on SSH exec channels, and how it reads a command's stderr. The
// programs are run here by the local /bin/sh, as sshd's session would run them.
#include "sandbox/ssh_commands.hpp"

#include "common/base64.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>
#include <sys/wait.h>

using exedev::detail::EndMarkerReader;
using exedev::detail::StartMarkerReader;

namespace {

struct ShellRun {
  int exit_code = -1;
  std::string stdout_bytes;
  std::string stderr_bytes;
};

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// `/bin/sh` with `program` on stdin, as the exec channel gives it, with SHELL set.
ShellRun run_sh(const std::string& program, const std::string& shell = "/bin/sh") {
  const auto dir = std::filesystem::temp_directory_path() / ("exedev-ssh-commands-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "program", std::ios::binary) << program;
  }
  const std::string line = "cd / && HOME='" + dir.string() + "' SHELL='" + shell + "' /bin/sh <'" + (dir / "program").string() + "' >'" +
                           (dir / "out").string() + "' 2>'" + (dir / "err").string() + "'";
  const int status = std::system(line.c_str());
  ShellRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.stdout_bytes = slurp(dir / "out");
  run.stderr_bytes = slurp(dir / "err");
  std::filesystem::remove_all(dir);
  return run;
}

}  // namespace

TEST_CASE("ssh commands: the marker reader drops noise, finds the process group, passes the rest") {
  StartMarkerReader reader("B0b");
  CHECK(reader.feed("motd line\nmore noise").empty());
  CHECK_FALSE(reader.started());
  CHECK(reader.feed(" still noise\nB0").empty());
  CHECK(reader.feed("b 4242").empty());
  CHECK_FALSE(reader.started());
  CHECK(reader.feed("\nwarning: x\n") == "warning: x\n");
  CHECK(reader.started());
  REQUIRE(reader.pgid());
  CHECK(*reader.pgid() == 4242);
  CHECK(reader.feed("B0b 1\n") == "B0b 1\n");  // after the marker, everything is the command's
}

TEST_CASE("ssh commands: a marker without a usable process group still starts the stream") {
  StartMarkerReader reader("Bx");
  CHECK(reader.feed("Bx \nrest") == "rest");
  CHECK(reader.started());
  CHECK_FALSE(reader.pgid());
  StartMarkerReader other("Bx");
  CHECK(other.feed("Bxy 12\nBx 1\n").empty());  // "Bxy" is not the marker; group 1 is refused
  CHECK(other.started());
  CHECK_FALSE(other.pgid());
}

TEST_CASE("ssh commands: a long noise line never grows the reader past its bound") {
  StartMarkerReader reader("B1");
  CHECK(reader.feed(std::string(1 << 20, 'n')).empty());
  CHECK(reader.feed("\nB1 77\nok") == "ok");
  CHECK(*reader.pgid() == 77);
}

// A command's streams as SandboxBackend reads them: the start marker and end marks taken out.
struct CommandStreams {
  std::string out, err;
  std::optional<int> out_status, err_status;
  std::optional<std::int64_t> pgid;
};

CommandStreams read_streams(const ShellRun& run, const std::string& boundary) {
  CommandStreams streams;
  StartMarkerReader start(boundary);
  EndMarkerReader out_end(boundary);
  EndMarkerReader err_end(boundary);
  streams.out = out_end.feed(run.stdout_bytes);
  streams.err = err_end.feed(start.feed(run.stderr_bytes));
  streams.out_status = out_end.exit_code();
  streams.err_status = err_end.exit_code();
  streams.pgid = start.pgid();
  return streams;
}

TEST_CASE("ssh commands: a command runs in the login shell, in its working dir, with its env and status") {
  std::map<std::string, std::string> env;
  env["GREETING"] = "it's \"quoted\" $HOME";
  const auto program = exedev::detail::ssh_command_program("Bm1", "printf '%s|%s' \"$GREETING\" \"$PWD\"; echo oops >&2; exit 3",
                                                           env, std::string("/tmp"));
  const auto run = run_sh(program);
  CHECK(run.exit_code == exedev::detail::ssh_channel_status(3));  // never 0: the channel's status confirms the marks
  const auto streams = read_streams(run, "Bm1");
  CHECK(streams.out == "it's \"quoted\" $HOME|/tmp");
  CHECK(streams.err == "oops\n");
  CHECK(streams.out_status == 3);
  CHECK(streams.err_status == 3);
  REQUIRE(streams.pgid);
  CHECK(*streams.pgid > 1);
}

TEST_CASE("ssh commands: a working dir that does not exist exits 1 without running the command") {
  const auto run = run_sh(exedev::detail::ssh_command_program("Bm2", "echo ran", {}, std::string("/nonexistent/dir")));
  CHECK(run.exit_code == exedev::detail::ssh_channel_status(1));
  const auto streams = read_streams(run, "Bm2");
  CHECK(streams.out.empty());
  CHECK(streams.out_status == 1);
}

TEST_CASE("ssh commands: a command's stdin is at EOF and a signal's status is 128+N") {
  const auto eof = run_sh(exedev::detail::ssh_command_program("Bm3", "cat; echo done", {}, std::nullopt));
  CHECK(eof.exit_code == exedev::detail::ssh_channel_status(0));
  CHECK(eof.exit_code != 0);
  CHECK(read_streams(eof, "Bm3").out == "done\n");
  const auto killed = run_sh(exedev::detail::ssh_command_program("Bm4", "sh -c 'kill -s KILL $$'; exit $?", {}, std::nullopt));
  CHECK(exedev::detail::ssh_command_status(killed.exit_code) == 128 + 9);
  CHECK(read_streams(killed, "Bm4").err_status == 128 + 9);
}

TEST_CASE("ssh commands: the end mark is found however the stream is split, and only once") {
  const std::string stream = std::string("data\nmore \0bytes", 17) + "Be1 x 42\nafter the end";
  for (std::size_t piece = 1; piece <= stream.size(); ++piece) {
    EndMarkerReader reader("Be1");
    std::string out;
    for (std::size_t at = 0; at < stream.size(); at += piece) out += reader.feed(std::string_view(stream).substr(at, piece));
    CHECK(out == std::string("data\nmore \0bytes", 17));
    CHECK(reader.exit_code() == 42);
    CHECK(reader.finish().empty());
  }
}

TEST_CASE("ssh commands: output that only looks like the end mark is data, and a cut stream keeps its tail") {
  EndMarkerReader reader("Be2");
  CHECK(reader.feed("a\nBe2 x nope\nb\nBe2") == "a\nBe2 x nope\nb\n");
  CHECK_FALSE(reader.exit_code());
  CHECK(reader.finish() == "Be2");
}

TEST_CASE("ssh commands: a mark with no status line after it holds nothing back (the reader stays bounded)") {
  // A process that learnt the boundary prints the mark and then endless bytes with no newline.
  EndMarkerReader reader("Be4");
  std::size_t handed_on = 0;
  handed_on += reader.feed("Be4 x ").size();
  const std::string flood(64 * 1024, 'y');
  for (int i = 0; i < 64; ++i) handed_on += reader.feed(flood).size();
  CHECK_FALSE(reader.exit_code());
  CHECK(reader.finish().size() < 16);
  CHECK(handed_on + 16 > 6 + 64 * flood.size());
  // A real status after a forged mark of that kind is still read.
  EndMarkerReader again("Be5");
  CHECK(again.feed("Be5 x 123456789012345\nBe5 x 3\n") == "Be5 x 123456789012345\n");
  CHECK(again.exit_code() == 3);
}

TEST_CASE("ssh commands: a line's newline is handed on at once, not held back for the end mark") {
  // Live output: a command that prints a line and then waits must show the whole line.
  EndMarkerReader reader("Be3");
  CHECK(reader.feed("ready\n") == "ready\n");
  CHECK(reader.feed("B") == "");
  CHECK(reader.feed("e3 x 0\n") == "");
  CHECK(reader.exit_code() == 0);
}

TEST_CASE("ssh commands: invalid input is refused before anything is sent") {
  CHECK_THROWS_AS(exedev::detail::ssh_command_program("bad boundary", "true", {}, std::nullopt), std::invalid_argument);
  CHECK_THROWS_AS(exedev::detail::ssh_command_program("B", std::string("a\0b", 3), {}, std::nullopt), std::invalid_argument);
  std::map<std::string, std::string> bad_env;
  bad_env["1X"] = "v";
  CHECK_THROWS_AS(exedev::detail::ssh_command_program("B", "true", bad_env, std::nullopt), std::invalid_argument);
  CHECK_THROWS_AS(exedev::detail::ssh_stop_program(1), std::invalid_argument);
  CHECK_THROWS_AS(exedev::detail::ssh_script_program("B", "true", {"not base64!"}), std::invalid_argument);
  CHECK_THROWS_AS(exedev::detail::ssh_script_program("B", std::string("\0", 1), {}), std::invalid_argument);
  CHECK_THROWS_AS(exedev::detail::ssh_script_program("B'", "true", {}), std::invalid_argument);
}

TEST_CASE("ssh commands: a script gets its arguments and cannot read its own text") {
  const auto run = run_sh(exedev::detail::ssh_script_program("Bs1", "printf '%s,%s,' \"$1\" \"$2\"; cat; echo end >&2; exit 4",
                                                             {"QUJD", "eA=="}));
  CHECK(run.exit_code == 4);
  CHECK(run.stdout_bytes == "QUJD,eA==,");
  // The process group's marker comes first on stderr (the stop after a deadline needs it).
  StartMarkerReader marker("Bs1");
  CHECK(marker.feed(run.stderr_bytes) == "end\n");
  CHECK(marker.pgid());
}

TEST_CASE("ssh commands: the stop program ends at once when the group is gone") {
  const auto run = run_sh(exedev::detail::ssh_stop_program(999999999));
  CHECK(run.exit_code == 0);
}

TEST_CASE("ssh commands: a stream's first line is its program; the rest of stdin is the program's") {
  const std::vector<std::string> args = {exedev::detail::base64_encode("first arg")};
  const auto line = exedev::detail::ssh_stream_program_line(
      "printf '%s|' \"$(printf %s \"$1\" | base64 -d)\"; cat; echo \"|$PATH\" | cut -c1-15", args);
  REQUIRE(line.back() == '\n');
  CHECK(line.find('\n') == line.size() - 1);  // one line, whatever the script holds
  // What the VM's login shell runs for the exec request, with the line and then the stream.
  const auto run = run_sh("exec " + std::string(exedev::detail::ssh_stream_command) + " <<'EOF'\n" + line +
                          "the stream's bytes\nEOF\n");
  CHECK(run.exit_code == 0);
  CHECK(run.stdout_bytes == "first arg|the stream's bytes\n|/usr/bin:/bin:\n");
  CHECK_THROWS_AS(exedev::detail::ssh_stream_program_line("x", {"not base64!"}), std::invalid_argument);
  CHECK_THROWS_AS(exedev::detail::ssh_stream_program_line(std::string("a\0b", 3), {}), std::invalid_argument);
}
