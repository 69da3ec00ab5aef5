// The run scripts executed by the local /bin/sh, as a VM's shell would run them: launch, long
// poll, probe, stop, cleanup, timeout, exact bytes.
#include "common/random_ids.hpp"
#include "common/shell_quote.hpp"
#include "client/lobby.hpp"
#include <exedev/client.hpp>
#include "client/run_protocol.hpp"

#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>
#include <utility>

using namespace exedev::detail;
using Kind = FrameEvent::Kind;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct Home {
  fs::path dir = fs::temp_directory_path() / ("exedev-script-test-" + random_hex(6));
  Home() { fs::create_directories(dir); }
  ~Home() { fs::remove_all(dir); }
  fs::path runs() const { return dir / ".local/state/exedev-cpp/runs"; }
};

struct Result {
  std::vector<FrameEvent> events;
  int status = -1;
  std::string out, err;
  std::string raw;
  const FrameEvent* last() const { return events.empty() ? nullptr : &events.back(); }
};

// Runs the request as an ssh session whose login shell is `shell` would.
// `path`, when given, is the session's PATH.
Result execute(const Home& home, const ScriptRequest& request, const std::string& shell = "/bin/sh", const std::string& path = "") {
  const auto command = "cd " + sh_single_quote(home.dir.string()) + " && env -u XDG_STATE_HOME HOME=" + sh_single_quote(home.dir.string()) +
                       " SHELL=" + sh_single_quote(shell) + (path.empty() ? "" : " PATH=" + sh_single_quote(path)) +
                       " /bin/sh -c " + sh_single_quote(remote_command(build_script(request)));
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string bytes;
  char buffer[65536];
  while (const auto n = fread(buffer, 1, sizeof buffer, pipe)) bytes.append(buffer, n);
  const int status = pclose(pipe);
  FrameParser parser(request.boundary);
  Result r;
  r.events = parser.feed(bytes);
  r.raw = bytes;
  CHECK_FALSE(parser.mid_frame());
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  for (const auto& ev : r.events) {
    if (ev.kind == Kind::data) (ev.stream == 'o' ? r.out : r.err) += ev.bytes;
  }
  return r;
}

ScriptRequest launch(std::string line, int wait = 10) {
  ScriptRequest r;
  r.mode = ScriptMode::launch;
  r.id = random_hex(8);
  r.boundary = "#EXEDEV-" + random_hex(8) + "#";
  r.shell_line = std::move(line);
  r.wait_seconds = wait;
  return r;
}

ScriptRequest next(const ScriptRequest& from, ScriptMode mode, const Result& so_far, int wait = 10) {
  ScriptRequest r;
  r.mode = mode;
  r.id = from.id;
  r.boundary = from.boundary;
  r.out_offset = so_far.out.size();
  r.err_offset = so_far.err.size();
  r.wait_seconds = wait;
  return r;
}

// Running, not a zombie.
bool process_alive(int pid) {
  FILE* f = fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return false;
  char buf[512] = {};
  const auto n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  const std::string stat(buf, n);
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

// A process watched through a pidfd: readable once the process has exited (zombie or reaped).
struct Watched {
  int pid = 0;
  int fd = -1;
  explicit Watched(int p) : pid(p), fd(static_cast<int>(syscall(SYS_pidfd_open, p, 0))) {}
  Watched(Watched&& o) noexcept : pid(o.pid), fd(std::exchange(o.fd, -1)) {}
  ~Watched() {
    if (fd >= 0) close(fd);
  }
  bool wait_exit(std::chrono::milliseconds limit) const {
    if (fd < 0) return true;  // already gone when it was listed
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, static_cast<int>(limit.count())) == 1;
  }
};

// Every process of a process group, watched.
std::vector<Watched> group_members(int pgid) {
  std::vector<Watched> members;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int pid = std::stoi(name);
    if (getpgid(pid) == pgid) members.emplace_back(pid);
  }
  return members;
}

}  // namespace

TEST_CASE("launch: a short command finishes in one request with separate exact streams") {
  Home home;
  auto request = launch("printf 'out\\n'; printf 'err' >&2; exit 3");
  const auto r = execute(home, request);
  REQUIRE(r.last());
  CHECK(r.events.front().kind == Kind::started);
  CHECK(r.last()->kind == Kind::exit);
  CHECK(r.last()->exit_code == 3);
  CHECK(r.last()->flag == '-');
  // The script exits 0 once it has reported: exe.dev's handling of a non-zero ssh exit (200 or
  // 422, unknown) never applies to it.
  CHECK(r.status == 0);
  CHECK(r.out == "out\n");
  CHECK(r.err == "err");
  // The record stays until acknowledged; a cleanup request removes it.
  CHECK(fs::exists(home.runs() / request.id / "status"));
  ScriptRequest cleanup;
  cleanup.mode = ScriptMode::cleanup;
  cleanup.id = request.id;
  cleanup.boundary = request.boundary;
  cleanup.acks = {request.id};
  CHECK(execute(home, cleanup).events.empty());
  CHECK_FALSE(fs::exists(home.runs() / request.id));
}

TEST_CASE("every byte value, on both streams, plus env and working directory") {
  Home home;
  fs::create_directories(home.dir / "my dir");
  auto request = launch(
      "for i in $(seq 0 255); do printf \"\\\\$(printf %o $i)\"; done; "
      "for i in $(seq 0 255); do printf \"\\\\$(printf %o $i)\"; done >&2; printf '%s|%s' \"$V\" \"$(pwd)\" >&2");
  request.env = {{"V", "it's \"quoted\" $x\nline"}};
  request.working_dir = "my dir";
  const auto r = execute(home, request);
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  CHECK(r.out == all);
  CHECK(r.err == all + "it's \"quoted\" $x\nline|" + (home.dir / "my dir").string());
  CHECK(r.last()->exit_code == 0);
}

TEST_CASE("large output is streamed in bounded frames with continuing offsets") {
  Home home;
  auto request = launch("head -c 9000000 /dev/zero | tr '\\0' 'a'; echo end >&2");
  const auto r = execute(home, request);
  CHECK(r.last()->kind == Kind::exit);
  CHECK(r.out == std::string(9000000, 'a'));
  CHECK(r.err == "end\n");
  std::uint64_t expected = 0;
  std::uint64_t frame_bytes = 0;
  bool contiguous = true;
  for (const auto& ev : r.events) {
    if (ev.kind != Kind::data || ev.stream != 'o') continue;
    contiguous = contiguous && ev.offset == expected;
    expected += ev.bytes.size();
    frame_bytes += ev.bytes.size();
  }
  CHECK(contiguous);
  CHECK(frame_bytes == 9000000);
  // 9 000 000 bytes in frames of at most 4 MiB: at least three stdout frames (more when the
  // file was still growing as it was read).
  std::size_t headers = 0;
  for (auto pos = r.raw.find(request.boundary + " o "); pos != std::string::npos;
       pos = r.raw.find(request.boundary + " o ", pos + 1)) {
    ++headers;
  }
  CHECK(headers >= 3);
}

TEST_CASE("a missing working directory fails the command, not the protocol") {
  Home home;
  auto request = launch("echo never");
  request.working_dir = "nope";
  const auto r = execute(home, request);
  CHECK(r.last()->kind == Kind::exit);
  CHECK(r.last()->exit_code == 1);
  CHECK(r.out.empty());
  CHECK_FALSE(r.err.empty());
}

TEST_CASE("long poll: a command that outlives a request is followed from offsets") {
  Home home;
  // The command waits for the test (it reads a FIFO), so it outlives its first request however
  // fast or slow the machine is.
  const auto go = home.dir / "go";
  REQUIRE(::mkfifo(go.c_str(), 0600) == 0);
  auto request = launch("echo first; read line < go; echo second; echo e >&2", 1);
  auto r = execute(home, request);
  CHECK(r.last()->kind == Kind::running);
  Result total = r;
  // On a busy machine `first` may come only after the first request's second: followed until it has.
  for (int i = 0; i < 10 && total.out.empty(); ++i) {
    auto more = execute(home, next(request, ScriptMode::follow, total, 1));
    CHECK(more.last()->kind == Kind::running);
    total.out += more.out;
    total.err += more.err;
    total.events = more.events;
  }
  CHECK(total.out == "first\n");
  std::ofstream(go) << "go\n";  // opens once the command reads it
  for (int i = 0; i < 10 && total.last()->kind != Kind::exit; ++i) {
    auto more = execute(home, next(request, ScriptMode::follow, total, 5));
    total.out += more.out;
    total.err += more.err;
    total.events = more.events;
  }
  CHECK(total.last()->kind == Kind::exit);
  CHECK(total.out == "first\nsecond\n");
  CHECK(total.err == "e\n");
  // Polling again from the same offsets gives the same exit and nothing new: a lost response
  // can be read again.
  auto again = execute(home, next(request, ScriptMode::follow, total, 1));
  CHECK(again.out.empty());
  CHECK(again.last()->kind == Kind::exit);
}

TEST_CASE("probe: an id that never launched gets a tombstone, so a late launch cannot start it") {
  Home home;
  auto request = launch("echo ran > ran.txt");
  const auto probe = execute(home, next(request, ScriptMode::probe, Result{}, 1));
  CHECK(probe.last()->kind == Kind::lost);
  const auto late = execute(home, request);
  CHECK(late.last()->kind == Kind::not_created);
  // The refused launch wrote no command for a runner to start, and ran nothing itself.
  CHECK_FALSE(fs::exists(home.runs() / request.id / "cmd"));
  CHECK_FALSE(fs::exists(home.runs() / request.id / "run"));
  CHECK_FALSE(fs::exists(home.dir / "ran.txt"));
  // Following an unknown id reports it lost without creating anything.
  auto other = launch("true");
  CHECK(execute(home, next(other, ScriptMode::follow, Result{}, 1)).last()->kind == Kind::lost);
  CHECK_FALSE(fs::exists(home.runs() / other.id));
}

TEST_CASE("stop: the process group is killed, the exit reported, the record removed") {
  Home home;
  auto request = launch("sleep 300 & sleep 300; echo unreachable", 1);
  const auto r = execute(home, request);
  CHECK(r.last()->kind == Kind::running);
  std::string pgid_text;
  {
    FILE* f = fopen((home.runs() / request.id / "pgid").c_str(), "r");
    REQUIRE(f);
    char buf[32] = {};
    REQUIRE(fgets(buf, sizeof buf, f));
    fclose(f);
    pgid_text = buf;
  }
  const int pgid = std::stoi(pgid_text);
  CHECK(process_alive(pgid));
  const auto members = group_members(pgid);
  CHECK(members.size() >= 2);  // the command's shell and its background sleep
  const auto stopped = execute(home, next(request, ScriptMode::stop, r, 5));
  REQUIRE(stopped.last());
  CHECK(stopped.last()->kind == Kind::exit);
  CHECK(stopped.last()->flag == 'c');
  CHECK(stopped.last()->exit_code >= 128);
  CHECK_FALSE(fs::exists(home.runs() / request.id));
  for (const auto& member : members) CHECK(member.wait_exit(30s));
  CHECK_FALSE(process_alive(pgid));
  // Nothing left in the group but zombies (this sandbox's init does not reap orphans).
  CHECK(system(("ps -o stat= -g " + std::to_string(pgid) + " | grep -qv '^Z'").c_str()) != 0);
}

TEST_CASE("stop past the output limit: no more output travels, only the exit") {
  Home home;
  auto request = launch("yes", 1);  // a writer faster than any request can carry
  const auto r = execute(home, request);
  REQUIRE(r.last());
  CHECK(r.last()->kind == Kind::running);
  auto stop = next(request, ScriptMode::stop, r, 5);
  stop.skip_output = true;
  const auto stopped = execute(home, stop);
  REQUIRE(stopped.last());
  CHECK(stopped.last()->kind == Kind::exit);
  CHECK(stopped.last()->flag == 'c');
  CHECK(stopped.out.empty());
  CHECK_FALSE(fs::exists(home.runs() / request.id));
}

TEST_CASE("the VM-side timeout stops the command and says so") {
  Home home;
  auto request = launch("echo started; sleep 300", 10);
  request.timeout_seconds = 0.5;
  const auto r = execute(home, request);
  CHECK(r.last()->kind == Kind::exit);
  CHECK(r.last()->flag == 't');
  CHECK(r.out == "started\n");
}

std::string read_first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

int parent_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string state;
  int ppid = 0;
  fields >> state >> ppid;
  return ppid;
}

// Arguments separated by spaces.
std::string command_line(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::replace(text.begin(), text.end(), '\0', ' ');
  return text;
}

// A process and its ancestors as /proc shows them (state, process group, command line), for a
// failure message.
std::string process_lineage(int pid) {
  std::string text;
  for (int depth = 0; pid > 1 && depth < 6; ++depth, pid = parent_of(pid)) {
    std::ifstream stat_in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    std::getline(stat_in, stat);
    const auto cmdline = command_line(pid);
    const auto close = stat.rfind(')');
    text += "[" + (close == std::string::npos ? stat : stat.substr(close + 2, 40)) + " | " + cmdline.substr(0, 120) + "] ";
  }
  return text;
}

// Live processes (not zombies) whose command line is exactly `argv`.
std::vector<int> processes_running(const std::vector<std::string>& argv) {
  std::string wanted;
  for (const auto& arg : argv) wanted += arg + '\0';
  std::vector<int> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    FILE* f = fopen((entry.path() / "cmdline").c_str(), "r");
    if (!f) continue;
    char buf[256] = {};
    const auto n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (std::string(buf, n) == wanted && process_alive(std::stoi(name))) found.push_back(std::stoi(name));
  }
  return found;
}

// The first live process whose command line is exactly `argv` and whose parent's command line
// contains `parent_mentions`, waited for (0 when none came).
int first_process_running(const std::vector<std::string>& argv, std::chrono::milliseconds limit, const std::string& parent_mentions) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    for (const int pid : processes_running(argv)) {
      if (command_line(parent_of(pid)).find(parent_mentions) != std::string::npos) return pid;
    }
    std::this_thread::sleep_for(10ms);
  }
  return 0;
}

TEST_CASE("a command that ends at once leaves no watchdog behind") {
  Home home;
  // A timeout no other test uses, so its watchdog's `sleep` is recognisable.
  const std::vector<std::string> watchdog_sleep = {"sleep", "3571.250"};
  for (int i = 0; i < 20; ++i) {
    auto request = launch("true");
    request.timeout_seconds = 3571.25;
    const auto r = execute(home, request);
    REQUIRE(r.last());
    CHECK(r.last()->kind == Kind::exit);
  }
  // The runner signals its watchdog before it records the exit; wait for each signalled one to
  // be gone (its pidfd turns readable), bounded.
  std::vector<Watched> watchdogs;
  for (const int pid : processes_running(watchdog_sleep)) watchdogs.emplace_back(pid);
  for (const auto& watchdog : watchdogs) {
    INFO("left behind: " << process_lineage(watchdog.pid));
    CHECK(watchdog.wait_exit(10s));
  }
}

TEST_CASE("a watchdog whose runner was killed and whose record is gone signals nothing more") {
  Home home;
  // A command that outlives the watchdog's TERM, so the watchdog goes on to its KILL.
  auto request = launch("trap '' TERM; sleep 300", 1);
  request.timeout_seconds = 0.5;
  const auto r = execute(home, request);
  REQUIRE(r.last());
  REQUIRE(r.last()->kind == Kind::running);
  const auto record = home.runs() / request.id;
  const int pgid = std::stoi(read_first_line(record / "pgid"));
  // Between its TERM and its KILL the watchdog sleeps 5 s; its parent is the runner.
  const int grace_sleep = first_process_running({"sleep", "5"}, 30s, record.string());
  REQUIRE(grace_sleep > 0);
  const int watchdog_pid = parent_of(grace_sleep);
  const int runner_pid = parent_of(watchdog_pid);
  REQUIRE(runner_pid > 1);
  Watched watchdog(watchdog_pid);
  REQUIRE(kill(runner_pid, SIGKILL) == 0);
  fs::remove_all(record);
  // The grace passes: the watchdog finds no record and leaves the group (whose id could by now
  // be another process's) alone.
  CHECK(watchdog.wait_exit(30s));
  CHECK(process_alive(pgid));
  Watched command(pgid);
  kill(-pgid, SIGKILL);
  CHECK(command.wait_exit(10s));
}

TEST_CASE("the command runs in the session's login shell, sh syntax when that is not POSIX") {
  REQUIRE(fs::exists("/bin/bash"));  // Essential on Debian, the supported platform
  Home home;
  auto request = launch("a=(x y); [[ ${#a[@]} == 2 ]] && echo \"bash ${a[1]}\"; shopt -q login_shell && echo login");
  request.env = {{"FROM_CALL", "call"}};
  auto r = execute(home, request, "/bin/bash");
  CHECK(r.last()->kind == Kind::exit);
  CHECK(r.out == "bash y\nlogin\n");
  // The login profile runs first; the call's env is layered over it.
  std::ofstream(home.dir / ".bash_profile") << "export FROM_PROFILE=profile FROM_CALL=profile\n";
  request = launch("printf '%s %s' \"$FROM_PROFILE\" \"$FROM_CALL\"");
  request.env = {{"FROM_CALL", "call"}};
  r = execute(home, request, "/bin/bash");
  CHECK(r.out == "profile call");
  // A login shell that is not POSIX-compatible, or missing, falls back to /bin/sh.
  request = launch("echo fallback");
  CHECK(execute(home, request, "/usr/bin/fish").out == "fallback\n");
  request = launch("echo fallback");
  CHECK(execute(home, request, "/nonexistent/shell").out == "fallback\n");
}

TEST_CASE("a PATH whose first tools are broken leaves the protocol working, and the command gets that PATH") {
  Home home;
  // A session PATH as a broken profile leaves it: every tool the protocol uses fails first.
  const fs::path broken = home.dir / "broken-bin";
  fs::create_directories(broken);
  for (const char* tool : {"wc", "base64", "tail", "head", "cat", "date", "mkdir", "mv", "rm", "tr", "setsid", "env", "sleep"}) {
    std::ofstream(broken / tool) << "#!/bin/sh\necho broken " << tool << "\nexit 1\n";
    fs::permissions(broken / tool, fs::perms::owner_all);
  }
  // A login shell that keeps the PATH it is given (no /etc/profile), so the command's PATH shows.
  const fs::path shell = home.dir / "keeping-shell";
  std::ofstream(shell) << "#!/bin/sh\n[ \"$1\" = -l ] && shift\nexec /bin/sh \"$@\"\n";
  fs::permissions(shell, fs::perms::owner_all);
  const std::string path = broken.string() + ":/usr/local/bin:/usr/bin:/bin";
  const auto request = launch("printf '%s\\n' \"$PATH\"; wc -c </dev/null; printf 'out %s' \"$(printf 'x' | /usr/bin/wc -c)\"");
  const auto r = execute(home, request, shell.string(), path);
  REQUIRE(r.last());
  CHECK(r.last()->kind == Kind::exit);
  CHECK(r.last()->exit_code == 0);
  CHECK(r.out == path + "\nbroken wc\nout 1");
}

TEST_CASE("bad input is refused when building") {
  auto request = launch(std::string("a\0b", 3));
  CHECK_THROWS_AS(build_script(request), std::invalid_argument);
  request = launch("true");
  request.env = {{"BAD-NAME", "x"}};
  CHECK_THROWS_AS(build_script(request), std::invalid_argument);
  request = launch("true");
  request.id = "../etc";
  CHECK_THROWS_AS(build_script(request), std::invalid_argument);
}

TEST_CASE("run_request_bytes: the launch's size, with room for the records a request removes") {
  exedev::ClientRunOptions none;
  const auto bare = exedev::run_request_bytes("box", "true", none);
  CHECK(bare == exedev::run_request_bytes("box", "true", none));  // no random part changes it
  // Sixteen finished records' ids ride along at most: far more than a bare launch would need.
  CHECK(bare > 16 * 24);
  CHECK(bare < 8 * 1024);
  // Every part of the command counts.
  CHECK(exedev::run_request_bytes("box", std::string(3000, 'x'), none) > bare + 3000);
  CHECK(exedev::run_request_bytes("a-longer-vm-name", "true", none) == bare + std::string("a-longer-vm-name").size() - 3);
  exedev::ClientRunOptions with_env;
  with_env.env["NAME"] = std::string(1000, 'v');
  CHECK(exedev::run_request_bytes("box", "true", with_env) > bare + 1000);
  exedev::ClientRunOptions with_dir;
  with_dir.working_dir = std::string(500, 'd');
  CHECK(exedev::run_request_bytes("box", "true", with_dir) > bare + 500);
  exedev::ClientRunOptions with_timeout;
  with_timeout.timeout = std::chrono::seconds(30);
  CHECK(exedev::run_request_bytes("box", "true", with_timeout) > bare);
  // What run() refuses before sending, this refuses too.
  exedev::ClientRunOptions bad_env;
  bad_env.env["NOT A NAME"] = "x";
  CHECK_THROWS_AS(exedev::run_request_bytes("box", "true", bad_env), std::invalid_argument);
  CHECK_THROWS_AS(exedev::run_request_bytes("box", std::string("a\0b", 3), none), std::invalid_argument);
  CHECK_THROWS_AS(exedev::run_request_bytes("", "true", none), std::invalid_argument);
}
