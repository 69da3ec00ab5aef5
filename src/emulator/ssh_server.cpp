#include "emulator/ssh_server.hpp"

#include "emulator/any_user_shim.hpp"
#include "emulator/processes.hpp"

#include "common/shell_quote.hpp"
#include "common/subprocess.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
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

void run_keygen(const std::vector<std::string>& arguments, const std::string& failure) {
  std::vector<std::string> argv = {keygen_program};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  const int log_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  const int code = run_to_end(argv, log_fd);
  ::close(log_fd);
  if (code != 0) throw std::runtime_error("ssh-keygen " + failure);
}

void make_key_once(const fs::path& key, std::vector<std::string> type) {
  if (fs::exists(key)) return;
  type.insert(type.begin(), "-q");
  for (const char* argument : {"-N", "", "-C", "exedev-emulator", "-f"}) type.emplace_back(argument);
  type.push_back(key.string());
  run_keygen(type, "could not make the key " + key.string());
}

// `<type> <base64>` of a key's .pub file.
std::string public_key_of(const fs::path& key) {
  const std::string line = read_text(key.string() + ".pub");
  const auto second_space = line.find(' ', line.find(' ') + 1);
  return line.substr(0, second_space == std::string::npos ? line.find('\n') : second_space);
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

SshServer::SshServer(const fs::path& state_dir, std::string login_shell, bool sftp, std::string domain)
    : directory_(state_dir / "ssh"), login_shell_(std::move(login_shell)), sftp_(sftp), domain_(std::move(domain)) {
  for (const char* program : {sshd_program, sftp_server_program, keygen_program}) {
    if (::access(program, X_OK) != 0) throw std::runtime_error(std::string(program) + " is missing (Debian: openssh-server)");
  }
  fs::create_directories(directory_ / "routes");
  fs::create_directories(directory_ / "connections");
  fs::create_directories(directory_ / "home");
  // As root, sshd needs its privilege separation directory.
  if (::geteuid() == 0) fs::create_directories("/run/sshd");
  // exe.dev's front has one RSA-2048 host key for every VM, and a host certificate for it signed
  // by exe.dev's SSH CA. Both keys are made once, so a new emulator on the same state has them.
  make_key_once(host_key_file(), {"-t", "rsa", "-b", "2048"});
  make_key_once(ca_key_file(), {"-t", "ed25519"});
  host_public_key_ = public_key_of(host_key_file());
  ca_public_key_ = public_key_of(ca_key_file());
  if (host_public_key_.rfind("ssh-rsa ", 0) != 0) throw std::runtime_error("unreadable host key " + host_key_file().string() + ".pub");
  // The certificate names the emulator's SSH host names (made at each start: they follow the domain).
  const std::string principals = domain_ + ",*." + domain_ + ",127.0.0.1,localhost";
  run_keygen({"-q", "-s", ca_key_file().string(), "-I", "exedev-emulator-host", "-h", "-n", principals,
              host_key_file().string() + ".pub"},
             "could not certify the host key");
  if (!fs::is_symlink(hosts_file())) fs::create_symlink("landing/hosts", hosts_file());
  {
    const std::string_view shim = any_user_shim();
    write_text(shim_file(), std::string(shim), fs::perms(0755));
  }
  port_ = free_loopback_port();
  write_wrapper();
  write_key_script();
  write_config();
}

SshServer::~SshServer() { stop(); }

std::string SshServer::known_hosts_text() const {
  return "[*." + domain_ + "]:*,[" + domain_ + "]:*,[127.0.0.1]:* " + host_public_key_ + "\n";
}

std::string SshServer::cert_authority_line() const {
  // exe.dev names its hosts at port 22; the emulator's endpoints are other ports, so the
  // bracketed patterns cover them too.
  return "@cert-authority " + domain_ + ",*." + domain_ + ",[" + domain_ + "]:*,[*." + domain_ + "]:* " + ca_public_key_ + " " +
         domain_ + " ssh ca\n";
}

fs::path SshServer::route_file(std::uint16_t local_port) const { return directory_ / "routes" / std::to_string(local_port); }

fs::path SshServer::connection_file(std::uint16_t local_port) const {
  return directory_ / "connections" / std::to_string(local_port);
}

void SshServer::write_wrapper() const {
  // The session as an /exec command of the VM runs (ssh_process.cpp): its login shell, home and
  // environment, with the marker that pause, restart and rm find its processes by.
  const std::string sftp = detail::sh_single_quote(sftp_server_program);
  const std::string script = R"sh(#!/bin/sh
# Written by the exedev emulator (docs/emulator.md, "SSH endpoints"). sshd runs it for every
# session (ForceCommand). The key script (`land`) decided at authentication where the
# connection landed and wrote the route of the relay's port that SSH_CONNECTION names: a VM's
# landing entry (its home, login shell and environment), or the lobby shell.
set -f
set -- $SSH_CONNECTION
route=)sh" + detail::sh_single_quote((directory_ / "routes").string()) + R"sh(/"$2"
if [ -z "$2" ] || [ ! -r "$route" ]; then
  echo "exedev-emulator: no VM is served on this connection" >&2
  exit 255
fi
has_command=${SSH_ORIGINAL_COMMAND+yes}
command=${SSH_ORIGINAL_COMMAND-}
set --
exedev_lobby=
exedev_close=
. "$route"
if [ "$exedev_close" = yes ]; then
  # A VM still starting: accepted, then the connection closes (its sshd session ends).
  session=$PPID
  while [ "$session" -gt 1 ] && [ "$(cat /proc/$session/comm 2>/dev/null)" != sshd ]; do
    session=$(sed 's/.*) . \([0-9]*\) .*/\1/' /proc/$session/stat)
  done
  [ "$session" -gt 1 ] && kill -TERM "$session"
  exit 255
fi
if [ -n "$exedev_lobby" ]; then
  # exe.dev's lobby shell (execore/ssh_server.go): no SFTP (exe.dev says why on stderr, which
  # sshd discards for a subsystem: the channel just ends), and an unregistered key is told to
  # register. The emulator's lobby commands are served over HTTPS only.
  if [ "$has_command" = yes ] && [ "$command" = )sh" + sftp + R"sh( ]; then
    exit 1
  fi
  if [ "$exedev_lobby" = unregistered ]; then
    printf 'Please complete registration by running: ssh %s\r\n' )sh" + detail::sh_single_quote(domain_) + R"sh(
  else
    printf 'exedev-emulator: the lobby runs its commands over HTTPS (POST /exec), not over SSH\r\n'
  fi
  exit 1
fi
# What sshd gives a session besides: its connection, terminal, agent, X11 display, and the
# client's locale (AcceptEnv LANG LC_*), which wins over the default LANG.
for name in SSH_CONNECTION SSH_CLIENT SSH_TTY TERM SSH_AUTH_SOCK DISPLAY LANG LC_ALL LC_CTYPE LC_COLLATE \
    LC_MESSAGES LC_MONETARY LC_NUMERIC LC_TIME LC_ADDRESS LC_IDENTIFICATION LC_MEASUREMENT LC_NAME LC_PAPER \
    LC_TELEPHONE; do
  eval "if [ -n \"\${$name+set}\" ]; then set -- \"\$@\" \"$name=\$$name\"; fi"
done
cd "$exedev_home" || exit 1
# Under ForceCommand, an sftp subsystem request arrives as the Subsystem's command.
if [ "$has_command" = yes ] && [ "$command" = )sh" + sftp + R"sh( ]; then
  exec /usr/bin/env -i "$@" )sh" + sftp + R"sh( -d "$exedev_home"
elif [ "$has_command" = yes ]; then
  exec /usr/bin/env -i "$@" "$exedev_shell" -c "$command"
fi
exec /usr/bin/env -i "$@" "$exedev_shell" -l
)sh";
  write_text(directory_ / "session", script, fs::perms(0755));
}

void SshServer::write_key_script() const {
  // sshd runs it (AuthorizedKeysCommand) in the connection's privileged monitor for each key the
  // client offers: `land <user> <fingerprint> <type> <base64>`. Printing the key back accepts it.
  const std::string ssh_dir = detail::sh_single_quote(directory_.string());
  const std::string script = R"sh(#!/bin/sh
# Written by the exedev emulator (docs/emulator.md, "SSH endpoints"): routes a connection by the
# first key it offers, as exe.dev's front (execore/piper.go) does, through the landing table the
# emulator writes (landing/). Every key is accepted unless the connection is denied; a denial
# ends the connection at once (its monitor, this script's parent, is killed), so no second key
# is tried.
ssh_dir=)sh" + ssh_dir + R"sh(
user=$1 fingerprint=$2
# The connection: the relay's local port, the peer of the monitor's TCP socket.
inodes=" $(for fd in /proc/$PPID/fd/*; do readlink "$fd"; done | sed -n 's/^socket:\[\([0-9]*\)\]$/\1/p' | tr '\n' ' ')"
set -f
hex=$(awk -v inodes="$inodes" 'NR > 1 && index(inodes, " " $10 " ") { split($3, a, ":"); print a[2]; exit }' /proc/net/tcp)
[ -n "$hex" ] || exit 0
connection=$(printf '%d' "0x$hex")
route=$ssh_dir/routes/$connection
if [ -e "$route.key" ]; then
  # Asked again (the signature after the query): the first key's decision stands.
  [ "$(cat "$route.key")" = "$fingerprint" ] && printf '%s %s\n' "$3" "$4"
  exit 0
fi
endpoint=$(cat "$ssh_dir/connections/$connection" 2>/dev/null)
table=$ssh_dir/landing
account=$(cat "$table/keys/$(printf '%s' "$fingerprint" | tr / _)" 2>/dev/null)
land() {  # decision, VM name, message; one tab-separated line, the username last
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$connection" "${endpoint:--}" "$fingerprint" "${account:--}" "$1" "${2:--}" \
    "${3:--}" "$user" >> "$ssh_dir/landings.log"
}
deny() {  # VM name, message
  land denied "$1" "$2"
  kill -TERM "$PPID"
  exit 0
}
entry=
case $user in
  vm+*)
    name=${user#vm+}
    case $name in ''|*[!a-z0-9-]*) deny "$name" "Access denied for VM \"$name\"." ;; esac
    [ -n "$account" ] && [ -r "$table/$account/names/$name" ] || deny "$name" "Access denied for VM \"$name\"."
    entry=$table/$account/names/$name ;;
  *)
    case $endpoint in ''|*[!0-9]*) ;; *)
      [ -n "$account" ] && [ -r "$table/$account/shards/$endpoint" ] && entry=$table/$account/shards/$endpoint ;;
    esac ;;
esac
if [ -n "$entry" ]; then
  vm_name=$(sed -n "s/^vm_name='\(.*\)'\$/\1/p" "$entry")
  vm_ready=$(sed -n 's/^vm_ready=//p' "$entry")
  if ! grep -qx "vm_state='running'" "$entry"; then
    deny "$vm_name" "VM \"$vm_name\" is not running."
  fi
  cp "$entry" "$route.tmp"
  if [ "$(date +%s%3N)" -lt "$vm_ready" ]; then
    echo 'exedev_close=yes' >> "$route.tmp"
    land starting "$vm_name" -
  else
    land vm "$vm_name" -
  fi
else
  echo "exedev_lobby=${account:+registered}${account:-unregistered}" > "$route.tmp"
  land lobby - -
fi
mv "$route.tmp" "$route"
printf '%s\n' "$fingerprint" > "$route.key"
printf '%s %s\n' "$3" "$4"
)sh";
  write_text(key_script_file(), script, fs::perms(0644));
}

void SshServer::write_config() const {
  const passwd* self = ::getpwuid(::geteuid());
  if (self == nullptr || self->pw_name == nullptr) throw std::runtime_error("the emulator's user has no name");
  const std::string login_user = self->pw_name;
  // The front: what a client negotiates with at exe.dev's SSH proxy (Go's x/crypto/ssh defaults,
  // docs/emulator.md "SSH endpoints"): the RSA host key and its certificate, the key exchanges,
  // ciphers and MACs x/crypto offers (mlkem768x25519 but for OpenSSH 9.2, which lacks it), and
  // user keys signed with SHA-1 `ssh-rsa`, which OpenSSH refuses by default.
  std::string config = R"(# Written by the exedev emulator (docs/emulator.md, "SSH endpoints").
# The front (exe.dev's SSH proxy, x/crypto/ssh defaults):
HostKeyAlgorithms rsa-sha2-512,rsa-sha2-256,ssh-rsa,rsa-sha2-512-cert-v01@openssh.com,rsa-sha2-256-cert-v01@openssh.com,ssh-rsa-cert-v01@openssh.com
KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,ecdh-sha2-nistp384,ecdh-sha2-nistp521,diffie-hellman-group14-sha256,diffie-hellman-group14-sha1
Ciphers aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,aes128-ctr,aes192-ctr,aes256-ctr
MACs hmac-sha2-256-etm@openssh.com,hmac-sha2-512-etm@openssh.com,hmac-sha2-256,hmac-sha2-512,hmac-sha1,hmac-sha1-96
PubkeyAcceptedAlgorithms +ssh-rsa,ssh-rsa-cert-v01@openssh.com
)";
  config += "HostKey " + config_path(host_key_file(), false) + "\n";
  config += "HostCertificate " + config_path(host_certificate_file(), false) + "\n";
  config += R"(# Behind it, the channel layer of exe.dev's VM sshd_config (exelet/fs/rovol/etc/ssh/sshd_config at 7524fcac):
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
  config += "# The emulator's own: a loopback port only its relay reaches, every key routed by the key\n"
            "# script (/bin/sh passes sshd's check of the command's path wherever the state is),\n"
            "# no PAM, keys in a private directory, and every session through the wrapper.\n";
  config += "ListenAddress 127.0.0.1:" + std::to_string(port_) + "\n";
  config += "AuthorizedKeysFile none\n";
  config += "AuthorizedKeysCommand /bin/sh " + config_path(key_script_file(), true) + " %u %f %t %k\n";
  config += "AuthorizedKeysCommandUser " + login_user + "\n";
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
  // Any login name is the emulator's user (any_user_shim.c): exe.dev's front routes by the name.
  request.environment = {std::string("PATH=") + vm_path, "LD_PRELOAD=" + shim_file().string()};
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
  for (const char* kept_per_connection : {"routes", "connections"}) {
    for (const auto& entry : fs::directory_iterator(directory_ / kept_per_connection, ignored)) fs::remove(entry.path(), ignored);
  }
}

}  // namespace exedev::emulator
