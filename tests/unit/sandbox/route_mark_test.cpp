// The route mark's programs, run by the local /bin/sh in a temporary HOME as a VM would run them,
// and the readers of their output (tables of what a VM, the lobby shell or another VM prints).
#include "sandbox/route_mark.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using namespace exedev::detail;
namespace fs = std::filesystem;
using Answer = ProbeReading::Answer;

namespace {

struct Home {
  Home() {
    std::string pattern = (fs::temp_directory_path() / "exedev-route-mark-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~Home() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  // Runs `program` with /bin/sh -c in this HOME; returns stdout (exit status in `status`).
  std::string run(const std::string& program, int& status) const {
    const auto script = path / "program.sh";
    std::ofstream(script, std::ios::binary) << program;
    const std::string command = "env -i HOME='" + path.string() + "' /bin/sh '" + script.string() + "'";
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string out;
    char buffer[256];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
    status = WEXITSTATUS(::pclose(pipe));
    return out;
  }
  fs::path path;
};

}  // namespace

TEST_CASE("route mark: made once per VM, read back by the probe, remade for a copy") {
  Home home;
  int status = -1;
  CHECK(read_probe_output(home.run(std::string(route_mark_probe()), status), "vm-a").answer == Answer::no_mark);
  CHECK(status == 0);

  const auto first = home.run(route_mark_script("vm-a"), status);
  CHECK(status == 0);
  const auto mark = parse_route_mark(first, "vm-a");
  REQUIRE(mark);
  CHECK(mark->rfind("vm-a ", 0) == 0);
  CHECK((fs::status(home.path / ".cache" / "exedev" / "route-mark").permissions() & fs::perms::others_read) == fs::perms::none);
  // Made once: the same mark again, and the probe reads it.
  CHECK(parse_route_mark(home.run(route_mark_script("vm-a"), status), "vm-a") == mark);
  const auto probed = read_probe_output(home.run(std::string(route_mark_probe()), status), "vm-a");
  CHECK(probed.answer == Answer::mark);
  CHECK(probed.mark == *mark);

  // The same disk under another name (a cp): the probe for the copy sees another VM's mark, and
  // the copy's /exec script makes a mark of its own.
  CHECK(read_probe_output(home.run(std::string(route_mark_probe()), status), "vm-b").answer == Answer::other_vm);
  const auto copied = parse_route_mark(home.run(route_mark_script("vm-b"), status), "vm-b");
  REQUIRE(copied);
  CHECK(copied->substr(5) != mark->substr(5));
  // A name that needs quoting stays one word of the program.
  CHECK(parse_route_mark(home.run(route_mark_script("it's $(x)"), status), "it's $(x)"));
}

TEST_CASE("route mark: what the readers accept") {
  const std::string hex(32, 'a');
  struct Row {
    std::string output;
    Answer answer;
  };
  const std::vector<Row> rows = {
      {"exedev-route vm-a " + hex + "\n", Answer::mark},
      {"noise from a profile\r\nexedev-route vm-a " + hex + "\r\n", Answer::mark},
      {"exedev-route vm-a " + hex, Answer::mark},                        // no final newline
      {"exedev-route vm-a " + std::string(31, 'a') + "\n", Answer::other_vm},  // too short
      {"exedev-route vm-a " + std::string(32, 'A') + "\n", Answer::other_vm},  // not lower-case hex
      {"exedev-route vm-ab " + hex + "\n", Answer::other_vm},
      {"exedev-route vm-b " + hex + "\n", Answer::other_vm},
      {"exedev-route none\n", Answer::no_mark},
      {"Please complete registration by running: ssh exe.dev\n", Answer::lobby_shell},
      {"", Answer::unrecognised},
      {"bash: exedev-route: command not found\n", Answer::unrecognised},
      // Only the first 4 KiB are read.
      {std::string(4096, 'x') + "\nexedev-route vm-a " + hex + "\n", Answer::unrecognised},
  };
  for (const auto& row : rows) {
    INFO(row.output.substr(0, 80));
    CHECK(read_probe_output(row.output, "vm-a").answer == row.answer);
    CHECK(parse_route_mark(row.output, "vm-a").has_value() == (row.answer == Answer::mark));
  }
  CHECK_THROWS_AS(route_mark_script(""), std::invalid_argument);
}
