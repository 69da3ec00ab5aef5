// Process sessions attached over SSH (issue 42): the attached stream is one session channel, and
// an attached session's writes and reads need no other. With one session slot, that slot held
// by the stream, an operation that went as a command would wait for a slot until the route's
// recovery gave up on the connection and made another (a second landing at the emulator's
// front); detached, the slot is free again and commands run on the one connection.
#include "ssh_fixture.hpp"

#include <exedev/testing/co_check.hpp>
#include <exedev/workspace/sessions.hpp>

#include <algorithm>

using namespace sbx;
namespace ws = exedev::workspace;

namespace {

/// A backend over SSH whose connection has `max_sessions` session slots.
std::shared_ptr<exedev::SandboxBackend> ssh_backend(Fixture& f, const SshSetup& s, std::size_t max_sessions) {
  auto options = ssh_options(f, exedev::Transport::ssh, s.registered, std::nullopt);
  options.ssh.max_sessions = max_sessions;
  return std::make_shared<exedev::SandboxBackend>(std::move(options));
}

/// `cat` on a terminal.
ws::ProcessSessionSpec cat_spec() {
  ws::ProcessSessionSpec spec;
  spec.command = ws::Command::argv({"cat"});
  return spec;
}

/// Writes `text` and a newline to `cat` on a terminal, then reads from `offset` until its echo
/// and cat's copy have come (each read must bring bytes within its wait); moves `offset` on.
Task<void> echo_trip(exedev::SandboxBackend& backend, const std::string& name, std::uint64_t& offset, std::string text) {
  const auto line = text + "\n";
  co_await backend.write_stdin(name, line);
  const auto twice = text + "\r\n" + text + "\r\n";
  std::string seen;
  while (seen.find(twice) == std::string::npos) {
    const auto out = co_await backend.read_output(name, offset, 4096, std::chrono::seconds(10));
    REQUIRE_FALSE(out.data.empty());
    CHECK(out.offset == offset);
    seen += out.data;
    offset = out.next_offset;
  }
}

}  // namespace

TEST_CASE("over SSH, an attached session's writes and reads take no channel of their own; detaching frees its slot",
          "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip("the emulator's sshd")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = ssh_backend(f, s, 1);
    const auto name = "attached-" + random_suffix();
    const auto spec = cat_spec();
    co_await backend->start_session(name, spec);
    CO_REQUIRE(co_await backend->attach_session(name, 0));
    CHECK(backend->session_attached(name));
    const auto landings = f.emu().ssh_landings().size();
    std::uint64_t offset = 0;
    for (int trip = 0; trip < 20; ++trip) {
      const auto text = "trip " + std::to_string(trip);
      co_await echo_trip(*backend, name, offset, text);
    }
    CHECK(backend->session_attached(name));
    CHECK(f.emu().ssh_landings().size() == landings);  // one connection all along
    co_await backend->detach_session(name);
    CHECK_FALSE(backend->session_attached(name));
    // The slot is free: the command-path operations run.
    const std::string after = "after\n";
    co_await backend->write_stdin(name, after);
    const auto listed = co_await backend->list_sessions();
    CHECK(std::any_of(listed.begin(), listed.end(), [&](const auto& info) { return info.name == name; }));
    co_await backend->remove_session(name);
    CHECK(f.emu().ssh_landings().size() == landings);
    co_await backend->close();
  }, limits(120s));
}

TEST_CASE("over SSH, at most half of the session slots are attached streams; detaching one lets another attach",
          "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip("the emulator's sshd")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = ssh_backend(f, s, 4);
    const auto spec = cat_spec();
    std::vector<std::string> names;
    for (int i = 0; i < 3; ++i) {
      names.push_back("bounded-" + std::to_string(i) + "-" + random_suffix());
      co_await backend->start_session(names.back(), spec);
    }
    CO_CHECK(co_await backend->attach_session(names[0], 0));
    CO_CHECK(co_await backend->attach_session(names[1], 0));
    CO_CHECK_FALSE(co_await backend->attach_session(names[2], 0));  // 2 of 4: the bound
    // Attaching again where the reads are is no new stream, so the bound does not refuse it.
    CO_CHECK(co_await backend->attach_session(names[1], 0));
    // Commands still find their slots while two streams hold theirs.
    const auto listed = co_await backend->list_sessions();
    CHECK(listed.size() >= 3);
    co_await backend->detach_session(names[0]);
    CO_CHECK(co_await backend->attach_session(names[2], 0));
    std::uint64_t offset = 0;
    const std::string text = "through the stream";
    co_await echo_trip(*backend, names[2], offset, text);
    // close() detaches what is attached; the sessions run on, and the backend reconnects for them.
    co_await backend->close();
    CHECK_FALSE(backend->session_attached(names[1]));
    CHECK_FALSE(backend->session_attached(names[2]));
    for (const auto& name : names) co_await backend->remove_session(name);
    co_await backend->close();
  }, limits(120s));
}

TEST_CASE("over /exec, attach_session says no and the operations go on as requests", "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip("the emulator's sshd")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = std::make_shared<exedev::SandboxBackend>(ssh_options(f, exedev::Transport::exec, s.registered, std::nullopt));
    const auto name = "unattached-" + random_suffix();
    const auto spec = cat_spec();
    co_await backend->start_session(name, spec);
    const auto requests = f.emu().commands().size();
    CO_CHECK_FALSE(co_await backend->attach_session(name, 0));
    CHECK(f.emu().commands().size() == requests);  // asking cost no request
    CHECK_FALSE(backend->session_attached(name));
    const std::string line = "x\n";
    co_await backend->write_stdin(name, line);
    CHECK(f.emu().commands().size() == requests + 1);
    co_await backend->remove_session(name);
    co_await backend->close();
  }, limits(120s));
}
