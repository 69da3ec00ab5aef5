#pragma once
// The FileSystem tool set's behaviour, written once and run on every backend: LocalBackend,
// its commands-only view (the shell-derived filesystem), and SandboxBackend on the emulator.
// Each case works in a fresh directory below the working directory, so cases share one
// environment (one VM on the emulator).

#include <exedev/testing/co_check.hpp>
#include <exedev/tools/file_system.hpp>
#include <exedev/workspace/workspace.hpp>

#include "tools/content_hash.hpp"

#include <boost/asio/awaitable.hpp>
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace fs_cases {

namespace asio = boost::asio;
namespace ws = exedev::workspace;
namespace tools = exedev::tools;
using tools::ToolOutcome;

inline std::string unique_dir() {
  static std::mt19937_64 engine{std::random_device{}()};
  static constexpr char digits[] = "0123456789abcdef";
  std::string out = "case-";
  for (int i = 0; i < 8; ++i) out += digits[engine() & 0xF];
  return out;
}

inline asio::awaitable<tools::ToolResult> call(tools::FileSystem& files, std::string name, std::string arguments) {
  tools::ToolCallContext context;  // named: GCC 12 miscompiles a braced temporary in a co_await
  co_return co_await files.call(std::move(name), std::move(arguments), std::move(context));
}

inline asio::awaitable<void> sh(ws::Workspace& workspace, std::string line) {
  const auto result = co_await workspace.run(ws::Command::shell(std::move(line)));
  INFO(result.stderr_text);
  REQUIRE(result.exit_code == 0);
}

inline std::string parent_of(const std::string& path) { return path.substr(0, path.rfind('/')); }

/// The hash the tools report for `text`.
inline std::string tools_hash(const std::string& text) { return exedev::tools::detail::content_hash(text); }

/// The result has the outcome `wanted` and exactly the text `expected`.
#define EXPECT_OUTCOME(result, wanted, expected)   \
  do {                                             \
    const auto& r_ = (result);                     \
    INFO(r_.text);                                 \
    CHECK(r_.outcome == (wanted));                 \
    CHECK(r_.text == (expected));                  \
  } while (false)
#define EXPECT_SUCCESS(result, expected) EXPECT_OUTCOME(result, fs_cases::ToolOutcome::success, expected)
#define EXPECT_RETRY(result, expected) EXPECT_OUTCOME(result, fs_cases::ToolOutcome::retry, expected)

#define EXPECT_RETRY_CONTAINING(result, part)                          \
  do {                                                                 \
    const auto& r_ = (result);                                         \
    INFO(r_.text);                                                     \
    CHECK(r_.outcome == fs_cases::ToolOutcome::retry);                 \
    CHECK(r_.text.find(part) != std::string::npos);                    \
  } while (false)

inline asio::awaitable<void> read_and_write_formats(std::shared_ptr<ws::Workspace> workspace) {
  tools::FileSystem files(workspace);
  const std::string d = unique_dir();
  co_await workspace->make_dir(d);
  EXPECT_SUCCESS(co_await call(files, "write_file", R"({"path": ")" + d + R"(/f.txt", "content": "a\nb\n"})"),
                 "Wrote 4 chars (2 lines) to " + d + "/f.txt. [hash:911169ddaaf1]");
  EXPECT_SUCCESS(co_await call(files, "read_file", R"({"path": ")" + d + R"(/f.txt"})"),
                 "[" + d + "/f.txt | 2 lines | hash:911169ddaaf1]\n     1\ta\n     2\tb\n");
  EXPECT_SUCCESS(co_await call(files, "read_file", R"({"path": ")" + d + R"(/f.txt", "limit": 1})"),
                 "[" + d + "/f.txt | 2 lines | hash:911169ddaaf1]\n     1\ta\n"
                 "... (1 more lines. Use offset=1 to continue reading.)\n");
  EXPECT_SUCCESS(co_await call(files, "read_file", R"({"path": ")" + d + R"(/f.txt", "offset": 1})"),
                 "[" + d + "/f.txt | 2 lines | hash:911169ddaaf1]\n     2\tb\n");
  EXPECT_RETRY(co_await call(files, "read_file", R"({"path": ")" + d + R"(/f.txt", "offset": 5})"),
               "Offset 5 exceeds file length (2 lines).");
  EXPECT_RETRY(co_await call(files, "read_file", R"({"path": ")" + d + R"(/f.txt", "offset": -1})"),
               "offset must be non-negative.");
  EXPECT_SUCCESS(co_await call(files, "read_file", R"({"path": ")" + d + R"(/missing.txt"})"),
                 "Path not found: " + d + "/missing.txt");
  EXPECT_SUCCESS(co_await call(files, "read_file", R"({"path": ")" + d + R"("})"), "Path not found: " + d);
  co_await workspace->write_bytes(d + "/empty.txt", "");
  EXPECT_SUCCESS(co_await call(files, "read_file", R"({"path": ")" + d + R"(/empty.txt"})"),
                 "[" + d + "/empty.txt | 0 lines | hash:e3b0c44298fc]\n(empty file)\n");
  co_await workspace->write_bytes(d + "/bin.dat", std::string("a\0b", 3));
  EXPECT_SUCCESS(co_await call(files, "read_file", R"({"path": ")" + d + R"(/bin.dat"})"),
                 "[Binary file: 3 bytes. Use a binary-aware tool to inspect.]");
  // CRLF and a lone CR are line breaks; the hash is of the raw bytes.
  co_await workspace->write_bytes(d + "/crlf.txt", "x\r\ny\rz");
  const auto crlf = co_await call(files, "read_file", R"({"path": ")" + d + R"(/crlf.txt"})");
  CHECK(crlf.text.find(" | 3 lines | hash:") != std::string::npos);
  CHECK(crlf.text.find("     1\tx\r\n     2\ty\r     3\tz\n") != std::string::npos);

  // Parent missing, directory target, parent a file.
  EXPECT_RETRY(co_await call(files, "write_file", R"({"path": ")" + d + R"(/nope/f.txt", "content": "x"})"),
               "Parent directory '" + d + "/nope' does not exist. Create the parent directory first.");
  EXPECT_RETRY(co_await call(files, "write_file", R"({"path": ")" + d + R"(", "content": "x"})"),
               "Path '" + d + "' exists and is not a regular file.");
  EXPECT_RETRY(co_await call(files, "write_file", R"({"path": ")" + d + R"(/f.txt/child", "content": "x"})"),
               "Path '" + d + "/f.txt/child' has a parent that is not a directory.");
  // Unicode: chars are code points.
  EXPECT_SUCCESS(co_await call(files, "write_file", R"({"path": ")" + d + R"(/u.txt", "content": "\u00e9t\u00e9"})"),
                 "Wrote 3 chars (1 lines) to " + d + "/u.txt. [hash:" + std::string("bd010c64132b") + "]");
}

inline asio::awaitable<void> hash_conflicts(std::shared_ptr<ws::Workspace> workspace) {
  tools::FileSystem files(workspace);
  const std::string d = unique_dir();
  co_await workspace->make_dir(d);
  co_await workspace->write_bytes(d + "/f.txt", "a\nb\n");
  EXPECT_RETRY(co_await call(files, "write_file",
                             R"({"path": ")" + d + R"(/f.txt", "content": "new\n", "expected_hash": "000000000000"})"),
               "Conflict: file '" + d + "/f.txt' has changed (expected hash:000000000000, got hash:911169ddaaf1). "
               "Re-read the file and retry.");
  CO_CHECK(co_await workspace->read_bytes(d + "/f.txt") == "a\nb\n");
  EXPECT_SUCCESS(co_await call(files, "write_file",
                               R"({"path": ")" + d + R"(/f.txt", "content": "new\n", "expected_hash": "911169ddaaf1"})"),
                 "Wrote 4 chars (1 lines) to " + d + "/f.txt. [hash:7aa7a5359173]");
  // A missing file is created whatever expected_hash says.
  EXPECT_SUCCESS(co_await call(files, "write_file",
                               R"({"path": ")" + d + R"(/g.txt", "content": "new\n", "expected_hash": "000000000000"})"),
                 "Wrote 4 chars (1 lines) to " + d + "/g.txt. [hash:7aa7a5359173]");
  EXPECT_RETRY(co_await call(files, "edit_file",
                             R"({"path": ")" + d + R"(/f.txt", "old_text": "new", "new_text": "x", "expected_hash": "111111111111"})"),
               "Conflict: file '" + d + "/f.txt' has changed (expected hash:111111111111, got hash:7aa7a5359173). "
               "Re-read the file and retry.");
  // Without content hashes: no suffix, and expected_hash is not a parameter.
  tools::FileSystemOptions plain;
  plain.content_hashes = false;
  tools::FileSystem unhashed(workspace, plain);
  EXPECT_SUCCESS(co_await call(unhashed, "write_file", R"({"path": ")" + d + R"(/h.txt", "content": "a\nb\n"})"),
                 "Wrote 4 chars (2 lines) to " + d + "/h.txt.");
  EXPECT_SUCCESS(co_await call(unhashed, "read_file", R"({"path": ")" + d + R"(/h.txt"})"),
                 "[" + d + "/h.txt | 2 lines]\n     1\ta\n     2\tb\n");
  EXPECT_RETRY_CONTAINING(
      co_await call(unhashed, "write_file", R"({"path": ")" + d + R"(/h.txt", "content": "x", "expected_hash": "x"})"),
      "expected_hash: Extra inputs are not permitted");
}

inline asio::awaitable<void> edit_formats(std::shared_ptr<ws::Workspace> workspace) {
  tools::FileSystem files(workspace);
  const std::string d = unique_dir();
  co_await workspace->make_dir(d);
  const std::string f = d + "/f.txt";
  co_await workspace->write_bytes(f, "a\nb\n");
  EXPECT_SUCCESS(co_await call(files, "edit_file", R"({"path": ")" + f + R"(", "old_text": "b", "new_text": "B"})"),
                 "Edited " + f + ". [hash:6f0b6bdc14ef]");
  CO_CHECK(co_await workspace->read_bytes(f) == "a\nB\n");
  EXPECT_RETRY(co_await call(files, "edit_file", R"({"path": ")" + f + R"(", "old_text": "zzz", "new_text": "B"})"),
               "old_text not found in " + f + ". No changes were written.");
  co_await workspace->write_bytes(f, "x x\n");
  EXPECT_RETRY(co_await call(files, "edit_file", R"({"path": ")" + f + R"(", "old_text": "x", "new_text": "y"})"),
               "old_text found 2 times in " + f +
                   ". Include more surrounding context to make the match unique. No changes were written.");
  EXPECT_RETRY(co_await call(files, "edit_file", R"({"path": ")" + f + R"(", "old_text": "x"})"),
               "Provide old_text and new_text, or a non-empty replacements list.");
  EXPECT_RETRY(co_await call(files, "edit_file",
                             R"({"path": ")" + f + R"(", "old_text": "x", "new_text": "y", "replacements": []})"),
               "Provide either old_text and new_text or a non-empty replacements list, not both.");
  co_await workspace->write_bytes(f, "one\ntwo\nthree\n");
  EXPECT_SUCCESS(co_await call(files, "edit_file", R"({"path": ")" + f + R"(", "replacements": [
                     {"old_text": "one", "new_text": "1"}, {"old_text": "1\ntwo", "new_text": "2"}]})"),
                 "Edited " + f + ". [hash:78aada416f02]");
  CO_CHECK(co_await workspace->read_bytes(f) == "2\nthree\n");
  // A failing replacement writes nothing.
  EXPECT_RETRY(co_await call(files, "edit_file", R"({"path": ")" + f + R"(", "replacements": [
                   {"old_text": "three", "new_text": "3"}, {"old_text": "missing", "new_text": "m"}]})"),
               "replacement 2 not found in " + f + ". No changes were written.");
  CO_CHECK(co_await workspace->read_bytes(f) == "2\nthree\n");
  EXPECT_RETRY(co_await call(files, "edit_file", R"({"path": ")" + d + R"(/missing", "old_text": "a", "new_text": "b"})"),
               "File not found: " + d + "/missing");
  co_await workspace->write_bytes(d + "/bin", std::string("a\0b", 3));
  EXPECT_RETRY(co_await call(files, "edit_file", R"({"path": ")" + d + R"(/bin", "old_text": "a", "new_text": "b"})"),
               d + "/bin is a binary file; edit_file only edits text files.");
  co_await workspace->write_bytes(d + "/latin1", "caf\xe9\n");
  EXPECT_RETRY(co_await call(files, "edit_file", R"({"path": ")" + d + R"(/latin1", "old_text": "caf", "new_text": "b"})"),
               "'utf-8' codec can't decode byte 0xe9 in position 3: invalid continuation byte");
}

// Edits of content the tool set has read or written (on SupportsConfinedFiles, one splice the
// workspace applies only while the file holds that content) give what a read and a write give,
// also when the file changed since.
inline asio::awaitable<void> edits_of_known_content(std::shared_ptr<ws::Workspace> workspace) {
  tools::FileSystem files(workspace);
  const std::string d = unique_dir();
  co_await workspace->make_dir(d);
  const std::string f = d + "/f.txt";
  const auto edit = [&](const std::string& old_text, const std::string& new_text) {
    return call(files, "edit_file", R"({"path": ")" + f + R"(", "old_text": ")" + old_text + R"(", "new_text": ")" +
                                        new_text + R"("})");
  };
  EXPECT_SUCCESS(co_await call(files, "write_file", R"({"path": ")" + f + R"(", "content": "alpha\nbeta\ngamma\n"})"),
                 "Wrote 17 chars (3 lines) to " + f + ". [hash:" + tools_hash("alpha\nbeta\ngamma\n") + "]");
  EXPECT_SUCCESS(co_await edit("beta", "BETA"), "Edited " + f + ". [hash:" + tools_hash("alpha\nBETA\ngamma\n") + "]");
  CO_CHECK(co_await workspace->read_bytes(f) == "alpha\nBETA\ngamma\n");
  // Changed elsewhere since: the edit applies to the file as it is.
  co_await workspace->write_bytes(f, "alpha\nBETA\ngamma\ndelta\n");
  EXPECT_SUCCESS(co_await edit("gamma", "G"), "Edited " + f + ". [hash:" + tools_hash("alpha\nBETA\nG\ndelta\n") + "]");
  CO_CHECK(co_await workspace->read_bytes(f) == "alpha\nBETA\nG\ndelta\n");
  // The old text is only in the content seen before: not found in the file.
  co_await workspace->write_bytes(f, "only\n");
  EXPECT_RETRY(co_await edit("G", "H"), "old_text not found in " + f + ". No changes were written.");
  CO_CHECK(co_await workspace->read_bytes(f) == "only\n");
  // The old text is only in the file, not in the content seen before.
  co_await workspace->write_bytes(f, "only\nnew\n");
  EXPECT_SUCCESS(co_await edit("new", "newer"), "Edited " + f + ". [hash:" + tools_hash("only\nnewer\n") + "]");
  // Read, then edited twice.
  co_await workspace->write_bytes(f, "x = 1\ny = 2\n");
  EXPECT_SUCCESS(co_await call(files, "read_file", R"({"path": ")" + f + R"("})"),
                 "[" + f + " | 2 lines | hash:" + tools_hash("x = 1\ny = 2\n") + "]\n     1\tx = 1\n     2\ty = 2\n");
  EXPECT_SUCCESS(co_await edit("x = 1", "x = 10"), "Edited " + f + ". [hash:" + tools_hash("x = 10\ny = 2\n") + "]");
  EXPECT_SUCCESS(co_await edit("\\ny = 2", ""), "Edited " + f + ". [hash:" + tools_hash("x = 10\n") + "]");
  CO_CHECK(co_await workspace->read_bytes(f) == "x = 10\n");
}

inline asio::awaitable<void> directories(std::shared_ptr<ws::Workspace> workspace) {
  tools::FileSystemOptions capped;
  capped.max_list_results = 2;
  tools::FileSystem files(workspace);
  tools::FileSystem few(workspace, capped);
  const std::string d = unique_dir();
  co_await workspace->make_dir(d + "/sub");
  co_await workspace->write_bytes(d + "/b.txt", "12345");
  co_await workspace->write_bytes(d + "/a.txt", "");
  co_await workspace->write_bytes(d + "/.hidden", "h");
  EXPECT_SUCCESS(co_await call(files, "list_directory", R"({"path": ")" + d + R"("})"),
                 d + "/a.txt  (0 bytes)\n" + d + "/b.txt  (5 bytes)\n" + d +
                     "/sub/\n[1 hidden entries omitted; name a hidden path explicitly to include it]");
  EXPECT_SUCCESS(co_await call(few, "list_directory", R"({"path": ")" + d + R"("})"),
                 d + "/a.txt  (0 bytes)\n" + d + "/b.txt  (5 bytes)\n[... truncated at 2 entries]\n"
                 "[1 hidden entries omitted; name a hidden path explicitly to include it]");
  EXPECT_SUCCESS(co_await call(files, "list_directory", R"({"path": ")" + d + R"(/sub"})"), "(empty directory)");
  EXPECT_RETRY(co_await call(files, "list_directory", R"({"path": ")" + d + R"(/b.txt"})"),
               "Not a directory: " + d + "/b.txt");
  EXPECT_RETRY(co_await call(files, "list_directory", R"({"path": ")" + d + R"(/missing"})"),
               "Not a directory: " + d + "/missing");

  EXPECT_SUCCESS(co_await call(files, "create_directory", R"({"path": ")" + d + R"(/x/y"})"),
                 "Created directory: " + d + "/x/y");
  CO_CHECK((co_await workspace->stat(d + "/x/y")).is_dir);
  EXPECT_SUCCESS(co_await call(files, "create_directory", R"({"path": ")" + d + R"(/x/y"})"),
                 "Created directory: " + d + "/x/y");
  EXPECT_RETRY(co_await call(files, "create_directory", R"({"path": ")" + d + R"(/b.txt"})"),
               "Path '" + d + "/b.txt' exists and is not a directory.");
  EXPECT_RETRY(co_await call(files, "create_directory", R"({"path": ")" + d + R"(/b.txt/z/w"})"),
               "Path '" + d + "/b.txt/z/w' has a parent that is not a directory.");

  EXPECT_SUCCESS(co_await call(files, "file_info", R"({"path": ")" + d + R"(/b.txt"})"),
                 "path: " + d + "/b.txt\ntype: file\nsize: 5 bytes\nbinary: False\nlines: 1\nhash: 5994471abb01");
  EXPECT_SUCCESS(co_await call(files, "file_info", R"({"path": ")" + d + R"(/sub"})"),
                 "path: " + d + "/sub\ntype: directory");
  EXPECT_SUCCESS(co_await call(files, "file_info", R"({"path": ")" + d + R"(/missing"})"),
                 "Path not found: " + d + "/missing");
  co_await sh(*workspace, "ln -s b.txt " + d + "/link");
  EXPECT_SUCCESS(co_await call(files, "file_info", R"({"path": ")" + d + R"(/link"})"),
                 "path: " + d + "/link\ntype: file\nsize: 5 bytes\nbinary: False\nlines: 1\nhash: 5994471abb01\n"
                 "symlink_target: b.txt");
}

inline asio::awaitable<void> confinement(std::shared_ptr<ws::Workspace> workspace) {
  tools::FileSystem files(workspace);
  const std::string root = co_await workspace->working_dir();
  const std::string d = unique_dir();
  co_await workspace->make_dir(d);
  EXPECT_RETRY(co_await call(files, "read_file", R"({"path": "../x.txt"})"),
               "`" + parent_of(root) + "/x.txt` is outside the project root `" + root + "`; use a path inside it.");
  EXPECT_RETRY(co_await call(files, "write_file", R"({"path": ")" + d + R"(/../../x.txt", "content": "x"})"),
               "`" + parent_of(root) + "/x.txt` is outside the project root `" + root + "`; use a path inside it.");
  EXPECT_RETRY(co_await call(files, "read_file", R"({"path": "/etc/hostname"})"),
               "`/etc/hostname` is outside the project root `" + root + "`; use a path inside it.");
  // An absolute path inside the root is fine.
  co_await workspace->write_bytes(d + "/in.txt", "in\n");
  CO_CHECK((co_await call(files, "read_file", R"({"path": ")" + root + "/" + d + R"(/in.txt"})")).outcome ==
        ToolOutcome::success);
  // Symlink escapes: a file link, a directory link, and a write through a directory link.
  co_await sh(*workspace, "ln -s /etc/hostname " + d + "/file-escape && ln -s /etc " + d + "/dir-escape");
  EXPECT_RETRY(co_await call(files, "read_file", R"({"path": ")" + d + R"(/file-escape"})"),
               "`" + d + "/file-escape` leads outside the project root `" + root + "` through a symlink; use a path inside it.");
  EXPECT_RETRY(co_await call(files, "read_file", R"({"path": ")" + d + R"(/dir-escape/hostname"})"),
               "`" + d + "/dir-escape/hostname` leads outside the project root `" + root +
                   "` through a symlink; use a path inside it.");
  EXPECT_RETRY_CONTAINING(co_await call(files, "write_file", R"({"path": ")" + d + R"(/dir-escape/new.txt", "content": "x"})"),
                          "through a symlink");
  EXPECT_RETRY_CONTAINING(co_await call(files, "list_directory", R"({"path": ")" + d + R"(/dir-escape"})"),
                          "through a symlink");
  // A link inside the root is followed.
  co_await sh(*workspace, "ln -s in.txt " + d + "/inner-link");
  CO_CHECK((co_await call(files, "read_file", R"({"path": ")" + d + R"(/inner-link"})")).outcome == ToolOutcome::success);
  // Read-only patterns, on both spellings.
  EXPECT_RETRY(co_await call(files, "write_file", R"({"path": ")" + d + R"(/.env", "content": "K=V"})"),
               "Path '" + d + "/.env' is protected (matches '**/.env').");
  co_await workspace->write_bytes(d + "/.env", "K=V\n");
  co_await sh(*workspace, "ln -s .env " + d + "/envlink");
  EXPECT_RETRY(co_await call(files, "edit_file", R"({"path": ")" + d + R"(/envlink", "old_text": "K", "new_text": "L"})"),
               "Path '" + d + "/.env' is protected (matches '**/.env').");
  CO_CHECK((co_await call(files, "read_file", R"({"path": ")" + d + R"(/envlink"})")).outcome == ToolOutcome::success);
  EXPECT_RETRY(co_await call(files, "create_directory", R"({"path": ")" + d + R"(/.git/hooks"})"),
               "Path '" + d + "/.git/hooks' is protected (matches '**/.git/*').");
  // Denied and allowed patterns.
  tools::FileSystemOptions policy;
  policy.denied_patterns = {"*/secret"};
  policy.allowed_patterns = {"*.txt", "*/secret/*"};
  tools::FileSystem guarded(workspace, policy);
  co_await workspace->write_bytes(d + "/secret/key.txt", "k\n");
  EXPECT_RETRY(co_await call(guarded, "read_file", R"({"path": ")" + d + R"(/secret/key.txt"})"),
               "Path '" + d + "/secret/key.txt' is denied by pattern '*/secret'.");
  EXPECT_RETRY(co_await call(guarded, "read_file", R"({"path": ")" + d + R"(/bin.dat"})"),
               "Path '" + d + "/bin.dat' does not match any allowed pattern.");
  EXPECT_SUCCESS(co_await call(guarded, "read_file", R"({"path": ")" + d + R"(/in.txt"})"),
                 "[" + d + "/in.txt | 1 lines | hash:" + std::string("ab5080369a96") + "]\n     1\tin\n");
  // A denied directory is not walked; the listing root itself is checked.
  EXPECT_RETRY(co_await call(guarded, "list_directory", R"({"path": ")" + d + R"(/secret"})"),
               "Path '" + d + "/secret' is denied by pattern '*/secret'.");
  // root_dir "/" disables containment.
  tools::FileSystemOptions open;
  open.root_dir = "/";
  open.read_only_patterns = {};
  tools::FileSystem everywhere(workspace, open);
  CO_CHECK((co_await call(everywhere, "file_info", R"({"path": ")" + d + R"(/file-escape"})")).outcome ==
        ToolOutcome::success);
}

inline asio::awaitable<void> read_only_modes(std::shared_ptr<ws::Workspace> workspace) {
  const auto names = [](const std::vector<tools::ToolDefinition>& definitions) {
    std::string out;
    for (const auto& d : definitions) out += d.name + " ";
    return out;
  };
  tools::FileSystemOptions read_only;
  read_only.read_only = true;
  tools::FileSystem viewer(workspace, read_only);
  CO_CHECK(names(co_await viewer.tools()) == "read_file list_directory search_files find_files file_info ");
  EXPECT_RETRY(co_await call(viewer, "write_file", R"({"path": "x", "content": "x"})"),
               "Unknown tool name: 'write_file'. Available tools: 'read_file', 'list_directory', 'search_files', "
               "'find_files', 'file_info'");
  tools::FileSystem full(workspace);
  CO_CHECK(names(co_await full.tools()) ==
        "read_file write_file edit_file list_directory search_files find_files create_directory file_info ");
  auto locked = std::make_shared<ws::ReadOnlyWorkspace>(workspace);
  tools::FileSystemOptions everything;
  everything.tools = tools::file_system_tool_names();
  tools::FileSystem over_read_only(locked, everything);
  CO_CHECK(names(co_await over_read_only.tools()) ==
        "read_file list_directory search_files find_files file_info list_files grep ");
}

inline asio::awaitable<void> find_and_search(std::shared_ptr<ws::Workspace> workspace) {
  tools::FileSystemOptions options;
  options.tools = tools::file_system_tool_names();
  tools::FileSystem files(workspace, options);
  tools::FileSystemOptions capped_options = options;
  capped_options.max_find_results = 1;
  capped_options.max_search_results = 1;
  tools::FileSystem capped(workspace, capped_options);
  const std::string d = unique_dir();
  co_await workspace->write_bytes(d + "/a.txt", "alpha\nbeta\n");
  co_await workspace->write_bytes(d + "/src/b.txt", "gamma alpha\n");
  co_await workspace->write_bytes(d + "/src/c.py", "alpha = 1\n");
  co_await workspace->write_bytes(d + "/.hid/d.txt", "alpha\n");
  EXPECT_SUCCESS(co_await call(files, "find_files", R"({"pattern": "**/*.txt", "path": ")" + d + R"("})"),
                 d + "/a.txt\n" + d + "/src/b.txt\n[1 hidden entries omitted; name a hidden path explicitly to include it]");
  EXPECT_SUCCESS(co_await call(files, "find_files", R"({"pattern": "*", "path": ")" + d + R"("})"),
                 d + "/a.txt\n" + d + "/src/\n[1 hidden entries omitted; name a hidden path explicitly to include it]");
  EXPECT_SUCCESS(co_await call(capped, "find_files", R"({"pattern": "**/*.txt", "path": ")" + d + R"("})"),
                 d + "/a.txt\n[... truncated at 1 matches]\n"
                 "[1 hidden entries omitted; name a hidden path explicitly to include it]");
  EXPECT_SUCCESS(co_await call(files, "find_files", R"({"pattern": "*.rs", "path": ")" + d + R"("})"), "No matches found.");
  EXPECT_RETRY(co_await call(files, "find_files", R"({"pattern": "/etc/*"})"),
               "Pattern '/etc/*' must be relative to the search path, not absolute.");
  EXPECT_RETRY(co_await call(files, "find_files", R"({"pattern": "../*"})"), "Pattern '../*' is not a valid glob pattern.");
  EXPECT_RETRY(co_await call(files, "find_files", R"({"pattern": "*", "path": ")" + d + R"(/a.txt"})"),
               "Not a directory: " + d + "/a.txt");

  EXPECT_SUCCESS(co_await call(files, "search_files", R"({"pattern": "al.ha", "path": ")" + d + R"("})"),
                 d + "/a.txt:1:alpha\n" + d + "/src/b.txt:1:gamma alpha\n" + d +
                     "/src/c.py:1:alpha = 1\n[1 hidden entries omitted; name a hidden path explicitly to include it]");
  EXPECT_SUCCESS(co_await call(files, "search_files",
                               R"({"pattern": "^alpha", "path": ")" + d + R"(", "include_glob": "*.py"})"),
                 d + "/src/c.py:1:alpha = 1\n[1 hidden entries omitted; name a hidden path explicitly to include it]");
  EXPECT_SUCCESS(co_await call(capped, "search_files", R"({"pattern": "alpha", "path": ")" + d + R"(/a.txt"})"),
                 d + "/a.txt:1:alpha");
  EXPECT_SUCCESS(co_await call(capped, "search_files", R"({"pattern": "a", "path": ")" + d + R"(/a.txt"})"),
                 d + "/a.txt:1:alpha\n[... truncated at 1 matches]");
  EXPECT_SUCCESS(co_await call(files, "search_files", R"({"pattern": "zeta", "path": ")" + d + R"("})"),
                 "[1 hidden entries omitted; name a hidden path explicitly to include it]");
  EXPECT_RETRY_CONTAINING(co_await call(files, "search_files", R"({"pattern": "(unclosed", "path": ")" + d + R"("})"),
                          "Invalid regex pattern: ");

  EXPECT_SUCCESS(co_await call(files, "list_files", R"({"path": ")" + d + R"(", "glob": "*.py"})"),
                 d + "/src/c.py\n[1 hidden entries omitted; name a hidden path explicitly to include it]");
  EXPECT_SUCCESS(co_await call(files, "grep", R"({"pattern": "ALPHA =", "path": ")" + d + R"(/src", "ignore_case": true})"),
                 d + "/src/c.py:1:alpha = 1");
  EXPECT_SUCCESS(co_await call(files, "grep", R"({"pattern": "a.", "path": ")" + d + R"(/src", "literal": true})"),
                 "No matches found.");
  EXPECT_RETRY(co_await call(files, "grep", R"({"pattern": "a", "context": 21})"), "context must be between 0 and 20.");
}

inline asio::awaitable<void> arguments_and_limits(std::shared_ptr<ws::Workspace> workspace) {
  tools::FileSystemOptions small;
  small.max_read_chars = 300;
  tools::FileSystem files(workspace, small);
  const std::string d = unique_dir();
  EXPECT_RETRY(co_await call(files, "read_file", "{not json"),
               "Invalid arguments for tool 'read_file': the arguments are not valid JSON. Send a JSON object.");
  EXPECT_RETRY(co_await call(files, "read_file", R"({"offset": "x", "extra": 1})"),
               "Invalid arguments for tool 'read_file':\n- path: Field required\n- offset: Input should be a valid "
               "integer\n- extra: Extra inputs are not permitted\nFix the errors and try again.");
  EXPECT_RETRY_CONTAINING(co_await call(files, "no_such_tool", "{}"), "Unknown tool name: 'no_such_tool'.");
  // The read window ends on the last whole line that fits.
  std::string many;
  for (int i = 0; i < 20; ++i) many += std::string(20, 'x') + "\n";
  co_await workspace->write_bytes(d + "/many.txt", many);
  const auto window = co_await call(files, "read_file", R"({"path": ")" + d + R"(/many.txt"})");
  const std::string header = window.text.substr(0, window.text.find('\n') + 1);
  const std::size_t budget = 300 - header.size() - 200;
  const std::size_t shown = budget / 28;  // "     N\t" + 20 x's + "\n"
  INFO(window.text);
  CHECK(window.text.find("... (" + std::to_string(20 - shown) + " more lines. Use offset=" + std::to_string(shown) +
                         " to continue reading.)\n") != std::string::npos);
  CHECK(window.text.size() <= 300);
  co_await workspace->write_bytes(d + "/wide.txt", std::string(1500, 'y') + "\nshort\n");
  EXPECT_SUCCESS(co_await call(files, "read_file", R"({"path": ")" + d + R"(/wide.txt"})"),
                 "[" + d + "/wide.txt | 2 lines | hash:c978722e763f]\n... (Line 1 is 1,501 characters and does not fit the "
                 "read window. Use offset=1 to skip it, or a shell byte range to inspect it.)\n");
}

// The escapes confinement refuses, each with what it must leave untouched outside the root. On a
// backend with SupportsConfinedFiles (the shell-derived filesystem, SandboxBackend) the real
// path is checked where the files are, in the operation's own script; elsewhere by realpath
// first. The same refusals either way.
inline asio::awaitable<void> confinement_where_the_files_are(std::shared_ptr<ws::Workspace> workspace) {
  tools::FileSystem files(workspace);
  const std::string root = co_await workspace->working_dir();
  const std::string d = unique_dir();
  const std::string outside = parent_of(root) + "/outside-" + d;
  co_await workspace->make_dir(d);
  co_await sh(*workspace, "mkdir -p '" + outside + "' && printf 'kept\\n' > '" + outside + "/f.txt' && ln -s '" +
                              outside + "' " + d + "/out && ln -s '" + outside + "/f.txt' " + d + "/out-file");
  const auto escape = [&](const std::string& path) {
    return "`" + path + "` leads outside the project root `" + root + "` through a symlink; use a path inside it.";
  };
  // `..` out of the root: refused before anything is sent.
  EXPECT_RETRY(co_await call(files, "write_file", R"({"path": ")" + d + R"(/../../outside-)" + d + R"(/new.txt", "content": "x"})"),
               "`" + outside + "/new.txt` is outside the project root `" + root + "`; use a path inside it.");
  // A symlink out of the root, for every operation that takes a path.
  EXPECT_RETRY(co_await call(files, "read_file", R"({"path": ")" + d + R"(/out-file"})"), escape(d + "/out-file"));
  EXPECT_RETRY(co_await call(files, "file_info", R"({"path": ")" + d + R"(/out/f.txt"})"), escape(d + "/out/f.txt"));
  EXPECT_RETRY(co_await call(files, "list_directory", R"({"path": ")" + d + R"(/out"})"), escape(d + "/out"));
  EXPECT_RETRY(co_await call(files, "write_file", R"({"path": ")" + d + R"(/out/new.txt", "content": "x"})"),
               escape(d + "/out/new.txt"));
  EXPECT_RETRY(co_await call(files, "write_file", R"({"path": ")" + d + R"(/out-file", "content": "x"})"),
               escape(d + "/out-file"));
  EXPECT_RETRY(co_await call(files, "edit_file", R"({"path": ")" + d + R"(/out/f.txt", "old_text": "kept", "new_text": "lost"})"),
               escape(d + "/out/f.txt"));
  EXPECT_RETRY(co_await call(files, "create_directory", R"({"path": ")" + d + R"(/out/sub"})"), escape(d + "/out/sub"));
  co_await sh(*workspace, "test \"$(cat '" + outside + "/f.txt')\" = kept && ! test -e '" + outside +
                              "/new.txt' && ! test -e '" + outside + "/sub'");
  // A denied pattern on the real path only: the link's own spelling passes.
  tools::FileSystemOptions policy;
  policy.denied_patterns = {"*/private/*", "*/private"};
  tools::FileSystem guarded(workspace, policy);
  co_await workspace->write_bytes(d + "/private/key.txt", "secret\n");
  co_await sh(*workspace, "ln -s private/key.txt " + d + "/key-link && ln -s private " + d + "/dir-link");
  const std::string denied = "Path '" + d + "/private/key.txt' is denied by pattern '*/private/*'.";
  EXPECT_RETRY(co_await call(guarded, "read_file", R"({"path": ")" + d + R"(/key-link"})"), denied);
  EXPECT_RETRY(co_await call(guarded, "file_info", R"({"path": ")" + d + R"(/key-link"})"), denied);
  EXPECT_RETRY(co_await call(guarded, "write_file", R"({"path": ")" + d + R"(/key-link", "content": "x"})"), denied);
  EXPECT_RETRY(co_await call(guarded, "edit_file", R"({"path": ")" + d + R"(/key-link", "old_text": "secret", "new_text": "x"})"),
               denied);
  EXPECT_RETRY(co_await call(guarded, "list_directory", R"({"path": ")" + d + R"(/dir-link"})"),
               "Path '" + d + "/private' is denied by pattern '*/private'.");
  EXPECT_RETRY(co_await call(guarded, "create_directory", R"({"path": ")" + d + R"(/dir-link/sub"})"),
               "Path '" + d + "/private/sub' is denied by pattern '*/private/*'.");
  CO_CHECK(co_await workspace->read_bytes(d + "/private/key.txt") == "secret\n");
  CO_CHECK_FALSE(co_await workspace->exists(d + "/private/sub"));
  // A link whose real path passes is followed, for writes too.
  co_await sh(*workspace, "ln -s public.txt " + d + "/public-link");
  EXPECT_SUCCESS(co_await call(guarded, "write_file", R"({"path": ")" + d + R"(/public-link", "content": "p\n"})"),
                 "Wrote 2 chars (1 lines) to " + d + "/public-link. [hash:" + std::string("fd6641673e7f") + "]");
  CO_CHECK(co_await workspace->read_bytes(d + "/public.txt") == "p\n");
  co_await sh(*workspace, "rm -rf '" + outside + "'");
}

using Case = asio::awaitable<void> (*)(std::shared_ptr<ws::Workspace>);

/// Every case as a Catch2 section; `run` runs one on a fresh facade over the backend under test.
inline void run_all(const std::function<void(Case)>& run) {
  SECTION("read_file and write_file formats") { run(read_and_write_formats); }
  SECTION("expected_hash conflicts") { run(hash_conflicts); }
  SECTION("edit_file") { run(edit_formats); }
  SECTION("edit_file of content seen before") { run(edits_of_known_content); }
  SECTION("list_directory, create_directory, file_info") { run(directories); }
  SECTION("root confinement and patterns") { run(confinement); }
  SECTION("confinement checked where the files are") { run(confinement_where_the_files_are); }
  SECTION("read-only modes") { run(read_only_modes); }
  SECTION("find_files, search_files, list_files, grep") { run(find_and_search); }
  SECTION("arguments and read limits") { run(arguments_and_limits); }
}

}  // namespace fs_cases
