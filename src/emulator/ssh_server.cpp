#include "emulator/ssh_server.hpp"

#include "emulator/processes.hpp"

#include "common/shell_quote.hpp"
#include "common/subprocess.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <system_error>

namespace exedev::emulator {

namespace fs = std::filesystem;

namespace {

constexpr const char* keygen_program = "/usr/bin/ssh-keygen";
constexpr const char* setpriv_program = "/usr/bin/setpriv";  // util-linux

void write_text(const fs::path& path, const std::string& text, fs::perms permissions) {
  const auto temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + temporary);
  }
  fs::permissions(temporary, permissions);
  fs::rename(temporary, path);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A free loopback port: the kernel picks one, and it is released for sshd to bind.
std::uint16_t free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const int error = errno;
    ::close(fd);
    throw std::system_error(error, std::generic_category(), "cannot find a free port for sshd");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

// Runs a program to its end with stdout and stderr on `log_fd`; returns its exit code.
int run_to_end(const std::vector<std::string>& argv, int log_fd) {
  detail::SpawnRequest request;
  request.program = argv.front();
  request.argv = argv;
  request.environment = {std::string("PATH=") + vm_path};
  request.directory = '/';  // a char: GCC 12 -O3 warns falsely on a 1-char literal (-Wrestrict)
  request.stdout_fd = log_fd;
  request.stderr_fd = log_fd;
  const auto started = detail::spawn_process(request);
  if (started.error != 0) throw std::system_error(started.error, std::generic_category(), "cannot start " + argv.front());
  int status = 0;
  while (::waitpid(started.pid, &status, 0) < 0 && errno == EINTR) {
  }
  return detail::exit_code_of(status);
}

// A path as one sshd_config argument: double-quoted, `%` doubled where sshd expands tokens.
std::string config_path(const fs::path& path, bool expands_tokens) {
  std::string out = "\"";
  for (const char c : path.string()) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
    if (c == '%' && expands_tokens) out += '%';
  }
  return out + "\"";
}

}  // namespace

SshServer::SshServer(const fs::path& state_dir, std::string login_shell, bool sftp)
    : directory_(state_dir / "ssh"), login_shell_(std::move(login_shell)), sftp_(sftp) {
  for (const char* program : {sshd_program, sftp_server_program, keygen_program}) {
    if (::access(program, X_OK) != 0) throw std::runtime_error(std::string(program) + " is missing (Debian: openssh-server)");
  }
  fs::create_directories(directory_ / "routes");
  fs::create_directories(directory_ / "home");
  // As root, sshd needs its privilege separation directory.
  if (::geteuid() == 0) fs::create_directories("/run/sshd");
  const auto host_key = directory_ / "ssh_host_ed25519_key";
  if (!fs::exists(host_key)) {
    const int log_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    const int code = run_to_end({keygen_program, "-q", "-t", "ed25519", "-N", "", "-C", "exedev-emulator", "-f", host_key.string()}, log_fd);
    ::close(log_fd);
    if (code != 0) throw std::runtime_error("ssh-keygen could not make the host key " + host_key.string());
  }
  const std::string public_line = read_text(host_key.string() + ".pub");
  const auto second_space = public_line.find(' ', public_line.find(' ') + 1);
  host_public_key_ = public_line.substr(0, second_space == std::string::npos ? public_line.find('\n') : second_space);
  if (host_public_key_.rfind("ssh-ed25519 ", 0) != 0) throw std::runtime_error("unreadable host key " + host_key.string() + ".pub");
  if (!fs::exists(directory_ / "authorized_keys")) write_text(directory_ / "authorized_keys", "", fs::perms(0600));
  port_ = free_loopback_port();
  write_wrapper();
  write_config();
}

SshServer::~SshServer() { stop(); }

fs::path SshServer::route_file(std::uint16_t local_port) const { return directory_ / "routes" / std::to_string(local_port); }

std::string SshServer::route_text(const fs::path& home, const std::string& login_shell, const std::vector<std::string>& environment) {
  std::string text = "exedev_home=" + detail::sh_single_quote(home.string()) + "\n";
  text += "exedev_shell=" + detail::sh_single_quote(login_shell) + "\n";
  text += "set --";
  for (const std::string& entry : environment) {
    text += ' ';  // appended, not " " + …: GCC 12 -O3 warns falsely on that (-Wrestrict)
    text += detail::sh_single_quote(entry);
  }
  return text + "\n";
}

void SshServer::write_wrapper() const {
  // The session as an /exec command of the VM runs (ssh_process.cpp): its login shell, home and
  // environment, with the marker that pause, restart and rm find its processes by.
  const std::string sftp = detail::sh_single_quote(sftp_server_program);
  const std::string script = R"(#!/bin/sh
# Written by the exedev emulator (docs/emulator.md, "SSH endpoints"). sshd runs it for every
# session (ForceCommand). The emulator's relay connected to sshd from the port that
# SSH_CONNECTION names, after writing that port's route: the VM's home, its login shell and the
# environment an /exec command of the VM gets. The session runs as such a command does.
set -f
set -- $SSH_CONNECTION
route=)" + detail::sh_single_quote((directory_ / "routes").string()) + R"(/"$2"
if [ -z "$2" ] || [ ! -r "$route" ]; then
  echo "exedev-emulator: no VM is served on this connection" >&2
  exit 255
fi
has_command=${SSH_ORIGINAL_COMMAND+yes}
command=${SSH_ORIGINAL_COMMAND-}
set --
. "$route"
# What sshd gives a session besides: its connection, terminal, agent, X11 display, and the
# client's locale (AcceptEnv LANG LC_*), which wins over the default LANG.
for name in SSH_CONNECTION SSH_CLIENT SSH_TTY TERM SSH_AUTH_SOCK DISPLAY LANG LC_ALL LC_CTYPE LC_COLLATE \
    LC_MESSAGES LC_MONETARY LC_NUMERIC LC_TIME LC_ADDRESS LC_IDENTIFICATION LC_MEASUREMENT LC_NAME LC_PAPER \
    LC_TELEPHONE; do
  eval "if [ -n \"\${$name+set}\" ]; then set -- \"\$@\" \"$name=\$$name\"; fi"
done
cd "$exedev_home" || exit 1
# Under ForceCommand, an sftp subsystem request arrives as the Subsystem's command.
if [ "$has_command" = yes ] && [ "$command" = )" + sftp + R"( ]; then
  exec /usr/bin/env -i "$@" )" + sftp + R"( -d "$exedev_home"
elif [ "$has_command" = yes ]; then
  exec /usr/bin/env -i "$@" "$exedev_shell" -c "$command"
fi
exec /usr/bin/env -i "$@" "$exedev_shell" -l
)";
  write_text(directory_ / "session", script, fs::perms(0755));
}

void SshServer::write_config() const {
  std::string config = R"(# Written by the exedev emulator (docs/emulator.md, "SSH endpoints").
# exe.dev's VM sshd_config (exelet/fs/rovol/etc/ssh/sshd_config at 7524fcac):
HostKeyAlgorithms ssh-ed25519
KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org
Ciphers chacha20-poly1305@openssh.com,aes256-ctr,aes128-ctr
MACs umac-128-etm@openssh.com,umac-64-etm@openssh.com,hmac-sha2-512,hmac-sha2-256
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
Compression no
MaxStartups 1000:100:1000
AllowAgentForwarding yes
AllowTcpForwarding yes
X11Forwarding yes
ClientAliveInterval 60
ClientAliveCountMax 3
AcceptEnv LANG LC_*
)";
  // (One SetEnv line: sshd keeps the first.) HOME is the emulator's own: sshd starts the
  // ForceCommand wrapper with the login user's shell, and bash then reads that HOME's ~/.bashrc;
  // a developer's (pyenv, conda, nvm) costs seconds per session, which no VM pays, and its
  // output would corrupt SFTP. An empty directory has no startup file; the wrapper sets the VM's.
  config += std::string("SetEnv PATH=") + vm_path + " " + config_path("HOME=" + (directory_ / "home").string(), false) + "\n";
  // Without the line, sshd refuses the subsystem before ForceCommand is consulted.
  if (sftp_) config += std::string("Subsystem sftp ") + sftp_server_program + "\n";
  config += "HostKey " + config_path(directory_ / "ssh_host_ed25519_key", false) + "\n";
  config += "# The emulator's own: a loopback port only its relay reaches, the keys registered with it,\n"
            "# no PAM, keys in a private directory, and every session through the wrapper.\n";
  config += "ListenAddress 127.0.0.1:" + std::to_string(port_) + "\n";
  config += "AuthorizedKeysFile " + config_path(directory_ / "authorized_keys", true) + "\n";
  config += "UsePAM no\nStrictModes no\nPidFile none\n";
  config += "ForceCommand " + detail::sh_single_quote((directory_ / "session").string()) + "\n";
  write_text(config_file(), config, fs::perms(0600));
}

bool SshServer::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == 0) return true;
  pid_ = -1;  // exited (and reaped now)
  return false;
}

void SshServer::ensure_running() {
  if (running()) return;
  const auto log = directory_ / "sshd.log";
  const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) throw std::system_error(errno, std::generic_category(), "cannot open " + log.string());
  detail::SpawnRequest request;
  // sshd re-executes itself: an absolute path. Through setpriv, it dies with the thread that
  // started it (the server's), so an emulator killed outright leaves no listener behind.
  request.program = sshd_program;
  request.argv = {sshd_program, "-D", "-e", "-f", config_file().string()};
  if (::access(setpriv_program, X_OK) == 0) {
    request.program = setpriv_program;
    request.argv.insert(request.argv.begin(), {setpriv_program, "--pdeathsig", "KILL"});
  }
  request.environment = {std::string("PATH=") + vm_path};
  request.directory = '/';  // a char: GCC 12 -O3 warns falsely on a 1-char literal (-Wrestrict)
  request.grouping = detail::ProcessGrouping::new_session;
  request.stdout_fd = log_fd;
  request.stderr_fd = log_fd;
  const auto started = detail::spawn_process(request);
  ::close(log_fd);
  if (started.error != 0) throw std::system_error(started.error, std::generic_category(), "cannot start sshd");
  pid_ = started.pid;
}

void SshServer::stop() {
  // sshd serves each connection from processes of its own, in sessions of their own, which
  // outlive the listener: the listener's whole tree goes.
  if (pid_ > 0) {
    kill_process_tree(pid_);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
  std::error_code ignored;
  for (const auto& entry : fs::directory_iterator(directory_ / "routes", ignored)) fs::remove(entry.path(), ignored);
}

}  // namespace exedev::emulator
