// B13: the CPU cost of minting one exe0 token (payload, SSHSIG over it, the token's text) with
// each key type from a file and through a local ssh-agent. Each token is minted anew: the clock
// the minter is given moves past the renewal point between calls. Prints CPU time per token
// (this process's user + system time; the agent's own work is counted apart, as wall time).
#include "client/minting.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using exedev::detail::TokenMinter;

namespace {

double cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

int run(const std::string& command) { return std::system(command.c_str()); }

struct Result {
  double cpu_us;
  double wall_us;
};

Result measure(exedev::TokenMinting options, int tokens) {
  TokenMinter minter(std::move(options), nullptr);
  auto now = std::chrono::system_clock::now();
  (void)minter.exec_token(now);  // the key is read and chosen once, outside the measure
  const double cpu_start = cpu_seconds();
  const auto wall_start = std::chrono::steady_clock::now();
  for (int i = 0; i < tokens; ++i) {
    now += 300s;  // past the renewal point: a new token each time
    (void)minter.exec_token(now);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return {(cpu_seconds() - cpu_start) / tokens * 1e6, wall / tokens * 1e6};
}

}  // namespace

int main(int argc, char** argv) {
  const int tokens = argc > 1 ? std::atoi(argv[1]) : 2000;
  std::string pattern = (fs::temp_directory_path() / "exedev-bench-minting-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) return 1;
  const fs::path directory = pattern;
  ::unsetenv("EXE_SSH_KEY");
  struct Kind {
    std::string name, type, bits;
  };
  const std::vector<Kind> kinds = {
      {"ed25519", "ed25519", ""}, {"ecdsa-p256", "ecdsa", "256"}, {"ecdsa-p384", "ecdsa", "384"},
      {"rsa-3072", "rsa", "3072"}};
  std::printf("B13 minting, %d tokens each (lifetime 300 s)\n%-22s %14s %14s\n", tokens, "key", "CPU us/token",
              "wall us/token");
  for (const auto& kind : kinds) {
    const auto path = directory / kind.name;
    if (run("ssh-keygen -q -t " + kind.type + (kind.bits.empty() ? "" : " -b " + kind.bits) + " -N '' -f " + path.string()) != 0)
      return 1;
    exedev::TokenMinting options;
    options.key.private_key_file = path;
    options.key.use_agent = false;
    const auto result = measure(options, tokens);
    std::printf("%-22s %14.1f %14.1f\n", (kind.name + " file").c_str(), result.cpu_us, result.wall_us);
  }
  // Through ssh-agent: the signature is the agent's work; this process builds and sends.
  const auto socket = directory / "agent.sock";
  FILE* agent = ::popen(("ssh-agent -s -a " + socket.string()).c_str(), "r");
  char buffer[512];
  std::string output;
  while (agent && std::fgets(buffer, sizeof buffer, agent)) output += buffer;
  if (agent) ::pclose(agent);
  const auto at = output.find("SSH_AGENT_PID=");
  if (at == std::string::npos) return 1;
  const pid_t agent_pid = static_cast<pid_t>(std::stol(output.substr(at + 14)));
  ::setenv("SSH_AUTH_SOCK", socket.c_str(), 1);
  if (run("ssh-add -q " + (directory / "ed25519").string()) == 0) {
    exedev::TokenMinting options;
    options.key.default_key_files = {directory / "none"};
    const auto result = measure(options, tokens);
    std::printf("%-22s %14.1f %14.1f\n", "ed25519 ssh-agent", result.cpu_us, result.wall_us);
  }
  ::kill(agent_pid, SIGTERM);
  fs::remove_all(directory);
  return 0;
}
