// A client with only an SSH key: exe0 tokens minted with a key registered with the emulator
// (Options::ssh_authorized_keys, as `ssh-key add`), scoped by cmds; a key of the second account
// (Options::second_ssh_authorized_keys) acts as that account; a 401 names the key; the VM
// proxy's namespace; EXE_TOKEN still wins.
#include "support.hpp"
#include "support/sshd_server.hpp"

#include <exedev/ssh/errors.hpp>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>

using namespace exedev;
using namespace exedev::test;
namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

struct KeyDirectory {
  fs::path path;
  KeyDirectory() {
    std::string pattern = (fs::temp_directory_path() / "exedev-minting-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~KeyDirectory() { fs::remove_all(path); }
};

struct MintingFixture {
  KeyDirectory keys;
  test_support::KeyPair registered = test_support::make_key(keys.path, "registered");
  test_support::KeyPair stranger = test_support::make_key(keys.path, "stranger");
  test_support::KeyPair second = test_support::make_key(keys.path, "second");
  Fixture f{[&] {
    emulator::Options o;
    o.ssh_authorized_keys = {registered.public_line()};
    o.second_ssh_authorized_keys = {second.public_line()};
    return o;
  }()};

  MintingFixture() {
    ::unsetenv("EXE_TOKEN");
    ::unsetenv("EXE_SSH_KEY");
  }

  ClientOptions minting(const test_support::KeyPair& key, std::optional<std::vector<std::string>> cmds = std::nullopt) {
    auto o = f.options();
    o.token.reset();
    TokenMinting m;
    m.key.private_key_file = key.private_key;
    m.key.use_agent = false;
    m.cmds = std::move(cmds);
    o.minting = m;
    return o;
  }
};

}  // namespace

TEST_CASE("minting: a client with only a registered SSH key runs every typed command", "[integration][client]") {
  MintingFixture m;
  testing::run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    Client client(ex, m.minting(m.registered));
    co_await make_vm(client, "minted-vm");
    const auto vms = co_await client.list_vms();
    CHECK(vms.size() == 1u);
    const auto removed = co_await client.remove_vms(strings("minted-vm"));
    CHECK(removed.deleted.size() == 1u);
  });
}

TEST_CASE("minting: a token whose cmds lack rm cannot delete", "[integration][client]") {
  MintingFixture m;
  testing::run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    Client client(ex, m.minting(m.registered, strings("new", "ls")));
    co_await make_vm(client, "kept-vm");
    auto removing = client.remove_vms(strings("kept-vm"));
    const auto e = co_await m.f.expect<PermissionError>(std::move(removing));
    CHECK(e.status() == 403u);
    CHECK(std::string(e.what()).find("command not allowed by token permissions") != std::string::npos);
    const auto vms = co_await client.list_vms();
    CHECK(vms.size() == 1u);
  });
}

TEST_CASE("minting: a token minted with a second account's key lists only that account's VMs", "[integration][client]") {
  MintingFixture m;
  testing::run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    Client first(ex, m.f.options());
    co_await make_vm(first, "first-vm");
    Client second_by_token(ex, emulator::client_options(m.f.emu, m.f.emu.second_token()));
    co_await make_vm(second_by_token, "second-vm");

    Client second(ex, m.minting(m.second));
    const auto vms = co_await second.list_vms();
    REQUIRE(vms.size() == 1u);
    CHECK(vms[0].name == "second-vm");
    const auto who = co_await second.whoami();
    CHECK(who.email == "second@example.com");
    // The first account's key, minting too, still sees the first account only.
    Client registered(ex, m.minting(m.registered));
    const auto first_vms = co_await registered.list_vms();
    REQUIRE(first_vms.size() == 1u);
    CHECK(first_vms[0].name == "first-vm");
  });
}

TEST_CASE("minting: a 401 names the key's fingerprint and what to check, never the token", "[integration][client]") {
  MintingFixture m;
  testing::run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    Client client(ex, m.minting(m.stranger));
    auto listing = client.list_vms();
    const auto e = co_await m.f.expect<AuthenticationError>(std::move(listing));
    const std::string message = e.what();
    INFO(message);
    CHECK(e.status() == 401u);
    CHECK(message.find(m.stranger.fingerprint()) != std::string::npos);
    CHECK(message.find("ssh-key list") != std::string::npos);
    CHECK(message.find("clock") != std::string::npos);
    CHECK(message.find("exe0.") == std::string::npos);
  });
}

TEST_CASE("minting: mint_vm_token signs for the VM's proxy namespace; EXE_TOKEN wins over minting", "[integration][client]") {
  MintingFixture m;
  testing::run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    Client client(ex, m.minting(m.registered, strings("new", "exe0-to-exe1")));
    co_await make_vm(client, "proxy-vm");
    const std::string token = client.mint_vm_token("proxy-vm", std::chrono::seconds(60));
    // The emulator trades it only when it verifies in v0@proxy-vm.exe.xyz.
    const auto traded = co_await client.exec("exe0-to-exe1 --vm=proxy-vm " + token);
    CHECK(traded.status == 200u);
    CHECK(nlohmann::json::parse(traded.body).at("token").get<std::string>().rfind("exe1.", 0) == 0u);
    const auto wrong = co_await client.exec("exe0-to-exe1 " + token);
    CHECK(wrong.status == 422u);
  });
  ::setenv("EXE_TOKEN", m.f.emu.token().c_str(), 1);
  testing::run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    const Client plain(ex, m.f.options());
    CHECK_THROWS_AS(plain.mint_vm_token("proxy-vm", std::chrono::seconds(60)), std::logic_error);
    Client configured(ex, m.minting(m.stranger));
    const auto vms = co_await configured.list_vms();
    CHECK(vms.size() == 1u);
  });
  ::unsetenv("EXE_TOKEN");
}
