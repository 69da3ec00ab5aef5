// ~/.ssh/config resolution, sans-IO: tables from OpenSSH's documented semantics (ssh_config(5)).
#include "ssh/ssh_config.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

using namespace exedev;
using namespace exedev::ssh;

namespace {

const std::filesystem::path home = "/home/ada";

// Include's files by the pattern they are asked for; every pattern asked is recorded.
struct Includes {
  std::map<std::string, std::vector<ConfigText>> files;
  std::vector<std::string> asked;
  IncludeReader reader() {
    return [this](const std::string& pattern) {
      asked.push_back(pattern);
      const auto it = files.find(pattern);
      return it == files.end() ? std::vector<ConfigText>{} : it->second;
    };
  }
};

SshConfig resolve(const std::string& text, const std::string& host, Includes* includes = nullptr) {
  Includes none;
  Includes& used = includes != nullptr ? *includes : none;
  return resolve_ssh_config(ConfigText{"/home/ada/.ssh/config", text, std::nullopt}, host, home, used.reader());
}

std::string notes_of(const SshConfig& config) {
  std::string out;
  for (const auto& note : config.notes) out += note + "\n";
  return out;
}

}  // namespace

TEST_CASE("ssh_config: the first value obtained wins; IdentityFile accumulates") {
  const auto config = resolve(
      "Host vm.exe.xyz\n"
      "  User first\n"
      "  Port 2201\n"
      "  IdentityFile ~/.ssh/exe\n"
      "  IdentitiesOnly yes\n"
      "  StrictHostKeyChecking accept-new\n"
      "  UserKnownHostsFile ~/.ssh/exe_known_hosts ~/.ssh/second\n"
      "  HostName first.example\n"
      "Host *\n"
      "  User second\n"
      "  Port 22\n"
      "  IdentityFile ~/.ssh/id_ed25519\n"
      "  IdentitiesOnly no\n"
      "  StrictHostKeyChecking yes\n"
      "  UserKnownHostsFile /elsewhere\n"
      "  HostName second.example\n",
      "vm.exe.xyz");
  INFO(notes_of(config));
  CHECK(config.notes.empty());
  CHECK(config.user == "first");
  CHECK(config.port == 2201);
  CHECK(config.identity_files == std::vector<std::string>{"~/.ssh/exe", "~/.ssh/id_ed25519"});
  CHECK(config.identities_only == true);
  CHECK(config.host_key_policy == HostKeyPolicy::accept_new);
  CHECK(config.user_known_hosts_file == "~/.ssh/exe_known_hosts");
  CHECK(config.host_name == "first.example");

  const auto other = resolve("Host vm.exe.xyz\n  User first\nHost *\n  User second\n", "other.exe.xyz");
  CHECK(other.user == "second");
  const auto nothing = resolve("", "vm.exe.xyz");
  CHECK_FALSE(nothing.user);
  CHECK_FALSE(nothing.port);
  CHECK(nothing.identity_files.empty());
  CHECK_FALSE(nothing.host_key_policy);
}

TEST_CASE("ssh_config: keywords are case-insensitive; `=`, quotes and comments") {
  struct Row {
    std::string line;
    std::string user;
  };
  const std::vector<Row> rows = {
      {"User ada", "ada"},
      {"USER ada", "ada"},
      {"uSeR\tada", "ada"},
      {"User=ada", "ada"},
      {"User = ada", "ada"},
      {"User =ada", "ada"},
      {"  User ada   ", "ada"},
      {"User ada # a comment", "ada"},
      {"User ada\r", "ada"},
      {"User \"ada\"", "ada"},
      {"User 'ada'", "ada"},
      {"User \"a d a\"", "a d a"},
      {"User a\\ da", "a da"},
      {"User \"a\\\"da\"", "a\"da"},
      {"User a#b", "a#b"},  // `#` only starts a comment where a word would start
  };
  for (const auto& row : rows) {
    INFO(row.line);
    const auto config = resolve(row.line + "\n", "h");
    CHECK(config.notes.empty());
    CHECK(config.user == row.user);
  }
  const auto comments = resolve("# User commented\n\n   \n\t# indented comment\nUser real\n", "h");
  CHECK(comments.user == "real");
  CHECK(comments.notes.empty());
}

TEST_CASE("ssh_config: Host patterns") {
  struct Row {
    std::string patterns;
    std::string host;
    bool applies;
  };
  const std::vector<Row> rows = {
      {"*", "anything", true},
      {"vm.exe.xyz", "vm.exe.xyz", true},
      {"vm.exe.xyz", "vm2.exe.xyz", false},
      {"*.exe.xyz", "vm.exe.xyz", true},
      {"*.exe.xyz", "a.b.exe.xyz", true},  // `*` spans dots, as in OpenSSH
      {"*.exe.xyz", "exe.xyz", false},
      {"exe.dev *.exe.xyz", "exe.dev", true},  // whitespace-separated list, as exe.dev's guide writes it
      {"exe.dev *.exe.xyz", "vm.exe.xyz", true},
      {"exe.dev *.exe.xyz", "exe.xyz", false},
      {"vm?.exe.xyz", "vm1.exe.xyz", true},
      {"vm?.exe.xyz", "vm12.exe.xyz", false},
      {"*.exe.xyz !bad.exe.xyz", "bad.exe.xyz", false},
      {"!bad.exe.xyz *.exe.xyz", "bad.exe.xyz", false},
      {"!bad.exe.xyz *.exe.xyz", "good.exe.xyz", true},
      {"!bad.exe.xyz", "good.exe.xyz", false},  // only a negation: matches nothing
      {"VM.EXE.XYZ", "vm.exe.xyz", true},
      {"*.exe.xyz", "VM.Exe.Xyz", true},
      {"a.exe.xyz,b.exe.xyz", "a.exe.xyz", false},  // Host lists by whitespace; a comma is literal
  };
  for (const auto& row : rows) {
    INFO("Host " << row.patterns << " for " << row.host);
    const auto config = resolve("Host " + row.patterns + "\n  User matched\n", row.host);
    CHECK(config.user.has_value() == row.applies);
  }
  // Lines before the first Host apply to every host; a later Host block ends the earlier one.
  const auto config = resolve("Port 2200\nHost other\n  User no\nHost *\n  IdentitiesOnly yes\n", "vm");
  CHECK(config.port == 2200);
  CHECK_FALSE(config.user);
  CHECK(config.identities_only == true);
}

TEST_CASE("ssh_config: Match all, host, originalhost; other criteria skip their block with a note") {
  struct Row {
    std::string match;
    std::string host;
    bool applies;
    std::string note;  // part of the note, when one is expected
  };
  const std::vector<Row> rows = {
      {"all", "vm.exe.xyz", true, ""},
      {"host *.exe.xyz", "vm.exe.xyz", true, ""},
      {"Host *.exe.xyz", "vm.exe.xyz", true, ""},
      {"host exe.dev,*.exe.xyz", "vm.exe.xyz", true, ""},  // Match lists by comma
      {"host *.exe.xyz,!bad.exe.xyz", "bad.exe.xyz", false, ""},
      {"host other", "vm.exe.xyz", false, ""},
      {"!host other", "vm.exe.xyz", true, ""},
      {"!host vm.exe.xyz", "vm.exe.xyz", false, ""},
      {"originalhost vm.exe.xyz", "vm.exe.xyz", true, ""},
      {"originalhost vm.exe.xyz host vm.exe.xyz", "vm.exe.xyz", true, ""},
      {"originalhost vm.exe.xyz host other", "vm.exe.xyz", false, ""},  // criteria are ANDed
      {"exec \"true\"", "vm.exe.xyz", false, "Match exec is not evaluated"},
      {"user ada", "vm.exe.xyz", false, "Match user is not evaluated"},
      {"host *.exe.xyz localuser ada", "vm.exe.xyz", false, "Match localuser is not evaluated"},
      {"canonical", "vm.exe.xyz", false, "Match canonical is not evaluated"},
      {"!final", "vm.exe.xyz", false, "Match final is not evaluated"},
      {"host", "vm.exe.xyz", false, "Match host without a pattern list"},
  };
  for (const auto& row : rows) {
    INFO("Match " << row.match << " for " << row.host);
    const auto config = resolve("User before\nMatch " + row.match + "\n  Port 2222\n", row.host);
    CHECK(config.port.has_value() == row.applies);
    if (row.note.empty()) {
      CHECK(config.notes.empty());
    } else {
      REQUIRE(config.notes.size() == 1);
      CHECK_THAT(config.notes[0], Catch::Contains("line 2") && Catch::Contains(row.note));
    }
  }
  // `Match host` sees the HostName obtained so far; `originalhost` and Host see the name given.
  const auto renamed = resolve("HostName real.example\nMatch host real.example\n  User by-host\n"
                               "Match originalhost alias\n  Port 2022\nHost real.example\n  IdentitiesOnly yes\n",
                               "alias");
  CHECK(renamed.user == "by-host");
  CHECK(renamed.port == 2022);
  CHECK_FALSE(renamed.identities_only);
}

TEST_CASE("ssh_config: HostName expands %h and %%") {
  CHECK(resolve("Host *\n  HostName %h.internal\n", "vm").host_name == "vm.internal");
  CHECK(resolve("HostName 100%%.example\n", "vm").host_name == "100%.example");
  const auto bad = resolve("HostName %p.example\nHostName fine.example\n", "vm");
  CHECK(bad.host_name == "fine.example");
  REQUIRE(bad.notes.size() == 1);
  CHECK_THAT(bad.notes[0], Catch::Contains("line 1") && Catch::Contains("HostName"));
}

TEST_CASE("ssh_config: StrictHostKeyChecking maps to the library's policies and never turns checking off") {
  struct Row {
    std::string value;
    std::optional<HostKeyPolicy> policy;
    std::string note;
  };
  const std::vector<Row> rows = {
      {"yes", HostKeyPolicy::strict, ""},
      {"true", HostKeyPolicy::strict, ""},
      {"ask", HostKeyPolicy::strict, ""},
      {"accept-new", HostKeyPolicy::accept_new, ""},
      {"Accept-New", HostKeyPolicy::accept_new, ""},
      {"no", HostKeyPolicy::accept_new, "taken as accept-new"},
      {"off", HostKeyPolicy::accept_new, "taken as accept-new"},
      {"false", HostKeyPolicy::accept_new, "taken as accept-new"},
      {"maybe", std::nullopt, "line skipped"},
  };
  for (const auto& row : rows) {
    INFO(row.value);
    const auto config = resolve("StrictHostKeyChecking " + row.value + "\n", "vm");
    CHECK(config.host_key_policy == row.policy);
    if (row.note.empty()) {
      CHECK(config.notes.empty());
    } else {
      REQUIRE(config.notes.size() == 1);
      CHECK_THAT(config.notes[0], Catch::Contains(row.note));
    }
  }
  // A later `no` is not obtained, so nothing is said about it.
  CHECK(resolve("StrictHostKeyChecking yes\nStrictHostKeyChecking no\n", "vm").notes.empty());
}

TEST_CASE("ssh_config: a line that cannot be used is skipped with one note naming its line, never its content") {
  struct Row {
    std::string line;
    std::string note;
  };
  const std::vector<Row> rows = {
      {"User", "no argument after the keyword user"},
      {"User \"unterminated SECRET", "an unterminated quote"},
      {"=SECRET", "a line without a keyword"},
      {"Port SECRET", "Port is not a number"},
      {"Port 0", "Port is not a number"},
      {"Port 65536", "Port is not a number"},
      {"Port 22x", "Port is not a number"},
      {"IdentitiesOnly SECRET", "IdentitiesOnly is neither yes nor no"},
      {"IdentityFile ~SECRET/key", "IdentityFile holds ~user"},
      {"IdentityFile ~/.ssh/%C", "IdentityFile holds ~user or a % token"},
      {"IdentityFile ~/.ssh/a ~/.ssh/SECRET", "identityfile takes one argument"},
      {"User a SECRET", "user takes one argument"},
      {"UserKnownHostsFile none", "UserKnownHostsFile none is not followed"},
  };
  for (const auto& row : rows) {
    INFO(row.line);
    const auto config = resolve("# first line\n" + row.line + "\nUser after\nPort 2200\n", "vm");
    REQUIRE(config.notes.size() == 1);
    CHECK_THAT(config.notes[0], Catch::StartsWith("ssh_config /home/ada/.ssh/config line 2: ") &&
                                    Catch::Contains(row.note) && !Catch::Contains("SECRET"));
    // The lines after it still apply.
    CHECK(config.user == "after");
    CHECK(config.port == 2200);
  }
  // Keywords this library does not use are OpenSSH's business: no note.
  CHECK(resolve("ForwardAgent yes\nServerAliveInterval 30\nSomethingNew x\n", "vm").notes.empty());
}

TEST_CASE("ssh_config: Include, relative to ~/.ssh, with `~`, globs, nesting, and a depth limit") {
  Includes includes;
  includes.files["/home/ada/.ssh/config.d/*"] = {
      {"/home/ada/.ssh/config.d/a", "Host *.exe.xyz\n  IdentityFile ~/.ssh/exe\n  Include nested\n", std::nullopt},
      {"/home/ada/.ssh/config.d/b", "Host other\n  IdentityFile ~/.ssh/from_b\n", std::nullopt}};
  includes.files["/home/ada/.ssh/nested"] = {{"/home/ada/.ssh/nested", "User from-nested\n", std::nullopt}};
  const auto config = resolve("Include config.d/*\nUser main\nPort 2200\n", "vm.exe.xyz", &includes);
  CHECK(includes.asked == std::vector<std::string>{"/home/ada/.ssh/config.d/*", "/home/ada/.ssh/nested"});
  CHECK(config.notes.empty());
  CHECK(config.identity_files == std::vector<std::string>{"~/.ssh/exe"});
  CHECK(config.user == "from-nested");
  // The included file's last block (`Host other`) is still in force after the Include line, as
  // in OpenSSH: the main file's Port does not apply.
  CHECK_FALSE(config.port);

  // `~`, an absolute path, an unreadable file (one note), a glob matching nothing (silent).
  Includes more;
  more.files["/home/ada/extra"] = {{"/home/ada/extra", "Port 2022\n", std::nullopt}};
  more.files["/etc/ssh/unreadable"] = {{"/etc/ssh/unreadable", "", std::string("Permission denied")}};
  const auto other = resolve("Include ~/extra /etc/ssh/unreadable /nowhere/*\n", "vm", &more);
  CHECK(more.asked == std::vector<std::string>{"/home/ada/extra", "/etc/ssh/unreadable", "/nowhere/*"});
  CHECK(other.port == 2022);
  REQUIRE(other.notes.size() == 1);
  CHECK_THAT(other.notes[0], Catch::Contains("/etc/ssh/unreadable") && Catch::Contains("Permission denied"));

  // An Include in a block that does not apply is not read.
  Includes unread;
  const auto inactive = resolve("Host other\n  Include config.d/*\n", "vm.exe.xyz", &unread);
  CHECK(unread.asked.empty());
  CHECK(inactive.identity_files.empty());

  // A file that includes itself stops at the depth limit, with one note.
  Includes loop;
  loop.files["/home/ada/.ssh/config"] = {{"/home/ada/.ssh/config", "IdentityFile k\nInclude config\n", std::nullopt}};
  const auto looped = resolve("Include config\n", "vm", &loop);
  CHECK(loop.asked.size() == 16);
  CHECK(looped.identity_files.size() == 16);
  REQUIRE(looped.notes.size() == 1);
  CHECK_THAT(looped.notes[0], Catch::Contains("Include nested more than 16 deep"));
}

TEST_CASE("ssh_config: paths expand `~` and the tokens that apply; relative paths are in ~/.ssh") {
  const PathTokens tokens{"/home/ada", "ada", "laptop", "vm.exe.xyz", "exedev"};
  struct Row {
    std::string text;
    std::string path;
  };
  const std::vector<Row> rows = {
      {"~/.ssh/exe", "/home/ada/.ssh/exe"},
      {"~", "/home/ada"},
      {"/keys/%h/%r", "/keys/vm.exe.xyz/exedev"},
      {"%d/keys/%u@%l", "/home/ada/keys/ada@laptop"},
      {"/keys/100%%", "/keys/100%"},
      {"id_exe", "/home/ada/.ssh/id_exe"},
      {"keys/%h", "/home/ada/.ssh/keys/vm.exe.xyz"},
  };
  for (const auto& row : rows) {
    INFO(row.text);
    CHECK(expand_config_path(row.text, tokens) == std::filesystem::path(row.path));
  }
}
