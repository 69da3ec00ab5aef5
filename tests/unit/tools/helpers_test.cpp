// The tools layer's shared helpers, sans-IO: output capping, Python string semantics, path
// text, schemas and argument checking.
#include "tools/arguments.hpp"
#include "tools/content_hash.hpp"
#include "tools/file_system_impl.hpp"
#include "tools/outcome.hpp"
#include "tools/output.hpp"
#include "tools/paths.hpp"
#include "tools/schema.hpp"
#include "tools/text.hpp"

#include "common/wait_notices.hpp"

#include <boost/asio/io_context.hpp>

#include <catch2/catch.hpp>

#include <filesystem>
#include <stdexcept>

using namespace exedev::tools::detail;

TEST_CASE("truncate_tail keeps the tail behind a marker that counts toward the cap", "[tools][helpers]") {
  CHECK(truncate_tail("short", 10) == "short");
  const std::string text(100, 'x');
  const auto cut = truncate_tail(text + "END", 60);
  CHECK(utf8_length(cut) == 60);
  CHECK(cut == "[... output truncated, showing last 14 chars]\n" + std::string(11, 'x') + "END");
  // No room for the marker: the bare tail.
  CHECK(truncate_tail(text + "END", 5) == "xxEND");
  // Characters, not bytes.
  CHECK(truncate_tail("\xc3\xa9\xc3\xa9\xc3\xa9", 2) == "\xc3\xa9\xc3\xa9");
}

TEST_CASE("text helpers follow Python", "[tools][helpers]") {
  CHECK(split_lines("a\nb\r\nc\rd", true) == std::vector<std::string>{"a\n", "b\r\n", "c\r", "d"});
  CHECK(split_lines("a\n\nb\n", false) == std::vector<std::string>{"a", "", "b"});
  CHECK(split_lines("x\xe2\x80\xa8y\x0cz", false) == std::vector<std::string>{"x", "y", "z"});
  CHECK(split_lines("", false).empty());
  CHECK(count_occurrences("aaaa", "aa") == 2);
  CHECK(python_repr("plain") == "'plain'");
  CHECK(python_repr("it's") == "\"it's\"");
  CHECK(python_repr("a'b\"c\n") == "'a\\'b\"c\\n'");
  CHECK(with_thousands(1501) == "1,501");
  CHECK(with_thousands(999) == "999");
  CHECK(with_thousands(1234567) == "1,234,567");
  CHECK(!utf8_decode_error("caf\xc3\xa9").has_value());
  CHECK(utf8_decode_error("ab\xff") == "'utf-8' codec can't decode byte 0xff in position 2: invalid start byte");
  CHECK(utf8_decode_error("a\xe9z") == "'utf-8' codec can't decode byte 0xe9 in position 1: invalid continuation byte");
  CHECK(utf8_decode_error("a\xe2\x82") == "'utf-8' codec can't decode bytes in position 1-2: unexpected end of data");
  CHECK(utf8_decode_error("\xed\xa0\x80") == "'utf-8' codec can't decode byte 0xed in position 0: invalid continuation byte");
  CHECK(content_hash("") == "e3b0c44298fc");
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("outcome helpers: unknown tool names and filesystem error codes", "[tools][helpers]") {
  CHECK(unknown_tool_message("nope", {"read_file", "run_command"}) ==
        "Unknown tool name: 'nope'. Available tools: 'read_file', 'run_command'");
  const auto missing = std::make_exception_ptr(
      std::filesystem::filesystem_error("gone", std::make_error_code(std::errc::no_such_file_or_directory)));
  CHECK(has_errc(missing, std::errc::no_such_file_or_directory));
  CHECK_FALSE(has_errc(missing, std::errc::permission_denied));
  CHECK_FALSE(has_errc(std::make_exception_ptr(std::runtime_error("other")), std::errc::no_such_file_or_directory));
}

TEST_CASE("path helpers follow posixpath and fnmatch", "[tools][helpers]") {
  CHECK(path_contains("/w", "/w"));
  CHECK(path_contains("/w", "/w/x"));
  CHECK(!path_contains("/w", "/wx"));
  CHECK(path_contains("/", "/etc"));
  CHECK(relative_path("/w/a/b", "/w") == "a/b");
  CHECK(relative_path("/w", "/w") == ".");
  CHECK(relative_path("/x/y", "/w/z") == "../../x/y");
  CHECK(pattern_matches("secrets.yaml", "**/secrets*"));
  CHECK(pattern_matches("a/b/secrets.yaml", "**/secrets*"));
  CHECK(pattern_matches("a/b.pem", "*.pem"));  // `*` spans `/`
  CHECK(!pattern_matches("a/b.txt", "*.pem"));
  CHECK(first_matching_pattern("d/.git/hooks/x", {"**/.git/*"}, true) == "**/.git/*");
  CHECK(first_matching_pattern("d/.git", {"**/.git/*"}, true).empty());
  CHECK(fnmatch_python("a\\b", "a\\b"));  // backslash is literal
  CHECK(glob_match({"**", "*.txt"}, {"a.txt"}));
  CHECK(glob_match({"**", "*.txt"}, {"x", "y", "a.txt"}));
  CHECK(!glob_match({"*.txt"}, {"x", "a.txt"}));
  CHECK(is_hidden("a/.b/c"));
  CHECK(!is_hidden("."));
}

TEST_CASE("schemas follow pydantic-ai's shape", "[tools][helpers]") {
  ToolSpec spec;
  spec.name = "t";
  spec.description = tool_description("Do it.", "What it did.");
  const auto path = text_parameter("path", "The path.");
  const auto limit = typed_parameter("limit", JsonType::integer, "", "null", true);
  auto mode = text_parameter("mode", "", "\"foreground\"");
  mode.choices = {"foreground", "background"};
  spec.parameters = {path, limit, mode};
  const auto definition = definition_of(spec);
  CHECK(definition.description ==
        "<summary>Do it.</summary>\n<returns>\n<description>What it did.</description>\n</returns>");
  CHECK(definition.parameters_schema ==
        R"({"additionalProperties":false,"properties":{"path":{"type":"string","description":"The path."},)"
        R"("limit":{"anyOf":[{"type":"integer"},{"type":"null"}],"default":null},)"
        R"("mode":{"type":"string","enum":["foreground","background"],"default":"foreground"}},)"
        R"("required":["path"],"type":"object"})");

  const Arguments given(spec, R"({"path": "p", "limit": 3.0})");
  CHECK(given.text("path") == "p");
  CHECK(given.optional_integer("limit") == 3);
  CHECK(given.text("mode") == "foreground");
  CHECK_THROWS_WITH(Arguments(spec, R"({"path": "p", "mode": "later"})"),
                    "Invalid arguments for tool 't':\n- mode: Input should be 'foreground' or 'background'\n"
                    "Fix the errors and try again.");
  CHECK_THROWS_AS(Arguments(spec, "[1]"), ModelRetry);
  CHECK_THROWS_AS(Arguments(spec, R"({"path": 1})"), ModelRetry);
  CHECK_THROWS_AS(Arguments(spec, R"({"path": "p", "limit": 1.5})"), ModelRetry);
}

TEST_CASE("a call's live output relays wait notices while it lasts, one line each", "[tools][helpers]") {
  boost::asio::io_context io;
  std::string output;
  const std::function<void(std::string_view)> on_output = [&](std::string_view text) { output += text; };
  {
    const auto relay = relay_wait_notices(io.get_executor(), on_output);
    REQUIRE(relay);
    exedev::detail::publish_wait_notice("exe.dev's rate limit: \"ssh\" waits 2.0 s");
    io.run();
    CHECK(output == "exe.dev's rate limit: \"ssh\" waits 2.0 s\n");
    // Published, then the call ends before the notice is delivered: never delivered.
    exedev::detail::publish_wait_notice("late");
  }
  io.restart();
  io.run();
  CHECK(output.find("late") == std::string::npos);
  CHECK_FALSE(relay_wait_notices(io.get_executor(), {}));
}

TEST_CASE("an edit travels as the one splice between the common prefix and suffix", "[tools][unit]") {
  using exedev::tools::detail::splice_between;
  struct Row {
    std::string before, after;
    std::uint64_t offset, length;
    std::string inserted;
  };
  const std::vector<Row> rows = {
      {"a\nb\nc\n", "a\nB\nc\n", 2, 1, "B"},
      {"abc", "abc", 3, 0, ""},
      {"abc", "abXYc", 2, 0, "XY"},
      {"abcabc", "abc", 3, 3, ""},  // the suffix never overlaps the prefix
      {"", "new", 0, 0, "new"},
      {"old", "", 0, 3, ""},
      {"aaa", "aaaa", 3, 0, "a"},
  };
  for (const auto& row : rows) {
    INFO(row.before << " -> " << row.after);
    const auto splice = splice_between(row.before, row.after);
    CHECK(splice.offset == row.offset);
    CHECK(splice.length == row.length);
    CHECK(splice.inserted == row.inserted);
    CHECK(splice.result_size == row.after.size());
    CHECK(splice.base_sha256 == exedev::tools::detail::sha256_hex(row.before));
    CHECK(splice.result_sha256 == exedev::tools::detail::sha256_hex(row.after));
    CHECK(row.before.substr(0, splice.offset) + splice.inserted + row.before.substr(splice.offset + splice.length) == row.after);
  }
}
