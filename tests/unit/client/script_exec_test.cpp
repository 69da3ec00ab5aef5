// Client::run_script's one-request protocol (sans-IO): the request it builds, how it is sized,
// and how its framed answer is read. The wrapper itself runs under a real /bin/sh in the
// integration tests (tests/integration/sandbox).
#include <catch2/catch.hpp>

#include <exedev/client.hpp>
#include <exedev/errors.hpp>

#include "client/script_exec.hpp"
#include "client/retry.hpp"
#include "client/lobby.hpp"

#include <cstdio>
#include <memory>

namespace d = exedev::detail;

TEST_CASE("run_script: arguments travel once, as they are") {
  const std::string data(4096, 'Q');
  const auto line = d::script_lobby_line("box", "printf '%s' \"$1\" | base64 -d", {data + "=="}, "#B#");
  CHECK(line.starts_with("ssh 'box' '"));
  CHECK(line.ends_with(" " + data + "=='"));
  // Each argument adds its own length plus a space, nothing more.
  const std::string script = "echo hi";
  CHECK(exedev::script_request_bytes("box", script, {data}) == exedev::script_request_bytes("box", script, {}) + 1 + data.size());
  CHECK_THROWS_AS(d::script_remote_command(script, {"a b"}, "#B#"), std::invalid_argument);
  CHECK_THROWS_AS(d::script_remote_command(script, {""}, "#B#"), std::invalid_argument);
  CHECK_THROWS_AS(d::script_remote_command(std::string("a\0b", 3), {}, "#B#"), std::invalid_argument);
}

namespace {

// What the VM's shell makes of a remote command: run here under /bin/sh, output read in full.
std::string run_under_sh(const std::string& remote_command) {
  const auto line = "/bin/sh -c " + d::sh_quote(remote_command);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(line.c_str(), "r"), ::pclose);
  REQUIRE(pipe);
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe.get())) > 0;) out.append(buffer, n);
  return out;
}

}  // namespace

TEST_CASE("run_script: an argument that starts with + reaches the script as it is") {
  // Base64 text may start with `+`, which sh would otherwise take for an option (`+9…` made
  // /bin/sh refuse the whole script: the 8 MiB write of bench B3 failed on it).
  const std::vector<std::string> args{"+9ab", "+x", "+", "A/b=", "+o"};
  const std::string boundary = "#B0#";
  const auto body = run_under_sh(d::script_remote_command("printf '[%s]' \"$@\"", args, boundary));
  const auto parsed = d::parse_script_output(body, boundary);
  REQUIRE(parsed);
  CHECK(parsed->exit_code == 0);
  CHECK(parsed->stdout_bytes == "[+9ab][+x][+][A/b=][+o]");
  CHECK(parsed->stderr_bytes.empty());
}

TEST_CASE("run_script: a complete answer gives exact stdout, the status and stderr") {
  const std::string b = "#B1#";
  const std::string out = "line\n\nno newline";
  const auto body = "login banner\n" + b + " b\n" + out + "\n" + b + " x 7\nZXJy\n" + b + " .\n";
  const auto parsed = d::parse_script_output(body, b);
  REQUIRE(parsed);
  CHECK(parsed->stdout_bytes == out);
  CHECK(parsed->exit_code == 7);
  CHECK(parsed->stderr_bytes == "err");
  const auto empty = d::parse_script_output(b + " b\n\n" + b + " x 0\n" + b + " .\n", b);
  REQUIRE(empty);
  CHECK(empty->stdout_bytes.empty());
  CHECK(empty->stderr_bytes.empty());
}

TEST_CASE("run_script: a cut answer is never a result") {
  const std::string b = "#B2#";
  const auto whole = b + " b\nAAAA\n" + b + " x 0\n" + b + " .\n";
  for (std::size_t cut = 0; cut < whole.size(); ++cut) {
    INFO("cut at " << cut);
    std::optional<d::ScriptOutput> parsed;
    try {
      parsed = d::parse_script_output(whole.substr(0, cut), b);
    } catch (const exedev::ProtocolError&) {
    }
    CHECK_FALSE(parsed);
  }
  CHECK_THROWS_AS(d::parse_script_output(b + " b\nx\n" + b + " x 0\n%%%\n" + b + " .\n", b), exedev::ProtocolError);
  CHECK_THROWS_AS(d::parse_script_output(b + " b\nx\n" + b + " x seven\n" + b + " .\n", b), exedev::ProtocolError);
}

TEST_CASE("pacing: a full bucket, then one token per interval, reserved in order") {
  using namespace std::chrono_literals;
  const auto t0 = d::TokenBucket::Clock::time_point{} + 1h;
  d::TokenBucket bucket(3, 2, t0);
  CHECK(bucket.take(t0) == 0s);
  CHECK(bucket.take(t0) == 0s);
  CHECK(bucket.take(t0) == 0s);
  CHECK(bucket.take(t0) == 500ms);   // the next token, half a second away
  CHECK(bucket.take(t0) == 1000ms);  // queued behind it
  CHECK(bucket.take(t0 + 10s) == 0s);  // refilled, capped at the burst
  CHECK(bucket.take(t0 + 10s) == 0s);
  CHECK(bucket.take(t0 + 10s) == 0s);
  CHECK(bucket.take(t0 + 10s) > 0s);
  CHECK_THROWS_AS(d::TokenBucket(0.5, 1, t0), std::invalid_argument);
  CHECK_THROWS_AS(d::TokenBucket(60, 0, t0), std::invalid_argument);
}
