// Integration tests of the emulator through curl: every status code of spec §1.5, the
// X-Exe-Exit trailer, streaming, binary output, faults and modes, the executable.
#include <exedev/emulator/emulator.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

using namespace exedev::emulator;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

fs::path make_temp_dir() {
  std::string pattern = (fs::temp_directory_path() / "emulator-curl-test-XXXXXX").string();
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  return pattern;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

// Polls `condition` until it holds; fails after a generous hang guard (never a timing assertion).
template <typename Condition>
bool eventually(Condition condition, std::chrono::seconds guard = 20s) {
  const auto end = std::chrono::steady_clock::now() + guard;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

struct Child {
  pid_t pid = -1;
  int out = -1;  // read end of its stdout, or -1
};

Child spawn(const std::vector<std::string>& args, bool capture_stdout) {
  std::vector<char*> argv;
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  int fds[2] = {-1, -1};
  if (capture_stdout) {
    REQUIRE(::pipe(fds) == 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addclose(&actions, fds[1]);
  }
  Child child;
  REQUIRE(posix_spawn(&child.pid, argv[0], &actions, nullptr, argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&actions);
  if (capture_stdout) {
    ::close(fds[1]);
    child.out = fds[0];
  }
  return child;
}

int wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct Response {
  int curl_exit = -1;
  unsigned status = 0;
  std::string headers;  // response headers, then the trailer fields curl reports after the body
  std::string body;

  bool has_header(const std::string& line) const { return headers.find(line + "\r\n") != std::string::npos; }
};

class Harness {
 public:
  explicit Harness(Options options = {}) : dir_(make_temp_dir()), emulator(std::move(options)) {}
  ~Harness() { fs::remove_all(dir_); }

  std::vector<std::string> curl_args(const std::string& body, const std::string& token, const std::string& method,
                                     const std::string& path) {
    const auto body_file = dir_ / fmt("body", counter_);
    write_file(body_file, body);
    std::vector<std::string> args = {"/usr/bin/curl", "-sS", "--max-time", "30", "--cacert", emulator.ca_file().string(),
                                     "-X", method, "-H", "Content-Type: text/plain", "--data-binary", "@" + body_file.string()};
    if (!token.empty()) args.insert(args.end(), {"-H", "Authorization: Bearer " + token});
    args.push_back(emulator.url() + path);
    return args;
  }

  Response request(const std::string& body, std::string token = "default", const std::string& method = "POST",
                   const std::string& path = "/exec", std::vector<std::string> extra = {}) {
    if (token == "default") token = emulator.token();
    const int n = ++counter_;
    auto args = curl_args(body, token, method, path);
    const auto headers = dir_ / fmt("headers", n);
    const auto out = dir_ / fmt("out", n);
    args.insert(args.end() - 1, {"-D", headers.string(), "-o", out.string()});
    args.insert(args.end() - 1, extra.begin(), extra.end());
    Response response;
    response.curl_exit = wait_exit(spawn(args, false).pid);
    response.headers = read_file(headers);
    response.body = read_file(out);
    if (response.headers.rfind("HTTP/1.1 ", 0) == 0) response.status = std::stoul(response.headers.substr(9, 3));
    return response;
  }

  Response exec(const std::string& line) { return request(line); }

  // Runs a request whose response body is read as it arrives.
  Child stream(const std::string& line) {
    auto args = curl_args(line, emulator.token(), "POST", "/exec");
    args.insert(args.begin() + 1, "-N");
    return spawn(args, true);
  }

  fs::path dir() const { return dir_; }

 private:
  static std::string fmt(const char* what, int n) { return std::string(what) + std::to_string(n); }
  fs::path dir_;
  int counter_ = 0;

 public:
  Emulator emulator;
};

// Reads from fd until `needle` shows up in what was read (or EOF).
std::string read_until(int fd, const std::string& needle) {
  std::string seen;
  char buffer[4096];
  while (seen.find(needle) == std::string::npos) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    seen.append(buffer, static_cast<std::size_t>(n));
  }
  return seen;
}

std::string read_all(int fd) {
  std::string seen;
  char buffer[4096];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    seen.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return seen;
}

Fault fault_of(FaultKind kind, std::string command, std::string vm = {}) {
  Fault fault;
  fault.kind = kind;
  fault.command = std::move(command);
  fault.vm = std::move(vm);
  return fault;
}

// Makes this process's stdin an open pipe for its lifetime: a child that inherited it would
// see a pipe, not /dev/null.
struct StdinPipe {
  int fds[2] = {-1, -1};
  int saved = -1;
  StdinPipe() {
    REQUIRE(::pipe(fds) == 0);
    saved = ::dup(0);
    REQUIRE(::dup2(fds[0], 0) == 0);
  }
  ~StdinPipe() {
    ::dup2(saved, 0);
    ::close(saved);
    ::close(fds[0]);
    ::close(fds[1]);
  }
  StdinPipe(const StdinPipe&) = delete;
  StdinPipe& operator=(const StdinPipe&) = delete;
};

char process_state(int pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
}

}  // namespace

TEST_CASE("curl: every status code of the /exec table", "[integration][status]") {
  Harness h;
  const Response ok = h.exec("whoami");
  CHECK(ok.status == 200);
  CHECK(ok.has_header("Content-Type: application/json; charset=utf-8"));
  CHECK(ok.has_header("X-Content-Type-Options: nosniff"));
  CHECK(ok.body.rfind("{\"email\":", 0) == 0);
  CHECK(ok.body.back() == '\n');

  const Response empty = h.exec("  \n ");
  CHECK(empty.status == 400);
  CHECK(empty.body == "{\"error\":\"missing command in request body\"}\n");
  CHECK(h.exec(std::string("ls\0x", 4)).body == "{\"error\":\"request body must not contain null bytes\"}\n");
  CHECK(h.exec("ls 'unclosed").body == "{\"error\":\"invalid command syntax\"}\n");

  const Response unauthorized = h.request("ls", "");
  CHECK(unauthorized.status == 401);
  CHECK(unauthorized.has_header("WWW-Authenticate: Bearer"));
  CHECK(h.request("ls", "exe1.AAAAAAAAAAAAAAAAAAAAAAAAAA").status == 401);

  const Response denied = h.request("rm x", h.emulator.issue_token({}));
  CHECK(denied.status == 403);
  CHECK(denied.body == "{\"error\":\"command not allowed by token permissions\"}\n");

  const Response unknown = h.exec("frobnicate now");
  CHECK(unknown.status == 404);
  CHECK(unknown.body == "{\"error\":\"unknown command\"}\n");

  const Response get = h.request("", "default", "GET");
  CHECK(get.status == 405);
  CHECK(get.has_header("Allow: POST"));

  // 64 KiB is the largest body; one more byte is refused.
  const Response largest = h.exec("ls" + std::string(65536 - 2, ' '));
  CHECK(largest.status == 200);
  const Response too_large = h.exec("ls" + std::string(65537 - 2, ' '));
  CHECK(too_large.status == 413);
  CHECK(too_large.body == "{\"error\":\"request body exceeds 64KB limit\"}\n");

  const Response failed = h.exec("rm");
  CHECK(failed.status == 422);
  CHECK(failed.body == "{\"error\":\"please specify at least one VM name to delete\"}\n");

  Modes modes = h.emulator.modes();
  modes.rate_limit = {true, 1, 0.001, 5};
  h.emulator.set_modes(modes);
  CHECK(h.exec("ls").status == 200);
  const Response limited = h.exec("ls");
  CHECK(limited.status == 429);
  CHECK(limited.body == "{\"error\":\"rate limit exceeded\"}\n");
  CHECK(limited.headers.find("Retry-After") == std::string::npos);  // not sent by default
  modes.rate_limit.retry_after = true;
  h.emulator.set_modes(modes);
  // The bucket is at -2 after this refusal; at 0.001 tokens/s a whole token is 3000 s away.
  CHECK(h.exec("ls").has_header("Retry-After: 3000"));

  // A command that fails after the lobby deadline answers 504; latency pushes it there.
  modes.rate_limit.enabled = false;
  modes.lobby_deadline = 50ms;
  modes.latency = 60ms;
  h.emulator.set_modes(modes);
  const Response timed_out = h.exec("rm");
  CHECK(timed_out.status == 504);
  CHECK(timed_out.body == "{\"error\":\"command timed out\"}\n");
  CHECK(h.exec("ls").status == 200);

  // Every request is recorded with its status.
  const auto records = h.emulator.commands();
  REQUIRE(records.size() >= 14);
  CHECK(records.front().command == "whoami");
  CHECK(records.front().http_status == 200);
  CHECK(records.back().words == std::vector<std::string>{"ls"});
}

TEST_CASE("curl: ssh streams combined output and ends with the X-Exe-Exit trailer", "[integration][ssh]") {
  Harness h;
  REQUIRE(h.exec("new --name=run-vm").status == 200);

  const Response done = h.exec("ssh run-vm 'echo out; echo err >&2; pwd; echo \"$HOME\"; exit 7'");
  CHECK(done.status == 200);
  CHECK(done.has_header("Trailer: X-Exe-Exit"));
  CHECK(done.has_header("Transfer-Encoding: chunked"));
  CHECK(done.has_header("X-Exe-Exit: 7"));
  const std::string home = h.emulator.vm("run-vm")->home.string();
  CHECK(done.body == "out\nerr\n" + home + "\n" + home + "\n");

  CHECK(h.exec("ssh run-vm true").has_header("X-Exe-Exit: 0"));
  CHECK(h.exec("ssh run-vm 'kill -9 $$'").has_header("X-Exe-Exit: 137"));
  // The words after the VM are joined with single spaces and run by /bin/sh -c.
  CHECK(h.exec("ssh run-vm echo a   b 'c  d'").body == "a b c d\n");
  // stdin is /dev/null, even when the emulator's own stdin is something else.
  {
    StdinPipe pipe_as_stdin;
    CHECK(h.exec("ssh run-vm 'readlink /proc/self/fd/0'").body == "/dev/null\n");
  }
  // VM environment from new --env.
  REQUIRE(h.exec("new --name=env-vm --env=GREETING=hi").status == 200);
  CHECK(h.exec("ssh env-vm 'echo $GREETING'").body == "hi\n");

  SECTION("all 256 byte values arrive unchanged") {
    std::string bytes;
    for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
    bytes += bytes;
    write_file(h.emulator.vm("run-vm")->home / "bytes.bin", bytes);
    const Response binary = h.exec("ssh run-vm cat bytes.bin");
    CHECK(binary.has_header("X-Exe-Exit: 0"));
    CHECK(binary.body == bytes);
  }
  SECTION("output arrives while the command still runs") {
    const auto gate = h.dir() / "gate";
    Child child = h.stream("ssh run-vm 'echo first; while [ ! -e " + gate.string() + " ]; do sleep 0.01; done; echo second'");
    // "first" arrives although the command cannot finish before the gate exists.
    const std::string early = read_until(child.out, "first\n");
    CHECK(early == "first\n");
    write_file(gate, "");
    CHECK(early + read_all(child.out) == "first\nsecond\n");
    CHECK(wait_exit(child.pid) == 0);
  }
  SECTION("trailers stripped, as a proxy would") {
    Modes modes = h.emulator.modes();
    modes.trailers = Trailers::strip;
    h.emulator.set_modes(modes);
    const Response stripped = h.exec("ssh run-vm 'echo x; exit 3'");
    CHECK(stripped.status == 200);
    CHECK(stripped.curl_exit == 0);
    CHECK(stripped.body == "x\n");
    CHECK(stripped.headers.find("X-Exe-Exit") == std::string::npos);
  }
}

TEST_CASE("curl: VM processes, pause, resume, rm, and commands that outlive the request", "[integration][vm]") {
  Harness h;
  REQUIRE(h.exec("new --name=proc-vm").status == 200);
  // A detached process, as the client starts long commands.
  const Response started = h.exec("ssh proc-vm 'setsid nohup sleep 300 >/dev/null 2>&1 < /dev/null & echo started'");
  CHECK(started.body == "started\n");
  CHECK(started.has_header("X-Exe-Exit: 0"));
  // The one process left is `sleep` once setsid and nohup have exec'd into it (until then the
  // list can hold a process about to be replaced, or momentarily none).
  int pid = 0;
  REQUIRE(eventually([&] {
    const auto pids = h.emulator.vm_processes("proc-vm");
    if (pids.size() != 1 || read_file("/proc/" + std::to_string(pids.front()) + "/comm") != "sleep\n") return false;
    pid = pids.front();
    return true;
  }));

  CHECK(h.exec("pause proc-vm").status == 200);
  CHECK(process_state(pid) == 'T');
  CHECK(h.emulator.vm("proc-vm")->status == "paused");
  const Response refused = h.exec("ssh proc-vm true");
  CHECK(refused.status == 422);
  CHECK(refused.body == "{\"error\":\"VM \\\"proc-vm\\\" is paused\"}\n");
  CHECK(h.exec("resume proc-vm").status == 200);
  CHECK(process_state(pid) != 'T');

  // cp copies the VM's directory.
  write_file(h.emulator.vm("proc-vm")->home / "note.txt", "copied");
  REQUIRE(h.exec("cp proc-vm proc-copy").status == 200);
  CHECK(h.exec("ssh proc-copy cat note.txt").body == "copied");

  CHECK(h.exec("rm proc-vm").status == 200);
  CHECK(eventually([&] { return process_state(pid) == '?' || process_state(pid) == 'Z'; }));
  CHECK_FALSE(h.emulator.vm("proc-vm"));
  CHECK(h.exec("ssh proc-vm true").status == 422);

  SECTION("a VM removed mid-command ends the stream without a trailer") {
    REQUIRE(h.exec("new --name=doomed-vm").status == 200);
    Child child = h.stream("ssh doomed-vm 'echo begun; sleep 300'");
    CHECK(read_until(child.out, "begun\n") == "begun\n");
    CHECK(h.exec("rm doomed-vm").status == 200);
    read_all(child.out);
    CHECK(wait_exit(child.pid) != 0);  // curl: the chunked body never ended
    const auto records = h.emulator.commands();
    const auto it = std::find_if(records.begin(), records.end(), [](const CommandRecord& r) { return r.vm == "doomed-vm" && r.command == "ssh"; });
    REQUIRE(it != records.end());
    CHECK(it->exit_code == 137);
  }
}

TEST_CASE("curl: ssh time limit and client disconnect modes", "[integration][modes]") {
  Harness h;
  REQUIRE(h.exec("new --name=mode-vm").status == 200);
  const auto marker = h.dir() / "finished";
  Modes modes = h.emulator.modes();

  SECTION("at the time limit the stream ends without a trailer; the command keeps running") {
    modes.ssh_time_limit = 200ms;
    h.emulator.set_modes(modes);
    const auto gate = h.dir() / "gate";
    const Response cut = h.exec("ssh mode-vm 'echo begun; while [ ! -e " + gate.string() + " ]; do sleep 0.01; done; touch " + marker.string() + "'");
    CHECK(cut.status == 200);
    CHECK(cut.body == "begun\n");
    CHECK(cut.curl_exit != 0);
    CHECK(cut.headers.find("X-Exe-Exit: ") == std::string::npos);
    write_file(gate, "");
    CHECK(eventually([&] { return fs::exists(marker); }));
  }
  SECTION("no limit: after a short limit is lifted, a command outlasts it") {
    modes.ssh_time_limit = 100ms;
    h.emulator.set_modes(modes);
    CHECK(h.exec("ssh mode-vm 'sleep 0.5; echo late'").curl_exit != 0);  // cut while the limit holds
    modes.ssh_time_limit.reset();
    h.emulator.set_modes(modes);
    const Response late = h.exec("ssh mode-vm 'sleep 0.5; echo late'");
    CHECK(late.body == "late\n");
    CHECK(late.has_header("X-Exe-Exit: 0"));
  }
  SECTION("cut_exit_code: a cut stream ends properly with that X-Exe-Exit") {
    modes.ssh_time_limit = 200ms;
    modes.cut_exit_code = 255;
    h.emulator.set_modes(modes);
    const auto gate = h.dir() / "gate";
    const Response cut = h.exec("ssh mode-vm 'echo begun; while [ ! -e " + gate.string() + " ]; do sleep 0.01; done; touch " + marker.string() + "'");
    CHECK(cut.status == 200);
    CHECK(cut.curl_exit == 0);
    CHECK(cut.body == "begun\n");
    CHECK(cut.has_header("X-Exe-Exit: 255"));
    write_file(gate, "");
    CHECK(eventually([&] { return fs::exists(marker); }));  // the command kept running
  }
  SECTION("ssh_nonzero_exit=unprocessable: a non-zero exit answers 422 after the command ends") {
    modes.ssh_nonzero_exit = SshNonzeroExit::unprocessable;
    h.emulator.set_modes(modes);
    const Response failed = h.exec("ssh mode-vm 'echo lost; touch " + marker.string() + "; exit 3'");
    CHECK(failed.status == 422);
    CHECK(failed.body == "{\"error\":\"command exited with status 3\"}\n");
    CHECK(fs::exists(marker));  // it ran to its end first
    const Response fine = h.exec("ssh mode-vm 'echo ok'");
    CHECK(fine.status == 200);
    CHECK(fine.body == "ok\n");
    CHECK(fine.has_header("X-Exe-Exit: 0"));
  }
  SECTION("keep-running: the client leaving does not stop the command") {
    const auto gate = h.dir() / "gate";
    const Response left = h.request("ssh mode-vm 'while [ ! -e " + gate.string() + " ]; do sleep 0.01; done; touch " + marker.string() + "'",
                                    "default", "POST", "/exec", {"--max-time", "0.5"});
    CHECK(left.curl_exit == 28);
    write_file(gate, "");
    CHECK(eventually([&] { return fs::exists(marker); }));
  }
  SECTION("kill: the client leaving kills the command's process group") {
    modes.on_client_disconnect = OnClientDisconnect::kill;
    h.emulator.set_modes(modes);
    const Response left = h.request("ssh mode-vm 'sleep 300'", "default", "POST", "/exec", {"--max-time", "0.5"});
    CHECK(left.curl_exit == 28);
    CHECK(eventually([&] { return h.emulator.vm_processes("mode-vm").empty(); }));
  }
  SECTION("paused VM: auto-resume") {
    modes.paused_vm_ssh = PausedVmSsh::auto_resume;
    h.emulator.set_modes(modes);
    REQUIRE(h.exec("pause mode-vm").status == 200);
    CHECK(h.exec("ssh mode-vm echo resumed").body == "resumed\n");
    CHECK(h.emulator.vm("mode-vm")->status == "running");
  }
  SECTION("boot delay and the unready true quirk") {
    modes.boot_delay = 1h;
    modes.unready_true_quirk = true;
    h.emulator.set_modes(modes);
    REQUIRE(h.exec("new --name=boot-vm").status == 200);
    CHECK(h.emulator.vm("boot-vm")->status == "creating");
    CHECK(h.exec("ssh boot-vm true").has_header("X-Exe-Exit: 0"));
    const Response probe = h.exec("ssh boot-vm echo probe-123");
    CHECK(probe.status == 422);
    CHECK(probe.body.find("failed to connect to VM: ") != std::string::npos);
  }
}

TEST_CASE("curl: injected faults", "[integration][faults]") {
  Harness h;
  REQUIRE(h.exec("new --name=fault-vm").status == 200);
  const auto marker = h.dir() / "ran";
  const std::string touch = "ssh fault-vm touch " + marker.string();

  SECTION("reset before running: nothing runs") {
    h.emulator.inject(fault_of(FaultKind::reset_before_run, "ssh", "fault-vm"));
    const Response reset = h.exec(touch);
    CHECK(reset.curl_exit != 0);
    CHECK(reset.status == 0);
    CHECK_FALSE(fs::exists(marker));
    CHECK(h.exec(touch).has_header("X-Exe-Exit: 0"));  // count 1: the next one runs
    CHECK(fs::exists(marker));
  }
  SECTION("reset after running: the command ran, no answer came") {
    h.emulator.inject(fault_of(FaultKind::reset_after_run, "ssh"));
    CHECK(h.exec(touch).curl_exit != 0);
    CHECK(fs::exists(marker));
    h.emulator.inject(fault_of(FaultKind::reset_after_run, "new"));
    CHECK(h.exec("new --name=ghost-vm").curl_exit != 0);
    CHECK(h.emulator.vm("ghost-vm"));
  }
  SECTION("5xx after running") {
    Fault fault = fault_of(FaultKind::http_status, "ls");
    fault.status = 502;
    h.emulator.inject(fault);
    const Response bad_gateway = h.exec("ls");
    CHECK(bad_gateway.status == 502);
    CHECK(bad_gateway.body == "Bad Gateway\n");
    fault.status = 500;
    fault.command = "ssh";
    h.emulator.inject(fault);
    CHECK(h.exec(touch).status == 500);
    CHECK(fs::exists(marker));
    CHECK(h.exec("ls").status == 200);
  }
  SECTION("ssh stream cut after K bytes") {
    Fault fault = fault_of(FaultKind::truncate_stream, "ssh");
    fault.after_bytes = 5;
    h.emulator.inject(fault);
    const Response cut = h.exec("ssh fault-vm echo 0123456789");
    CHECK(cut.status == 200);
    CHECK(cut.body == "01234");
    CHECK(cut.curl_exit != 0);
    CHECK(cut.headers.find("X-Exe-Exit: ") == std::string::npos);
  }
  SECTION("unreadable JSON") {
    h.emulator.inject(fault_of(FaultKind::bad_json, "whoami"));
    const Response garbled = h.exec("whoami");
    CHECK(garbled.status == 200);
    CHECK(garbled.body.find("<html>") != std::string::npos);
  }
  SECTION("stall: held, then closed without an answer") {
    Fault fault = fault_of(FaultKind::stall, "ls");
    fault.duration = 100ms;
    h.emulator.inject(fault);
    const Response stalled = h.exec("ls");
    CHECK(stalled.status == 0);
    CHECK(stalled.curl_exit != 0);
    CHECK(h.emulator.commands().back().http_status == 0);
  }
  SECTION("faults match by VM") {
    h.emulator.inject(fault_of(FaultKind::http_status, "ssh", "other-vm"));
    CHECK(h.exec(touch).status == 200);
    h.emulator.clear_faults();
  }
}

TEST_CASE("curl: the control endpoint", "[integration][control]") {
  Harness h;
  const auto control = [&](const std::string& action, const std::string& body, const std::string& secret) {
    std::vector<std::string> extra;
    if (!secret.empty()) extra = {"-H", "X-Emulator-Control: " + secret};
    return h.request(body, "", "POST", "/_emulator/" + action, extra);
  };
  CHECK(control("state", "", "").status == 403);
  CHECK(control("state", "", "wrong").status == 403);
  // An exe.dev token is never a control secret.
  CHECK(h.request("", "default", "POST", "/_emulator/state").status == 403);

  const std::string secret = h.emulator.control_secret();
  CHECK(control("fault", R"({"kind":"http-status","command":"ls","status":504})", secret).status == 200);
  CHECK(h.exec("ls").status == 504);
  const Response modes = control(
      "modes",
      R"({"trailers":"strip","ssh_time_limit_ms":null,"ssh_nonzero_exit":"unprocessable","cut_exit_code":255,"rate_limit":{"retry_after":true}})",
      secret);
  CHECK(modes.status == 200);
  CHECK(h.emulator.modes().trailers == Trailers::strip);
  CHECK_FALSE(h.emulator.modes().ssh_time_limit);
  CHECK(h.emulator.modes().ssh_nonzero_exit == SshNonzeroExit::unprocessable);
  CHECK(h.emulator.modes().cut_exit_code == 255);
  CHECK(h.emulator.modes().rate_limit.retry_after);
  CHECK(control("modes", R"({"cut_exit_code":256})", secret).status == 400);
  const Response token = control("token", R"({"cmds":["ls"],"tag":"ci"})", secret);
  REQUIRE(token.status == 200);
  const auto issued = token.body.substr(10, 31);
  CHECK(issued.rfind("exe1.", 0) == 0);
  CHECK(h.request("ls", issued).status == 200);
  CHECK(h.request("whoami", issued).status == 403);
  CHECK(control("state", "", secret).body.find("\"connections_accepted\":") != std::string::npos);
  CHECK(control("nope", "", secret).status == 404);
  CHECK(control("modes", "{bad", secret).status == 400);
}

TEST_CASE("curl: state survives an emulator restart", "[integration][state]") {
  const fs::path state = make_temp_dir();
  std::string token;
  {
    Options options;
    options.state_dir = state;
    Harness h(options);
    token = h.emulator.token();
    REQUIRE(h.exec("new --name=durable-vm --tag=keep").status == 200);
    write_file(h.emulator.vm("durable-vm")->home / "data", "kept");
    const auto accepted = h.emulator.connections_accepted();
    CHECK(accepted == 1);
    h.emulator.restart();
    CHECK(h.exec("ssh durable-vm cat data").body == "kept");
  }
  Options options;
  options.state_dir = state;
  Harness again(options);
  CHECK(again.emulator.token() == token);
  REQUIRE(again.emulator.vm("durable-vm"));
  CHECK(again.emulator.vm("durable-vm")->tags == std::vector<std::string>{"keep"});
  CHECK(again.exec("ssh durable-vm cat data").body == "kept");
  fs::remove_all(state);
}

TEST_CASE("the emulator refuses non-loopback hosts", "[integration]") {
  Options options;
  options.host = "0.0.0.0";
  CHECK_THROWS_AS(Emulator(options), std::invalid_argument);
}

TEST_CASE("exedev-emulator executable: prints its endpoint and stops on SIGTERM", "[integration][executable]") {
  Child child = spawn({EXEDEV_EMULATOR_EXECUTABLE, "--boot-delay=0", "--trailers=send"}, true);
  std::string printed = read_until(child.out, "state_dir=");
  while (!printed.empty() && printed.back() != '\n') {
    const std::string more = read_until(child.out, "\n");
    if (more.empty()) break;  // EOF: the REQUIREs below report what is missing
    printed += more;
  }
  std::map<std::string, std::string> values;
  std::istringstream lines(printed);
  for (std::string line; std::getline(lines, line);) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) values[line.substr(0, eq)] = line.substr(eq + 1);
  }
  REQUIRE(values.count("url"));
  REQUIRE(values.count("ca_file"));
  REQUIRE(values.count("token"));
  const std::string headers = (make_temp_dir() / "h").string();
  Child curl = spawn({"/usr/bin/curl", "-sS", "--max-time", "30", "--cacert", values["ca_file"], "-H",
                      "Authorization: Bearer " + values["token"], "--data-binary", "whoami", values["url"] + "/exec"},
                     true);
  CHECK(read_all(curl.out).rfind("{\"email\":", 0) == 0);
  CHECK(wait_exit(curl.pid) == 0);
  ::kill(child.pid, SIGTERM);
  CHECK(wait_exit(child.pid) == 0);
  ::close(child.out);
  CHECK_FALSE(fs::exists(values["state_dir"]));
}
