// exe0 tokens as exe.dev verifies them (sshkey/token.go, execore/exec_handler.go,
// execore/exe0_to_exe1_command.go): tokens signed by OpenSSH's own `ssh-keygen -Y sign` with keys
// registered by `ssh-key add` are accepted; every payload rule refuses with exe.dev's message;
// cmds are matched exactly, with exe.dev's defaults; one rate-limit bucket per key.
#include "common/base64.hpp"
#include "common/subprocess.hpp"
#include "lobby_fixture.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>

using namespace exedev::emulator;
using namespace lobby_test;
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs a program (no shell, stdin and output at /dev/null); its exit code.
int run(const std::vector<std::string>& argv) {
  const int out = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  exedev::detail::SpawnRequest request;
  request.program = argv.front();
  request.argv = argv;
  request.directory = "/";
  request.stdout_fd = out;
  request.stderr_fd = out;
  const auto spawned = exedev::detail::spawn_process(request);
  ::close(out);
  REQUIRE(spawned.pid > 0);
  int status = 0;
  ::waitpid(spawned.pid, &status, 0);
  return exedev::detail::exit_code_of(status);
}

// A key pair made by ssh-keygen, and tokens signed by `ssh-keygen -Y sign` with it.
struct SigningKey {
  fs::path path;
  SigningKey(const fs::path& directory, const std::string& type) : path(directory / ("key-" + type)) {
    REQUIRE(run({"/usr/bin/ssh-keygen", "-q", "-t", type, "-N", "", "-C", type + "-key", "-f", path.string()}) == 0);
  }
  std::string public_line() const {
    auto line = read_file(path.string() + ".pub");
    while (!line.empty() && line.back() == '\n') line.pop_back();
    return line;
  }
  // The SSHSIG blob ssh-keygen makes for `message`, its armor removed.
  std::string sshsig(const std::string& message, const std::string& name_space) const {
    const fs::path file = path.parent_path() / "message";
    std::ofstream(file, std::ios::binary) << message;
    fs::remove(file.string() + ".sig");
    REQUIRE(run({"/usr/bin/ssh-keygen", "-Y", "sign", "-q", "-f", path.string(), "-n", name_space, file.string()}) == 0);
    std::string armored = read_file(file.string() + ".sig");
    std::string base64;
    std::size_t line_start = 0;
    while (line_start < armored.size()) {
      const auto end = armored.find('\n', line_start);
      const auto line = armored.substr(line_start, end - line_start);
      if (line.rfind("-----", 0) != 0) base64 += line;
      line_start = end == std::string::npos ? armored.size() : end + 1;
    }
    return exedev::detail::base64_decode(base64).value();
  }
  std::string token(const std::string& payload, const std::string& name_space = "v0@exe.dev") const {
    return "exe0." + exedev::detail::base64url_encode(payload) + "." + exedev::detail::base64url_encode(sshsig(payload, name_space));
  }
};

std::int64_t unix_now(const Instant& now) {
  return std::chrono::duration_cast<std::chrono::seconds>(now.wall.time_since_epoch()).count();
}

std::string exp_in(const Instant& now, int seconds) { return std::to_string(unix_now(now) + seconds); }

struct Exe0Fixture : Fixture {
  SigningKey ed25519{dir, "ed25519"};
  Exe0Fixture() { ok("ssh-key add '" + ed25519.public_line() + "'"); }

  // The 401's message.
  std::string refused(const std::string& token) {
    const Reply reply = exec("ls", token);
    INFO(reply.body);
    CHECK(reply.status == 401);
    CHECK(header(reply, "WWW-Authenticate") == "Bearer");
    return Json::parse(reply.body).at("error").get<std::string>();
  }
};

}  // namespace

TEST_CASE("exe0: tokens ssh-keygen signs with a registered key are accepted, of every key type", "[lobby][exe0]") {
  Exe0Fixture f;
  CHECK(f.exec("ls", f.ed25519.token("{\"exp\":" + exp_in(f.now, 300) + "}")).status == 200);
  // No exp at all is valid too; and the emulator's own token still works.
  CHECK(f.exec("whoami", f.ed25519.token("{}")).status == 200);
  CHECK(f.exec("ls").status == 200);
  for (const std::string type : {"ecdsa", "rsa"}) {
    const SigningKey key(f.dir, type);
    const std::string token = key.token("{\"exp\":" + exp_in(f.now, 300) + ",\"cmds\":[\"ls\"]}");
    CHECK(f.refused(token) == "invalid token");  // not registered yet
    f.ok("ssh-key add '" + key.public_line() + "'");
    CHECK(f.exec("ls", token).status == 200);
  }
}

TEST_CASE("exe0: every payload rule refuses with exe.dev's message", "[lobby][exe0]") {
  Exe0Fixture f;
  const auto unsigned_token = [](const std::string& payload) {
    return "exe0." + exedev::detail::base64url_encode(payload) + ".AAAA";
  };
  CHECK(f.refused("exe2.abc.def") == "invalid token format: missing exe0. prefix");
  CHECK(f.refused("exe0.abc") == "invalid token format: expected exe0.<payload>.<sigblob>");
  CHECK(f.refused("exe0.e30=.AAAA") == "invalid token: payload is not valid base64url");
  CHECK(f.refused("exe0." + std::string(8200, 'A') + ".AAAA") == "invalid token: exceeds maximum size");
  const std::vector<std::pair<std::string, std::string>> rules = {
      {" {}", "invalid token: payload must not have leading or trailing whitespace"},
      {"{}\t", "invalid token: payload must not have leading or trailing whitespace"},
      {"{\"cmds\":[\"ls\"],\n\"exp\":2000000000}", "invalid token: payload must not contain newlines"},
      {std::string("{\"ctx\":\"a\0b\"}", 13), "invalid token: payload must not contain null bytes"},
      {"[\"ls\"]", "invalid token: payload must be a JSON object"},
      {"{\"exp\":2000000000,\"scope\":\"all\"}", "invalid token: unknown field \"scope\""},
      {"{\"exp\":2000000000,\"exp\":2000000001}", "invalid token: invalid JSON"},
      {"{\"ctx\":{\"a\":1,\"a\":2}}", "invalid token: invalid JSON"},
      {"{\"exp\":2000000000.0}", "invalid token: invalid JSON"},
      {"{\"exp\":2e9}", "invalid token: invalid JSON"},
      {"{\"exp\":\"2000000000\"}", "invalid token: invalid JSON"},
      {"{\"nbf\":true}", "invalid token: invalid JSON"},
      {"{\"exp\":99999999999999999999}", "invalid token: invalid JSON"},
      {"{\"cmds\":\"ls\"}", "invalid token: invalid JSON"},
      {"{\"cmds\":[\"ls\",1]}", "invalid token: invalid JSON"},
      {"{\"cmds\":[[\"ls\"]]}", "invalid token: invalid JSON"},
      {"{\"exp\":2000000000", "invalid token: invalid JSON"},
      {"{\"exp\":2000000000} {}", "invalid token: invalid JSON"},
      {"{\"ctx\":\"\xff\"}", "invalid token: invalid JSON"},
      {"{\"exp\":946684799}", "invalid token: exp out of valid range"},
      {"{\"exp\":-1}", "invalid token: exp out of valid range"},
      {"{\"nbf\":4102444801}", "invalid token: nbf out of valid range"},
      {"{\"cmds\":[\"ls\",\"\"]}", "invalid token: cmds elements must be non-empty strings"},
      {"{\"cmds\":[\"ls\",null]}", "invalid token: cmds elements must be non-empty strings"},
  };
  for (const auto& [payload, message] : rules) {
    INFO(payload);
    CHECK(f.refused(unsigned_token(payload)) == message);
  }
  // The first problem met is reported, as json/v2 reads in order.
  CHECK(f.refused(unsigned_token("{\"scope\":1,\"exp\":\"x\"}")) == "invalid token: unknown field \"scope\"");
  CHECK(f.refused(unsigned_token("{\"exp\":\"x\",\"scope\":1}")) == "invalid token: invalid JSON");
  // Valid payloads: ctx holds anything; null leaves exp and cmds unset.
  CHECK(f.refused(unsigned_token("{\"ctx\":{\"a\":[1,{\"b\":null}]},\"exp\":null,\"cmds\":null}")) ==
        "invalid token: malformed signature");
  CHECK(f.refused("exe0.e30.AA+A") == "invalid token: signature is not valid base64url");

  // Claims, then the key, then the signature.
  CHECK(f.refused(f.ed25519.token("{\"exp\":" + exp_in(f.now, -10) + "}")) == "invalid token: token has expired");
  CHECK(f.refused(f.ed25519.token("{\"nbf\":" + exp_in(f.now, 100) + "}")) == "invalid token: token is not yet valid");
  CHECK(f.refused(f.ed25519.token("{}", "v0@some-vm.exe.xyz")) == "invalid token");
  const std::string good = f.ed25519.token("{\"cmds\":[\"ls\"]}");
  const std::string other_payload = "exe0." + exedev::detail::base64url_encode("{\"cmds\":[\"rm\"]}") + good.substr(good.rfind('.'));
  CHECK(f.refused(other_payload) == "invalid token");
  f.ok("ssh-key remove '" + f.ed25519.public_line() + "'");
  CHECK(f.refused(good) == "invalid token");
}

TEST_CASE("exe0: cmds match exactly; without them only exe.dev's defaults run", "[lobby][exe0]") {
  Exe0Fixture f;
  const std::string exp = exp_in(f.now, 300);
  const std::string no_rm = f.ed25519.token("{\"exp\":" + exp + ",\"cmds\":[\"new\",\"ls\"]}");
  f.ok("new --name=kept-vm", no_rm);
  CHECK(f.error("rm kept-vm", 403, no_rm) == "command not allowed by token permissions");
  CHECK(f.vm("kept-vm"));
  CHECK(f.error("ssh-key list", 403, no_rm) == "command not allowed by token permissions");
  const std::string defaults = f.ed25519.token("{\"exp\":" + exp + "}");
  CHECK(f.exec("ssh-key list", defaults).status == 200);
  CHECK(f.error("rm kept-vm", 403, defaults) == "command not allowed by token permissions");
  CHECK(f.error("ssh kept-vm true", 403, defaults) == "command not allowed by token permissions");
  const std::string nothing = f.ed25519.token("{\"cmds\":[]}");
  CHECK(f.error("ls", 403, nothing) == "command not allowed by token permissions");
  // A parent does not cover its subcommands.
  CHECK(f.error("ssh-key list", 403, f.ed25519.token("{\"cmds\":[\"ssh-key\"]}")) == "command not allowed by token permissions");
  const std::string with_rm = f.ed25519.token("{\"exp\":" + exp + ",\"cmds\":[\"rm\"]}");
  f.ok("rm kept-vm", with_rm);
  CHECK_FALSE(f.vm("kept-vm"));
}

TEST_CASE("exe0: all tokens of one key share one rate-limit bucket", "[lobby][exe0]") {
  Exe0Fixture f;
  Modes modes = f.lobby->modes();
  modes.rate_limit = {true, 2, 0.001, 10};
  f.lobby->set_modes(modes);
  const std::string first = f.ed25519.token("{\"cmds\":[\"ls\"]}");
  const std::string second = f.ed25519.token("{\"cmds\":[\"ls\",\"whoami\"]}");
  CHECK(f.exec("ls", first).status == 200);
  CHECK(f.exec("ls", second).status == 200);
  CHECK(f.exec("ls", first).status == 429);
  CHECK(f.exec("ls", second).status == 429);
  CHECK(f.exec("ls").status == 200);  // another key's bucket
}

TEST_CASE("exe0: exe0-to-exe1 gives a working exe1 handle; --vm signs for the VM's namespace", "[lobby][exe0]") {
  Exe0Fixture f;
  const std::string exe0 = f.ed25519.token("{\"exp\":" + exp_in(f.now, 300) + ",\"cmds\":[\"ls\",\"exe0-to-exe1\"]}");
  const Json traded = f.ok("exe0-to-exe1 " + exe0, exe0);
  const std::string exe1 = traded.at("token");
  CHECK(exe1.rfind("exe1.", 0) == 0);
  CHECK(exe1.size() == 5 + 26);
  CHECK(f.ok("exe0-to-exe1 " + exe0).at("token") == exe1);  // the same handle again
  CHECK(f.exec("ls", exe1).status == 200);
  CHECK(f.error("whoami", 403, exe1) == "command not allowed by token permissions");  // the exe0's cmds
  CHECK(f.refused("exe1.AAAAAAAAAAAAAAAAAAAAAAAAAA") == "invalid token");

  f.ok("new --name=proxy-vm");
  const std::string for_vm = f.ed25519.token("{}", "v0@proxy-vm.exe.xyz");
  CHECK(f.error("exe0-to-exe1 " + for_vm) == "invalid token");  // not /exec's namespace
  const std::string vm_handle = f.ok("exe0-to-exe1 --vm=proxy-vm " + for_vm).at("token");
  CHECK(f.refused(vm_handle) == "invalid token");  // a VM's token does not open /exec

  CHECK(f.error("exe0-to-exe1 " + f.ed25519.token("{\"exp\":" + exp_in(f.now, -5) + "}")) == "token has expired");
  // A trade ignores nbf.
  CHECK(f.ok("exe0-to-exe1 " + f.ed25519.token("{\"nbf\":" + exp_in(f.now, 100) + "}")).contains("token"));
  CHECK(f.error("exe0-to-exe1 exe0.e30.c2ln") == "invalid token: invalid token: malformed signature");
}

TEST_CASE("exe0: a key of the second account acts as that account; exe0-to-exe1 takes only the caller's keys",
          "[lobby][exe0]") {
  Exe0Fixture f;
  const std::string second = f.lobby->second_token();
  const SigningKey other(f.dir, "ecdsa");
  f.ok("ssh-key add '" + other.public_line() + "'", second);
  f.ok("new --name=first-vm");
  f.ok("new --name=second-vm", second);
  const std::string payload = "{\"exp\":" + exp_in(f.now, 300) + ",\"cmds\":[\"ls\",\"whoami\",\"rm\",\"exe0-to-exe1\"]}";
  const std::string second_token = other.token(payload);
  const Json listed = f.ok("ls", second_token);
  REQUIRE(listed.at("vms").size() == 1);
  CHECK(listed.at("vms").at(0).at("vm_name") == "second-vm");
  CHECK(f.ok("whoami", second_token).at("email") == "second@example.com");
  CHECK(f.exec("rm first-vm", second_token).body.find("{\"error\":\"VM \\\"first-vm\\\" not found\"}") == 0);
  CHECK(f.vm("first-vm"));
  // The first account's key still acts as the first account.
  const Json first_listed = f.ok("ls", f.ed25519.token(payload));
  REQUIRE(first_listed.at("vms").size() == 1);
  CHECK(first_listed.at("vms").at(0).at("vm_name") == "first-vm");
  // A trade needs a key of the caller's own account (exe.dev: the key's owner is the user).
  CHECK(f.error("exe0-to-exe1 " + second_token) == "invalid token");
  CHECK(f.error("exe0-to-exe1 " + f.ed25519.token(payload), 422, second) == "invalid token");
  const std::string handle = f.ok("exe0-to-exe1 " + second_token, second).at("token");
  CHECK(f.ok("ls", handle).at("vms").size() == 1);
}
