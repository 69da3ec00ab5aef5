// exedev-emulator: runs the exe.dev emulator until SIGINT or SIGTERM. Prints url, ca_file,
// token, control_secret and state_dir on stdout, one key=value per line, or (--print-env) the
// shell lines that point a default exedev::Client at it; --background serves from a child
// process so that `eval "$(exedev-emulator --background --print-env)"` returns.
#include <exedev/emulator/emulator.hpp>

#include "emulator/control.hpp"

#include "common/command_line.hpp"
#include "common/shell_quote.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using namespace exedev::emulator;

constexpr const char* usage = R"usage(usage: exedev-emulator [options]

Runs a local exe.dev (POST /exec over HTTPS on loopback, and each VM's SSH endpoint) until
SIGINT or SIGTERM, after printing
  url=…  ca_file=…  token=…  control_secret=…  state_dir=…  ssh_known_hosts=…  ssh_hosts=…
on stdout, one per line. See docs/emulator.md.

  --print-env                 print instead, for a shell to eval, the lines
                                export EXE_BASE_URL=…  export EXE_TOKEN=…  export EXE_CA_FILE=…
                                export EXE_SSH_KNOWN_HOSTS=…  export EXE_SSH_HOSTS=…
                              that point a default exedev::Client at the emulator (the last
                              two: the known_hosts file of the VMs' SSH endpoints, and the
                              hosts file naming 127.0.0.1 for their SSH names)
  --background                serve from a background process, print the lines above plus its
                              process id (pid=… or export EXEDEV_EMULATOR_PID=…), and return:
                                eval "$(exedev-emulator --background --print-env)"
                                ./your-program        # a default Client reaches the emulator
                                kill "$EXEDEV_EMULATOR_PID"

  --host=ADDR                 loopback address to bind (default 127.0.0.1)
  --port=N                    port (default 0: a free one)
  --state-dir=DIR             VMs and tokens live here and survive restarts (default: a temp dir,
                              removed at exit)
  --plain-http                serve plain HTTP (debugging only)
  --token=TOKEN               the all-commands token (default: persisted or random)
  --tokens-file=FILE          more tokens, one per line: TOKEN [; cmds=A,B,ssh vm] [; tag=T]
  --control-secret=SECRET     secret for POST /_emulator/… (default: random)
  --boot-delay=DUR            time before a new VM runs commands (default 0)
  --ssh-time-limit=DUR|none   cut ssh streams after DUR, without trailer (default 30s)
  --lobby-deadline=DUR        failed lobby commands after DUR answer 504 (default 30s)
  --paused-vm-ssh=refuse|auto-resume            (default refuse)
  --on-client-disconnect=keep-running|kill      (default keep-running)
  --trailers=send|strip                         (default send)
  --ssh-nonzero-exit=stream|unprocessable       (default stream: 200 + X-Exe-Exit)
  --cut-exit-code=N|none      a cut ssh stream ends with X-Exe-Exit: N (default none: no
                              last chunk)
  --cp-response=legacy|new-like                 (default legacy)
  --unready-true-quirk        a booting VM answers `ssh vm true` with exit 0
  --rate-limit                enable the per-token rate limiter
  --rate-burst=N --rate-refill=PER_SECOND --rate-overdraft=N   (defaults 60, 1, 120)
  --rate-retry-after          a 429 carries Retry-After
  --latency=DUR               time every command takes in the lobby (default 0)
  --login-shell=PATH          the VMs' login shell: ssh lines run as PATH -c LINE (default
                              /bin/bash when present, else /bin/sh)
  --ssh-key=FILE              register the public keys in FILE (e.g. ~/.ssh/id_ed25519.pub)
                              for the VMs' SSH endpoints, as `ssh-key add` does (repeatable)
  --second-token=TOKEN        the second account's all-commands token (default: persisted or
                              random; the account has its own VMs, keys and email)
  --second-ssh-key=FILE       as --ssh-key, for the second account (repeatable)
  --ssh-destination=vm-plus|vm-domain  the SSH fields of new/ls/cp answers: ssh_user vm+<name>
                              at <domain> and the name endpoint, or <name>.<domain> and the
                              VM's shard endpoint (default vm-plus)
  --ssh-domain=DOMAIN         the domain of the SSH names (default exe.localhost)
  --ssh-silent                the SSH endpoints accept connections and never answer
  --no-sftp                   the SSH endpoints refuse the SFTP subsystem
  --help                      this text
DUR is N (milliseconds), Nms, Ns or Nm.
)usage";

[[noreturn]] void bad(const std::string& message) {
  std::cerr << "exedev-emulator: " << message << "\n(--help for usage)\n";
  std::exit(2);
}

// What the emulator prints once it listens (see the usage text).
std::string ready_lines(const Emulator& emulator, bool print_env, std::optional<pid_t> background_pid) {
  using exedev::detail::sh_quote_if_needed;
  std::ostringstream out;
  if (print_env) {
    out << "export EXE_BASE_URL=" << sh_quote_if_needed(emulator.url()) << "\n"
        << "export EXE_TOKEN=" << sh_quote_if_needed(emulator.token()) << "\n"
        << "export EXE_CA_FILE=" << sh_quote_if_needed(emulator.ca_file().string()) << "\n";
    if (!emulator.ssh_known_hosts().empty()) {
      out << "export EXE_SSH_KNOWN_HOSTS=" << sh_quote_if_needed(emulator.ssh_known_hosts().string()) << "\n";
      out << "export EXE_SSH_HOSTS=" << sh_quote_if_needed(emulator.ssh_hosts_file().string()) << "\n";
    }
    if (background_pid) out << "export EXEDEV_EMULATOR_PID=" << *background_pid << "\n";
  } else {
    out << "url=" << emulator.url() << "\n"
        << "ca_file=" << emulator.ca_file().string() << "\n"
        << "token=" << emulator.token() << "\n"
        << "control_secret=" << emulator.control_secret() << "\n"
        << "state_dir=" << emulator.state_dir().string() << "\n";
    if (!emulator.ssh_known_hosts().empty()) {
      out << "ssh_known_hosts=" << emulator.ssh_known_hosts().string() << "\n"
          << "ssh_hosts=" << emulator.ssh_hosts_file().string() << "\n";
    }
    if (background_pid) out << "pid=" << *background_pid << "\n";
  }
  return out.str();
}

// --background: forks before the emulator starts its threads. The child serves and writes its
// ready lines to a pipe, then lets go of the caller's stdout; the parent copies the lines to
// stdout and returns, or fails with the child's status if it could not start.
// Returns only in the child, with the pipe's write end.
int fork_to_background() {
  int pipe_ends[2];
  if (::pipe(pipe_ends) != 0) bad("cannot create a pipe");
  const pid_t child = ::fork();
  if (child < 0) bad("cannot fork");
  if (child == 0) {
    ::close(pipe_ends[0]);
    ::setsid();  // a terminal's SIGINT to the caller's process group no longer reaches it
    return pipe_ends[1];
  }
  ::close(pipe_ends[1]);
  std::string lines;
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_ends[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    lines.append(buffer, static_cast<std::size_t>(n));
  }
  if (lines.empty()) {
    int status = 0;
    ::waitpid(child, &status, 0);
    std::exit(WIFEXITED(status) && WEXITSTATUS(status) != 0 ? WEXITSTATUS(status) : 1);
  }
  std::cout << lines << std::flush;
  std::exit(0);
}

template <typename T>
T need(std::optional<T> value, std::string_view flag) {
  if (!value) bad("invalid value for " + std::string(flag));
  return *value;
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// Every public key line of a file (blank lines and # comments skipped).
void load_ssh_keys(const std::string& path, std::vector<std::string>& keys) {
  std::ifstream in(path);
  if (!in) bad("cannot read " + path);
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line);
    if (!line.empty() && line[0] != '#') keys.push_back(line);
  }
}

void load_tokens(const std::string& path, Options& options) {
  std::ifstream in(path);
  if (!in) bad("cannot read " + path);
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    std::string token;
    TokenSpec spec;
    std::size_t start = 0;
    bool first = true;
    while (start <= line.size()) {
      const auto semicolon = line.find(';', start);
      const std::string field = trim(line.substr(start, semicolon == std::string::npos ? std::string::npos : semicolon - start));
      if (first) token = field;
      else if (field.rfind("cmds=", 0) == 0) {
        std::vector<std::string> cmds;
        std::size_t s = 5;
        while (s <= field.size()) {
          const auto comma = field.find(',', s);
          const std::string cmd = trim(field.substr(s, comma == std::string::npos ? std::string::npos : comma - s));
          if (!cmd.empty()) cmds.push_back(cmd);
          if (comma == std::string::npos) break;
          s = comma + 1;
        }
        spec.cmds = cmds;
      } else if (field.rfind("tag=", 0) == 0) spec.tag = field.substr(4);
      else bad("unknown field \"" + field + "\" in " + path);
      first = false;
      if (semicolon == std::string::npos) break;
      start = semicolon + 1;
    }
    if (token.rfind("exe1.", 0) != 0) bad("tokens in " + path + " must start with exe1.");
    options.tokens[token] = spec;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  Modes& modes = options.modes;
  bool print_env = false;
  bool background = false;
  for (int i = 1; i < argc; ++i) {
    const auto flag = exedev::detail::split_flag(argv[i]);
    const std::string& name = flag.name;
    const auto need_value = [&] {
      if (!flag.value) bad(name + " needs a value (" + name + "=…)");
      return *flag.value;
    };
    const auto number = [&] {
      const auto parsed = exedev::detail::parse_number(need_value());
      if (!parsed || !(*parsed >= 0)) bad("invalid number for " + name);
      return *parsed;
    };
    const auto duration = [&] {
      const auto parsed = need(duration_from(need_value()), name);
      if (!parsed) bad(name + " cannot be none");
      return *parsed;
    };
    if (name == "--help" || name == "-h") {
      std::cout << usage;
      return 0;
    } else if (name == "--host") options.host = need_value();
    else if (name == "--port") {
      const double port = number();
      if (port > 65535 || port != static_cast<std::uint16_t>(port)) bad("invalid port");
      options.port = static_cast<std::uint16_t>(port);
    }
    else if (name == "--state-dir") options.state_dir = need_value();
    else if (name == "--plain-http") options.plain_http = true;
    else if (name == "--token") options.token = need_value();
    else if (name == "--tokens-file") load_tokens(need_value(), options);
    else if (name == "--control-secret") options.control_secret = need_value();
    else if (name == "--login-shell") options.login_shell = need_value();
    else if (name == "--ssh-key") load_ssh_keys(need_value(), options.ssh_authorized_keys);
    else if (name == "--second-ssh-key") load_ssh_keys(need_value(), options.second_ssh_authorized_keys);
    else if (name == "--second-token") options.second_token = need_value();
    else if (name == "--ssh-domain") options.ssh_domain = need_value();
    else if (name == "--ssh-destination") modes.ssh_destination = need(ssh_destination_from(need_value()), name);
    else if (name == "--boot-delay") modes.boot_delay = duration();
    else if (name == "--ssh-time-limit") modes.ssh_time_limit = need(duration_from(need_value()), name);
    else if (name == "--lobby-deadline") modes.lobby_deadline = duration();
    else if (name == "--paused-vm-ssh") modes.paused_vm_ssh = need(paused_vm_ssh_from(need_value()), name);
    else if (name == "--on-client-disconnect") modes.on_client_disconnect = need(on_disconnect_from(need_value()), name);
    else if (name == "--trailers") modes.trailers = need(trailers_from(need_value()), name);
    else if (name == "--ssh-nonzero-exit") modes.ssh_nonzero_exit = need(ssh_nonzero_exit_from(need_value()), name);
    else if (name == "--cut-exit-code") modes.cut_exit_code = need(cut_exit_code_from(need_value()), name);
    else if (name == "--cp-response") modes.cp_response = need(cp_response_from(need_value()), name);
    else if (name == "--unready-true-quirk") modes.unready_true_quirk = true;
    else if (name == "--rate-limit") modes.rate_limit.enabled = true;
    else if (name == "--rate-burst") modes.rate_limit.burst = number();
    else if (name == "--rate-refill") modes.rate_limit.refill_per_second = number();
    else if (name == "--rate-overdraft") modes.rate_limit.overdraft = number();
    else if (name == "--rate-retry-after") modes.rate_limit.retry_after = true;
    else if (name == "--latency") modes.latency = duration();
    else if (name == "--ssh-silent") modes.ssh_silent = true;
    else if (name == "--no-sftp") options.ssh_sftp = false;
    else if (name == "--print-env") print_env = true;
    else if (name == "--background") background = true;
    else bad("unknown option " + name);
  }

  const int ready_pipe = background ? fork_to_background() : -1;
  // Block the signals before the server thread starts, so only sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  try {
    Emulator emulator(options);
    if (background) {
      const std::string lines = ready_lines(emulator, print_env, ::getpid());
      for (std::size_t written = 0; written < lines.size();) {
        const ssize_t n = ::write(ready_pipe, lines.data() + written, lines.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw std::runtime_error("cannot report to the parent process");
        written += static_cast<std::size_t>(n);
      }
      ::close(ready_pipe);
      // Let go of the caller's terminal or pipe (a `$(…)` waits for every writer to close it).
      const int null_device = ::open("/dev/null", O_RDWR);
      for (const int stream : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) ::dup2(null_device, stream);
      if (null_device > STDERR_FILENO) ::close(null_device);
    } else {
      std::cout << ready_lines(emulator, print_env, std::nullopt) << std::flush;
    }
    int received = 0;
    sigwait(&signals, &received);
  } catch (const std::exception& e) {
    std::cerr << "exedev-emulator: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
