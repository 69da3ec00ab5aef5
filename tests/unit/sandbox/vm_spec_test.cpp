// VMSpec: every field rule and every combination rule, table-driven.
#include <catch2/catch.hpp>

#include <exedev/sandbox/vm_spec.hpp>

#include <functional>
#include <stdexcept>
#include <string>

using exedev::Egress;
using exedev::VMSpec;
using exedev::VMSpecFields;

namespace {

struct Case {
  const char* label;
  std::function<void(VMSpecFields&)> set;
  const char* error;  ///< a fragment of the message, or nullptr when the spec is valid
};

std::string repeat(const std::string& piece, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += piece;
  return out;
}

void check(const Case& c) {
  INFO(c.label);
  VMSpecFields fields;
  c.set(fields);
  if (c.error == nullptr) {
    CHECK_NOTHROW(VMSpec(fields));
  } else {
    CHECK_THROWS_WITH(VMSpec(fields), Catch::Contains(c.error));
  }
}

}  // namespace

TEST_CASE("VMSpec: names follow exe.dev's rules") {
  const Case cases[] = {
      {"plain", [](auto& f) { f.name = "build-42"; }, nullptr},
      {"five chars", [](auto& f) { f.name = "abcde"; }, nullptr},
      {"52 chars", [](auto& f) { f.name = std::string(52, 'a'); }, nullptr},
      {"4 chars", [](auto& f) { f.name = "abcd"; }, "5-52 characters"},
      {"53 chars", [](auto& f) { f.name = std::string(53, 'a'); }, "5-52 characters"},
      {"upper case", [](auto& f) { f.name = "Build-42"; }, "lowercase letter"},
      {"starts with digit", [](auto& f) { f.name = "1build"; }, "lowercase letter"},
      {"underscore", [](auto& f) { f.name = "build_42"; }, "only lowercase letters"},
      {"double dash", [](auto& f) { f.name = "build--42"; }, "'--'"},
      {"trailing dash", [](auto& f) { f.name = "build-"; }, "end with '-'"},
      {"reserved -p<N>", [](auto& f) { f.name = "build-p8080"; }, "reserved"},
      {"reserved -port<N>", [](auto& f) { f.name = "build-port80"; }, "reserved"},
      {"reserved port<N>", [](auto& f) { f.name = "port8080"; }, "reserved"},
      {"reserved p<N>", [](auto& f) { f.name = "p12345"; }, "reserved"},
      {"reserved na<N>", [](auto& f) { f.name = "na12345"; }, "reserved"},
      {"not reserved -pa1", [](auto& f) { f.name = "build-pa1"; }, nullptr},
      {"invalid base", [](auto& f) { f.base = "Golden"; }, "base"},
  };
  for (const auto& c : cases) check(c);
}

TEST_CASE("VMSpec: tags follow exe.dev's rules and are unique") {
  const Case cases[] = {
      {"valid", [](auto& f) { f.tags = {"req-7f3a", "ci", "a_b"}; }, nullptr},
      {"empty tag", [](auto& f) { f.tags = {""}; }, "must not be empty"},
      {"upper case", [](auto& f) { f.tags = {"CI"}; }, "lowercase letter"},
      {"starts with digit", [](auto& f) { f.tags = {"7f3a"}; }, "lowercase letter"},
      {"space", [](auto& f) { f.tags = {"a b"}; }, "only lowercase"},
      {"comma", [](auto& f) { f.tags = {"a,b"}; }, "only lowercase"},
      {"duplicate", [](auto& f) { f.tags = {"ci", "ci"}; }, "more than once"},
  };
  for (const auto& c : cases) check(c);
}

TEST_CASE("VMSpec: comments follow exe.dev's rules") {
  const Case cases[] = {
      {"valid", [](auto& f) { f.comment = "nightly build"; }, nullptr},
      {"unicode", [](auto& f) { f.comment = "caf\xC3\xA9 build"; }, nullptr},
      {"200 bytes", [](auto& f) { f.comment = std::string(200, 'c'); }, nullptr},
      {"201 bytes", [](auto& f) { f.comment = std::string(201, 'c'); }, "at most 200 bytes"},
      {"100 two-byte characters", [](auto& f) { f.comment = repeat("\xC3\xA9", 100); }, nullptr},
      {"101 two-byte characters", [](auto& f) { f.comment = repeat("\xC3\xA9", 101); }, "at most 200 bytes"},
      {"empty", [](auto& f) { f.comment = ""; }, "must not be empty"},
      {"leading space", [](auto& f) { f.comment = " x"; }, "whitespace"},
      {"trailing nbsp", [](auto& f) { f.comment = "x\xC2\xA0"; }, "whitespace"},
      {"tab", [](auto& f) { f.comment = "a\tb"; }, "one line"},
      {"newline", [](auto& f) { f.comment = "a\nb"; }, "one line"},
      {"carriage return", [](auto& f) { f.comment = "a\rb"; }, "one line"},
      {"control", [](auto& f) { f.comment = std::string("a\x01") + "b"; }, "control"},
      {"C1 control", [](auto& f) { f.comment = "a\xC2\x85" "b"; }, "control"},
      {"zero width", [](auto& f) { f.comment = "a\xE2\x80\x8B" "b"; }, "zero-width"},
      {"bidi", [](auto& f) { f.comment = "a\xE2\x80\xAE" "b"; }, "bidirectional"},
      {"bom", [](auto& f) { f.comment = "a\xEF\xBB\xBF" "b"; }, "zero-width"},
      {"invalid utf-8", [](auto& f) { f.comment = "a\xFF" "b"; }, "UTF-8"},
      {"<", [](auto& f) { f.comment = "a<b"; }, "must not contain any of"},
      {">", [](auto& f) { f.comment = "a>b"; }, "must not contain any of"},
      {"&", [](auto& f) { f.comment = "a&b"; }, "must not contain any of"},
      {"double quote", [](auto& f) { f.comment = "a\"b"; }, "must not contain any of"},
      {"single quote", [](auto& f) { f.comment = "a'b"; }, "must not contain any of"},
      {"backtick", [](auto& f) { f.comment = "a`b"; }, "must not contain any of"},
  };
  for (const auto& c : cases) check(c);
}

TEST_CASE("VMSpec: resources") {
  const Case cases[] = {
      {"cpu", [](auto& f) { f.cpu = 4; }, nullptr},
      {"cpu zero", [](auto& f) { f.cpu = 0; }, "cpu: must be at least 1"},
      {"memory G", [](auto& f) { f.memory = "8G"; }, nullptr},
      {"memory bare GiB", [](auto& f) { f.memory = "8"; }, nullptr},
      {"memory decimal", [](auto& f) { f.memory = "1.5gib"; }, nullptr},
      {"disk TB", [](auto& f) { f.disk = "1TB"; }, nullptr},
      {"disk MiB", [](auto& f) { f.disk = "512MiB"; }, nullptr},
      {"memory unit only", [](auto& f) { f.memory = "G"; }, "memory: \"G\" must start with a number"},
      {"memory unknown unit", [](auto& f) { f.memory = "8Q"; }, "unknown unit"},
      {"memory negative", [](auto& f) { f.memory = "-8G"; }, "must start with a number"},
      {"memory zero", [](auto& f) { f.memory = "0G"; }, "more than zero"},
      {"memory dot", [](auto& f) { f.memory = "8.G"; }, "no digits after"},
      {"disk space", [](auto& f) { f.disk = "8 G"; }, "unknown unit"},
      {"image", [](auto& f) { f.image = "ubuntu:24.04"; }, nullptr},
      {"empty image", [](auto& f) { f.image = ""; }, "image: must not be empty"},
      {"image with space", [](auto& f) { f.image = "ubuntu 24"; }, "whitespace"},
      {"egress", [](auto& f) { f.egress = Egress::integrations; }, nullptr},
      {"integrations", [](auto& f) { f.integrations = {"github", "slack"}; }, nullptr},
      {"integration duplicate", [](auto& f) { f.integrations = {"github", "github"}; }, "more than once"},
      {"integration comma", [](auto& f) { f.integrations = {"a,b"}; }, "','"},
      {"integration empty", [](auto& f) { f.integrations = {""}; }, "must not be empty"},
      {"working_dir relative", [](auto& f) { f.working_dir = "app"; }, nullptr},
      {"working_dir absolute", [](auto& f) { f.working_dir = "/srv/app"; }, nullptr},
      {"working_dir empty", [](auto& f) { f.working_dir = ""; }, "working_dir: must not be empty"},
      {"working_dir NUL", [](auto& f) { f.working_dir = std::string("a\0b", 3); }, "NUL"},
  };
  for (const auto& c : cases) check(c);
}

TEST_CASE("VMSpec: the new-VM vs copy table") {
  const Case cases[] = {
      {"new VM, everything", [](auto& f) {
         f.name = "build-42"; f.comment = "nightly"; f.tags = {"ci"}; f.image = "ubuntu:24.04"; f.cpu = 2;
         f.memory = "4G"; f.disk = "20G"; f.egress = Egress::all; f.standalone = true; f.integrations = {"github"};
         f.working_dir = "app"; }, nullptr},
      {"copy, everything it takes", [](auto& f) {
         f.name = "build-43"; f.comment = "copy"; f.tags = {"ci"}; f.base = "golden"; f.cpu = 2; f.memory = "4G";
         f.disk = "20G"; f.egress = Egress::integrations; f.standalone = true; f.copy_base_tags = false;
         f.working_dir = "app"; }, nullptr},
      {"image with base", [](auto& f) { f.base = "golden"; f.image = "ubuntu:24.04"; }, "image: can't be used with base"},
      {"integrations with base", [](auto& f) { f.base = "golden"; f.integrations = {"github"}; },
       "integrations: can't be used with base"},
      {"copy_base_tags without base", [](auto& f) { f.copy_base_tags = true; }, "copy_base_tags: is only meaningful"},
      {"copy_base_tags=false without base", [](auto& f) { f.copy_base_tags = false; }, "copy_base_tags"},
  };
  for (const auto& c : cases) check(c);
}

TEST_CASE("VMSpec: accessors report what was given, copy_base_tags defaults to yes") {
  const VMSpec copy({.tags = {"ci"}, .base = "golden"});
  CHECK(copy.is_copy());
  CHECK(copy.copy_base_tags());
  CHECK(copy.base() == std::optional<std::string>("golden"));
  const VMSpec no_tags({.base = "golden", .copy_base_tags = false});
  CHECK_FALSE(no_tags.copy_base_tags());
  const VMSpec fresh;
  CHECK_FALSE(fresh.is_copy());
  CHECK_FALSE(fresh.name());
  CHECK(to_string(Egress::all) == "all");
  CHECK(to_string(Egress::integrations) == "integrations");
}
