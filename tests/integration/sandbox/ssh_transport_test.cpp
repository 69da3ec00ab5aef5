// SandboxBackend over SSH against the emulator's real sshd: the same command contract as /exec,
// no /exec request after provisioning, the route's choices (fallbacks, refusals), and the fault
// cells of the SSH transport (dropped connection, paused and removed VMs, changed host key).
#include "ssh_fixture.hpp"

#include <exedev/testing/co_check.hpp>
#include <exedev/workspace/workspace.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>

using namespace sbx;
using exedev::workspace::Command;
using exedev::workspace::RunOptions;

namespace {

std::string random_bytes(std::size_t n) {
  std::mt19937_64 engine{42};
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(engine() & 0xFF);
  return out;
}

std::string proc_text(int pid, const std::string& file) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The VM's processes but the one the backend's connection keeps waiting for its next command
// (docs/ssh.md): a `/bin/sh` with no child, idle on its stdin.
std::vector<int> vm_processes_besides_the_waiting_shell(Fixture& f, const std::string& name) {
  auto pids = f.emu().vm_processes(name);
  const auto waiting = std::find_if(pids.begin(), pids.end(), [](int pid) {
    return proc_text(pid, "cmdline") == std::string("/bin/sh", 8) &&
           proc_text(pid, "task/" + std::to_string(pid) + "/children").empty();
  });
  if (waiting != pids.end()) pids.erase(waiting);
  return pids;
}

// Pauses VM `name` (pausing closes the VM's SSH connections, as on exe.dev).
Task<void> pause(Fixture& f, const std::string& name) {
  auto c = f.client(co_await asio::this_coro::executor);
  co_await c.pause_vm(name);
  co_await c.close();
}

// Pauses VM `name` once `condition` holds.
Task<std::exception_ptr> pause_when(Fixture& f, std::string name, std::function<bool()> condition) {
  co_await wait_until(std::move(condition), 60s);
  co_await pause(f, name);
  co_return nullptr;
}

}  // namespace

TEST_CASE("over SSH, commands keep /exec's contract and send no /exec request after provisioning", "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip()) return;
  REQUIRE_FALSE(f.emu().ssh_known_hosts().empty());
  exedev::testing::run([&](Executor) -> Task<void> {
    auto o = ssh_options(f, exedev::Transport::ssh, s.registered, std::nullopt);
    o.env["FROM_BACKEND"] = "backend's value";
    auto backend = std::make_shared<exedev::SandboxBackend>(o);
    exedev::workspace::Workspace w(backend);
    const auto working_dir = co_await w.working_dir();
    CHECK(backend->transport_in_use() == exedev::Transport::ssh);
    f.emu().clear_commands();

    RunOptions call;
    call.env["FROM_CALL"] = "it's \"quoted\"";
    const auto result = co_await w.run(sh_c("printf '%s|%s|%s' \"$FROM_BACKEND\" \"$FROM_CALL\" \"$PWD\"; printf err >&2; exit 3"), call);
    CHECK(result.exit_code == 3);
    CHECK(result.stdout_text == "backend's value|it's \"quoted\"|" + working_dir);
    CHECK(result.stderr_text == "err");
    const auto killed = co_await w.run(sh_c("kill -s TERM $$"));
    CHECK(killed.exit_code == 128 + 15);
    const auto missing = co_await w.run(Command::argv({"no-such-program-exedev"}));
    CHECK(missing.exit_code == 127);
    const auto big = co_await w.run(sh_c("head -c 3000000 /dev/zero | tr '\\0' x"));
    CHECK(big.stdout_text == std::string(3000000, 'x'));

    // Files: a small and an 8 MiB random file round-trip exactly (the large one over SFTP).
    const auto data = random_bytes(8 * 1024 * 1024);
    co_await w.write_bytes("big.bin", data);
    co_await w.write_text("dir/small.txt", "hello");
    const auto back = co_await w.read_bytes("big.bin");
    CHECK(back == data);
    CO_CHECK(co_await w.read_text("dir/small.txt") == "hello");
    const auto entries = co_await w.list_dir(".");
    CHECK(entries.size() == 2);
    co_await w.remove("dir");
    CO_CHECK_FALSE(co_await w.exists("dir"));
    // (Closing the client may then clean up provisioning's own run records on /exec.)
    for (const auto& command : f.emu().commands()) UNSCOPED_INFO("an /exec request: " << command.command);
    CHECK(f.emu().commands().empty());
    co_await backend->close();
  }, limits(180s));
}

TEST_CASE("over SSH, a file written over SFTP has the mode, place and content the scripts give", "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip()) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = std::make_shared<exedev::SandboxBackend>(ssh_options(f, exedev::Transport::ssh, s.registered, std::nullopt));
    exedev::workspace::Workspace w(backend);
    const auto data = random_bytes(3 * 1024 * 1024);  // past one chunk: the data goes over SFTP
    const auto modes = [&](std::string paths) -> Task<std::string> {
      const auto r = co_await w.run(sh_c("stat -c %a " + paths));
      co_return r.stdout_text;
    };
    co_await w.run(sh_c("mkdir real && ln -s real linked && touch made-by-the-shell"));
    // New files, beside the path as given, through a symlinked directory, under new parents:
    // each has the mode a file the shell makes has (the upload itself makes 0600).
    co_await w.write_bytes("new.bin", data);
    co_await w.write_bytes("linked/deep.bin", data);
    co_await w.write_bytes("new/parents/file.bin", data);
    const auto shell_mode = co_await modes("made-by-the-shell");
    const auto new_modes = co_await modes("new.bin real/deep.bin new/parents/file.bin");
    CHECK(new_modes == shell_mode + shell_mode + shell_mode);
    const auto deep = co_await w.read_bytes("real/deep.bin");
    CHECK(deep == data);
    const auto under_new_parents = co_await w.read_bytes("new/parents/file.bin");
    CHECK(under_new_parents == data);
    // An existing file keeps its own mode.
    co_await w.run(sh_c("chmod 751 new.bin"));
    co_await w.write_bytes("new.bin", data + "more");
    const auto kept_mode = co_await modes("new.bin");
    CHECK(kept_mode == "751\n");
    const auto rewritten = co_await w.read_bytes("new.bin");
    CHECK(rewritten == data + "more");
    // No temp file is left anywhere.
    const auto temps = co_await w.run(sh_c("find . -name '.exedev-*' | wc -l"));
    CHECK(temps.stdout_text == "0\n");
    // With SFTP open, a FIFO's read is refused by the script before any SFTP open (which would
    // block sftp-server until a writer came), and SFTP serves the next read.
    CHECK(backend->file_transfer_open());
    co_await w.run(sh_c("mkfifo pipe"));
    const auto refused = co_await capture(w.read_bytes("pipe"));
    CHECK(refused);
    const auto after_fifo = co_await w.read_bytes("new.bin");
    CHECK(after_fifo == data + "more");
    co_await backend->close();
  }, limits(180s));
}

TEST_CASE("over SSH, the login environment is the one /exec gives", "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip()) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto over_ssh = std::make_shared<exedev::SandboxBackend>(ssh_options(f, exedev::Transport::ssh, s.registered, std::nullopt));
    // ($0 differs: /exec runs the command from a file in its run record, SSH with -c.)
    const std::string probe = "echo \"$HOME|$SHELL|$PATH|$USER|$LOGNAME|$LANG|$(pwd)\"; umask; ulimit -n";
    const auto via_ssh = co_await over_ssh->run(Command::shell(probe), no_options());
    auto over_exec = std::make_shared<exedev::SandboxBackend>(
        ssh_options(f, exedev::Transport::exec, s.registered, over_ssh->ref()));
    const auto via_exec = co_await over_exec->run(Command::shell(probe), no_options());
    CHECK(via_ssh.exit_code == 0);
    CHECK(via_ssh.stdout_text == via_exec.stdout_text);
    CHECK(via_ssh.stderr_text == via_exec.stderr_text);
    CHECK(over_exec->transport_in_use() == exedev::Transport::exec);
    co_await over_ssh->close();
    co_await over_exec->close();
  }, limits(120s));
}

TEST_CASE("over SSH, a timeout, a cancellation and the output limit stop the whole process tree", "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip()) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = std::make_shared<exedev::SandboxBackend>(ssh_options(f, exedev::Transport::ssh, s.registered, std::nullopt));
    co_await backend->working_dir();
    const auto name = backend->ref()->id;
    const auto quiet = [&] { return vm_processes_besides_the_waiting_shell(f, name).empty(); };
    co_await wait_until(quiet, 30s);

    RunOptions timed;
    timed.timeout = exedev::workspace::Seconds(1);
    auto timing_out = backend->run(sh_c("sleep 1000 & sleep 1000; echo never"), timed);
    const auto timeout_error = co_await capture(std::move(timing_out));
    expect_error<exedev::workspace::WorkspaceTimeoutError>(timeout_error);
    co_await wait_until(quiet, 30s);

    bool started = false;
    RunOptions live;
    live.on_stdout = [&](std::string_view bytes) { started = started || bytes.find("started") != std::string_view::npos; };
    auto cancelled = cancel_when(backend->run(sh_c("echo started; sleep 1000 & sleep 1000"), live), [&] { return started; });
    const auto cancel_error = co_await std::move(cancelled);
    CHECK(is_cancellation(cancel_error));
    co_await wait_until(quiet, 30s);

    auto flooding = backend->run(sh_c("yes exedev"), no_options());
    const auto flood_error = co_await capture(std::move(flooding));
    const auto limit = expect_error<exedev::workspace::WorkspaceOutputLimitError>(flood_error);
    CHECK(limit.output().stdout_data.size() <= exedev::max_command_output_bytes);
    co_await wait_until(quiet, 30s);
    co_await backend->close();
  }, limits(180s));
}

TEST_CASE("auto uses /exec, and says why, when the key is not registered", "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip()) return;
  LogLines log;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto o = ssh_options(f, exedev::Transport::automatic, s.stranger, std::nullopt);
    o.logger = log.logger();
    auto backend = std::make_shared<exedev::SandboxBackend>(o);
    const auto result = co_await backend->run(Command::shell("echo fine"), no_options());
    CHECK(result.stdout_text == "fine\n");
    CHECK(backend->transport_in_use() == exedev::Transport::exec);
    co_await backend->close();

    // The same key with transport ssh: a clear error instead.
    auto strict = std::make_shared<exedev::SandboxBackend>(ssh_options(f, exedev::Transport::ssh, s.stranger, backend->ref()));
    auto refusing = strict->run(Command::shell("echo never"), no_options());
    const auto error = co_await capture(std::move(refusing));
    const auto auth = expect_error<exedev::SshAuthenticationError>(error);
    INFO(auth.what());
    CHECK(auth.code() == exedev::errc::ssh_authentication_failed);
    co_await strict->close();
  }, limits(120s));
  INFO(log.all());
  REQUIRE(log.lines.size() == 1);
  CHECK(log.lines[0].find("/exec") != std::string::npos);
  CHECK(log.lines[0].find("SSH authentication") != std::string::npos);
}

TEST_CASE("a changed host key is refused with both fingerprints, whatever the transport setting", "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip()) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto first = std::make_shared<exedev::SandboxBackend>(ssh_options(f, exedev::Transport::exec, s.registered, std::nullopt));
    co_await first->working_dir();
    co_await first->close();
    // known_hosts that records another key for every endpoint the emulator's file names.
    const auto impostor = support::make_key(s.dir, "impostor", "", "rsa");  // the front's key type
    std::ifstream real(f.emu().ssh_known_hosts());
    std::ofstream forged(s.dir / "known_hosts");
    std::string line;
    std::string impostor_key = impostor.public_line();
    impostor_key = impostor_key.substr(0, impostor_key.rfind(' '));
    while (std::getline(real, line)) forged << line.substr(0, line.find(' ')) << " " << impostor_key << "\n";
    forged.close();
    for (const auto transport : {exedev::Transport::automatic, exedev::Transport::ssh}) {
      auto o = ssh_options(f, transport, s.registered, first->ref());
      o.ssh.known_hosts_file = s.dir / "known_hosts";
      o.ssh.host_key_policy = exedev::HostKeyPolicy::accept_new;
      auto backend = std::make_shared<exedev::SandboxBackend>(o);
      auto running = backend->run(Command::shell("echo never"), no_options());
      const auto error = co_await capture(std::move(running));
      const auto refused = expect_error<exedev::HostKeyError>(error);
      REQUIRE(refused.recorded_fingerprint());
      CHECK(*refused.recorded_fingerprint() != refused.offered_fingerprint());
      const std::string message = refused.what();
      CHECK(message.find(refused.offered_fingerprint()) != std::string::npos);
      CHECK(message.find(*refused.recorded_fingerprint()) != std::string::npos);
      co_await backend->close();
    }
  }, limits(120s));
}

TEST_CASE("over SSH, a dropped connection leaves a command's outcome unknown and never runs it again", "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip()) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = std::make_shared<exedev::SandboxBackend>(ssh_options(f, exedev::Transport::ssh, s.registered, std::nullopt));
    co_await backend->working_dir();
    const auto name = backend->ref()->id;
    bool started = false;
    RunOptions live;
    live.on_stdout = [&](std::string_view) { started = true; };
    auto running = backend->run(sh_c("echo x >> runs.txt; echo started; sleep 1000"), live);
    auto pausing = pause_when(f, name, [&] { return started; });
    using namespace asio::experimental::awaitable_operators;
    auto outcome = co_await (capture(std::move(running)) && std::move(pausing));
    const auto unknown = expect_error<exedev::CommandOutcomeUnknownError>(std::get<0>(outcome));
    CHECK(unknown.output().stdout_data == "started\n");
    // The next command resumes the paused VM once and runs; the first never ran again.
    const auto count = co_await backend->run(Command::shell("wc -l < runs.txt"), no_options());
    CHECK(count.stdout_text == "1\n");
    CHECK(f.count("resume") == 1);
    co_await backend->close();
  }, limits(180s));
}

TEST_CASE("over SSH, a removed VM is unavailable", "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip()) return;
  exedev::testing::run([&](Executor ex) -> Task<void> {
    auto backend = std::make_shared<exedev::SandboxBackend>(ssh_options(f, exedev::Transport::ssh, s.registered, std::nullopt));
    co_await backend->working_dir();
    auto c = f.client(ex);
    co_await c.remove_vms(one(backend->ref()->id));
    co_await c.close();
    auto running = backend->run(Command::shell("echo never"), no_options());
    const auto error = co_await capture(std::move(running));
    expect_error<exedev::VMNotFoundError>(error);
    co_await backend->close();
  }, limits(120s));
}

// The fault cell of SFTP (docs/sandbox.md, "Recovery over SSH"): an upload whose connection
// breaks mid-way recovers as an idempotent script does (a fresh connection; the paused VM
// resumed once; the upload again, whole), where a command that may have run would not run again.
TEST_CASE("over SSH, an SFTP write whose connection breaks mid-way recovers as a command does", "[integration][faults]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip()) return;
  const auto data = random_bytes(48 * 1024 * 1024);
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = std::make_shared<exedev::SandboxBackend>(ssh_options(f, exedev::Transport::ssh, s.registered, std::nullopt));
    exedev::workspace::Workspace w(backend);
    const auto dir = co_await w.working_dir();
    co_await w.write_text("file.bin", "old content");
    const auto name = backend->ref()->id;
    // The bytes the upload has put in its temp file beside the target; under way once there are some.
    const auto uploaded = [&] {
      std::error_code ignored;
      std::uintmax_t size = 0;
      for (const auto& entry : std::filesystem::directory_iterator(dir, ignored)) {
        const auto file = entry.path().filename().string();
        if (file.starts_with(".exedev-") && entry.is_regular_file(ignored)) size = std::max(size, entry.file_size(ignored));
      }
      return size;
    };
    const auto uploading = [&] { return uploaded() > 0; };
    // However busy the machine, the pause must find the upload under way (not the commit after
    // it, a command that may have run, which is not sent again): so the VM's processes, the
    // sftp-server writing the temp file among them, stop first, as the pause then stops them.
    std::uintmax_t uploaded_when_cut = 0;
    const auto stop_then_pause = [&]() -> Task<std::exception_ptr> {
      co_await wait_until(uploading, 60s);
      REQUIRE(f.emu().stop_vm_processes(name) > 0);
      uploaded_when_cut = uploaded();
      co_await pause(f, name);  // closes the VM's SSH connections
      co_return nullptr;
    };
    auto writing = w.write_bytes("file.bin", data);
    auto pausing = stop_then_pause();
    using namespace asio::experimental::awaitable_operators;
    auto outcome = co_await (capture(std::move(writing)) && std::move(pausing));
    INFO("the write ended with " << describe(std::get<0>(outcome)));
    CHECK_FALSE(std::get<0>(outcome));  // recovered: the write went through
    CHECK(uploaded_when_cut > 0);
    CHECK(uploaded_when_cut < data.size());
    CHECK(f.count("resume") == 1);
    CHECK(backend->transport_in_use() == exedev::Transport::ssh);
    const auto now = co_await w.read_bytes("file.bin");
    CHECK(now == data);
    const auto temps = co_await w.run(sh_c("find . -name '.exedev-*' | wc -l"));
    CHECK(temps.stdout_text == "0\n");
    co_await backend->close();
  }, limits(300s));
}

TEST_CASE("an SSH endpoint that accepts but never answers: auto falls back to /exec, ssh fails clearly", "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip("the emulator's silent SSH endpoints")) return;
  LogLines log;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto first = std::make_shared<exedev::SandboxBackend>(ssh_options(f, exedev::Transport::exec, s.registered, std::nullopt));
    co_await first->working_dir();
    co_await first->close();
    // From now on the endpoint takes the TCP connection and says nothing, as exe.dev's edge does
    // above its connection rate: only the handshake's timeout ends the wait.
    auto modes = f.emu().modes();
    modes.ssh_silent = true;
    f.emu().set_modes(modes);

    auto o = ssh_options(f, exedev::Transport::automatic, s.registered, first->ref());
    o.ssh.connect_timeout = 2s;
    o.ssh.handshake_timeout = 2s;
    o.logger = log.logger();
    auto backend = std::make_shared<exedev::SandboxBackend>(o);
    const auto result = co_await backend->run(Command::shell("echo fine"), no_options());
    CHECK(result.exit_code == 0);
    CHECK(result.stdout_text == "fine\n");
    CHECK(backend->transport_in_use() == exedev::Transport::exec);
    co_await backend->close();

    auto strict_options = ssh_options(f, exedev::Transport::ssh, s.registered, first->ref());
    strict_options.ssh.connect_timeout = 2s;
    strict_options.ssh.handshake_timeout = 2s;
    auto strict = std::make_shared<exedev::SandboxBackend>(strict_options);
    auto refusing = strict->run(Command::shell("echo never"), no_options());
    const auto error = co_await capture(std::move(refusing));
    const auto failed = expect_error<exedev::ConnectionError>(error);
    const std::string message = failed.what();
    INFO(message);
    CHECK(failed.code() == exedev::errc::connection_failed);
    CHECK_FALSE(failed.may_have_run());
    CHECK(message.find("handshake") != std::string::npos);
    CHECK(message.find("timed out") != std::string::npos);
    CHECK_FALSE(strict->transport_in_use() == exedev::Transport::exec);
    co_await strict->close();
  }, limits(120s));
  INFO(log.all());
  REQUIRE(log.lines.size() == 1);
  CHECK(log.lines[0].find("using /exec") != std::string::npos);
  CHECK(log.lines[0].find("did not answer") != std::string::npos);
  CHECK(log.lines[0].find("timed out") != std::string::npos);
}

TEST_CASE("backends sharing an SshEndpointMemory wait out a silent endpoint once between them", "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip("the emulator's silent SSH endpoints")) return;
  LogLines first_log;
  LogLines second_log;
  LogLines apart_log;
  exedev::testing::run([&](Executor) -> Task<void> {
    std::vector<exedev::workspace::WorkspaceRef> refs;
    for (int i = 0; i < 3; ++i) {
      auto making = std::make_shared<exedev::SandboxBackend>(ssh_options(f, exedev::Transport::exec, s.registered, std::nullopt));
      co_await making->working_dir();
      refs.push_back(*making->ref());
      co_await making->close();
    }
    auto modes = f.emu().modes();
    modes.ssh_silent = true;
    f.emu().set_modes(modes);
    // Three VMs behind one endpoint (exe.dev's name routing): two backends share a memory, the
    // third has its own.
    const exedev::SshEndpointMemory shared;
    const exedev::SshEndpointMemory apart;
    const std::vector<std::pair<LogLines*, exedev::SshEndpointMemory>> backends{
        {&first_log, shared}, {&second_log, shared}, {&apart_log, apart}};
    for (std::size_t i = 0; i < backends.size(); ++i) {
      auto o = ssh_options(f, exedev::Transport::automatic, s.registered, refs[i]);
      o.ssh.connect_timeout = 2s;
      o.ssh.handshake_timeout = 2s;
      o.ssh_endpoints = backends[i].second;
      o.logger = backends[i].first->logger();
      auto backend = std::make_shared<exedev::SandboxBackend>(o);
      const auto result = co_await backend->run(Command::shell("echo fine"), no_options());
      CHECK(result.stdout_text == "fine\n");
      CHECK(backend->transport_in_use() == exedev::Transport::exec);
      co_await backend->close();
    }
  }, limits(120s));
  INFO(first_log.all() << second_log.all() << apart_log.all());
  // The first waited out the handshake; the second did not try; the one apart waited again.
  CHECK(first_log.all().find("handshake") != std::string::npos);
  CHECK(second_log.all().find("not tried again") != std::string::npos);
  CHECK(second_log.all().find("handshake") == std::string::npos);
  CHECK(apart_log.all().find("handshake") != std::string::npos);
}

TEST_CASE("an sshd that refuses SFTP: files travel through exec channels, exactly, with no /exec request", "[integration]") {
  SshSetup s;
  auto emulator_options = s.emulator_options();
  emulator_options.ssh_sftp = false;
  Fixture f(emulator_options);
  if (f.skip("the emulator's SSH endpoints without SFTP")) return;
  LogLines log;
  // Several write chunks; read whole on its script's channel (up to max_command_output_bytes).
  const auto large = random_bytes(3 * 1024 * 1024 + 12345);
  // Past that, read in pages.
  const auto largest = random_bytes(exedev::max_command_output_bytes + 12345);
  exedev::testing::run([&](Executor) -> Task<void> {
    auto o = ssh_options(f, exedev::Transport::ssh, s.registered, std::nullopt);
    o.logger = log.logger();
    auto backend = std::make_shared<exedev::SandboxBackend>(o);
    exedev::workspace::Workspace w(backend);
    co_await w.working_dir();
    CHECK(backend->transport_in_use() == exedev::Transport::ssh);
    f.emu().clear_commands();

    CO_CHECK_FALSE(co_await backend->file_transfer_available());
    co_await w.write_text("notes/small.txt", "small\n");
    CO_CHECK(co_await w.read_text("notes/small.txt") == "small\n");
    co_await w.write_bytes("large.bin", large);
    const auto back = co_await w.read_bytes("large.bin");
    CHECK(back.size() == large.size());
    CHECK(back == large);
    co_await w.write_bytes("largest.bin", largest);
    CO_CHECK(co_await w.read_bytes("largest.bin") == largest);
    // Overwritten by a smaller file: nothing of the larger one is left.
    const auto smaller = random_bytes(1500 * 1024);
    co_await w.write_bytes("large.bin", smaller);
    CO_CHECK(co_await w.read_bytes("large.bin") == smaller);
    const auto entry = co_await w.stat("large.bin");
    CHECK(entry.size == smaller.size());
    for (const auto& command : f.emu().commands()) UNSCOPED_INFO("an /exec request: " << command.command);
    CHECK(f.emu().commands().empty());
    co_await backend->close();
  }, limits(300s));
  INFO(log.all());
  bool noted = false;
  for (const auto& line : log.lines) noted = noted || line.find("serves no SFTP") != std::string::npos;
  CHECK(noted);
}
