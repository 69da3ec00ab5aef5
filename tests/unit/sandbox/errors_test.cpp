// The sandbox errors: hierarchy, fields, and messages that name VMs and tags only.
#include <catch2/catch.hpp>

#include <exedev/sandbox/errors.hpp>

#include <type_traits>

using namespace exedev;

TEST_CASE("sandbox errors are workspace errors of the right kind") {
  const VMNotFoundError not_found("build-42");
  CHECK(dynamic_cast<const workspace::WorkspaceUnavailableError*>(&not_found));
  CHECK(not_found.vm_name() == "build-42");
  CHECK_THAT(not_found.what(), Catch::Contains("build-42"));

  const VMOutOfScopeError out_of_scope("build-42", "agents");
  CHECK(dynamic_cast<const workspace::WorkspaceUnavailableError*>(&out_of_scope));
  CHECK_THAT(out_of_scope.what(), Catch::Contains("agents"));

  CHECK(ExeDevAccessError(401, "ssh").status() == 401u);
  CHECK(ExeDevAccessError(403, "ssh").status() == 403u);
  CHECK_FALSE(ExeDevAccessError(std::nullopt, "ssh").status());
  CHECK_THAT(ExeDevAccessError(std::nullopt, "ssh").what(), Catch::Contains("EXE_TOKEN") && Catch::Contains("SSH key"));
  // What the client said of the refusal ends the message, inert (a minted token's key, say).
  const ExeDevAccessError minted(401, "new", "", "invalid token; the token was minted with the SSH key SHA256:abc\x1b[2J");
  CHECK_THAT(minted.what(), Catch::EndsWith("(401) for `new`: invalid token; the token was minted with the SSH key SHA256:abc\\x1b[2J"));

  const CommandOutcomeUnknownError unknown("build-42", PartialOutput{"partial"});
  STATIC_REQUIRE(std::is_base_of_v<workspace::WorkspaceError, CommandOutcomeUnknownError>);
  STATIC_REQUIRE_FALSE(std::is_base_of_v<workspace::WorkspaceUnavailableError, CommandOutcomeUnknownError>);
  CHECK(unknown.output().stdout_data == "partial");

  const ProvisionOutcomeUnknownError provision(std::string("build-42"), {"req-7f3a", "agents"});
  CHECK_THAT(provision.what(), Catch::Contains("build-42") && Catch::Contains("req-7f3a, agents"));
  STATIC_REQUIRE_FALSE(std::is_base_of_v<workspace::WorkspaceUnavailableError, ProvisionOutcomeUnknownError>);
  STATIC_REQUIRE(std::is_base_of_v<workspace::WorkspaceError, VMInitializationError>);

  const VMInitializationError init(workspace::WorkspaceRef{"exedev", "build-42"}, "making its working directory");
  CHECK(init.ref().id == "build-42");
  CHECK_THAT(init.what(), Catch::Contains("build-42") && Catch::Contains("kept"));
}
