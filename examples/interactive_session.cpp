// interactive_session: an agent keeps a Python REPL in its VM between steps, against an
// in-process emulator. This process starts `python3 -i` as the named process session "repl",
// sends three inputs and reads the answers, sends a fourth whose answer comes later, and
// detaches (its run ends, its client closes). A second process, this program run again with
// --attach, finds the session by name on the same VM, reads the answer the REPL printed while no
// one was attached, exits the REPL and checks its exit status. What the VM prints is shown inert
// (control characters escaped), never raw to the terminal.
//
// Against real exe.dev: drop the emulator and the client options below; the client reads
// EXE_TOKEN.
#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/exedev.hpp>
#include <exedev/workspace/sessions.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace ws = exedev::workspace;
using namespace std::chrono_literals;

namespace {

constexpr const char* session_name = "repl";
constexpr const char* detached_answer = "written while detached";

/// Each line of `text` (VM output) shown indented, printable: a VM's bytes never reach the
/// terminal raw (ws::printable_text).
void show(const std::string& text) {
  const std::string printable = ws::printable_text(text);
  std::size_t start = 0;
  while (start < printable.size()) {
    auto end = printable.find('\n', start);
    if (end == std::string::npos) end = printable.size();
    std::cout << "    | " << printable.substr(start, end - start) << "\n";
    start = end + 1;
  }
}

/// Reads the session from `offset` until its output contains `needle` (each read waits up to
/// 5 s for the REPL to print); returns what was read and moves `offset` past it.
exedev::Task<std::string> read_until(ws::Workspace& workspace, std::uint64_t& offset, std::string needle) {
  std::string seen;
  for (int reads = 0; reads < 12; ++reads) {
    const auto output = co_await workspace.read_output(session_name, offset, 64 * 1024, 5000ms);
    offset = output.next_offset;
    seen += output.data;
    if (seen.find(needle) != std::string::npos) co_return seen;
    if (output.complete) break;
  }
  throw std::runtime_error("the REPL did not print the expected answer");
}

/// Attaches the session from `offset` where the route has command streams (SSH: one channel
/// carries the writes and the output), and says which way the operations go.
exedev::Task<void> attach(ws::Workspace& workspace, std::uint64_t offset) {
  const bool attached = co_await workspace.attach_session(session_name, offset);
  std::cout << (attached ? "  (attached: writes and reads travel on one stream)\n"
                         : "  (not attached: this route has no command streams; one request per operation)\n");
}

/// Types `line` into the REPL and shows what it printed until `answer` appeared.
exedev::Task<void> ask(ws::Workspace& workspace, std::uint64_t& offset, std::string line, std::string answer) {
  std::cout << "  >>> " << line << "\n";
  co_await workspace.write_stdin(session_name, line + "\n");
  show(co_await read_until(workspace, offset, answer));
}

/// The first process: starts the REPL, three inputs, a fourth answered after it detached.
exedev::Task<std::string> first_process(const exedev::Sandbox& sandbox) {
  std::string saved_ref;
  co_await sandbox.with_run(std::nullopt, [&](exedev::SandboxRun& run) -> exedev::Task<void> {
    auto& workspace = *run.workspace;
    ws::ProcessSessionSpec spec;
    spec.command = ws::Command::shell("python3 -i -q");
    spec.pty = true;
    co_await workspace.start_session(session_name, spec);
    std::cout << "process " << ::getpid() << " started session '" << session_name << "'\n";
    co_await attach(workspace, 0);
    std::uint64_t offset = 0;
    co_await read_until(workspace, offset, ">>> ");
    co_await ask(workspace, offset, "6 * 7", "42");
    co_await ask(workspace, offset, "squares = [n * n for n in range(5)]; squares", "[0, 1, 4, 9, 16]");
    co_await ask(workspace, offset, "sum(squares) + len(squares)", "35");
    // The answer comes after this process has gone: the REPL keeps running under its holder.
    const std::string later = "import time; time.sleep(2); print('" + std::string(detached_answer) + "')";
    co_await workspace.write_stdin(session_name, later + "\n");
    std::cout << "  >>> " << later << "\n  (detaching)\n";
    co_await workspace.detach_session(session_name);
    saved_ref = run.backend->ref()->to_json();
  });
  co_return saved_ref;
}

/// The second process: the same VM by ref, the session by name.
exedev::Task<void> second_process(const exedev::Sandbox& sandbox, std::string saved_ref) {
  const auto ref = ws::WorkspaceRef::from_json(saved_ref);
  co_await sandbox.with_run(ref, [&](exedev::SandboxRun& run) -> exedev::Task<void> {
    auto& workspace = *run.workspace;
    bool found = false;
    for (const auto& session : co_await workspace.list_sessions()) {
      found = found || (session.name == session_name && session.state == ws::SessionState::running);
    }
    if (!found) throw std::runtime_error("the REPL's session is not running");
    std::cout << "process " << ::getpid() << " re-attached to session '" << session_name << "'\n";
    // From the start: everything the REPL printed, the answer given while detached included.
    co_await attach(workspace, 0);
    std::uint64_t offset = 0;
    show(co_await read_until(workspace, offset, std::string(detached_answer) + "\r\n>>> "));
    co_await workspace.write_stdin(session_name, "exit(3)\n");
    const auto exit = co_await workspace.wait_session(session_name, 10s);
    std::cout << "the REPL exited with status " << exit.code << "\n";
    co_await workspace.remove_session(session_name);
    if (exit.code != 3 || exit.signal) throw std::runtime_error("the REPL's exit status is not 3");
  });
}

void run(std::function<exedev::Task<void>()> body) {
  asio::io_context io;
  std::exception_ptr failure;
  asio::co_spawn(io, body(), [&](std::exception_ptr e) { failure = e; });
  io.run();
  if (failure) std::rethrow_exception(failure);
}

exedev::SandboxOptions sandbox_options(exedev::ClientOptions client) {
  exedev::SandboxOptions options;
  options.spec = exedev::VMSpec({.tags = {"examples"}, .working_dir = "app"});
  options.scope_tag = "agents";
  options.client_options = std::move(client);
  return options;
}

/// Runs this program again as the second process; true when it succeeded. The token travels in
/// its environment (EXE_TOKEN, where the client reads it), never on its command line.
bool run_second_process(const char* self, const exedev::emulator::Emulator& emulator, const std::string& ref) {
  ::setenv("EXE_TOKEN", emulator.token().c_str(), 1);
  const auto url = emulator.url();
  const auto ca_file = emulator.ca_file().string();
  std::cout.flush();  // this process's lines before the child's
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    ::execl(self, self, "--attach", url.c_str(), ca_file.c_str(), ref.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  if (::waitpid(child, &status, 0) != child) throw std::runtime_error("waitpid failed");
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 5 && std::string(argv[1]) == "--attach") {
      exedev::ClientOptions client;
      client.endpoint = argv[2];
      client.ca_file = argv[3];
      const exedev::Sandbox sandbox(sandbox_options(client));
      const std::string ref = argv[4];
      run([&] { return second_process(sandbox, ref); });
      return 0;
    }
    exedev::emulator::Emulator emulator;
    const exedev::Sandbox sandbox(sandbox_options(exedev::emulator::client_options(emulator)));
    std::string ref;
    run([&]() -> exedev::Task<void> { ref = co_await first_process(sandbox); });
    const bool attached = run_second_process(argv[0], emulator, ref);
    run([&]() -> exedev::Task<void> { co_await sandbox.destroy(ws::WorkspaceRef::from_json(ref)); });
    if (!attached) throw std::runtime_error("the second process failed");
    std::cout << "done\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "interactive_session failed: " << e.what() << "\n";
    return 1;
  }
}
