#include "support/sshd_server.hpp"

#include "common/subprocess.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace exedev::test_support {

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** entry = environ; *entry != nullptr; ++entry) out.emplace_back(*entry);
  return out;
}

fs::path make_temp_directory() {
  std::string pattern = (fs::temp_directory_path() / "exedev-sshd-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

// A port free now on 127.0.0.1 (sshd binds it right after; a clash is retried by the caller).
std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

// Every process whose ancestry includes `root` (not `root` itself).
std::vector<pid_t> descendants_of(pid_t root) {
  std::map<pid_t, pid_t> parent_of;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto stat = read_file(entry.path() / "stat");
    const auto close_paren = stat.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(close_paren + 2));
    char state = 0;
    pid_t parent = 0;
    fields >> state >> parent;
    parent_of[std::stoi(name)] = parent;
  }
  std::vector<pid_t> out;
  for (const auto& [pid, parent] : parent_of) {
    for (pid_t up = parent; up > 1;) {
      if (up == root) {
        out.push_back(pid);
        break;
      }
      const auto it = parent_of.find(up);
      if (it == parent_of.end()) break;
      up = it->second;
    }
  }
  return out;
}

}  // namespace

int run_program(const std::vector<std::string>& argv, std::string* output) {
  int pipe_fds[2] = {-1, -1};
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  detail::SpawnRequest request;
  request.program = argv.front();
  request.argv = argv;
  request.environment = current_environment();
  request.directory = "/";
  request.grouping = detail::ProcessGrouping::new_group;
  request.stdout_fd = pipe_fds[1];
  request.stderr_fd = pipe_fds[1];
  const auto spawned = detail::spawn_process(request);
  ::close(pipe_fds[1]);
  if (spawned.pid < 0) {
    ::close(pipe_fds[0]);
    throw std::runtime_error("cannot start " + argv.front());
  }
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(spawned.pid, &status, 0);
  if (output != nullptr) *output = std::move(text);
  return detail::exit_code_of(status);
}

Agent::Agent(const std::filesystem::path& directory, const std::vector<KeyPair>& keys) {
  const auto socket = directory / "agent.sock";
  std::string output;
  if (run_program({"/usr/bin/ssh-agent", "-a", socket.string()}, &output) != 0) throw std::runtime_error("ssh-agent did not start");
  const auto pid_at = output.find("SSH_AGENT_PID=");
  if (pid_at == std::string::npos) throw std::runtime_error("ssh-agent named no pid");
  pid_ = std::stoi(output.substr(pid_at + 14));
  ::setenv("SSH_AUTH_SOCK", socket.c_str(), 1);
  for (const auto& key : keys) {
    if (run_program({"/usr/bin/ssh-add", "-q", key.private_key.string()}) != 0) throw std::runtime_error("ssh-add failed");
  }
}

Agent::~Agent() {
  ::unsetenv("SSH_AUTH_SOCK");
  ::kill(pid_, SIGTERM);
}

std::string KeyPair::public_line() const {
  auto text = read_file(public_key);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

std::string KeyPair::private_text() const { return read_file(private_key); }

std::string KeyPair::fingerprint() const {
  std::string output;
  run_program({"/usr/bin/ssh-keygen", "-l", "-E", "sha256", "-f", public_key.string()}, &output);
  // "256 SHA256:xxxx comment (ED25519)"
  const auto begin = output.find("SHA256:");
  return output.substr(begin, output.find(' ', begin) - begin);
}

KeyPair make_key(const fs::path& directory, const std::string& name, const std::string& passphrase, const std::string& type) {
  const auto path = directory / name;
  std::string output;
  const int code = run_program({"/usr/bin/ssh-keygen", "-q", "-t", type, "-N", passphrase, "-C", name, "-f", path.string()}, &output);
  if (code != 0) throw std::runtime_error("ssh-keygen failed: " + output);
  return {path, fs::path(path.string() + ".pub")};
}

SshServer::SshServer(const std::string& extra_config) : directory_(make_temp_directory()) {
  const passwd* entry = ::getpwuid(::getuid());
  user_ = entry != nullptr ? entry->pw_name : "root";
  // exe.dev's front: one RSA-2048 host key (docs/emulator.md, "SSH endpoints").
  host_key_ = make_key(directory_, "ssh_host_rsa_key", "", "rsa");
  client_key_ = make_key(directory_, "client_key");
  authorize(client_key_);
  // As root, sshd needs its privilege separation directory.
  if (::geteuid() == 0) ::mkdir("/run/sshd", 0755);
  // A port taken between free_port() and sshd's bind is the only expected failure: try again.
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (start(extra_config)) return;
  }
  const auto text = log();
  stop();
  throw std::runtime_error("sshd did not start: " + text);
}

SshServer::~SshServer() {
  stop();
  std::error_code ignored;
  fs::remove_all(directory_, ignored);
}

void SshServer::authorize(const KeyPair& key) const {
  std::ofstream out(directory_ / "authorized_keys", std::ios::app);
  out << key.public_line() << '\n';
}

std::string SshServer::known_hosts_line() const {
  const auto line = host_key_.public_line();
  // "ssh-rsa AAAA… comment" → "[127.0.0.1]:port ssh-rsa AAAA…"
  const auto space = line.find(' ', line.find(' ') + 1);
  return "[127.0.0.1]:" + std::to_string(port_) + " " + line.substr(0, space);
}

std::string SshServer::host_key_fingerprint() const { return host_key_.fingerprint(); }

std::string SshServer::log() const { return read_file(directory_ / "sshd.log"); }

bool SshServer::start(const std::string& extra_config) {
  port_ = free_port();
  const auto config = directory_ / "sshd_config";
  const auto log_path = directory_ / "sshd.log";
  {
    std::ofstream out(config);
    out << "Port " << port_ << "\n"
        << "ListenAddress 127.0.0.1\n"
        << "HostKey " << host_key_.private_key.string() << "\n"
        // What a client negotiates with at exe.dev: its front's algorithms (x/crypto/ssh's;
        // reference/exedev-ssh.md, "The front"), as the emulator's sshd has them.
        << "HostKeyAlgorithms rsa-sha2-512,rsa-sha2-256,ssh-rsa\n"
        << "KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,ecdh-sha2-nistp384,"
           "ecdh-sha2-nistp521,diffie-hellman-group14-sha256,diffie-hellman-group14-sha1\n"
        << "Ciphers aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,aes128-ctr,aes192-ctr,"
           "aes256-ctr\n"
        << "MACs hmac-sha2-256-etm@openssh.com,hmac-sha2-512-etm@openssh.com,hmac-sha2-256,hmac-sha2-512,hmac-sha1,"
           "hmac-sha1-96\n"
        << "PubkeyAcceptedAlgorithms +ssh-rsa\n"
        // The channel layer: exe.dev's VM sshd_config, paths and user made local.
        << "PermitRootLogin prohibit-password\n"
        << "PubkeyAuthentication yes\n"
        << "PasswordAuthentication no\n"
        << "KbdInteractiveAuthentication no\n"
        << "UseDNS no\n"
        << "Compression no\n"
        << "MaxStartups 1000:100:1000\n"
        << "Subsystem sftp /usr/lib/openssh/sftp-server\n"
        << "AllowAgentForwarding yes\n"
        << "AllowTcpForwarding yes\n"
        << "ClientAliveInterval 60\n"
        << "ClientAliveCountMax 3\n"
        << "AcceptEnv LANG LC_*\n"
        // Local to the test. Sessions get an empty HOME, as the emulator's do: the user's login
        // shell then reads no ~/.bashrc of the developer's (one that blocks would hang a test).
        << "SetEnv HOME=" << (directory_ / "home").string() << "\n"
        << "UsePAM no\n"
        << "StrictModes no\n"
        << "AuthorizedKeysFile " << (directory_ / "authorized_keys").string() << "\n"
        << "PidFile none\n"
        << extra_config << "\n";
  }
  fs::remove(log_path);
  fs::create_directories(directory_ / "home");
  const int inotify = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  ::inotify_add_watch(inotify, directory_.c_str(), IN_MODIFY | IN_CREATE);
  const int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  detail::SpawnRequest request;
  request.program = "/usr/sbin/sshd";
  request.argv = {"/usr/sbin/sshd", "-D", "-f", config.string(), "-E", log_path.string()};
  request.environment = current_environment();
  request.directory = "/";
  request.stdout_fd = null_fd;
  request.stderr_fd = null_fd;
  const auto spawned = detail::spawn_process(request);
  ::close(null_fd);
  if (spawned.pid < 0) {
    ::close(inotify);
    throw std::runtime_error("cannot start /usr/sbin/sshd");
  }
  pid_ = spawned.pid;
  const int pidfd = detail::open_pidfd(pid_);
  // Wait for the log line that says sshd listens (or for sshd's exit), at most 20 s.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool listening = false;
  bool exited = false;
  while (!listening && !exited && std::chrono::steady_clock::now() < deadline) {
    const auto text = log();
    if (text.find("Server listening on 127.0.0.1 port " + std::to_string(port_)) != std::string::npos) {
      listening = true;
      break;
    }
    pollfd fds[2] = {{inotify, POLLIN, 0}, {pidfd, POLLIN, 0}};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    ::poll(fds, 2, static_cast<int>(std::max<long>(left.count(), 0)));
    char events[4096];
    while (::read(inotify, events, sizeof events) > 0) {
    }
    exited = (fds[1].revents & POLLIN) != 0;
  }
  ::close(inotify);
  ::close(pidfd);
  if (!listening) stop();
  return listening;
}

void SshServer::kill_connections() const {
  for (const pid_t pid : descendants_of(pid_)) ::kill(pid, SIGKILL);
}

void SshServer::stop() {
  if (pid_ < 0) return;
  kill_connections();
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

}  // namespace exedev::test_support
