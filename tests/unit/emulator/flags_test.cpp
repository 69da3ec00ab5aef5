#include "emulator/flags.hpp"

#include <catch2/catch.hpp>

using namespace exedev::emulator;
using Words = std::vector<std::string>;

TEST_CASE("pre-parser moves flag words and their values before positional words", "[flags]") {
  CHECK(preparse_flags({"a", "--name", "x", "b"}) == Words{"--name", "x", "a", "b"});
  CHECK(preparse_flags({"a", "--name=x", "b"}) == Words{"--name=x", "a", "b"});
  CHECK(preparse_flags({"src", "--copy-tags", "false"}) == Words{"--copy-tags", "false", "src"});
  CHECK(preparse_flags({"-a", "-b", "c"}) == Words{"-a", "-b", "c"});
  // `--` goes before the positional words exactly when one of them starts with `-`.
  CHECK(preparse_flags({"x", "-----BEGIN", "y"}) == Words{"--", "x", "-----BEGIN", "y"});
  CHECK(preparse_flags({"-----BEGIN", "x"}) == Words{"--", "-----BEGIN", "x"});
  CHECK(preparse_flags({"a", "--", "-b", "--c"}) == Words{"--", "a", "-b", "--c"});
  CHECK(preparse_flags({"a", "--", "b"}) == Words{"a", "b"});
}

TEST_CASE("Go flag parsing after the pre-parser", "[flags]") {
  const auto flag = [](std::string name, FlagKind kind, std::vector<std::string> aliases = {}) {
    return FlagSpec{std::move(name), kind, std::move(aliases), ""};
  };
  const FlagSet set({flag("name", FlagKind::string), flag("copy-tags", FlagKind::boolean), flag("d", FlagKind::boolean),
                     flag("cpu", FlagKind::uint), flag("tag", FlagKind::list), flag("env", FlagKind::repeated),
                     flag("standalone", FlagKind::boolean, {"sandbox"})});
  std::string error;

  SECTION("a bool flag does not take the next word: it becomes positional") {
    const auto parsed = set.parse(preparse_flags({"src", "--copy-tags", "false"}), error);
    REQUIRE(parsed);
    CHECK(parsed->boolean("copy-tags"));
    CHECK(parsed->positional == Words{"false", "src"});
  }
  SECTION("-x and --x, values with = or as the next word, aliases") {
    const auto parsed = set.parse(preparse_flags({"-name", "a", "--cpu=4", "--sandbox", "--copy-tags=false"}), error);
    REQUIRE(parsed);
    CHECK(parsed->str("name") == "a");
    CHECK(parsed->uint("cpu") == 4u);
    CHECK(parsed->boolean("standalone"));
    CHECK_FALSE(parsed->boolean("copy-tags", true));
  }
  SECTION("list flags repeat and split at commas; repeated flags keep values whole") {
    const auto parsed = set.parse(preparse_flags({"--tag=a, b", "--tag", "c", "--env=K=1,2", "--env", "L=3"}), error);
    REQUIRE(parsed);
    CHECK(parsed->list("tag") == Words{"a", "b", "c"});
    CHECK(parsed->values("env") == Words{"K=1,2", "L=3"});
  }
  SECTION("tag -d vm t: -d takes no value") {
    const auto parsed = set.parse(preparse_flags({"-d", "vm", "t"}), error);
    REQUIRE(parsed);
    CHECK(parsed->boolean("d"));
    CHECK(parsed->positional == Words{"vm", "t"});
  }
  SECTION("a PEM-like word stays positional even when it comes first") {
    const auto parsed = set.parse(preparse_flags({"-----BEGIN", "--name=n"}), error);
    REQUIRE(parsed);
    CHECK(parsed->str("name") == "n");
    CHECK(parsed->positional == Words{"-----BEGIN"});
  }
  SECTION("-- ends flags") {
    const auto parsed = set.parse(preparse_flags({"a", "--", "-b"}), error);
    REQUIRE(parsed);
    CHECK(parsed->positional == Words{"a", "-b"});
  }
  SECTION("errors use Go's messages") {
    CHECK_FALSE(set.parse({"--nope"}, error));
    CHECK(error == "flag provided but not defined: -nope");
    CHECK_FALSE(set.parse({"--copy-tags=maybe"}, error));
    CHECK(error == "invalid boolean value \"maybe\" for -copy-tags: parse error");
    CHECK_FALSE(set.parse({"--name"}, error));
    CHECK(error == "flag needs an argument: -name");
    CHECK_FALSE(set.parse({"--cpu=-1"}, error));
    CHECK(error == "invalid value \"-1\" for flag -cpu: parse error");
    CHECK_FALSE(set.parse({"---x"}, error));
    CHECK(error == "bad flag syntax: ---x");
    CHECK_FALSE(set.parse({"--help"}, error));
    CHECK(error == "flag: help requested");
  }
}

TEST_CASE("Go's ParseBool spellings", "[flags]") {
  for (const char* t : {"1", "t", "T", "TRUE", "true", "True"}) CHECK(parse_go_bool(t) == true);
  for (const char* f : {"0", "f", "F", "FALSE", "false", "False"}) CHECK(parse_go_bool(f) == false);
  CHECK_FALSE(parse_go_bool("yes"));
  CHECK_FALSE(parse_go_bool(""));
}
