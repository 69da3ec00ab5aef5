// Sans-IO pieces of the workspace layer: normpath, quoting, UTF-8 decoding, timeouts, refs, and
// the shell filesystem's script builders and output parsers. Expected values were produced by
// CPython 3 (posixpath.normpath, shlex.quote, bytes.decode('utf-8', 'replace')).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>

#include <exedev/workspace/types.hpp>
#include <exedev/workspace/workspace.hpp>

#include "common/base64.hpp"
#include "workspace/data_codec.hpp"
#include "workspace/shell_filesystem.hpp"

namespace ws = exedev::workspace;
namespace detail = exedev::workspace::detail;

TEST_CASE("normpath matches posixpath.normpath", "[unit][workspace]") {
  const std::pair<const char*, const char*> table[] = {
      {"", "."},           {".", "."},          {"/", "/"},           {"//", "//"},
      {"///", "/"},        {"////a", "/a"},     {"//a//b/", "//a/b"}, {"a/b/../c", "a/c"},
      {"../a", "../a"},    {"/../a", "/a"},     {"a/../..", ".."},    {"./a/./b/.", "a/b"},
      {"/a/b/c/../../..", "/"}, {"a//b", "a/b"}, {"///a/../..", "/"}, {"//..", "//"},
      {"foo/../../bar", "../bar"}, {"/a/./../b/", "/b"}, {"..", ".."}, {"../..", "../.."},
      {"a/..", "."},       {"//a/..", "//"},    {"/..", "/"},
  };
  for (const auto& [in, out] : table) {
    INFO("normpath('" << in << "')");
    CHECK(ws::normpath(in) == out);
  }
}

TEST_CASE("shell_quote matches shlex.quote", "[unit][workspace]") {
  CHECK(ws::shell_quote("") == "''");
  CHECK(ws::shell_quote("abc") == "abc");
  CHECK(ws::shell_quote("a b") == "'a b'");
  CHECK(ws::shell_quote("it's") == "'it'\"'\"'s'");
  CHECK(ws::shell_quote("@%+=:,./-_x9") == "@%+=:,./-_x9");
  CHECK(ws::shell_quote("$HOME") == "'$HOME'");
  CHECK(ws::shell_quote("a\nb") == "'a\nb'");
  CHECK(ws::shell_quote("\xC3\xBC") == "'\xC3\xBC'");
  CHECK(ws::Command::argv({"printf", "%s", "a b"}).to_shell_line() == "printf %s 'a b'");
  CHECK(ws::Command::shell("echo $x").to_shell_line() == "echo $x");
}

TEST_CASE("utf8_replace_invalid matches Python's replace decoding", "[unit][workspace]") {
  const std::string fffd = "\xEF\xBF\xBD";
  CHECK(ws::utf8_replace_invalid("\xFF") == fffd);
  CHECK(ws::utf8_replace_invalid("a\xE2\x82" "b") == "a" + fffd + "b");
  CHECK(ws::utf8_replace_invalid("\xE2\x82") == fffd);
  CHECK(ws::utf8_replace_invalid("\xF0\x9F\x98\x80") == "\xF0\x9F\x98\x80");
  CHECK(ws::utf8_replace_invalid("\xED\xA0\x80") == fffd + fffd + fffd);
  CHECK(ws::utf8_replace_invalid("\xC0\xAF") == fffd + fffd);
  CHECK(ws::utf8_replace_invalid("\xF4\x90\x80\x80") == fffd + fffd + fffd + fffd);
  CHECK(ws::utf8_replace_invalid("\xE0\x80\xAF") == fffd + fffd + fffd);
  CHECK(ws::is_valid_utf8("plain \xC3\xBC"));
  CHECK_FALSE(ws::is_valid_utf8("\xED\xA0\x80"));
}

TEST_CASE("printable_text keeps lines and text, and escapes what a terminal would act on", "[unit][workspace]") {
  CHECK(ws::printable_text("") == "");
  CHECK(ws::printable_text("plain\nlines\n") == "plain\nlines\n");
  CHECK(ws::printable_text("crlf\r\nend") == "crlf\nend");  // a pseudo-terminal's line ending
  CHECK(ws::printable_text("\x1b]0;owned\x07title") == "\\x1b]0;owned\\x07title");  // OSC retitle
  CHECK(ws::printable_text("\x1b[2J\tcleared\r") == "\\x1b[2J\\x09cleared\\x0d");
  CHECK(ws::printable_text("back\\slash") == "back\\\\slash");
  CHECK(ws::printable_text("caf\xC3\xA9 \xC2\x9B \xFF") == "caf\xC3\xA9 \\xc2\\x9b \\xff");  // C1 CSI, invalid byte
  const std::string long_line(5000, 'a');
  CHECK(ws::printable_text(long_line) == long_line);  // no length limit
}

TEST_CASE("validate_timeout accepts None and positive finite seconds only", "[unit][workspace]") {
  CHECK_NOTHROW(ws::validate_timeout(std::nullopt));
  CHECK_NOTHROW(ws::validate_timeout(ws::Seconds(0.001)));
  for (const double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    CHECK_THROWS_WITH(ws::validate_timeout(ws::Seconds(bad)), "timeout must be a positive finite number or None");
  }
}

TEST_CASE("WorkspaceRef JSON round-trips and rejects other shapes", "[unit][workspace]") {
  const ws::WorkspaceRef ref{"local", "/tmp/a \"b\"\n"};
  CHECK(ws::WorkspaceRef{"local", "/x"}.to_json() == R"({"provider": "local", "id": "/x"})");
  CHECK(ws::WorkspaceRef::from_json(ref.to_json()) == ref);
  CHECK(ws::WorkspaceRef::from_json(R"( {"provider": "exedev", "id": "vm-1"} )") == ws::WorkspaceRef{"exedev", "vm-1"});
  CHECK_THROWS_AS(ws::WorkspaceRef::from_json("[]"), std::invalid_argument);
  CHECK_THROWS_AS(ws::WorkspaceRef::from_json(R"({"provider":"x"})"), std::invalid_argument);
  CHECK_THROWS_AS(ws::WorkspaceRef::from_json(R"({"provider":"x","id":1})"), std::invalid_argument);
  CHECK_THROWS_AS(ws::WorkspaceRef::from_json(R"({"provider":"x","id":"y","token":"z"})"), std::invalid_argument);
  CHECK_THROWS_AS(ws::WorkspaceRef::from_json("{"), std::invalid_argument);
  CHECK(ws::WorkspaceRef{"local", "/t\xC3\xBC"}.to_json() == R"({"provider": "local", "id": "/t\u00fc"})");
  CHECK_THROWS_AS((ws::WorkspaceRef{"local", "\xFF"}.to_json()), std::invalid_argument);
}

TEST_CASE("posixpath helpers", "[unit][workspace]") {
  CHECK(detail::posix_dirname("/a/b") == "/a");
  CHECK(detail::posix_dirname("/a") == "/");
  CHECK(detail::posix_dirname("/") == "/");
  CHECK(detail::posix_dirname("//a") == "//");
  CHECK(detail::posix_basename("/a/b") == "b");
  CHECK(detail::posix_basename("/") == "");
  CHECK(detail::posix_join("/a", "b") == "/a/b");
  CHECK(detail::posix_join("/a/", "b") == "/a/b");
  CHECK(detail::posix_join("/a", "/b") == "/b");
  CHECK(detail::posix_join("/a", "") == "/a/");
}

TEST_CASE("stat output parsing", "[unit][workspace]") {
  CHECK(detail::parse_stat_output("directory\n", "/p").is_dir);
  const auto file = detail::parse_stat_output("42\n", "/p");
  CHECK_FALSE(file.is_dir);
  CHECK(file.size == 42u);
  CHECK(detail::parse_stat_output("     7\n", "/p").size == 7u);  // BSD wc pads
  CHECK_THROWS_AS(detail::parse_stat_output("4x2\n", "/p"), detail::DamagedOutputError);
  CHECK_THROWS_AS(detail::parse_stat_output("", "/p"), detail::DamagedOutputError);
  CHECK_THROWS_WITH(detail::parse_stat_output("garbage", "/p"),
                    "shell filesystem returned damaged or incomplete output for '/p'");
}

TEST_CASE("read chunks must decode to exactly the expected size", "[unit][workspace]") {
  const auto encoded = exedev::detail::base64_encode("hello world");
  CHECK(detail::decode_exact(encoded, 11, "/p") == "hello world");
  CHECK_THROWS_AS(detail::decode_exact(encoded.substr(0, 8), 11, "/p"), detail::DamagedOutputError);  // truncated
  CHECK_THROWS_AS(detail::decode_exact(encoded, 12, "/p"), detail::DamagedOutputError);                // size changed
  CHECK_THROWS_AS(detail::decode_exact("!!" + encoded, 11, "/p"), detail::DamagedOutputError);         // garbled
}

TEST_CASE("listing output parsing", "[unit][workspace]") {
  static const char raw[] = "d/r/b\0-/r/a\0-/r/weird '\n name";
  const std::string records(raw, sizeof raw);  // ends with the terminating NUL of the last record
  const auto size_line = std::to_string(records.size()) + "\n";
  const auto inline_out = detail::parse_listing_output(size_line + exedev::detail::base64_encode(records) + "\n", "/r");
  CHECK_FALSE(inline_out.paged);
  const auto entries = detail::parse_listing_records(inline_out.records, "/r");
  REQUIRE(entries.size() == 3);
  CHECK(entries[0].path == "/r/a");
  CHECK(entries[1].name == "b");
  CHECK(entries[1].is_dir);
  CHECK(entries[2].name == "weird '\n name");
  const auto paged = detail::parse_listing_output("70000\nPAGED\n", "/r");
  CHECK(paged.paged);
  CHECK(paged.size == 70000u);
  CHECK_THROWS_AS(detail::parse_listing_output(size_line + exedev::detail::base64_encode(records.substr(0, 20)), "/r"),
                  detail::DamagedOutputError);
  CHECK_THROWS_AS(detail::parse_listing_output("3x\n", "/r"), detail::DamagedOutputError);
  CHECK_THROWS_AS(detail::parse_listing_records(std::string("-/r/a\0-/r/b", 11), "/r"), detail::DamagedOutputError);
  CHECK_THROWS_AS(detail::parse_listing_records(std::string("x/r/a\0", 6), "/r"), detail::DamagedOutputError);
}

TEST_CASE("realpath output parsing", "[unit][workspace]") {
  CHECK(detail::parse_realpath_output("6\n" + exedev::detail::base64_encode("/tmp/x") + "\n", "/tmp/x") == "/tmp/x");
  CHECK_THROWS_AS(detail::parse_realpath_output("6\n" + exedev::detail::base64_encode("/tmp/"), "/tmp/x"),
                  detail::DamagedOutputError);
  CHECK_THROWS_AS(detail::parse_realpath_output("6", "/tmp/x"), detail::DamagedOutputError);
}

TEST_CASE("a write's first script prints its destination only when it is not the path as given", "[unit][workspace]") {
  const auto script = detail::write_begin_script("/w/./a//b.txt", ".exedev-t.tmp", false);
  CHECK(script.find("[ \"$dest\" = /w/a/b.txt ] && exit 0") != std::string::npos);
  CHECK(detail::parse_write_begin_output("", "/w/./a//b.txt") == "/w/a/b.txt");
  CHECK(detail::parse_write_begin_output("6\n" + exedev::detail::base64_encode("/r/b.x") + "\n", "/w/a") == "/r/b.x");
  // A relative path is never the destination as given: silence is damaged output there.
  CHECK_THROWS_AS(detail::parse_write_begin_output("", "a/b.txt"), detail::DamagedOutputError);
  // Without creates_temp the transfer makes the temp file; the script does not touch it.
  CHECK(script.find(": > \"$temp\"") != std::string::npos);
  CHECK(detail::write_begin_script("/w/a", ".exedev-t.tmp", false, false).find(": > \"$temp\"") == std::string::npos);
}

TEST_CASE("private exit codes map to path errors", "[unit][workspace]") {
  const auto code_of = [](int exit_code) {
    try {
      detail::raise_for_private_status(ws::CommandResult{exit_code, "", ""}, "/p");
    } catch (const std::filesystem::filesystem_error& e) {
      CHECK(e.path1() == "/p");
      return e.code();
    }
    return std::error_code();
  };
  CHECK(code_of(102) == std::errc::no_such_file_or_directory);
  CHECK(code_of(113) == std::errc::permission_denied);
  CHECK(code_of(117) == std::errc::file_exists);
  CHECK(code_of(120) == std::errc::not_a_directory);
  CHECK(code_of(121) == std::errc::is_a_directory);
  CHECK(code_of(122) == ws::not_a_regular_file);
  CHECK(code_of(1) == std::error_code());
  CHECK_THROWS_WITH(detail::raise_operation_failed(ws::CommandResult{1, "", "  boom \n"}, "/p"), "boom");
  CHECK_THROWS_WITH(detail::raise_operation_failed(ws::CommandResult{1, "", ""}, "/p"),
                    "shell filesystem operation failed for '/p'");
  // The environment's stderr is inert in what() and as it came in the payload.
  const std::string hostile = "\x1b]0;owned\x07\x1b[2J" + std::string(100000, 'x');
  try {
    detail::raise_operation_failed(ws::CommandResult{1, "out", hostile}, "/p");
    FAIL("no error");
  } catch (const ws::WorkspaceScriptError& e) {
    const std::string what = e.what();
    CHECK(what.find('\x1b') == std::string::npos);
    CHECK(what.find('\x07') == std::string::npos);
    CHECK(what.rfind("\\x1b]0;owned\\x07\\x1b[2J", 0) == 0);
    CHECK(what.size() < 2048);
    CHECK(what.find("more bytes)") != std::string::npos);
    CHECK(e.output().stderr_data == hostile);
    CHECK(e.output().stdout_data == "out");
  }
}

TEST_CASE("scripts quote paths and stay below the per-argument limit", "[unit][workspace]") {
  const std::string path = "/w/it's $(x) `y`\n";
  CHECK(detail::stat_script(path).find(ws::shell_quote(path)) != std::string::npos);
  CHECK(detail::exists_script(path) == "test -e " + ws::shell_quote(path));
  CHECK(detail::read_chunk_script("'/a b'", 65536, 3, false) ==
        "printf 'raw\\n'; dd if='/a b' bs=65536 skip=3 count=1 2>/dev/null | base64");
  // Data travels as $1, never inside the script: the scripts stay small whatever the size.
  detail::WriteCheck check;
  check.size = 1u << 30;
  check.sha256 = detail::sha256_hex("");
  check.gzip = true;
  CHECK(detail::write_whole_script(path, ".t", check).size() < 4 * 1024);
  CHECK(detail::write_block_script("/w/.t", 49152, 7).find("bs=49152 seek=7 conv=notrunc") != std::string::npos);
  CHECK(detail::remove_script(path, "/w").find(ws::shell_quote(path)) != std::string::npos);
  CHECK(detail::missing_tools_message({"dd", "wc"}).rfind("The workspace has no `dd`, `wc`, which", 0) == 0);
  CHECK(detail::parse_missing_tools("dd wc ") == std::vector<std::string>{"dd", "wc"});
}
