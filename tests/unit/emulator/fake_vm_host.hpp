#pragma once
// An in-memory VmHost for the lobby's unit tests: no filesystem, no processes. It records every
// call the lobby makes, keeps the saved state as text, and lets a test block inside a call.

#include "emulator/vm_host.hpp"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace lobby_test {

class FakeVmHost final : public exedev::emulator::VmHost {
 public:
  /// Runs at the start of every call with its description (see calls()), on the lobby's thread.
  std::function<void(const std::string&)> on_call;
  /// What copy_vm_directory answers.
  std::error_code copy_error;

  /// Every call so far, in order: "load", "save", "create <dir>", "copy <from> <to>",
  /// "remove <dir>", "stop <id>" (and "stopped <id>" once it returns), "continue <id>", "kill <id>",
  /// "keys" (authorized_keys saved), "open ssh <id> <port asked>", "disconnect ssh <id>",
  /// "close ssh <id>".
  std::vector<std::string> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  void clear_calls() {
    std::lock_guard lock(mutex_);
    calls_.clear();
  }
  std::optional<std::string> saved_state() const {
    std::lock_guard lock(mutex_);
    return saved_;
  }
  void set_saved_state(std::string text) {
    std::lock_guard lock(mutex_);
    saved_ = std::move(text);
  }

  std::filesystem::path vm_directory(const std::string& vm_id) const override { return "/fake/vms/" + vm_id; }
  std::filesystem::path state_file() const override { return "/fake/emulator-state.json"; }
  std::optional<std::string> load_state() override {
    note("load");
    return saved_state();
  }
  void save_state(const std::string& text) override {
    note("save");
    set_saved_state(text);
  }
  void create_vm_directory(const std::filesystem::path& dir) override { note("create " + dir.string()); }
  std::error_code copy_vm_directory(const std::filesystem::path& from, const std::filesystem::path& to) override {
    note("copy " + from.string() + " " + to.string());
    return copy_error;
  }
  void remove_vm_directory(const std::filesystem::path& dir) override { note("remove " + dir.string()); }
  void stop_vm_processes(const std::string& vm_id) override {
    note("stop " + vm_id);
    note("stopped " + vm_id);
  }
  void continue_vm_processes(const std::string& vm_id) override { note("continue " + vm_id); }
  void kill_vm_processes(const std::string& vm_id) override { note("kill " + vm_id); }
  void save_authorized_keys(const std::string& text) override {
    note("keys");
    std::lock_guard lock(mutex_);
    authorized_keys_ = text;
  }
  /// Answers the port asked for, or the next of 2201, 2202, … for 0.
  std::uint16_t open_ssh_endpoint(const std::string& vm_id, std::uint16_t port) override {
    note("open ssh " + vm_id + " " + std::to_string(port));
    std::lock_guard lock(mutex_);
    return port != 0 ? port : ++last_port_;
  }
  void close_ssh_connections(const std::string& vm_id) override { note("disconnect ssh " + vm_id); }
  void close_ssh_endpoint(const std::string& vm_id) override { note("close ssh " + vm_id); }
  std::string authorized_keys() const {
    std::lock_guard lock(mutex_);
    return authorized_keys_;
  }

 private:
  void note(const std::string& call) {
    {
      std::lock_guard lock(mutex_);
      calls_.push_back(call);
    }
    if (on_call) on_call(call);
  }

  mutable std::mutex mutex_;
  std::vector<std::string> calls_;
  std::optional<std::string> saved_;
  std::string authorized_keys_;
  std::uint16_t last_port_ = 2200;
};

/// Holds a host call until the test releases it: the test learns when the call is reached.
class Gate {
 public:
  /// From the host call: marks it reached and waits for release().
  void hold() {
    std::unique_lock lock(mutex_);
    reached_ = true;
    changed_.notify_all();
    changed_.wait(lock, [this] { return released_; });
  }
  /// Whether the call was reached within `limit` (a bound for a failing test, not a pause).
  template <typename Duration>
  bool wait_reached(Duration limit) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, limit, [this] { return reached_; });
  }
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool reached_ = false;
  bool released_ = false;
};

}  // namespace lobby_test
