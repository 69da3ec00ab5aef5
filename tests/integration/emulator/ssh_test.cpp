// The emulator's SSH endpoints, exe.dev's front with the VM's sshd behind it, driven by OpenSSH's
// own client (`ssh`, `sftp`, `ssh-keyscan`), a client nobody here wrote: commands and their exit
// status, the same environment as the /exec path, SFTP in the VM's home, routing by the first
// key (the lobby shell, vm+ names, stopped and starting VMs), the front's host key, certificate
// and algorithms, the inner sshd's config, pause, resume and rm, strict host key checking with
// the emulator's known_hosts, the host key and ports across emulators on one state_dir, the
// latency mode, an sshd without SFTP, silent endpoints, and no sshd left once the emulator stops.
#include <exedev/emulator/emulator.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <pwd.h>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

using namespace exedev::emulator;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

fs::path make_temp_dir() {
  std::string pattern = (fs::temp_directory_path() / "emulator-ssh-test-XXXXXX").string();
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  return pattern;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& path, const std::string& data) { std::ofstream(path, std::ios::binary | std::ios::trunc) << data; }

// Polls `condition` until it holds; fails after a generous hang guard (never a timing assertion).
template <typename Condition>
bool eventually(Condition condition, std::chrono::seconds guard = 30s) {
  const auto end = std::chrono::steady_clock::now() + guard;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return condition();
}

// A child whose stdout and stderr arrive on `out`; stdin is /dev/null.
struct Child {
  pid_t pid = -1;
  int out = -1;
};

Child spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  Child child;
  REQUIRE(posix_spawn(&child.pid, argv[0], &actions, nullptr, argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  child.out = fds[0];
  return child;
}

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

Outcome finish(Child child) {
  Outcome outcome;
  char buffer[4096];
  for (ssize_t n; (n = ::read(child.out, buffer, sizeof buffer)) > 0;) outcome.output.append(buffer, static_cast<std::size_t>(n));
  ::close(child.out);
  int status = 0;
  ::waitpid(child.pid, &status, 0);
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return outcome;
}

Outcome run(const std::vector<std::string>& args) { return finish(spawn(args)); }

// A new key pair (ed25519 unless `type` says otherwise) in `dir`; returns the private key's path.
fs::path make_key(const fs::path& dir, const std::string& name, const std::string& type = "ed25519") {
  const auto key = dir / name;
  const auto made = run({"/usr/bin/ssh-keygen", "-q", "-t", type, "-N", "", "-C", name, "-f", key.string()});
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  return key;
}

std::string public_key(const fs::path& key) { return read_file(key.string() + ".pub"); }

// `SHA256:…` of a key, as ssh-keygen -l prints it.
std::string fingerprint_of(const fs::path& key) {
  const auto listed = run({"/usr/bin/ssh-keygen", "-l", "-E", "sha256", "-f", key.string() + ".pub"});
  const auto begin = listed.output.find("SHA256:");
  return listed.output.substr(begin, listed.output.find(' ', begin) - begin);
}

std::string login_user() { return ::getpwuid(::geteuid())->pw_name; }

// The emulator's sshd listener (its title names its config) and every descendant of it: the
// processes serving its connections, in sessions of their own.
std::vector<int> sshd_processes(const fs::path& state_dir) {
  const auto listener = run({"/usr/bin/pgrep", "-f", (state_dir / "ssh" / "sshd_config").string()});
  std::vector<int> tree;
  if (listener.exit_code != 0) return tree;
  std::map<int, std::vector<int>> children;
  DIR* proc = ::opendir("/proc");
  while (const dirent* entry = ::readdir(proc)) {
    const std::string name = entry->d_name;
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_file("/proc/" + name + "/stat");
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 4 >= stat.size() || stat[paren + 2] == 'Z') continue;
    children[std::atoi(stat.c_str() + paren + 4)].push_back(std::stoi(name));
  }
  ::closedir(proc);
  std::vector<int> pending = {std::stoi(listener.output)};
  while (!pending.empty()) {
    const int pid = pending.back();
    pending.pop_back();
    tree.push_back(pid);
    for (const int child : children[pid]) pending.push_back(child);
  }
  return tree;
}

bool gone(int pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z';
}

// An emulator whose options register a client key, and the OpenSSH client pointed at it. Its
// answers name each VM's shard endpoint (vm_domain), which OpenSSH reaches at 127.0.0.1 (it has
// no hosts-file hook for the names).
class SshHarness {
 public:
  explicit SshHarness(Options options = {}) : dir_(make_temp_dir()), key(make_key(dir_, "client-key")) {
    options.ssh_authorized_keys.push_back(public_key(key));
    options.modes.ssh_destination = SshDestination::vm_domain;
    emulator = std::make_unique<Emulator>(std::move(options));
    REQUIRE_FALSE(emulator->ssh_known_hosts().empty());
  }
  ~SshHarness() {
    emulator.reset();
    fs::remove_all(dir_);
  }

  /// A lobby command through /exec (curl over TLS with the emulator's CA): the response body.
  std::string exec(const std::string& line, const std::string& token = {}) {
    const auto body = dir_ / "body";
    write_file(body, line);
    const auto answer = run({"/usr/bin/curl", "-sS", "--max-time", "60", "--cacert", emulator->ca_file().string(), "-H",
                             "Authorization: Bearer " + (token.empty() ? emulator->token() : token), "--data-binary", "@" + body.string(),
                             emulator->url() + "/exec"});
    INFO(line << " -> " << answer.output);
    REQUIRE(answer.exit_code == 0);
    return answer.output;
  }
  Json exec_json(const std::string& line) {
    const std::string body = exec(line);
    INFO(line << " -> " << body);
    return Json::parse(body);
  }

  /// `new --name=<vm> …`; returns the VM's SSH port from the answer.
  std::uint16_t make_vm(const std::string& vm, const std::string& flags = {}) {
    const Json created = exec_json("new --name=" + vm + " " + flags);
    REQUIRE(created.contains("ssh_port"));
    return created.at("ssh_port").get<std::uint16_t>();
  }

  /// ssh to the endpoint with only `identity`, as `user` (the emulator's user when empty); the
  /// destination is the last argument.
  std::vector<std::string> ssh_args(std::uint16_t port, const fs::path& identity, const std::string& user = {}) const {
    return {"/usr/bin/ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o",
            "UserKnownHostsFile=" + emulator->ssh_known_hosts().string(), "-o", "IdentitiesOnly=yes", "-o",
            "ConnectTimeout=30", "-i", identity.string(), "-p", std::to_string(port),
            (user.empty() ? login_user() : user) + "@127.0.0.1"};
  }
  std::vector<std::string> sftp_args(std::uint16_t port, const fs::path& identity) const {
    return {"/usr/bin/sftp", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o",
            "UserKnownHostsFile=" + emulator->ssh_known_hosts().string(), "-o", "IdentitiesOnly=yes", "-i",
            identity.string(), "-P", std::to_string(port), login_user() + "@127.0.0.1"};
  }
  Child ssh_child(std::uint16_t port, const std::string& command, const fs::path& identity) const {
    auto args = ssh_args(port, identity);
    args.push_back(command);
    return spawn(args);
  }
  Outcome ssh(std::uint16_t port, const std::string& command) { return finish(ssh_child(port, command, key)); }
  Outcome ssh_as(const fs::path& identity, std::uint16_t port, const std::string& command) {
    return finish(ssh_child(port, command, identity));
  }
  Outcome sftp(std::uint16_t port, const std::string& batch) {
    const auto batch_file = dir_ / "sftp-batch";
    write_file(batch_file, batch);
    auto args = sftp_args(port, key);
    args.insert(args.begin() + 1, {"-b", batch_file.string()});
    return run(args);
  }

  fs::path dir() const { return dir_; }

 private:
  fs::path dir_;

 public:
  fs::path key;
  std::unique_ptr<Emulator> emulator;
};

}  // namespace

TEST_CASE("ssh: a command's output and exit status, run as the /exec path runs it", "[ssh]") {
  SshHarness h;
  const auto port = h.make_vm("ssh-vm", "--env=GREETING=hello");
  const auto status = h.ssh(port, "echo out; echo err >&2; exit 3");
  CHECK(status.exit_code == 3);
  CHECK(status.output.find("out\n") != std::string::npos);
  CHECK(status.output.find("err\n") != std::string::npos);

  // The same line over SSH and over /exec sees the same directory and environment.
  const std::string probe = "pwd; echo $HOME; echo $PATH; echo $SHELL; echo $USER; echo $EXEDEV_EMULATOR_VM; "
                            "echo $EXEDEV_EMULATOR_VM_NAME; echo $GREETING";
  const auto over_ssh = h.ssh(port, probe);
  CHECK(over_ssh.exit_code == 0);
  const std::string over_exec = h.exec("ssh ssh-vm " + probe);
  CHECK(over_ssh.output == over_exec);
  const auto vm = h.emulator->vm("ssh-vm");
  REQUIRE(vm);
  CHECK(over_ssh.output.rfind(vm->home.string() + "\n" + vm->home.string() + "\n", 0) == 0);
  CHECK(over_ssh.output.find("\nssh-vm\nhello\n") != std::string::npos);

  // A process started over SSH is the VM's: the emulator finds it by its marker.
  Child sleeper = h.ssh_child(port, "echo started; exec sleep 60", h.key);
  std::string seen;
  char buffer[256];
  while (seen.find("started") == std::string::npos) {
    const ssize_t n = ::read(sleeper.out, buffer, sizeof buffer);
    REQUIRE(n > 0);
    seen.append(buffer, static_cast<std::size_t>(n));
  }
  CHECK(eventually([&] { return !h.emulator->vm_processes("ssh-vm").empty(); }));
  h.exec("restart ssh-vm");  // kills the VM's processes and closes its connections
  CHECK(finish(sleeper).exit_code != 0);
  CHECK(eventually([&] { return h.emulator->vm_processes("ssh-vm").empty(); }));

  // ls names the endpoint.
  const Json listed = h.exec_json("ls --json").at("vms").at(0);
  CHECK(listed.at("ssh_host") == "ssh-vm.exe.localhost");
  CHECK(listed.at("ssh_port") == port);
  CHECK_FALSE(listed.contains("ssh_user"));
  CHECK(listed.at("ssh_dest") == "ssh-vm.exe.localhost");
}

TEST_CASE("ssh: sftp puts and gets files in the VM's home", "[ssh]") {
  SshHarness h;
  const auto port = h.make_vm("sftp-vm");
  std::string data;
  for (int i = 0; i < 300000; ++i) data += static_cast<char>(i * 7 + i / 251);
  write_file(h.dir() / "local.bin", data);
  const auto sent = h.sftp(port, "put " + (h.dir() / "local.bin").string() + " remote.bin\nget remote.bin " +
                                     (h.dir() / "back.bin").string() + "\n");
  INFO(sent.output);
  CHECK(sent.exit_code == 0);
  const auto home = h.emulator->vm("sftp-vm")->home;
  CHECK(read_file(home / "remote.bin") == data);
  CHECK(read_file(h.dir() / "back.bin") == data);
}

TEST_CASE("ssh: the first key decides; an unregistered key lands in the lobby shell, where sftp is refused", "[ssh]") {
  SshHarness h;
  const auto port = h.make_vm("key-vm");
  const auto other = make_key(h.dir(), "other-key");
  // exe.dev's front lets every key in: one it does not know reaches its lobby shell.
  const auto lobby = h.ssh_as(other, port, "echo on the VM");
  CHECK(lobby.exit_code == 1);
  CHECK(lobby.output == "Please complete registration by running: ssh exe.localhost\r\n");
  auto sftp = h.sftp_args(port, other);
  write_file(h.dir() / "ls-batch", "ls\n");
  sftp.insert(sftp.begin() + 1, {"-b", (h.dir() / "ls-batch").string()});
  const auto refused = run(sftp);
  INFO(refused.output);
  CHECK(refused.exit_code != 0);
  // exe.dev says why on stderr; sshd discards a subsystem's stderr, so only the end shows.
  CHECK(refused.output.find("Connection closed") != std::string::npos);
  const auto landings = h.emulator->ssh_landings();
  REQUIRE_FALSE(landings.empty());
  CHECK(landings.back().decision == SshLandingDecision::lobby);
  CHECK(landings.back().account.empty());
  CHECK(landings.back().endpoint_port == port);
  CHECK(landings.back().fingerprint == fingerprint_of(other));

  // Only the first key counts: with the unregistered key first, the registered one is never tried.
  auto both = h.ssh_args(port, other);
  both.insert(both.end() - 1, {"-i", h.key.string()});
  both.push_back("echo on the VM");
  const auto first_key = run(both);
  CHECK(first_key.exit_code == 1);
  CHECK(first_key.output.find("Please complete registration") != std::string::npos);

  const Json added = h.exec_json("ssh-key add '" + public_key(other) + "'");
  CHECK(added.at("status") == "added");
  CHECK(added.at("name") == "other-key");
  CHECK(h.ssh_as(other, port, "echo on the VM").output == "on the VM\n");
  CHECK(h.emulator->ssh_landings().back().decision == SshLandingDecision::vm);
  CHECK(h.emulator->ssh_landings().back().vm == "key-vm");
  CHECK(h.emulator->ssh_landings().back().account == "first");
  CHECK(h.exec_json("ssh-key remove other-key").at("status") == "deleted");
  CHECK(h.ssh_as(other, port, "true").exit_code == 1);
  CHECK(h.ssh(port, "true").exit_code == 0);  // the options' key stays
}

TEST_CASE("ssh: vm+<name> routes by name among the key's VMs and denies the others", "[ssh]") {
  SshHarness h;
  const auto port = h.make_vm("named-vm");
  auto named = h.ssh_args(port, h.key, "vm+named-vm");
  named.push_back("echo $EXEDEV_EMULATOR_VM_NAME");
  const auto reached = run(named);
  INFO(reached.output);
  CHECK(reached.exit_code == 0);
  CHECK(reached.output == "named-vm\n");

  // A name the key's account has no VM under, and a key of no account: denied during
  // authentication, the connection closed (no second key, no session).
  const auto other = make_key(h.dir(), "foreign-key");
  for (const auto& [identity, user] : std::vector<std::pair<fs::path, std::string>>{
           {h.key, "vm+no-such-vm"}, {other, "vm+named-vm"}}) {
    auto denied_args = h.ssh_args(port, identity, user);
    denied_args.push_back("echo reached");
    const auto denied = run(denied_args);
    INFO(user << ": " << denied.output);
    CHECK(denied.exit_code == 255);
    CHECK(denied.output.find("reached") == std::string::npos);
    const auto landing = h.emulator->ssh_landings().back();
    CHECK(landing.decision == SshLandingDecision::denied);
    CHECK(landing.username == user);
    CHECK(landing.message == "Access denied for VM \"" + user.substr(3) + "\".");
  }
}

TEST_CASE("ssh: a stopped VM is denied after the handshake; a starting VM is accepted, then closed", "[ssh]") {
  SshHarness h;
  const auto port = h.make_vm("stopped-vm");
  h.exec("pause stopped-vm");
  const auto stopped = h.ssh(port, "echo reached");
  CHECK(stopped.exit_code == 255);
  CHECK(stopped.output.find("reached") == std::string::npos);
  CHECK(h.emulator->ssh_landings().back().decision == SshLandingDecision::denied);
  CHECK(h.emulator->ssh_landings().back().message == "VM \"stopped-vm\" is not running.");

  Modes modes = h.emulator->modes();
  modes.boot_delay = std::chrono::minutes(5);
  h.emulator->set_modes(modes);
  const auto starting_port = h.make_vm("starting-vm");
  const auto starting = h.ssh(starting_port, "echo reached");
  INFO(starting.output);
  CHECK(starting.exit_code == 255);
  CHECK(starting.output.find("reached") == std::string::npos);
  CHECK(h.emulator->ssh_landings().back().decision == SshLandingDecision::vm_starting);
  CHECK(h.emulator->ssh_landings().back().vm == "starting-vm");
}

TEST_CASE("ssh: an ssh-rsa (SHA-1) user key logs in, as the front accepts it", "[ssh]") {
  SshHarness h;
  const auto port = h.make_vm("rsa-vm");
  const auto rsa = make_key(h.dir(), "rsa-user-key", "rsa");
  h.exec_json("ssh-key add '" + public_key(rsa) + "'");
  auto command = h.ssh_args(port, rsa);
  command.insert(command.begin() + 1, {"-o", "PubkeyAcceptedAlgorithms=ssh-rsa"});
  command.push_back("echo signed with sha1");
  const auto outcome = run(command);
  INFO(outcome.output);
  CHECK(outcome.exit_code == 0);
  CHECK(outcome.output == "signed with sha1\n");
}

TEST_CASE("ssh: a second account's key reaches that account's VM on the shared shard, never the first's", "[ssh]") {
  const auto keys = make_temp_dir();
  const auto second_key = make_key(keys, "second-key");
  Options options;
  options.second_ssh_authorized_keys.push_back(public_key(second_key));
  SshHarness h(options);
  const std::string second = h.emulator->second_token();
  // Each account's first VM is shard 0: one endpoint port for both.
  const auto port = h.make_vm("first-vm");
  const Json made = Json::parse(h.exec("new --name=second-vm", second));
  CHECK(made.at("ssh_port") == port);
  const auto first_only = h.make_vm("first-two");  // shard 1: the second account has none there
  CHECK(first_only != port);
  // whoami tells each account its own keys, with the fingerprints the landings record.
  const Json whoami = Json::parse(h.exec("whoami --json", second));
  CHECK(whoami.at("email") == "second@example.com");
  CHECK(whoami.at("ssh_keys").at(0).at("fingerprint") == fingerprint_of(second_key));

  CHECK(h.ssh(port, "echo $EXEDEV_EMULATOR_VM_NAME").output == "first-vm\n");
  CHECK(h.ssh_as(second_key, port, "echo $EXEDEV_EMULATOR_VM_NAME").output == "second-vm\n");
  // Where the second account has no VM: its lobby shell, never the first account's VM.
  const auto lobby = h.ssh_as(second_key, first_only, "echo $EXEDEV_EMULATOR_VM_NAME");
  CHECK(lobby.exit_code == 1);
  CHECK(lobby.output.find("first-two") == std::string::npos);
  auto by_name = h.ssh_args(first_only, second_key, "vm+first-two");
  by_name.push_back("echo reached");
  CHECK(run(by_name).exit_code == 255);  // a vm+ name of the other account: denied

  std::size_t second_landings = 0;
  for (const auto& landing : h.emulator->ssh_landings()) {
    if (landing.fingerprint != fingerprint_of(second_key)) continue;
    ++second_landings;
    CHECK(landing.account == "second");
    CHECK(landing.vm != "first-vm");
    if (landing.decision != SshLandingDecision::denied) CHECK(landing.vm != "first-two");
  }
  CHECK(second_landings == 3);
  fs::remove_all(keys);
}

TEST_CASE("ssh: vm_plus answers name the VM by a routing user at the name endpoint; the hosts file names every VM", "[ssh]") {
  SshHarness h;
  Modes modes = h.emulator->modes();
  modes.ssh_destination = SshDestination::vm_plus;
  h.emulator->set_modes(modes);
  const Json made = h.exec_json("new --name=plus-vm");
  CHECK(made.at("ssh_host") == "exe.localhost");
  CHECK(made.at("ssh_user") == "vm+plus-vm");
  CHECK(made.at("ssh_dest") == "vm+plus-vm@exe.localhost");
  const auto port = made.at("ssh_port").get<std::uint16_t>();
  auto command = h.ssh_args(port, h.key, "vm+plus-vm");
  command.push_back("echo $EXEDEV_EMULATOR_VM_NAME");
  const auto reached = run(command);
  INFO(reached.output);
  CHECK(reached.output == "plus-vm\n");
  // The name endpoint with no routing name is exe.dev's own: the lobby shell.
  CHECK(h.ssh(port, "true").exit_code == 1);
  CHECK(read_file(h.emulator->ssh_hosts_file()) == "127.0.0.1 exe.localhost plus-vm.exe.localhost\n");
}

TEST_CASE("ssh: pause closes the VM's connections and refuses new ones; resume serves the same port; rm refuses", "[ssh]") {
  SshHarness h;
  const auto port = h.make_vm("pause-vm");
  Child open_session = h.ssh_child(port, "echo started; sleep 60", h.key);
  std::string seen;
  char buffer[256];
  while (seen.find("started") == std::string::npos) {
    const ssize_t n = ::read(open_session.out, buffer, sizeof buffer);
    REQUIRE(n > 0);
    seen.append(buffer, static_cast<std::size_t>(n));
  }
  h.exec("pause pause-vm");
  CHECK(finish(open_session).exit_code == 255);  // the connection was closed under it
  CHECK(h.ssh(port, "true").exit_code == 255);

  h.exec("resume pause-vm");
  const auto back = h.ssh(port, "echo back");
  CHECK(back.exit_code == 0);
  CHECK(back.output == "back\n");
  CHECK(h.exec_json("ls pause-vm").at("vms").at(0).at("ssh_port") == port);

  h.exec("rm pause-vm");
  const auto removed = h.ssh(port, "true");
  CHECK(removed.exit_code == 255);
}

TEST_CASE("ssh: a new emulator on the same state_dir keeps the host key and the VMs' ports", "[ssh]") {
  const auto state = make_temp_dir();
  std::string known_hosts;
  std::uint16_t port = 0;
  {
    Options options;
    options.state_dir = state;
    SshHarness h(options);
    port = h.make_vm("stable-vm");
    known_hosts = read_file(h.emulator->ssh_known_hosts());
    CHECK(known_hosts.rfind("[*.exe.localhost]:*,[exe.localhost]:*,[127.0.0.1]:* ssh-rsa ", 0) == 0);
  }
  {
    Options options;
    options.state_dir = state;
    SshHarness h(options);
    CHECK(read_file(h.emulator->ssh_known_hosts()) == known_hosts);
    // StrictHostKeyChecking=yes with the file the first emulator wrote.
    const auto args = h.ssh_args(port, h.key);
    auto command = args;
    for (auto& arg : command) {
      if (arg.rfind("UserKnownHostsFile=", 0) == 0) arg = "UserKnownHostsFile=" + (h.dir() / "saved_known_hosts").string();
    }
    write_file(h.dir() / "saved_known_hosts", known_hosts);
    command.push_back("echo same");
    const auto outcome = run(command);
    INFO(outcome.output);
    CHECK(outcome.exit_code == 0);
  }
  fs::remove_all(state);
}

TEST_CASE("ssh: a host key that is not the emulator's is refused under strict checking", "[ssh]") {
  SshHarness h;
  const auto port = h.make_vm("strict-vm");
  // Another key recorded for the endpoint: ssh must refuse the emulator's.
  const auto impostor = make_key(h.dir(), "impostor-host-key", "rsa");
  const std::string pub = public_key(impostor);
  write_file(h.dir() / "wrong_known_hosts", "[127.0.0.1]:" + std::to_string(port) + " " + pub.substr(0, pub.rfind(' ')) + "\n");
  auto command = h.ssh_args(port, h.key);
  for (auto& arg : command) {
    if (arg.rfind("UserKnownHostsFile=", 0) == 0) arg = "UserKnownHostsFile=" + (h.dir() / "wrong_known_hosts").string();
  }
  command.push_back("true");
  const auto outcome = run(command);
  CHECK(outcome.exit_code == 255);
  CHECK(outcome.output.find("HOST IDENTIFICATION HAS CHANGED") != std::string::npos);
}

TEST_CASE("ssh: each algorithm of exe.dev's front negotiates", "[ssh]") {
  SshHarness h;
  const auto port = h.make_vm("algo-vm");
  // One run per algorithm, the client limited to it. (A MAC is negotiated only with a cipher
  // that needs one: the ctr ciphers.) The front is x/crypto/ssh's defaults, which the VM's own
  // sshd (ed25519, curve25519, no gcm, no sha1) would refuse.
  std::vector<std::vector<std::string>> accepted_options;
  for (const char* host_key : {"rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"}) {
    accepted_options.push_back({"-o", std::string("HostKeyAlgorithms=") + host_key});
  }
  for (const char* kex : {"curve25519-sha256", "curve25519-sha256@libssh.org", "ecdh-sha2-nistp256", "ecdh-sha2-nistp384",
                          "ecdh-sha2-nistp521", "diffie-hellman-group14-sha256", "diffie-hellman-group14-sha1"}) {
    accepted_options.push_back({"-o", std::string("KexAlgorithms=") + kex});
  }
  for (const char* cipher : {"aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com", "aes128-ctr",
                             "aes192-ctr", "aes256-ctr"}) {
    accepted_options.push_back({"-o", std::string("Ciphers=") + cipher});
  }
  for (const char* mac : {"hmac-sha2-256-etm@openssh.com", "hmac-sha2-512-etm@openssh.com", "hmac-sha2-256", "hmac-sha2-512",
                          "hmac-sha1", "hmac-sha1-96"}) {
    accepted_options.push_back({"-o", "Ciphers=aes128-ctr", "-o", std::string("MACs=") + mac});
  }
  for (const auto& option : accepted_options) {
    auto command = h.ssh_args(port, h.key);
    command.insert(command.begin() + 1, option.begin(), option.end());
    command.push_back("echo negotiated");
    const auto outcome = run(command);
    INFO(option.back() << ": " << outcome.output);
    CHECK(outcome.exit_code == 0);
    CHECK(outcome.output == "negotiated\n");
  }
  // What the front does not offer stays refused: the VM's inner ed25519 host key, umac, group16.
  const std::vector<std::vector<std::string>> refused_options = {
      {"-o", "HostKeyAlgorithms=ssh-ed25519"},
      {"-o", "Ciphers=aes128-ctr", "-o", "MACs=umac-128-etm@openssh.com"},
      {"-o", "KexAlgorithms=diffie-hellman-group16-sha512"}};
  for (const auto& option : refused_options) {
    auto command = h.ssh_args(port, h.key);
    command.insert(command.begin() + 1, option.begin(), option.end());
    command.push_back("true");
    const auto refused = run(command);
    INFO(option.back() << ": " << refused.output);
    CHECK(refused.exit_code == 255);
    CHECK(refused.output.find("no matching") != std::string::npos);
  }
}

TEST_CASE("ssh: the same RSA host key and certificate on every endpoint", "[ssh]") {
  SshHarness h;
  const auto first = h.make_vm("key-one");
  const auto second = h.make_vm("key-two");
  const std::string known = read_file(h.emulator->ssh_known_hosts());
  const auto space = known.find(' ');
  const std::string host_key = known.substr(space + 1, known.find('\n') - space - 1);
  CHECK(host_key.rfind("ssh-rsa ", 0) == 0);
  std::set<std::string> certificates;
  for (const auto port : {first, second}) {
    const auto scanned = run({"/usr/bin/ssh-keyscan", "-p", std::to_string(port), "127.0.0.1"});
    INFO(scanned.output);
    CHECK(scanned.output.find("[127.0.0.1]:" + std::to_string(port) + " " + host_key + "\n") != std::string::npos);
    // Only RSA: the front has no ed25519 or ECDSA host key.
    CHECK(scanned.output.find("ssh-ed25519") == std::string::npos);
    CHECK(scanned.output.find("ecdsa") == std::string::npos);
    const auto certified = run({"/usr/bin/ssh-keyscan", "-c", "-p", std::to_string(port), "127.0.0.1"});
    INFO(certified.output);
    const auto at = certified.output.find("ssh-rsa-cert-v01@openssh.com ");
    REQUIRE(at != std::string::npos);
    certificates.insert(certified.output.substr(at, certified.output.find('\n', at) - at));
  }
  CHECK(certificates.size() == 1);

  // The @cert-authority line exe.dev publishes, from the emulator's HTTPS server, is all the
  // client needs to trust the endpoints under the domain's name (OpenSSH 9.2 does not match the
  // certificate's `*.<domain>` principal, so the name checked is the domain's own).
  const auto published = run({"/usr/bin/curl", "-sS", "--cacert", h.emulator->ca_file().string(),
                              h.emulator->url() + "/.well-known/ssh-known-hosts"});
  REQUIRE(published.exit_code == 0);
  CHECK(published.output.rfind("@cert-authority exe.localhost,*.exe.localhost,", 0) == 0);
  CHECK(published.output.find(" exe.localhost ssh ca\n") != std::string::npos);
  write_file(h.dir() / "ca_known_hosts", published.output);
  for (const auto port : {first, second}) {
    auto command = h.ssh_args(port, h.key);
    for (auto& arg : command) {
      if (arg.rfind("UserKnownHostsFile=", 0) == 0) arg = "UserKnownHostsFile=" + (h.dir() / "ca_known_hosts").string();
    }
    command.insert(command.begin() + 1, {"-o", "HostKeyAlias=exe.localhost"});
    command.push_back("echo certified");
    const auto outcome = run(command);
    INFO(outcome.output);
    CHECK(outcome.exit_code == 0);
    CHECK(outcome.output == "certified\n");
  }
}

TEST_CASE("ssh: the inner sshd still has exe.dev's VM config", "[ssh]") {
  SshHarness h;
  h.make_vm("config-vm");
  const auto config = h.emulator->state_dir() / "ssh" / "sshd_config";
  const auto effective = run({"/usr/sbin/sshd", "-T", "-f", config.string()});
  INFO(effective.output);
  REQUIRE(effective.exit_code == 0);
  for (const char* line : {"acceptenv LANG\n", "acceptenv LC_*\n", "maxsessions 10\n", "allowtcpforwarding yes\n",
                           "allowagentforwarding yes\n", "x11forwarding yes\n", "clientaliveinterval 60\n",
                           "clientalivecountmax 3\n", "permitrootlogin without-password\n", "passwordauthentication no\n",
                           "compression no\n", "usedns no\n", "maxstartups 1000:100:1000\n",
                           "subsystem sftp /usr/lib/openssh/sftp-server\n"}) {
    CHECK(effective.output.find(line) != std::string::npos);
  }
  CHECK(effective.output.find("setenv PATH=/usr/local/sbin:") != std::string::npos);
}

TEST_CASE("ssh: without the SFTP subsystem sftp is refused and commands still run", "[ssh]") {
  Options options;
  options.ssh_sftp = false;
  SshHarness h(options);
  const auto port = h.make_vm("no-sftp-vm");
  const auto refused = h.sftp(port, "ls\n");
  INFO(refused.output);
  CHECK(refused.exit_code != 0);
  CHECK(refused.output.find("subsystem request failed") != std::string::npos);
  CHECK(h.ssh(port, "echo still here").output == "still here\n");
}

TEST_CASE("ssh: silent endpoints take the connection and never answer, until the mode is off", "[ssh]") {
  SshHarness h;
  const auto port = h.make_vm("silent-vm");
  Modes modes = h.emulator->modes();
  modes.ssh_silent = true;
  h.emulator->set_modes(modes);
  // OpenSSH's ConnectTimeout also bounds the wait for the server's banner.
  auto args = h.ssh_args(port, h.key);
  std::replace(args.begin(), args.end(), std::string("ConnectTimeout=30"), std::string("ConnectTimeout=2"));
  args.push_back("true");
  const auto silent = finish(spawn(args));
  INFO(silent.output);
  CHECK(silent.exit_code == 255);
  CHECK(silent.output.find("banner exchange") != std::string::npos);
  CHECK(silent.output.find("timed out") != std::string::npos);
  modes.ssh_silent = false;
  h.emulator->set_modes(modes);
  CHECK(h.ssh(port, "echo answered").output == "answered\n");
}

TEST_CASE("ssh: the latency mode holds back each direction's bytes", "[ssh]") {
  SshHarness h;
  const auto port = h.make_vm("slow-vm");
  CHECK(h.ssh(port, "true").exit_code == 0);  // sshd started, caches warm
  Modes modes = h.emulator->modes();
  modes.latency = 1000ms;
  h.emulator->set_modes(modes);
  const auto begun = std::chrono::steady_clock::now();
  CHECK(h.ssh(port, "true").exit_code == 0);
  // A connection and one command take several round trips (banner, key exchange, new keys,
  // auth, channel, exec, exit), each costing the latency: a lower bound only.
  CHECK(std::chrono::steady_clock::now() - begun >= 4 * modes.latency);
}

TEST_CASE("ssh: no sshd process is left once the emulator stops", "[ssh]") {
  fs::path state;
  {
    SshHarness h;
    state = h.emulator->state_dir();
    const auto port = h.make_vm("last-vm");
    Child open_session = h.ssh_child(port, "echo started; sleep 60", h.key);
    std::string seen;
    char buffer[256];
    while (seen.find("started") == std::string::npos) {
      const ssize_t n = ::read(open_session.out, buffer, sizeof buffer);
      REQUIRE(n > 0);
      seen.append(buffer, static_cast<std::size_t>(n));
    }
    const auto serving = sshd_processes(state);
    CHECK(serving.size() >= 3);  // the listener, the connection's monitor and its session
    h.emulator.reset();
    CHECK(finish(open_session).exit_code == 255);
    for (const int pid : serving) CHECK(gone(pid));
    CHECK(run({"/usr/bin/pgrep", "-f", (state / "ssh" / "sshd_config").string()}).exit_code == 1);
  }
}
