// Process sessions over exe.dev's /exec (issue 42): every operation is one request, a read's
// long poll included. Counts come from the emulator's request records.
#include "fixture.hpp"

#include <exedev/workspace/sessions.hpp>

#include <algorithm>

namespace {

using namespace sbx;
namespace ws = exedev::workspace;

}  // namespace

TEST_CASE("every process-session operation is one /exec request", "[integration]") {
  Fixture f;
  if (f.skip("the emulator's request records")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = f.backend(std::nullopt, f.spec());
    co_await backend->working_dir();  // provisioned before counting
    const auto requests = [&] { return f.emu().commands().size(); };
    const auto costs = [&](const char* what, std::size_t before) {
      INFO(what);
      CHECK(requests() - before == 1);
    };
    // The emulator's VMs share this machine's /tmp, where sessions keep their state: a name of
    // this run's own.
    const auto name = "counted-" + random_suffix();
    ws::ProcessSessionSpec spec;
    spec.command = ws::Command::shell("read x; echo \"got $x\"; read y");
    spec.cwd = "/";
    auto before = requests();
    co_await backend->start_session(name, spec);
    costs("start_session", before);
    before = requests();
    const std::string line = "one\n";
    co_await backend->write_stdin(name, line);
    costs("write_stdin", before);
    before = requests();
    std::string seen;
    std::uint64_t offset = 0;
    // The long poll waits inside its one request until the echo and the program's line arrive.
    for (int round = 0; round < 10 && seen.find("got one\r\n") == std::string::npos; ++round) {
      before = requests();
      const auto out = co_await backend->read_output(name, offset, 4096, std::chrono::milliseconds(5000));
      costs("read_output", before);
      seen += out.data;
      offset = out.next_offset;
    }
    CHECK(seen.find("got one\r\n") != std::string::npos);
    before = requests();
    const ws::TerminalSize size{50, 132};
    co_await backend->resize_terminal(name, size);
    costs("resize_terminal", before);
    before = requests();
    const auto listed = co_await backend->list_sessions();
    costs("list_sessions", before);
    CHECK(std::any_of(listed.begin(), listed.end(), [&](const auto& info) { return info.name == name; }));
    before = requests();
    co_await backend->signal_session(name, "TERM");
    costs("signal_session", before);
    before = requests();
    const auto status = co_await backend->wait_session(name, std::chrono::milliseconds(10'000));
    costs("wait_session", before);
    CHECK(status.signal == std::optional<std::string>("TERM"));
    before = requests();
    co_await backend->remove_session(name);
    costs("remove_session", before);
    co_await backend->close();
  }, limits(120s));
}
