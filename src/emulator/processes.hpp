#pragma once
// Finding and signalling the processes of an emulated VM.
//
// Every process the emulator starts for a VM carries EXEDEV_EMULATOR_VM=<vm id> in its
// environment. Children inherit it, including ones that detach with setsid/nohup or double-fork,
// so scanning /proc/*/environ finds them all. A process that clears its environment and re-execs
// (`env -i …`) escapes; the process groups the emulator started are signalled as well to narrow
// that gap. VM ids are random per VM, so emulators running side by side never touch each
// other's processes.

#include <filesystem>
#include <string>
#include <vector>

namespace exedev::emulator {

inline constexpr const char* vm_marker_variable = "EXEDEV_EMULATOR_VM";

/// The PATH of a VM's commands, on /exec and over SSH alike.
inline constexpr const char* vm_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The whole environment of a command run in a VM (an /exec `ssh` command or an SSH session):
/// HOME, PWD, PATH, SHELL, LANG, USER, LOGNAME, the marker, the VM's name, then the VM's own
/// `new --env` variables.
std::vector<std::string> vm_environment(const std::string& vm_id, const std::string& vm_name,
                                        const std::filesystem::path& home, const std::vector<std::string>& vm_env,
                                        const std::string& login_shell);

/// Live (non-zombie) processes whose initial environment holds EXEDEV_EMULATOR_VM=<vm_id>.
std::vector<int> find_vm_processes(const std::string& vm_id);

/// Sends `signal` to every process of the VM, repeating the scan until no new process shows up
/// (a process may fork while being signalled). Returns how many processes were signalled.
std::size_t signal_vm_processes(const std::string& vm_id, int signal);

/// SIGSTOPs every process of the VM as signal_vm_processes does, then waits (at most about 2 s)
/// until each is stopped or gone. Returns how many processes were signalled.
std::size_t stop_vm_processes(const std::string& vm_id);
/// SIGKILLs every process of the VM (SIGCONT first, so stopped ones die at once).
void kill_vm_processes(const std::string& vm_id);

/// `root` and its live descendants (by the parent ids in /proc).
std::vector<int> process_tree(int root);
/// Stops `root` and every descendant (scanning again until no new one shows up, so none can
/// escape by forking or by being orphaned), then SIGKILLs them all. Reaps nothing.
void kill_process_tree(int root);

}  // namespace exedev::emulator
