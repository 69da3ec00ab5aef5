// What a connection uses, from the endpoint exe.dev named, SshOptions, ssh_config and the local
// machine: the precedence tables (sans-IO).
#include "ssh/connection_settings.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace exedev;
using namespace exedev::ssh;
namespace fs = std::filesystem;

namespace {

LocalFacts ada() { return LocalFacts{"/home/ada", "ada", "laptop", std::nullopt, std::nullopt}; }

}  // namespace

TEST_CASE("connection settings: the login name is exe.dev's ssh_user, else ssh_config's User, else the local one") {
  struct Row {
    std::string endpoint_user;
    std::optional<std::string> config_user;
    std::string user;
  };
  const std::vector<Row> rows = {
      {"vm+box", "from-config", "vm+box"},
      {"exedev", std::nullopt, "exedev"},
      {"", "from-config", "from-config"},
      {"", std::nullopt, "ada"},  // never root by default
  };
  for (const auto& row : rows) {
    INFO(row.endpoint_user << " / " << row.config_user.value_or("-"));
    SshConfig config;
    config.user = row.config_user;
    const auto settings = settle_connection(Endpoint{"vm.exe.xyz", 22, row.endpoint_user}, SshOptions{}, config, ada());
    CHECK(settings.endpoint.user == row.user);
  }
}

TEST_CASE("connection settings: host and port") {
  struct Row {
    std::uint16_t endpoint_port;
    std::optional<std::uint16_t> config_port;
    std::optional<std::string> host_name;
    std::string host;
    std::uint16_t port;
  };
  const std::vector<Row> rows = {
      {2222, 2200, std::nullopt, "vm.exe.xyz", 2222},  // the port exe.dev named wins
      {0, 2200, std::nullopt, "vm.exe.xyz", 2200},
      {0, std::nullopt, std::nullopt, "vm.exe.xyz", 22},
      {22, std::nullopt, "10.0.0.7", "10.0.0.7", 22},  // HostName replaces the name, as in OpenSSH
  };
  for (const auto& row : rows) {
    SshConfig config;
    config.port = row.config_port;
    config.host_name = row.host_name;
    const auto settings = settle_connection(Endpoint{"vm.exe.xyz", row.endpoint_port, "u"}, SshOptions{}, config, ada());
    CHECK(settings.endpoint.host == row.host);
    CHECK(settings.endpoint.port == row.port);
  }
}

TEST_CASE("connection settings: known_hosts is the option, else EXE_SSH_KNOWN_HOSTS, else ssh_config, else ~/.ssh") {
  struct Row {
    fs::path option;
    std::optional<fs::path> environment;
    std::optional<std::string> config;
    fs::path file;
  };
  const std::vector<Row> rows = {
      {"/opt/kh", "/tmp/emulator/known_hosts", "~/.ssh/kh_%h", "/opt/kh"},
      {"", "/tmp/emulator/known_hosts", "~/.ssh/kh_%h", "/tmp/emulator/known_hosts"},
      {"", std::nullopt, "~/.ssh/kh_%h", "/home/ada/.ssh/kh_vm.exe.xyz"},
      {"", std::nullopt, std::nullopt, "/home/ada/.ssh/known_hosts"},
  };
  for (const auto& row : rows) {
    INFO(row.file);
    SshOptions options;
    options.known_hosts_file = row.option;
    SshConfig config;
    config.user_known_hosts_file = row.config;
    auto local = ada();
    local.exe_ssh_known_hosts = row.environment;
    CHECK(settle_connection(Endpoint{"vm.exe.xyz", 22, "u"}, options, config, local).known_hosts_file == row.file);
  }
}

TEST_CASE("connection settings: the host key policy is the option, else ssh_config's, else accept_new") {
  struct Row {
    std::optional<HostKeyPolicy> option, config;
    HostKeyPolicy policy;
  };
  const std::vector<Row> rows = {
      {HostKeyPolicy::callback, HostKeyPolicy::strict, HostKeyPolicy::callback},
      {HostKeyPolicy::accept_new, HostKeyPolicy::strict, HostKeyPolicy::accept_new},
      {std::nullopt, HostKeyPolicy::strict, HostKeyPolicy::strict},
      {std::nullopt, std::nullopt, HostKeyPolicy::accept_new},
  };
  for (const auto& row : rows) {
    SshOptions options;
    options.host_key_policy = row.option;
    SshConfig config;
    config.host_key_policy = row.config;
    CHECK(settle_connection(Endpoint{"h", 22, "u"}, options, config, ada()).host_key_policy == row.policy);
  }
}

TEST_CASE("connection settings: which keys: explicit, ssh_config's IdentityFile, the agent, the default files") {
  const fs::path ed25519 = "/home/ada/.ssh/id_ed25519", rsa = "/home/ada/.ssh/id_rsa";
  SECTION("nothing configured: the agent, then OpenSSH's default files") {
    const auto settings = settle_connection(Endpoint{"h", 22, "u"}, SshOptions{}, SshConfig{}, ada());
    CHECK_FALSE(settings.keys.explicit_key_file);
    CHECK(settings.keys.identity_files.empty());
    CHECK(settings.keys.use_agent);
    CHECK(settings.keys.default_key_files == std::vector<fs::path>{ed25519, rsa});
  }
  SECTION("an explicit key file, else EXE_SSH_KEY") {
    auto local = ada();
    local.exe_ssh_key = "/keys/from-env";
    SshOptions options;
    CHECK(settle_connection(Endpoint{"h", 22, "u"}, options, SshConfig{}, local).keys.explicit_key_file == fs::path("/keys/from-env"));
    options.private_key_file = "/keys/explicit";
    CHECK(settle_connection(Endpoint{"h", 22, "u"}, options, SshConfig{}, local).keys.explicit_key_file == fs::path("/keys/explicit"));
  }
  SECTION("IdentityFile with tokens; the default files give way to it, as in OpenSSH") {
    SshConfig config;
    config.identity_files = {"~/.ssh/exe_%r", "keys/%h"};
    const auto settings = settle_connection(Endpoint{"vm.exe.xyz", 22, "vm+box"}, SshOptions{}, config, ada());
    CHECK(settings.keys.identity_files == std::vector<fs::path>{"/home/ada/.ssh/exe_vm+box", "/home/ada/.ssh/keys/vm.exe.xyz"});
    CHECK(settings.keys.use_agent);
    CHECK(settings.keys.default_key_files.empty());
  }
  SECTION("IdentitiesOnly: no agent keys") {
    SshConfig config;
    config.identity_files = {"~/.ssh/exe"};
    config.identities_only = true;
    const auto settings = settle_connection(Endpoint{"h", 22, "u"}, SshOptions{}, config, ada());
    CHECK_FALSE(settings.keys.use_agent);
    CHECK(settings.keys.identity_files == std::vector<fs::path>{"/home/ada/.ssh/exe"});
    CHECK(settings.keys.default_key_files.empty());
  }
  SECTION("the caller's use_agent = false and default_key_files win over the file") {
    SshOptions options;
    options.use_agent = false;
    options.default_key_files = {"/keys/mine"};
    SshConfig config;
    config.identity_files = {"~/.ssh/exe"};
    config.identities_only = false;
    const auto settings = settle_connection(Endpoint{"h", 22, "u"}, options, config, ada());
    CHECK_FALSE(settings.keys.use_agent);
    CHECK(settings.keys.default_key_files == std::vector<fs::path>{"/keys/mine"});
  }
}

TEST_CASE("connection settings: a signature's keys are settled as a connection's (settle_keys, key_source_of)") {
  SshConfig config;
  config.identity_files = {"~/.ssh/exe_%r"};
  config.identities_only = true;
  const PathTokens tokens{"/home/ada", "ada", "laptop", "exe.dev", "ada"};
  const auto keys = settle_keys(SshKeySource{}, config, ada(), tokens);
  CHECK_FALSE(keys.explicit_key_file);
  CHECK(keys.identity_files == std::vector<fs::path>{"/home/ada/.ssh/exe_ada"});
  CHECK_FALSE(keys.use_agent);
  CHECK(keys.default_key_files.empty());
  // SshOptions' key fields reach the choice unchanged.
  SshOptions options;
  options.private_key_file = "/keys/explicit";
  options.use_agent = false;
  options.default_key_files = {"/keys/mine"};
  options.use_config = false;
  options.config_file = "/etc/other_config";
  const auto source = key_source_of(options);
  CHECK(source.private_key_file == options.private_key_file);
  CHECK_FALSE(source.use_agent);
  CHECK(source.default_key_files == options.default_key_files);
  CHECK_FALSE(source.use_config);
  CHECK(source.config_file == options.config_file);
  CHECK(settle_connection(Endpoint{"exe.dev", 22, "ada"}, options, SshConfig{}, ada()).keys.explicit_key_file ==
        fs::path("/keys/explicit"));
}
