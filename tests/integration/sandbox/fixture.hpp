#pragma once
// Fixture of the sandbox integration tests. By default every test gets a fresh in-process
// emulator. With EXEDEV_TEST_LIVE=1 (the `live` CTest label) the same tests run against real
// exe.dev with EXE_TOKEN: VMs are tagged exedev-cpp-test plus a tag unique to the test and are
// always deleted at its end; tests that need the emulator's fault injection or records are
// skipped with a printed reason.

#include "common/coroutines.hpp"

#include <exedev/exedev.hpp>
#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/testing/run.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <typeinfo>
#include <vector>

namespace sbx {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using exedev::Task;
using Executor = asio::any_io_executor;

/// Options that set nothing, for a backend's run(). Returned from a function so that no options
/// temporary is built inside the caller's co_await (GCC 12 miscompiles one; ADR 7).
inline exedev::workspace::RunOptions no_options() { return {}; }

/// A one-word list (GCC 12 miscompiles braced lists inside coroutines).
inline std::vector<std::string> one(std::string word) {
  std::vector<std::string> words;
  words.push_back(std::move(word));
  return words;
}

inline bool live_mode() {
  const char* value = std::getenv("EXEDEV_TEST_LIVE");
  return value != nullptr && std::string(value) == "1";
}

inline std::string random_suffix() {
  static std::mt19937_64 engine{std::random_device{}()};
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 8; ++i) out += digits[engine() & 0xF];
  return out;
}

inline exedev::testing::RunLimits limits(std::chrono::seconds deadline = 120s) {
  exedev::testing::RunLimits l;
  l.deadline = deadline;
  l.settle = 5s;
  return l;
}

using exedev::detail::capture;
using exedev::detail::is_cancellation;
using exedev::detail::sleep_for;

/// Runs `task` on its own coroutine and delivers a terminal cancellation once `when()` holds
/// (polled every 20 ms); returns what the task threw.
template <typename T>
Task<std::exception_ptr> cancel_when(Task<T> task, std::function<bool()> when) {
  const auto ex = co_await asio::this_coro::executor;
  asio::cancellation_signal signal;
  bool done = false;
  std::exception_ptr outcome;
  asio::co_spawn(ex, capture(std::move(task)), asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr e, std::exception_ptr thrown) {
                   outcome = e ? e : thrown;
                   done = true;
                 }));
  bool emitted = false;
  while (!done) {
    if (!emitted && when()) {
      signal.emit(asio::cancellation_type::terminal);
      emitted = true;
    }
    co_await sleep_for(20ms);
  }
  REQUIRE(emitted);
  co_return outcome;
}

/// Rethrows `error` as E (FAILs otherwise) and returns a copy.
template <typename E>
E expect_error(const std::exception_ptr& error) {
  REQUIRE(error);
  try {
    std::rethrow_exception(error);
  } catch (const E& e) {
    return e;
  } catch (const std::exception& e) {
    FAIL("unexpected exception " << typeid(e).name() << ": " << e.what());
  }
  throw std::logic_error("unreachable");
}


/// What `error` holds, for a failure message: "none", or each exception's type and text,
/// outermost first, through the causes nested in it.
inline std::string describe(const std::exception_ptr& error) {
  if (!error) return "none";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    std::string text = std::string(typeid(e).name()) + ": " + e.what();
    if (const auto* nested = dynamic_cast<const std::nested_exception*>(&e); nested && nested->nested_ptr()) {
      text += "\n  caused by " + describe(nested->nested_ptr());
    }
    return text;
  } catch (...) {
    return "a non-standard exception";
  }
}

class Fixture {
 public:
  explicit Fixture(exedev::emulator::Options options = {}) : run_tag_("t-" + random_suffix()) {
    if (live_mode()) {
      const char* token = std::getenv("EXE_TOKEN");
      if (token == nullptr || *token == '\0') {
        skip_reason_ = "EXE_TOKEN is not set";
        return;
      }
      scope_ = "exedev-cpp-test";
    } else {
      emu_ = std::make_unique<exedev::emulator::Emulator>(std::move(options));
    }
  }

  ~Fixture() {
    if (!live_mode() || !skip_reason_.empty()) return;
    // Live: delete every VM this test made (they all carry run_tag).
    try {
      exedev::testing::run([&](Executor ex) -> Task<void> {
        exedev::Client c(ex, client_options());
        for (const auto& vm : co_await c.list_vms(one(run_tag_))) co_await c.remove_vms(one(vm.name));
      }, limits(300s));
    } catch (const std::exception& e) {
      WARN("could not delete the live test VMs tagged " << run_tag_ << ": " << e.what());
    }
  }

  /// True (after printing why) when this test can't run in this mode.
  bool skip(const char* needs = nullptr) {
    if (!skip_reason_.empty()) {
      WARN("SKIPPED: " << skip_reason_);
      return true;
    }
    if (needs != nullptr && live_mode()) {
      WARN("SKIPPED in live mode: needs " << needs);
      return true;
    }
    return false;
  }

  exedev::emulator::Emulator& emu() { return *emu_; }
  [[nodiscard]] const std::string& scope() const { return scope_; }
  [[nodiscard]] const std::string& run_tag() const { return run_tag_; }

  exedev::ClientOptions client_options() const {
    auto o = emu_ ? exedev::emulator::client_options(*emu_) : exedev::ClientOptions{};
    o.retry.initial_backoff = 10ms;
    o.retry.max_backoff = 40ms;
    return o;
  }
  exedev::Client client(Executor ex) const { return exedev::Client(std::move(ex), client_options()); }

  exedev::ReadinessOptions readiness() const {
    exedev::ReadinessOptions r;
    r.poll_interval = live_mode() ? 1000ms : 100ms;
    r.timeout = live_mode() ? 120s : 30s;
    return r;
  }

  /// A spec carrying the test's tag (so live cleanup finds the VM).
  exedev::VMSpec spec(exedev::VMSpecFields fields) const {
    fields.tags.push_back(run_tag_);
    return exedev::VMSpec(std::move(fields));
  }
  /// (An overload, not a defaulted argument: the default would be a temporary of the caller's
  /// co_await, which GCC 12 miscompiles and the options' guard refuses.)
  exedev::VMSpec spec() const { return spec(exedev::VMSpecFields{}); }

  std::string vm_name(const std::string& prefix = "vm") const { return prefix + "-" + random_suffix(); }

  exedev::VMs vms(std::optional<exedev::Client> client = std::nullopt) const {
    exedev::VMsOptions o;
    o.scope_tag = scope_;
    o.client = std::move(client);
    o.client_options = client_options();
    o.readiness = readiness();
    return exedev::VMs(std::move(o));
  }

  std::shared_ptr<exedev::SandboxBackend> backend(std::optional<exedev::workspace::WorkspaceRef> ref,
                                                  exedev::VMSpec spec, exedev::workspace::Env env = {},
                                                  std::optional<exedev::Client> client = std::nullopt,
                                                  exedev::FileTransferOptions transfer = {}) const {
    exedev::SandboxBackendOptions o;
    o.ref = std::move(ref);
    o.spec = std::move(spec);
    o.scope_tag = scope_;
    o.client = std::move(client);
    o.client_options = client_options();
    o.env = std::move(env);
    o.readiness = readiness();
    o.transfer = transfer;
    // /exec, whatever SSH keys this machine has: these tests count its requests
    // (ssh_transport_test.cpp tests the SSH transport).
    o.transport = exedev::Transport::exec;
    return std::make_shared<exedev::SandboxBackend>(std::move(o));
  }

  /// How many /exec requests named `command` the emulator read.
  std::size_t count(const std::string& command) {
    std::size_t n = 0;
    for (const auto& c : emu_->commands()) n += c.command == command;
    return n;
  }

 private:
  std::unique_ptr<exedev::emulator::Emulator> emu_;
  std::string scope_ = "agents";
  std::string run_tag_;
  std::string skip_reason_;
};

}  // namespace sbx
