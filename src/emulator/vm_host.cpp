#include "emulator/vm_host.hpp"

#include "emulator/processes.hpp"

#include <csignal>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <type_traits>

#include <unistd.h>

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

namespace {

// Write then rename, so a crash never leaves half a file behind.
void replace_file(const std::filesystem::path& path, const std::string& text) {
  const auto temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + temporary);
  }
  std::filesystem::rename(temporary, path);
}

}  // namespace

void FileVmHost::save_state(const std::string& text) { replace_file(state_file(), text); }

std::filesystem::path FileVmHost::ssh_landing_link() const { return state_dir_ / "ssh" / "landing"; }

void FileVmHost::save_ssh_landing(const std::map<std::string, std::string>& files) {
  namespace fs = std::filesystem;
  // A new directory, then the link renamed over the old one: a script reading the table sees
  // the old one or the new one, never half of either.
  const fs::path ssh_dir = ssh_landing_link().parent_path();
  fs::create_directories(ssh_dir);
  std::string name;
  do {
    name = "landing." + std::to_string(::getpid()) + "." + std::to_string(++landing_version_);
  } while (fs::exists(ssh_dir / name));
  for (const auto& [path, text] : files) {
    const fs::path file = ssh_dir / name / path;
    fs::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + file.string());
  }
  fs::create_directories(ssh_dir / name);
  const fs::path link = ssh_dir / "landing.link.tmp";
  std::error_code ignored;
  fs::remove(link, ignored);
  fs::create_directory_symlink(name, link);
  std::error_code unread;
  const fs::path previous = fs::read_symlink(ssh_landing_link(), unread);
  fs::rename(link, ssh_landing_link());
  if (!unread && !previous.empty() && previous != name) fs::remove_all(ssh_dir / previous, ignored);
}

void FileVmHost::attach_ssh(SshEndpointService* endpoints) {
  std::lock_guard lock(ssh_mutex_);
  ssh_ = endpoints;
}

std::uint16_t FileVmHost::open_ssh_endpoint(const std::string& endpoint, std::uint16_t port) {
  std::lock_guard lock(ssh_mutex_);
  return ssh_ ? ssh_->open(endpoint, port) : 0;
}

void FileVmHost::close_ssh_connections(const std::string& vm_id) {
  std::lock_guard lock(ssh_mutex_);
  if (ssh_) ssh_->disconnect(vm_id);
}

void FileVmHost::close_ssh_endpoint(const std::string& endpoint) {
  std::lock_guard lock(ssh_mutex_);
  if (ssh_) ssh_->close(endpoint);
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

namespace exedev::emulator {

HostResult run_host_command(VmHost& host, const HostCommand& command) {
  HostResult result;
  std::visit(
      [&](const auto& c) {
        using C = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<C, CreateVmDirectory>) host.create_vm_directory(c.dir);
        else if constexpr (std::is_same_v<C, CopyVmDirectory>) result.error = host.copy_vm_directory(c.from, c.to);
        else if constexpr (std::is_same_v<C, RemoveVmDirectory>) host.remove_vm_directory(c.dir);
        else if constexpr (std::is_same_v<C, StopVmProcesses>) host.stop_vm_processes(c.vm_id);
        else if constexpr (std::is_same_v<C, ContinueVmProcesses>) host.continue_vm_processes(c.vm_id);
        else if constexpr (std::is_same_v<C, KillVmProcesses>) host.kill_vm_processes(c.vm_id);
        else if constexpr (std::is_same_v<C, SaveState>) {
          host.save_state(c.text);
          host.save_ssh_landing(c.ssh_landing);
        }
        else if constexpr (std::is_same_v<C, OpenSshEndpoint>) result.ssh_port = host.open_ssh_endpoint(c.endpoint, c.port);
        else if constexpr (std::is_same_v<C, CloseSshConnections>) host.close_ssh_connections(c.vm_id);
        else if constexpr (std::is_same_v<C, CloseSshEndpoint>) host.close_ssh_endpoint(c.endpoint);
        else static_assert(sizeof(C) == 0, "a host command without its VmHost call");
      },
      command);
  return result;
}

std::vector<HostResult> run_host_plan(VmHost& host, const HostPlan& plan) {
  std::vector<HostResult> results;
  results.reserve(plan.size());
  for (const HostCommand& command : plan) results.push_back(run_host_command(host, command));
  return results;
}

}  // namespace exedev::emulator
