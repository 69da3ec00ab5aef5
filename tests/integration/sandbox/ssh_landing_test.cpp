// SandboxBackend over SSH through the emulator's front (exe.dev's SSH proxy: every key gets in,
// the first key offered decides where the connection lands): only the account's keys are
// offered, and every connection proves it landed on the VM it names before any work runs there.
#include "ssh_fixture.hpp"

#include "support/scoped_variable.hpp"

#include <exedev/emulator/client_options.hpp>
#include <exedev/ssh/errors.hpp>
#include <exedev/testing/co_check.hpp>
#include <exedev/workspace/workspace.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <fstream>
#include <set>
#include <sstream>

using namespace sbx;
using exedev::workspace::Command;
using exedev::emulator::SshLandingDecision;

namespace {

std::string vm_name(const exedev::SandboxBackend& backend) { return exedev::VMTarget(*backend.ref()).name(); }

std::vector<std::string> lines_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Runs `command` on `backend` and keeps its result (a coroutine of its own, awaited beside another).
Task<void> run_into(std::shared_ptr<exedev::SandboxBackend> backend, Command command, exedev::workspace::CommandResult& result) {
  result = co_await backend->run(std::move(command), no_options());
}

// Appends `line` to `file` once `waiting` has returned.
Task<void> append_after(Task<void> waiting, std::filesystem::path file, std::string line) {
  co_await std::move(waiting);
  std::ofstream(file, std::ios::app) << line;
}

std::size_t landings_elsewhere(Fixture& f, const std::string& vm) {
  std::size_t count = 0;
  for (const auto& landing : f.emu().ssh_landings()) count += landing.decision != SshLandingDecision::vm || landing.vm != vm;
  return count;
}

}  // namespace

TEST_CASE("an agent holding an unregistered key first: every command and file lands on the named VM", "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip()) return;
  const support::Agent agent(s.dir, {s.stranger, s.registered});
  exedev::testing::run([&](Executor) -> Task<void> {
    auto o = ssh_options(f, exedev::Transport::ssh, s.registered, std::nullopt);
    o.ssh.private_key_file.reset();
    o.ssh.use_agent = true;
    auto backend = std::make_shared<exedev::SandboxBackend>(o);
    exedev::workspace::Workspace w(backend);
    for (int i = 0; i < 3; ++i) {
      const auto ran = co_await w.run(Command::shell("echo $EXEDEV_EMULATOR_VM_NAME"), no_options());
      CO_CHECK(ran.stdout_text == vm_name(*backend) + "\n");
    }
    co_await w.write_text("landed.txt", "here");
    CO_CHECK(co_await w.read_text("landed.txt") == "here");
    CHECK(backend->transport_in_use() == exedev::Transport::ssh);
    const std::string name = vm_name(*backend);
    CHECK_FALSE(f.emu().ssh_landings().empty());
    CHECK(landings_elsewhere(f, name) == 0);
    co_await backend->close();
  }, limits(180s));
}

TEST_CASE("a key of another account never runs anything on that account's VM", "[integration]") {
  SshSetup s;
  const auto other = support::make_key(s.dir, "other-account");
  auto options = s.emulator_options();
  options.second_ssh_authorized_keys.push_back(other.public_line());
  // Routing by the endpoint (a shard), not by a vm+ name, which the front would deny outright.
  options.modes.ssh_destination = exedev::emulator::SshDestination::vm_domain;
  Fixture f(options);
  if (f.skip()) return;
  exedev::testing::run([&](Executor ex) -> Task<void> {
    // The second account has a VM at the same endpoint (shard) as the first account's.
    exedev::Client second(ex, exedev::emulator::client_options(f.emu(), f.emu().second_token()));
    exedev::NewVMOptions made{.name = "other-" + random_suffix()};
    const auto theirs = co_await second.new_vm(made);

    // Knowing the account's keys, the backend does not offer the other account's key at all.
    auto o = ssh_options(f, exedev::Transport::ssh, other, std::nullopt);
    auto backend = std::make_shared<exedev::SandboxBackend>(o);
    auto refusing = backend->run(Command::shell("touch ~/ran-here"), no_options());
    const auto error = co_await capture(std::move(refusing));
    const auto refused = expect_error<exedev::SshAuthenticationError>(error);
    INFO(refused.what());
    CHECK(std::string(refused.what()).find("not a key of the exe.dev account") != std::string::npos);
    const std::string name = vm_name(*backend);
    const auto first_ref = *backend->ref();
    co_await backend->close();

    // A token that may not run whoami: the keys go in order, and the route check catches the
    // landing on the other account's VM before anything runs there.
    exedev::emulator::TokenSpec spec;
    spec.cmds = std::vector<std::string>{"ls", "new", "ssh", "rm", "resume", "help"};
    auto blind = ssh_options(f, exedev::Transport::ssh, other, first_ref);
    blind.client_options = exedev::emulator::client_options(f.emu(), f.emu().issue_token(spec));
    auto guarded = std::make_shared<exedev::SandboxBackend>(blind);
    auto misrouting = guarded->run(Command::shell("touch ~/ran-here"), no_options());
    const auto misrouted_error = co_await capture(std::move(misrouting));
    const auto misrouted = expect_error<exedev::SshMisrouteError>(misrouted_error);
    INFO(misrouted.what());
    CHECK(misrouted.code() == exedev::errc::ssh_misrouted);
    CHECK(misrouted.landing() == "a VM without the mark");
    CHECK(std::string(misrouted.what()).find(misrouted.key_fingerprint()) != std::string::npos);
    co_await guarded->close();

    // With automatic, the same backend uses /exec, which runs on the named VM.
    blind.transport = exedev::Transport::automatic;
    auto falling_back = std::make_shared<exedev::SandboxBackend>(blind);
    const auto ran = co_await falling_back->run(Command::shell("echo $EXEDEV_EMULATOR_VM_NAME"), no_options());
    CHECK(ran.stdout_text == name + "\n");
    CHECK(falling_back->transport_in_use() == exedev::Transport::exec);
    co_await falling_back->close();
    // Nothing ran on the other account's VM.
    const auto their_home = f.emu().vm(theirs.name)->home;
    CHECK_FALSE(std::filesystem::exists(their_home / "ran-here"));
    std::vector<std::string> names{theirs.name};
    co_await second.remove_vms(names);
  }, limits(180s));
}

TEST_CASE("three VMs by their own names record one known_hosts line, the proxy domain's", "[integration]") {
  SshSetup s;
  auto options = s.emulator_options();
  // `<vm>.<domain>` names, each at its shard's endpoint port: three host names, three ports.
  options.modes.ssh_destination = exedev::emulator::SshDestination::vm_domain;
  Fixture f(options);
  if (f.skip()) return;
  const auto home = s.dir / "home";
  std::filesystem::create_directories(home);
  const support::ScopedVariable fresh_home("HOME", home.string());
  const auto known_hosts = s.dir / "known_hosts";
  std::ofstream(known_hosts).close();  // empty
  std::set<std::string> names;
  exedev::testing::run([&](Executor) -> Task<void> {
    for (int i = 0; i < 3; ++i) {
      auto o = ssh_options(f, exedev::Transport::ssh, s.registered, std::nullopt);
      o.ssh.known_hosts_file = known_hosts;
      o.ssh.host_key_policy = exedev::HostKeyPolicy::accept_new;
      auto backend = std::make_shared<exedev::SandboxBackend>(o);
      const auto ran = co_await backend->run(Command::shell("echo $EXEDEV_EMULATOR_VM_NAME"), no_options());
      const std::string name = vm_name(*backend);
      CHECK(ran.stdout_text == name + "\n");
      CHECK(backend->transport_in_use() == exedev::Transport::ssh);
      names.insert(name);
      co_await backend->close();
    }
  }, limits(180s));
  CHECK(names.size() == 3);
  std::set<std::uint16_t> ports;
  for (const auto& landing : f.emu().ssh_landings()) {
    CHECK(landing.decision == SshLandingDecision::vm);
    ports.insert(landing.endpoint_port);
  }
  CHECK(ports.size() == 3);
  const auto lines = lines_of(known_hosts);
  INFO(lines.size() << " lines");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].starts_with("[*." + options.ssh_domain + "]:* ssh-rsa "));
  CHECK_FALSE(std::filesystem::exists(home / ".ssh"));
}

TEST_CASE("a stopped VM over SSH: the front's denial resumes it once, then the command runs over SSH", "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip()) return;
  std::string name;
  exedev::testing::run([&](Executor ex) -> Task<void> {
    auto first = std::make_shared<exedev::SandboxBackend>(ssh_options(f, exedev::Transport::exec, s.registered, std::nullopt));
    co_await first->working_dir();
    co_await first->close();
    name = vm_name(*first);
    auto c = f.client(ex);
    co_await c.pause_vm(name);
    co_await c.close();

    auto backend = std::make_shared<exedev::SandboxBackend>(ssh_options(f, exedev::Transport::ssh, s.registered, first->ref()));
    const auto ran = co_await backend->run(Command::shell("echo $EXEDEV_EMULATOR_VM_NAME"), no_options());
    CHECK(ran.stdout_text == name + "\n");
    CHECK(backend->transport_in_use() == exedev::Transport::ssh);
    CHECK(f.count("resume") == 1);
    co_await backend->close();
  }, limits(180s));
  // The front denied the stopped VM at authentication, as exe.dev's does, then let it in.
  std::size_t denied = 0;
  for (const auto& landing : f.emu().ssh_landings()) {
    denied += landing.decision == SshLandingDecision::denied && landing.message.find("is not running") != std::string::npos;
  }
  CHECK(denied == 1);
  CHECK(landings_elsewhere(f, name) == denied);
}

TEST_CASE("a VM whose name resolves late gets SSH, not /exec for good", "[integration]") {
  SshSetup s;
  auto options = s.emulator_options();
  options.modes.ssh_destination = exedev::emulator::SshDestination::vm_domain;
  options.ssh_domain = "exe.invalid";  // never resolved by any resolver (RFC 6761), unlike *.localhost
  Fixture f(options);
  if (f.skip()) return;
  // The test's own hosts file, which names the VM only once a connection failed to resolve it
  // (exe.dev's DNS can lag a new VM by up to 10 s).
  const auto hosts = s.dir / "hosts";
  std::ofstream(hosts) << "127.0.0.1 " << options.ssh_domain << "\n";
  LogLines log;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto first = std::make_shared<exedev::SandboxBackend>(ssh_options(f, exedev::Transport::exec, s.registered, std::nullopt));
    co_await first->working_dir();
    co_await first->close();
    const std::string name = vm_name(*first);
    const std::string host = name + "." + options.ssh_domain;

    auto o = ssh_options(f, exedev::Transport::automatic, s.registered, first->ref());
    o.ssh.hosts_file = hosts;
    o.logger = log.logger();
    auto backend = std::make_shared<exedev::SandboxBackend>(o);
    exedev::workspace::CommandResult ran;
    auto running = run_into(backend, Command::shell("echo $EXEDEV_EMULATOR_VM_NAME"), ran);
    const auto unresolved = [&] { return log.all().find("cannot resolve " + host) != std::string::npos; };
    auto naming = append_after(wait_until(unresolved, 60s), hosts, "127.0.0.1 " + host + "\n");
    using namespace asio::experimental::awaitable_operators;
    co_await (std::move(running) && std::move(naming));
    CHECK(ran.stdout_text == name + "\n");
    CHECK(backend->transport_in_use() == exedev::Transport::ssh);
    co_await backend->close();
  }, limits(180s));
  INFO(log.all());
  CHECK(log.all().find("using /exec") == std::string::npos);
  REQUIRE_FALSE(f.emu().ssh_landings().empty());
}
