#include "emulator/vm_host.hpp"

#include "emulator/processes.hpp"

#include <csignal>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace exedev::emulator {

FileVmHost::FileVmHost(std::filesystem::path state_dir) : state_dir_(std::move(state_dir)) {
  std::filesystem::create_directories(state_dir_ / "vms");
}

std::filesystem::path FileVmHost::vm_directory(const std::string& vm_id) const { return state_dir_ / "vms" / vm_id; }

std::filesystem::path FileVmHost::state_file() const { return state_dir_ / "emulator-state.json"; }

std::optional<std::string> FileVmHost::load_state() {
  std::ifstream in(state_file());
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void FileVmHost::save_state(const std::string& text) {
  // Write then rename, so a crash never leaves half a file behind.
  const auto temporary = state_dir_ / "emulator-state.json.tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + temporary.string());
  }
  std::filesystem::rename(temporary, state_file());
}

void FileVmHost::create_vm_directory(const std::filesystem::path& dir) { std::filesystem::create_directories(dir / "home"); }

std::error_code FileVmHost::copy_vm_directory(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::error_code ec;
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks, ec);
  if (ec) remove_vm_directory(to);
  return ec;
}

void FileVmHost::remove_vm_directory(const std::filesystem::path& dir) {
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

void FileVmHost::stop_vm_processes(const std::string& vm_id) { emulator::stop_vm_processes(vm_id); }

void FileVmHost::continue_vm_processes(const std::string& vm_id) { signal_vm_processes(vm_id, SIGCONT); }

void FileVmHost::kill_vm_processes(const std::string& vm_id) { emulator::kill_vm_processes(vm_id); }

}  // namespace exedev::emulator
