// Client::run_script's one-request protocol (sans-IO): the request it builds, how it is sized,
// and how its framed answer is read. One case runs the wrapper under the local /bin/sh; the
// integration tests (tests/integration/sandbox) run it through the emulator.
#include <catch2/catch.hpp>

#include <exedev/client.hpp>
#include <exedev/errors.hpp>

#include "client/script_exec.hpp"
#include "client/retry.hpp"

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

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

TEST_CASE("run_script: arguments that look like sh options reach the script as they are") {
  // Base64 text may start with '+' (or '/'): the wrapper must not let sh read it as an option.
  const std::string boundary = "#B0#";
  const auto command = d::script_remote_command("printf '%s|%s|%s' \"$1\" \"$2\" \"$#\"", {"+Pz=", "/ab+"}, boundary);
  FILE* shell = popen(command.c_str(), "r");
  REQUIRE(shell);
  std::string body;
  char buffer[4096];
  for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, shell)) > 0;) body.append(buffer, n);
  REQUIRE(pclose(shell) == 0);
  const auto parsed = d::parse_script_output(body, boundary);
  REQUIRE(parsed);
  CHECK(parsed->stdout_bytes == "+Pz=|/ab+|2");
  CHECK(parsed->exit_code == 0);
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

TEST_CASE("run_script: the answer read as it arrives gives the same result, however it is split") {
  const std::string b = "#B3#";
  std::string binary;
  for (int i = 0; i < 256; ++i) binary += static_cast<char>(i);
  const std::vector<std::string> bodies = {
      "login banner\n" + b + " b\n" + "line\n\nno newline" + "\n" + b + " x 7\nZXJy\n" + b + " .\n",
      b + " b\n\n" + b + " x 0\n" + b + " .\n",
      "noise " + b + " b\nnot the frame\n" + b + " b\n" + binary + b + " b\n" + "\n" + b + " x 1\n" + b + " .\n",
      b + " b\n" + binary + "\n#B3# x\n" + "\n" + b + " x 255\nZXJy\nZXJy\n" + b + " .\n",
      b + " b\nx\n" + b + " x 0\n%%%\n" + b + " .\n",  // garbled stderr
      b + " b\nx\n" + b + " .\n",                        // no exit frame
      b + " b\nAAAA\n" + b + " x 0\n" + b,               // cut
  };
  for (const auto& body : bodies) {
    std::optional<d::ScriptOutput> whole;
    bool whole_garbled = false;
    try {
      whole = d::parse_script_output(body, b);
    } catch (const exedev::ProtocolError&) {
      whole_garbled = true;
    }
    for (std::size_t piece = 1; piece <= body.size(); piece += piece < 8 ? 1 : 7) {
      INFO(body << " in pieces of " << piece);
      std::string out;
      d::ScriptOutputReader reader(b, [&out](std::string_view bytes) { out.append(bytes); });
      for (std::size_t at = 0; at < body.size(); at += piece) reader.feed(std::string_view(body).substr(at, piece));
      std::optional<d::ScriptOutput> parsed;
      bool garbled = false;
      try {
        parsed = reader.finish();
      } catch (const exedev::ProtocolError&) {
        garbled = true;
      }
      CHECK(garbled == whole_garbled);
      CHECK(parsed.has_value() == whole.has_value());
      if (parsed && whole) {
        CHECK(out == whole->stdout_bytes);
        CHECK(reader.stdout_size() == out.size());
        CHECK(parsed->exit_code == whole->exit_code);
        CHECK(parsed->stderr_bytes == whole->stderr_bytes);
      }
    }
  }
}

TEST_CASE("run_script: stdout reaches the sink before the answer ends, the frames never do") {
  const std::string b = "#B4#";
  const std::string page(1 << 20, 'p');
  std::string out;
  d::ScriptOutputReader reader(b, [&out](std::string_view bytes) { out.append(bytes); });
  reader.feed(b + " b\n");
  reader.feed(page);
  // All but the bytes that may open the exit frame are out while the script still runs.
  CHECK(out.size() == page.size() - (b.size() + 3));
  reader.feed("\n" + b + " x 0\n" + b + " .\n");
  const auto parsed = reader.finish();
  REQUIRE(parsed);
  CHECK(out == page);
  CHECK(parsed->stdout_bytes.empty());
}
