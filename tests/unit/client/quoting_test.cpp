#include "client/lobby.hpp"

#include <exedev/client.hpp>

#if EXEDEV_TEST_WITH_EMULATOR_LEXER
#include "emulator/lexer.hpp"
#endif

#include <catch2/catch.hpp>

#include <stdexcept>

using namespace exedev;
using namespace exedev::detail;

namespace {

// The POSIX-shlex rules of exedev-api.md §1.2, for the forms this client emits ('…', "'" and
// bare words): enough to check what a quoted line lexes to.
std::vector<std::string> lex_simple(std::string_view line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\'') {
      const auto close = line.find('\'', i + 1);
      REQUIRE(close != std::string_view::npos);
      word.append(line.substr(i + 1, close - i - 1));
      in_word = true;
      i = close;
    } else if (c == '"') {
      for (++i; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] == '\\' && i + 1 < line.size() && (line[i + 1] == '"' || line[i + 1] == '\\')) ++i;
        word += line[i];
      }
      REQUIRE(i < line.size());
      in_word = true;
    } else if (c == '\\') {
      REQUIRE(i + 1 < line.size());
      word += line[++i];
      in_word = true;
    } else if (c == ' ' || c == '\n' || c == '\t') {
      if (in_word && !word.empty()) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (!word.empty()) words.push_back(word);
  return words;
}

std::vector<std::string> lex(std::string_view line) {
#if EXEDEV_TEST_WITH_EMULATOR_LEXER
  auto result = exedev::emulator::lex(line);
  REQUIRE_FALSE(result.error);
  return result.words;
#else
  return lex_simple(line);
#endif
}

}  // namespace

TEST_CASE("lobby_quote: the spec's recipe, and every awkward string round-trips") {
  CHECK(lobby_quote("abc") == "'abc'");
  CHECK(lobby_quote("it's") == "'it'\"'\"'s'");
  const std::vector<std::string> samples = {
      "plain", "two words", "it's", "'", "''", "\"double\"", "back\\slash", "new\nline", "tab\there",
      "$HOME `id` $(id) !x", "#hash", "a;b&&c|d", "--flag=value", "-", " leading and trailing ",
      "\\", "\\'", "ümlaut ✓", "\r\n", "x'y'z\"'\"",
  };
  for (const auto& s : samples) {
    const auto words = lex("cmd " + lobby_quote(s) + " tail");
    REQUIRE(words.size() == 3);
    CHECK(words[0] == "cmd");
    CHECK(words[1] == s);
    CHECK(words[2] == "tail");
    CHECK(lex_simple("cmd " + lobby_quote(s)) == std::vector<std::string>{"cmd", s});
  }
}

TEST_CASE("lobby_quote refuses words that cannot arrive as sent") {
  CHECK_THROWS_AS(lobby_quote(""), std::invalid_argument);
  CHECK_THROWS_AS(lobby_quote(std::string("a\0b", 3)), std::invalid_argument);
  CHECK_THROWS_AS(lobby_quote("\xff\xfe"), std::invalid_argument);
  CHECK_THROWS_AS(lobby_quote("\xc0\xaf"), std::invalid_argument);  // overlong
  CHECK_THROWS_AS(lobby_quote("\xed\xa0\x80"), std::invalid_argument);  // surrogate
  CHECK_NOTHROW(lobby_quote("\xf0\x9f\x98\x80"));
}

TEST_CASE("command lines use --flag=value and quoted words") {
  NewVMOptions o;
  o.name = "build-42";
  o.image = "ubuntu:24.04";
  o.cpu = 4;
  o.memory = "8G";
  o.tags = {"a", "b"};
  o.comment = "nightly build";
  o.env = {{"K", "v w"}};
  o.standalone = true;
  o.egress = "integrations";
  const auto line = new_vm_line(o).str();
  CHECK(line ==
        "new --name='build-42' --image='ubuntu:24.04' --cpu='4' --memory='8G' --tag='a' --tag='b' "
        "--comment='nightly build' --env='K=v w' --egress='integrations' --standalone='true'");
  CHECK(lex(line) == std::vector<std::string>{"new", "--name=build-42", "--image=ubuntu:24.04", "--cpu=4", "--memory=8G",
                                              "--tag=a", "--tag=b", "--comment=nightly build", "--env=K=v w",
                                              "--egress=integrations", "--standalone=true"});

  CopyVMOptions c;
  c.source = "golden";
  c.name = "copy-1";
  c.copy_tags = false;
  CHECK(lex(copy_vm_line(c).str()) == std::vector<std::string>{"cp", "--copy-tags=false", "golden", "copy-1"});

  CHECK(lex(tag_line("vm-one", {"x", "y"}, true).str()) == std::vector<std::string>{"tag", "--d=true", "vm-one", "x", "y"});
  CHECK(lex(remove_vms_line({"a1", "b2"}).str()) == std::vector<std::string>{"rm", "a1", "b2"});
  CHECK(lex(list_vms_line({}).str()) == std::vector<std::string>{"ls"});

  CHECK(lex(share_line("show", "web", {}).str()) == std::vector<std::string>{"share", "show", "web"});
  CHECK(lex(share_line("access allow", "web", {}).str()) == std::vector<std::string>{"share", "access", "allow", "web"});
  auto add = share_line("add", "web", {"a@example.com"});
  add.flag("message", "it's ready");
  CHECK(lex(add.str()) == std::vector<std::string>{"share", "add", "--message=it's ready", "web", "a@example.com"});
  CHECK_THROWS_AS(share_line("remove-link", "web", {""}), std::invalid_argument);
}

TEST_CASE("comment: empty text clears with a quoted space; dash-leading words go after --") {
  CHECK(comment_line("vm-one", "").str() == "comment 'vm-one' ' '");
  CHECK(lex(comment_line("vm-one", "").str()) == std::vector<std::string>{"comment", "vm-one", " "});
  CHECK(lex(comment_line("vm-one", "it's \"fine\"").str()) ==
        std::vector<std::string>{"comment", "vm-one", "it's \"fine\""});
  CHECK(lex(comment_line("vm-one", "-x").str()) == std::vector<std::string>{"comment", "--", "vm-one", "-x"});
}

TEST_CASE("bad arguments are refused before sending") {
  CHECK_THROWS_AS(remove_vms_line({}), std::invalid_argument);
  CHECK_THROWS_AS(vm_line("pause", ""), std::invalid_argument);
  CHECK_THROWS_AS(tag_line("vm-one", {}, false), std::invalid_argument);
  NewVMOptions o;
  o.env = {{"", "x"}};
  CHECK_THROWS_AS(new_vm_line(o), std::invalid_argument);
  o.env = {};
  o.comment = std::string(70 * 1024, 'c');
  try {
    (void)new_vm_line(o).str();
    FAIL("no exception");
  } catch (const BadRequestError& e) {
    CHECK(e.status() == 413);
    CHECK(e.command() == "new");
    CHECK(std::string(e.what()).find("64 KiB") != std::string::npos);
  }
}

TEST_CASE("command_name reads the first word") {
  CHECK(command_name("ls -l") == "ls");
  CHECK(command_name("  'whoami'") == "whoami");
  CHECK(command_name("\n new --name=x") == "new");
  CHECK(command_name("") == "");
}
