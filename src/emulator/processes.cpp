#include "emulator/processes.hpp"

#include <algorithm>
#include <csignal>
#include <deque>
#include <dirent.h>
#include <map>
#include <fcntl.h>
#include <set>
#include <sys/types.h>
#include <unistd.h>

#include <string_view>

namespace exedev::emulator {
namespace {

std::string read_small_file(const std::string& path) {
  std::string out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buffer[8192];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
    if (out.size() > (1u << 20)) break;  // environments larger than 1 MiB are not ours
  }
  ::close(fd);
  return out;
}

// The state letter of /proc/<pid>/stat ('R', 'S', 'T', 'Z', …); 'X' when the process is gone.
char process_state(int pid) {
  const std::string stat = read_small_file("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? 'X' : stat[paren + 2];
}

// The parent id of /proc/<pid>/stat; -1 when the process is gone.
int parent_of(const std::string& stat) {
  const auto paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 4 >= stat.size()) return -1;
  return std::atoi(stat.c_str() + paren + 4);  // ") S <ppid> …"
}

bool is_zombie(int pid) {
  const char state = process_state(pid);
  return state == 'Z' || state == 'X';
}

}  // namespace

std::vector<std::string> vm_environment(const std::string& vm_id, const std::string& vm_name,
                                        const std::filesystem::path& home, const std::vector<std::string>& vm_env,
                                        const std::string& login_shell) {
  std::vector<std::string> environment = {"HOME=" + home.string(), "PWD=" + home.string(), std::string("PATH=") + vm_path,
                                          "SHELL=" + login_shell, "LANG=C.UTF-8", "USER=exedev", "LOGNAME=exedev",
                                          std::string(vm_marker_variable) + "=" + vm_id,
                                          "EXEDEV_EMULATOR_VM_NAME=" + vm_name};
  environment.insert(environment.end(), vm_env.begin(), vm_env.end());
  return environment;
}

std::vector<int> find_vm_processes(const std::string& vm_id) {
  std::vector<int> pids;
  const std::string needle = std::string(vm_marker_variable) + "=" + vm_id;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return pids;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name(entry->d_name);
    if (name.empty() || name.find_first_not_of("0123456789") != std::string_view::npos) continue;
    const int pid = std::stoi(std::string(name));
    const std::string environ = read_small_file("/proc/" + std::string(name) + "/environ");
    std::size_t start = 0;
    while (start < environ.size()) {
      const auto end = environ.find('\0', start);
      const std::string_view entry_text(environ.data() + start, (end == std::string::npos ? environ.size() : end) - start);
      if (entry_text == needle) {
        if (!is_zombie(pid)) pids.push_back(pid);
        break;
      }
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  ::closedir(dir);
  return pids;
}

namespace {

// Signals every process of the VM, scanning again until no new one shows up (a process may
// fork while being signalled). Returns the processes signalled.
std::set<int> signal_all(const std::string& vm_id, int signal) {
  std::set<int> done;
  for (int round = 0; round < 5; ++round) {
    bool fresh = false;
    for (const int pid : find_vm_processes(vm_id)) {
      if (done.insert(pid).second) {
        ::kill(pid, signal);
        fresh = true;
      }
    }
    if (!fresh) break;
  }
  return done;
}

}  // namespace

std::size_t signal_vm_processes(const std::string& vm_id, int signal) { return signal_all(vm_id, signal).size(); }

std::size_t stop_vm_processes(const std::string& vm_id) {
  // kill() returns before a stop takes effect (a sleeping process must run to act on it, which
  // takes long on a loaded machine); a paused VM is paused when `pause` answers.
  const auto signalled = signal_all(vm_id, SIGSTOP);
  for (int check = 0; check < 2000; ++check) {  // at most ~2 s
    const bool all_stopped = std::all_of(signalled.begin(), signalled.end(), [](int pid) {
      const char state = process_state(pid);
      return state == 'T' || state == 't' || state == 'Z' || state == 'X';
    });
    if (all_stopped) break;
    ::usleep(1000);
  }
  return signalled.size();
}

std::vector<int> process_tree(int root) {
  std::map<int, std::vector<int>> children;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return {};
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name(entry->d_name);
    if (name.empty() || name.find_first_not_of("0123456789") != std::string_view::npos) continue;
    const std::string stat = read_small_file("/proc/" + std::string(name) + "/stat");
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z') continue;
    children[parent_of(stat)].push_back(std::stoi(std::string(name)));
  }
  ::closedir(dir);
  std::vector<int> tree;
  if (!is_zombie(root)) tree.push_back(root);
  std::deque<int> pending{root};
  while (!pending.empty()) {
    const int parent = pending.front();
    pending.pop_front();
    for (const int child : children[parent]) {
      tree.push_back(child);
      pending.push_back(child);
    }
  }
  return tree;
}

void kill_process_tree(int root) {
  std::set<int> stopped;
  for (int round = 0; round < 20; ++round) {
    bool fresh = false;
    for (const int pid : process_tree(root)) {
      if (stopped.insert(pid).second) {
        ::kill(pid, SIGSTOP);
        fresh = true;
      }
    }
    if (!fresh) break;
  }
  for (const int pid : stopped) ::kill(pid, SIGKILL);
}

void kill_vm_processes(const std::string& vm_id) {
  for (int round = 0; round < 20; ++round) {
    const auto pids = find_vm_processes(vm_id);
    if (pids.empty()) return;
    for (const int pid : pids) {
      ::kill(pid, SIGKILL);
      ::kill(pid, SIGCONT);
    }
    ::usleep(2000);
  }
}

}  // namespace exedev::emulator
