// The cmds of the tokens a facade's client mints: the facade's own list unless the caller names
// one, and every command in it one the client's typed calls send (exe.dev matches them exactly).
#include "client/minting.hpp"
#include "sandbox/core.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace exedev;

TEST_CASE("minted commands: each facade's list names commands the client sends") {
  const auto& sent = detail::client_commands();
  for (const auto* list : {&detail::vms_commands(), &detail::sandbox_backend_commands()}) {
    for (const auto& command : *list) {
      INFO(command);
      CHECK(std::find(sent.begin(), sent.end(), command) != sent.end());
    }
  }
  // What a VMs alone never sends, a SandboxBackend's tokens do not allow, and the reverse.
  const auto allows = [](const std::vector<std::string>& list, const char* command) {
    return std::find(list.begin(), list.end(), command) != list.end();
  };
  CHECK(allows(detail::vms_commands(), "pause"));
  CHECK_FALSE(allows(detail::sandbox_backend_commands(), "pause"));
  CHECK(allows(detail::sandbox_backend_commands(), "whoami"));
  CHECK_FALSE(allows(detail::vms_commands(), "whoami"));
  CHECK_FALSE(allows(detail::sandbox_backend_commands(), "resize"));
}

TEST_CASE("minted commands: set only when the client mints and the caller named none") {
  const std::vector<std::string> facade = {"ls", "ssh"};
  ClientOptions token_only;
  token_only.token = "exe1.x";
  CHECK_FALSE(detail::with_minted_commands(token_only, facade).minting);

  ClientOptions minting;
  minting.minting = TokenMinting{};
  CHECK(detail::with_minted_commands(minting, facade).minting->cmds == facade);

  minting.minting->cmds = std::vector<std::string>{"ls"};
  CHECK(detail::with_minted_commands(minting, facade).minting->cmds == std::vector<std::string>{"ls"});
}
