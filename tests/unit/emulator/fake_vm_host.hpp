#pragma once
// An in-memory VmHost for the lobby's unit tests: no filesystem, no processes. It records every
// call the plans it runs make, keeps the saved state as text, and answers what a test sets.

#include "emulator/vm_host.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace lobby_test {

class FakeVmHost final : public exedev::emulator::VmHost {
 public:
  /// What copy_vm_directory answers.
  std::error_code copy_error;

  /// Every call so far, in order: "load", "save", "create <dir>", "copy <from> <to>",
  /// "remove <dir>", "stop <id>", "continue <id>", "kill <id>",
  /// "open ssh <id> <port asked>", "disconnect ssh <id>", "close ssh <id>".
  const std::vector<std::string>& calls() const { return calls_; }
  void clear_calls() { calls_.clear(); }
  const std::optional<std::string>& saved_state() const { return saved_; }
  void set_saved_state(std::string text) { saved_ = std::move(text); }
  const std::map<std::string, std::string>& ssh_landing() const { return ssh_landing_; }

  std::filesystem::path vm_directory(const std::string& vm_id) const override { return "/fake/vms/" + vm_id; }
  std::filesystem::path state_file() const override { return "/fake/emulator-state.json"; }
  std::optional<std::string> load_state() override {
    calls_.push_back("load");
    return saved_;
  }
  void save_state(const std::string& text) override {
    calls_.push_back("save");
    saved_ = text;
  }
  void create_vm_directory(const std::filesystem::path& dir) override { calls_.push_back("create " + dir.string()); }
  std::error_code copy_vm_directory(const std::filesystem::path& from, const std::filesystem::path& to) override {
    calls_.push_back("copy " + from.string() + " " + to.string());
    return copy_error;
  }
  void remove_vm_directory(const std::filesystem::path& dir) override { calls_.push_back("remove " + dir.string()); }
  void stop_vm_processes(const std::string& vm_id) override { calls_.push_back("stop " + vm_id); }
  void continue_vm_processes(const std::string& vm_id) override { calls_.push_back("continue " + vm_id); }
  void kill_vm_processes(const std::string& vm_id) override { calls_.push_back("kill " + vm_id); }
  /// Saved with the state (SaveState), so not a call of its own.
  void save_ssh_landing(const std::map<std::string, std::string>& files) override { ssh_landing_ = files; }
  /// Answers the port asked for, or the next of 2201, 2202, … for 0.
  std::uint16_t open_ssh_endpoint(const std::string& vm_id, std::uint16_t port) override {
    calls_.push_back("open ssh " + vm_id + " " + std::to_string(port));
    return port != 0 ? port : ++last_port_;
  }
  void close_ssh_connections(const std::string& vm_id) override { calls_.push_back("disconnect ssh " + vm_id); }
  void close_ssh_endpoint(const std::string& vm_id) override { calls_.push_back("close ssh " + vm_id); }

 private:
  std::vector<std::string> calls_;
  std::optional<std::string> saved_;
  std::map<std::string, std::string> ssh_landing_;
  std::uint16_t last_port_ = 2200;
};

}  // namespace lobby_test
