// Minted exe0 tokens: the payload exe.dev accepts, the token's form, when a token is replaced,
// and the minter's renewal with a key made by ssh-keygen (the clock is the test's).
#include "client/minting.hpp"
#include "common/base64.hpp"
#include "support/sshd_server.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

using namespace exedev;
using namespace exedev::detail;
using namespace std::chrono_literals;

TEST_CASE("exe0 payload: compact JSON with only exe.dev's keys, and what it refuses", "[unit][client]") {
  CHECK(exe0_payload(1893456000, std::nullopt, std::nullopt) == R"({"exp":1893456000})");
  CHECK(exe0_payload(1893456000, 1893455000, std::vector<std::string>{"ls", "share show"}) ==
        R"({"exp":1893456000,"nbf":1893455000,"cmds":["ls","share show"]})");
  CHECK(exe0_payload(std::nullopt, std::nullopt, std::vector<std::string>{}) == R"({"cmds":[]})");
  CHECK(exe0_payload(std::nullopt, std::nullopt, std::nullopt) == "{}");
  CHECK(exe0_payload(946684800, 4102444800, std::nullopt) == R"({"exp":946684800,"nbf":4102444800})");
  CHECK_THROWS_AS(exe0_payload(946684799, std::nullopt, std::nullopt), std::invalid_argument);
  CHECK_THROWS_AS(exe0_payload(std::nullopt, 4102444801, std::nullopt), std::invalid_argument);
  CHECK_THROWS_AS(exe0_payload(std::nullopt, std::nullopt, std::vector<std::string>{"ls", ""}), std::invalid_argument);
}

TEST_CASE("exe0 token: exe0.<base64url payload>.<base64url SSHSIG>, no padding", "[unit][client]") {
  CHECK(exe0_token("{}", std::string("\xFB\xFF", 2)) == "exe0.e30.-_8");
  CHECK(vm_namespace("my-vm") == "v0@my-vm.exe.xyz");
  CHECK(exec_namespace == "v0@exe.dev");
}

TEST_CASE("exe0 renewal: a token is replaced once a third of its lifetime (at most a minute) is left", "[unit][client]") {
  const WallClock::time_point expires{std::chrono::seconds(2'000'000'000)};
  struct Row {
    std::chrono::seconds lifetime;
    std::chrono::seconds left;
    bool renew;
  };
  for (const Row& row : {Row{300s, 120s, false}, Row{300s, 61s, false}, Row{300s, 60s, true}, Row{300s, 0s, true},
                         Row{300s, -5s, true}, Row{30s, 11s, false}, Row{30s, 10s, true}, Row{3600s, 61s, false}}) {
    INFO(row.lifetime.count() << " s lifetime, " << row.left.count() << " s left");
    CHECK(needs_renewal(expires, expires - row.left, row.lifetime) == row.renew);
  }
}

TEST_CASE("exe0 minter: the same token until renewal, then a new one expiring later", "[unit][client]") {
  const auto directory = std::filesystem::temp_directory_path() / ("exedev-minting-" + std::to_string(::getpid()));
  std::filesystem::create_directories(directory);
  const auto key = test_support::make_key(directory, "key");
  ::unsetenv("EXE_SSH_KEY");
  TokenMinting options;
  options.key.private_key_file = key.private_key;
  options.key.use_agent = false;
  options.lifetime = 300s;
  TokenMinter minter(options, nullptr);
  const WallClock::time_point start{std::chrono::seconds(1'900'000'000)};
  const auto first = minter.exec_token(start);
  CHECK(first.rfind("exe0.", 0) == 0);
  CHECK(minter.current() == first);
  const auto payload = base64url_decode(first.substr(5, first.find('.', 5) - 5));
  REQUIRE(payload);
  CHECK(payload->rfind(R"({"exp":1900000300,"cmds":["new","cp","ls","rm",)", 0) == 0);
  CHECK(minter.exec_token(start + 200s) == first);
  const auto second = minter.exec_token(start + 240s);
  CHECK(second != first);
  CHECK(base64url_decode(second.substr(5, second.find('.', 5) - 5))->rfind(R"({"exp":1900000540,)", 0) == 0);
  // Long past its expiry (a client idle for an hour): a new token, never the expired one.
  const auto third = minter.exec_token(start + 3600s);
  CHECK(third != second);
  CHECK(base64url_decode(third.substr(5, third.find('.', 5) - 5))->rfind(R"({"exp":1900003900,)", 0) == 0);
  CHECK(minter.key_description().rfind("SHA256:", 0) == 0);
  // A VM's token: its own namespace, no cmds.
  const auto vm = minter.vm_token("my-vm", 60s, start);
  CHECK(*base64url_decode(vm.substr(5, vm.find('.', 5) - 5)) == R"({"exp":1900000060})");
  options.cmds = std::vector<std::string>{"ls", ""};
  CHECK_THROWS_AS(TokenMinter(options, nullptr), std::invalid_argument);
  std::filesystem::remove_all(directory);
}
