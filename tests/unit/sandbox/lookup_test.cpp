// classify_lookup: the sans-IO rules of VMs::lookup.
#include <catch2/catch.hpp>

#include <exedev/sandbox/lookup.hpp>

using exedev::LookupStatus;
using exedev::VMInfo;
using exedev::VMSpec;

namespace {

VMInfo vm(std::string name, std::vector<std::string> tags) {
  VMInfo info;
  info.name = std::move(name);
  info.tags = std::move(tags);
  info.status = exedev::VMStatus::parse("running");
  return info;
}

const std::optional<std::string> scope = "agents";

}  // namespace

TEST_CASE("lookup needs tags") {
  CHECK_THROWS_AS(classify_lookup(VMSpec({.name = "build-42"}), scope, {}), std::invalid_argument);
}

TEST_CASE("lookup by name and tags") {
  const VMSpec spec({.name = "build-42", .tags = {"req-7f3a"}});
  SECTION("nothing visible") {
    const auto r = classify_lookup(spec, scope, {vm("other-vm", {"req-7f3a", "agents"})});
    CHECK(r.status == LookupStatus::not_found);
    CHECK_FALSE(r.vm);
    CHECK(r.candidates.empty());
  }
  SECTION("the named VM with every tag and the scope tag") {
    const auto r = classify_lookup(spec, scope, {vm("build-42", {"agents", "extra", "req-7f3a"}), vm("other-vm", {"req-7f3a", "agents"})});
    CHECK(r.status == LookupStatus::found);
    REQUIRE(r.vm);
    CHECK(r.vm->name == "build-42");
    CHECK(r.vm->ref == exedev::vm_ref("build-42"));
  }
  SECTION("the named VM without the request tag is a conflict") {
    const auto r = classify_lookup(spec, scope, {vm("build-42", {"agents"})});
    CHECK(r.status == LookupStatus::conflict);
    CHECK_FALSE(r.vm);
    REQUIRE(r.candidates.size() == 1);
    CHECK(r.candidates[0].name == "build-42");
  }
  SECTION("the named VM without the scope tag is a conflict") {
    const auto r = classify_lookup(spec, scope, {vm("build-42", {"req-7f3a"})});
    CHECK(r.status == LookupStatus::conflict);
  }
  SECTION("without a scope tag, the spec's tags are enough") {
    const auto r = classify_lookup(spec, std::nullopt, {vm("build-42", {"req-7f3a"})});
    CHECK(r.status == LookupStatus::found);
  }
}

TEST_CASE("lookup by tags only") {
  const VMSpec spec({.tags = {"req-7f3a", "ci"}});
  SECTION("none carries every tag") {
    const auto r = classify_lookup(spec, scope, {vm("vm-one", {"req-7f3a", "agents"}), vm("vm-two", {"ci", "agents"})});
    CHECK(r.status == LookupStatus::not_found);
  }
  SECTION("exactly one") {
    const auto r = classify_lookup(spec, scope, {vm("vm-one", {"req-7f3a", "ci", "agents"}), vm("vm-two", {"ci", "agents"})});
    CHECK(r.status == LookupStatus::found);
    REQUIRE(r.vm);
    CHECK(r.vm->name == "vm-one");
  }
  SECTION("one listed twice is still one") {
    const auto one = vm("vm-one", {"req-7f3a", "ci", "agents"});
    CHECK(classify_lookup(spec, scope, {one, one}).status == LookupStatus::found);
  }
  SECTION("several are ambiguous, with candidates") {
    const auto r = classify_lookup(spec, scope, {vm("vm-one", {"req-7f3a", "ci", "agents"}), vm("vm-two", {"req-7f3a", "ci", "agents"})});
    CHECK(r.status == LookupStatus::ambiguous);
    CHECK_FALSE(r.vm);
    REQUIRE(r.candidates.size() == 2);
    CHECK(r.candidates[0].name == "vm-one");
    CHECK(r.candidates[1].name == "vm-two");
  }
  SECTION("a VM without the scope tag doesn't count") {
    const auto r = classify_lookup(spec, scope, {vm("vm-one", {"req-7f3a", "ci"})});
    CHECK(r.status == LookupStatus::not_found);
  }
}

TEST_CASE("required_tags adds the scope tag once") {
  CHECK(required_tags(VMSpec({.tags = {"a-tag"}}), scope) == std::vector<std::string>{"a-tag", "agents"});
  CHECK(required_tags(VMSpec({.tags = {"agents"}}), scope) == std::vector<std::string>{"agents"});
  CHECK(required_tags(VMSpec({.tags = {"a-tag"}}), std::nullopt) == std::vector<std::string>{"a-tag"});
}
