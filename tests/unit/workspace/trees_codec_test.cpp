// Tree transfers, sans-IO: .gitignore-style filters, symlink confinement, plans, the VM's
// listing format and the tar codec. GNU tar reading and writing the other end is exercised by
// tests/integration/sandbox/trees_test.cpp.
#include <catch2/catch.hpp>

#include "workspace/tar_codec.hpp"
#include "workspace/trees_codec.hpp"

#include <exedev/workspace/errors.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

namespace detail = exedev::workspace::detail;
using detail::TreeEntry;
using detail::TreeEntryType;
using detail::TreeManifest;

namespace {

TreeEntry file(std::uint64_t size, std::string sha, std::uint32_t mode = 0644) {
  TreeEntry e;
  e.type = TreeEntryType::file;
  e.size = size;
  e.sha256 = std::move(sha);
  e.mode = mode;
  return e;
}

TreeEntry dir(std::uint32_t mode = 0755) {
  TreeEntry e;
  e.type = TreeEntryType::directory;
  e.mode = mode;
  return e;
}

TreeEntry link(std::string target) {
  TreeEntry e;
  e.type = TreeEntryType::symlink;
  e.mode = 0777;
  e.target = std::move(target);
  return e;
}

}  // namespace

TEST_CASE("glob_match: * and ? stop at /, ** crosses it, classes", "[unit]") {
  CHECK(detail::glob_match("*.o", "main.o"));
  CHECK_FALSE(detail::glob_match("*.o", "dir/main.o"));
  CHECK(detail::glob_match("a?c", "abc"));
  CHECK_FALSE(detail::glob_match("a?c", "a/c"));
  CHECK(detail::glob_match("**/x", "x"));
  CHECK(detail::glob_match("**/x", "a/b/x"));
  CHECK(detail::glob_match("a/**/b", "a/b"));
  CHECK(detail::glob_match("a/**/b", "a/x/y/b"));
  CHECK(detail::glob_match("a/**", "a/x/y"));
  CHECK(detail::glob_match("[a-c]x", "bx"));
  CHECK_FALSE(detail::glob_match("[!a-c]x", "bx"));
  CHECK(detail::glob_match("\\*", "*"));
  CHECK_FALSE(detail::glob_match("\\*", "a"));
  CHECK(detail::glob_match("[x", "[x"));
}

TEST_CASE("TreeFilter: gitignore's rules for anchoring, directories and negation", "[unit]") {
  const detail::TreeFilter filter({"# comment", "", ".git/", "node_modules/", "*.o", "/build", "docs/*.tmp", "!keep.o"});
  CHECK(filter.excludes(".git", true));
  CHECK_FALSE(filter.excludes(".git", false));  // directories only
  CHECK(filter.excludes("sub/node_modules", true));
  CHECK(filter.excludes("a/b/main.o", false));
  CHECK_FALSE(filter.excludes("a/keep.o", false));
  CHECK(filter.excludes("build", true));
  CHECK_FALSE(filter.excludes("src/build", true));  // anchored at the root
  CHECK(filter.excludes("docs/x.tmp", false));
  CHECK_FALSE(filter.excludes("other/docs/x.tmp", false));
  CHECK(filter.prunable_names().empty());  // a `!` pattern: decided here, not by the lister
  const detail::TreeFilter plain({".git/", "node_modules", "/build", "a/**"});
  CHECK(plain.prunable_names() == std::vector<std::string>{".git", "node_modules"});
}

TEST_CASE("apply_filter drops what is excluded and everything under an excluded directory", "[unit]") {
  TreeManifest m{{"a", dir()}, {"a/node_modules", dir()}, {"a/node_modules/x", file(1, "s")}, {"a/node_modules y", file(1, "s")},
                 {"b.o", file(1, "s")}, {"c", file(1, "s")}};
  detail::apply_filter(m, detail::TreeFilter({"node_modules/", "*.o"}));
  CHECK(m.size() == 3);
  CHECK(m.count("a") == 1);
  CHECK(m.count("a/node_modules y") == 1);
  CHECK(m.count("c") == 1);
}

TEST_CASE("drop_escaping_symlinks follows the tree's own links and refuses what climbs out", "[unit]") {
  TreeManifest m{{"x", dir()},
                 {"x/in", link("../y")},          // dangling, but inside
                 {"x/up", link("..")},            // the root itself
                 {"x/out", link("../..")},        // above the root
                 {"abs", link("/etc/passwd")},    // absolute
                 {"sub", dir()},
                 {"sub/b", link("../x")},         // inside
                 {"via", link("sub/b/../..")},    // sub/b is x, x/.. is the root, the root/.. is out
                 {"loop1", link("loop2")},
                 {"loop2", link("loop1")},
                 {"chain", link("x/up/x/in")}};   // inside through two links
  auto refused = detail::drop_escaping_symlinks(m);
  std::sort(refused.begin(), refused.end());
  CHECK(refused == std::vector<std::string>{"abs", "loop1", "loop2", "via", "x/out"});
  CHECK(m.count("x/in") == 1);
  CHECK(m.count("x/up") == 1);
  CHECK(m.count("chain") == 1);
}

TEST_CASE("is_tree_path refuses what could leave the root", "[unit]") {
  CHECK(detail::is_tree_path("a/b c\nd"));
  CHECK_FALSE(detail::is_tree_path(""));
  CHECK_FALSE(detail::is_tree_path("/a"));
  CHECK_FALSE(detail::is_tree_path("a/../b"));
  CHECK_FALSE(detail::is_tree_path("a//b"));
  CHECK_FALSE(detail::is_tree_path("./a"));
  CHECK_FALSE(detail::is_tree_path(std::string("a\0b", 3)));
}

TEST_CASE("plan_tree sends only what differs and removes what went away", "[unit]") {
  const TreeManifest source{{"same", file(3, "h1")},       {"content", file(3, "h2")}, {"mode", file(3, "h3", 0755)},
                            {"d", dir()},                   {"d/new", file(1, "h4")},   {"turned", dir()},
                            {"link", link("same")},         {"unknown", file(3, "")}};
  const TreeManifest destination{{"same", file(3, "h1")},   {"content", file(3, "hX")}, {"mode", file(3, "h3", 0644)},
                                 {"d", dir()},              {"turned", file(1, "h5")},   {"gone", dir()},
                                 {"gone/inner", file(1, "h6")}, {"link", link("other")}, {"unknown", file(3, "")}};
  const auto plan = detail::plan_tree(source, destination);
  CHECK(plan.send == std::vector<std::string>{"content", "d/new", "link", "mode", "turned", "unknown"});
  CHECK(plan.remove == std::vector<std::string>{"turned", "gone"});
  CHECK(detail::plan_tree(source, source).send == std::vector<std::string>{"unknown"});  // no digest: always sent
  TreeManifest hashed = source;
  hashed.at("unknown").sha256 = "h7";
  CHECK(detail::plan_tree(hashed, hashed).empty());
}

TEST_CASE("parse_tree_listing reads find's records and sha256sum -z's", "[unit]") {
  using namespace std::string_literals;
  const std::string digest(64, 'a');
  const auto text = "d 755 4096 dir\0\0"s + "f 644 5 dir/a b\nc\0\0"s + "l 777 3 dir/l\0a b\0"s + "s 755 0 sock\0\0"s + "\0"s +
                    digest + "  ./dir/a b\nc\0"s;
  const auto listed = detail::parse_tree_listing(text);
  REQUIRE(listed);
  CHECK(listed->manifest.size() == 3);
  CHECK(listed->manifest.at("dir").type == TreeEntryType::directory);
  CHECK(listed->manifest.at("dir/a b\nc").size == 5);
  CHECK(listed->manifest.at("dir/a b\nc").sha256 == digest);
  CHECK(listed->manifest.at("dir/l").target == "a b");
  CHECK(listed->others == std::vector<std::string>{"sock"});
  CHECK(detail::parse_tree_listing("")->manifest.empty());  // no tree there
  CHECK(detail::parse_tree_listing("\0"s)->manifest.empty());  // an empty tree
  CHECK_FALSE(detail::parse_tree_listing("f 644 5 a"s));    // cut
  CHECK_FALSE(detail::parse_tree_listing("f 644 5 ../a\0\0\0"s));  // leaves the root
}

TEST_CASE("the tar codec round-trips long names, odd bytes, modes and links", "[unit]") {
  detail::TarWriter writer(1700000000);
  const std::string long_name = "d/" + std::string(150, 'n');
  const std::string long_target = std::string(120, 't');
  const std::string data(1000, 'x');
  writer.add_directory("d", 0750);
  writer.add_file("d/with space\nnewline", 0755, data);
  writer.add_file("d/empty", 0600, "");
  writer.add_file(long_name, 0644, "long");
  writer.add_symlink("d/link", "with space\nnewline");
  writer.add_symlink("d/long-link", long_target);
  const auto archive = writer.finish();
  CHECK(archive.size() % 512 == 0);
  CHECK(archive.substr(136, 12) == std::string("14524770400") + '\0');  // 1700000000 in octal
  const auto members = detail::read_tar(archive);
  REQUIRE(members.size() == 6);
  CHECK(members[0].path == "d");
  CHECK(members[0].type == TreeEntryType::directory);
  CHECK(members[0].mode == 0750);
  CHECK(members[1].path == "d/with space\nnewline");
  CHECK(members[1].mode == 0755);
  CHECK(members[1].data == data);
  CHECK(members[2].data.empty());
  CHECK(members[3].path == long_name);
  CHECK(members[3].data == "long");
  CHECK(members[4].type == TreeEntryType::symlink);
  CHECK(members[4].target == "with space\nnewline");
  CHECK(members[5].target == long_target);
}

namespace {
// Sets the checksum of the header at `at` again.
void reseal(std::string& archive, std::size_t at) {
  unsigned sum = 0;
  for (std::size_t i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(archive[at + i]);
  char field[8];
  std::snprintf(field, sizeof field, "%06o", sum);
  archive.replace(at + 148, 6, field, 6);
}

// Sets the type (and link name) of the header at `at` and its checksum again.
void set_type(std::string& archive, std::size_t at, char type, const std::string& link = {}) {
  archive[at + 156] = type;
  archive.replace(at + 157, link.size(), link);
  reseal(archive, at);
}
}  // namespace

TEST_CASE("read_tar refuses damaged and cut archives and other member types", "[unit]") {
  detail::TarWriter writer;
  writer.add_file("a", 0644, "data");
  const auto archive = writer.finish();
  auto damaged = archive;
  damaged[0] = 'b';  // the checksum no longer matches
  CHECK_THROWS(detail::read_tar(damaged));
  CHECK_THROWS(detail::read_tar(archive.substr(0, 600)));
  auto hard_link = archive;
  set_type(hard_link, 0, '1');
  CHECK_THROWS_AS(detail::read_tar(hard_link), exedev::workspace::WorkspaceError);  // names no earlier file
  auto device = archive;
  set_type(device, 0, '3');
  CHECK_THROWS_WITH(detail::read_tar(device), Catch::Contains("type byte 51"));
}

TEST_CASE("read_tar: a hard link to an earlier file is a copy of it", "[unit]") {
  detail::TarWriter writer;
  writer.add_file("a", 04755, "shared");
  writer.add_file("b", 0644, "");
  auto archive = writer.finish();
  // b becomes GNU tar's hard link to a (type '1', link name "./a").
  set_type(archive, 1024, '1', "./a");
  const auto members = detail::read_tar(archive);
  REQUIRE(members.size() == 2);
  CHECK(members[1].path == "b");
  CHECK(members[1].type == TreeEntryType::file);
  CHECK(members[1].data == "shared");
  CHECK(members[1].target.empty());
}

TEST_CASE("read_tar: a pax size that is not a number is the library's error", "[unit]") {
  detail::TarWriter writer;
  writer.add_file(std::string(120, 'n'), 0644, "x");  // a pax header for the long name
  auto archive = writer.finish();
  const auto at = archive.find("path=");
  REQUIRE(at != std::string::npos);
  archive.replace(at, 5, "size=");  // "<len> size=nnn…": not a number
  CHECK_THROWS_AS(detail::read_tar(archive), exedev::workspace::WorkspaceError);
  CHECK_THROWS_WITH(detail::read_tar(archive), Catch::Contains("pax header"));
}

TEST_CASE("restrict_modes keeps permission bits only, within what is allowed", "[unit]") {
  TreeManifest m;
  m["setuid"] = file(1, "", 04755);
  m["setgid-sticky"] = dir(03775);
  TreeEntry link;
  link.type = TreeEntryType::symlink;
  link.mode = 0777;
  link.target = "setuid";
  m["link"] = link;
  auto kept = m;
  detail::restrict_modes(kept, 0777);
  CHECK(kept["setuid"].mode == 0755);
  CHECK(kept["setgid-sticky"].mode == 0775);
  CHECK(kept["link"].mode == 0777);
  detail::restrict_modes(m, 0777 & ~0027u);
  CHECK(m["setuid"].mode == 0750);
  CHECK(m["setgid-sticky"].mode == 0750);
  detail::restrict_modes(m, 07777);  // set-id bits are never allowed back
  CHECK(m["setuid"].mode == 0750);
}

namespace {

// A tar stream's members as text, one line each, data included: what the visitor was told.
class Transcript final : public detail::TarVisitor {
 public:
  std::string text;
  void member_begin(const detail::TarEntry& entry) override {
    text += "begin " + entry.path + " " + std::to_string(static_cast<int>(entry.type)) + " " + std::to_string(entry.mode) +
            " " + std::to_string(entry.size) + " " + entry.target + " " + entry.link_to.value_or("-") + "\n";
  }
  void member_data(std::string_view bytes) override { text.append(bytes); }
  void member_end() override { text += "\nend\n"; }
};

std::string transcript_in_pieces(const std::string& archive, std::size_t piece) {
  Transcript transcript;
  detail::TarStream stream(transcript);
  for (std::size_t at = 0; at < archive.size(); at += piece) stream.feed(std::string_view(archive).substr(at, piece));
  stream.finish();
  return transcript.text;
}

}  // namespace

TEST_CASE("TarStream: pieces of any size tell the visitor what the whole archive does", "[unit]") {
  detail::TarWriter writer;
  writer.add_directory("d", 0750);
  writer.add_file("d/" + std::string(150, 'n'), 0644, std::string(1500, 'x'));  // pax header first
  writer.add_file("d/empty", 0600, "");
  writer.add_symlink("d/" + std::string(130, 'l'), std::string(120, 't'));
  writer.add_file("d/b", 0644, "");
  auto archive = writer.finish();
  const auto b_at = archive.find("d/b");
  REQUIRE(b_at != std::string::npos);
  set_type(archive, b_at, '1', "./d/empty");  // GNU tar's hard link
  archive += std::string(4096, '\0');         // tar's record padding after the end
  const auto whole = transcript_in_pieces(archive, archive.size());
  CHECK(whole.find("begin d 1 488 0") == 0);
  CHECK(whole.find(std::string(1500, 'x') + "\nend\n") != std::string::npos);
  CHECK(whole.find("begin d/b 0 420 0  d/empty\n\nend\n") != std::string::npos);
  for (const std::size_t piece : {1, 3, 511, 512, 513, 4000}) {
    INFO("pieces of " << piece);
    CHECK(transcript_in_pieces(archive, piece) == whole);
  }
  // Cut anywhere before its end block: cut short, whatever the pieces.
  for (const std::size_t cut : {100, 512, 1024, 3000}) {
    CHECK_THROWS_WITH(transcript_in_pieces(archive.substr(0, cut), 7), Catch::Contains("cut short"));
  }
}

TEST_CASE("TarStream: sizes an archive states size nothing it holds", "[unit]") {
  // A pax header claiming more data than any pax header may carry is refused at its header.
  detail::TarWriter writer;
  writer.add_file(std::string(120, 'n'), 0644, "x");
  auto archive = writer.finish();
  archive.replace(124, 12, std::string("77777777777") + '\0');  // the pax header's size: 8 GiB
  reseal(archive, 0);
  Transcript transcript;
  detail::TarStream stream(transcript);
  CHECK_THROWS_WITH(stream.feed(std::string_view(archive).substr(0, 512)), Catch::Contains("at most 1048576"));
  // A file claiming 8 GiB passes its data on as it comes and ends cut short: nothing waits for
  // the claimed size to be held.
  detail::TarWriter big;
  big.add_file("f", 0644, "abc");
  auto claimed = big.finish().substr(0, 515);
  claimed.replace(124, 12, std::string("77777777777") + '\0');
  reseal(claimed, 0);
  Transcript seen;
  detail::TarStream big_stream(seen);
  big_stream.feed(claimed);
  CHECK(seen.text == "begin f 0 420 8589934591  -\nabc");
  CHECK_THROWS_WITH(big_stream.finish(), Catch::Contains("cut short"));
}
