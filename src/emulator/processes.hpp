#pragma once
// Finding and signalling the processes of an emulated VM.
//
// Every process the emulator starts for a VM carries EXEDEV_EMULATOR_VM=<vm id> in its
// environment. Children inherit it, including ones that detach with setsid/nohup or double-fork,
// so scanning /proc/*/environ finds them all. A process that clears its environment and re-execs
// (`env -i …`) escapes; the process groups the emulator started are signalled as well to narrow
// that gap. VM ids are random per VM, so emulators running side by side never touch each
// other's processes.

#include <string>
#include <vector>

namespace exedev::emulator {

inline constexpr const char* vm_marker_variable = "EXEDEV_EMULATOR_VM";

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

}  // namespace exedev::emulator
