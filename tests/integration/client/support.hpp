#pragma once
// Shared fixture of the client integration tests: an emulator, a client configured for it, and
// a check that no log line and no exception message ever carries the token.

#include "common/coroutines.hpp"
#include "support/expect_throw.hpp"

#include <exedev/client.hpp>
#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/testing/run.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace exedev::test {

using namespace std::chrono_literals;

struct Fixture {
  explicit Fixture(emulator::Options options = {}) : emu(std::move(options)) {}

  ~Fixture() {
    const auto token = emu.token();
    for (const auto& line : logs) CHECK(line.find(token) == std::string::npos);
    for (const auto& text : messages) CHECK(text.find(token) == std::string::npos);
  }

  ClientOptions options() {
    auto o = emulator::client_options(emu);
    o.retry.initial_backoff = 10ms;
    o.retry.max_backoff = 40ms;
    o.logger = [this](LogLevel, std::string_view line) {
      logs.emplace_back(line);
      if (std::getenv("EXEDEV_TEST_LOG") != nullptr) std::fprintf(stderr, "log: %.*s\n", static_cast<int>(line.size()), line.data());
    };
    return o;
  }

  /// Runs `task`, expecting it to throw E; returns a copy and records its message.
  template <typename E, typename T>
  boost::asio::awaitable<E> expect(boost::asio::awaitable<T> task) {
    auto expecting = testing_support::expect_throw<E>(std::move(task));
    E error = co_await std::move(expecting);
    messages.emplace_back(error.what());
    co_return error;
  }

  std::size_t count(const std::string& command) {
    std::size_t n = 0;
    for (const auto& c : emu.commands()) n += c.command == command;
    return n;
  }

  emulator::Emulator emu;
  std::vector<std::string> logs;
  std::vector<std::string> messages;
};

/// Creates a VM with only a name; returns what `new` answered.
inline boost::asio::awaitable<VMInfo> make_vm(Client& c, const std::string& name) {
  NewVMOptions o;
  o.name = name;
  auto info = co_await c.new_vm(o);
  co_return info;
}

/// A vector of strings. GCC 12 cannot co_await a call with a braced list of string literals.
template <typename... S>
std::vector<std::string> strings(S&&... s) {
  return {std::string(std::forward<S>(s))...};
}

inline emulator::Fault fault(emulator::FaultKind kind, std::string command, std::size_t count, unsigned status,
                             std::string vm, std::size_t after_bytes) {
  emulator::Fault f;
  f.kind = kind;
  f.command = std::move(command);
  f.count = count;
  f.status = status;
  f.vm = std::move(vm);
  f.after_bytes = after_bytes;
  return f;
}

using exedev::detail::sleep_for;

inline exedev::testing::RunLimits limits(std::chrono::seconds deadline) {
  exedev::testing::RunLimits l;
  l.deadline = deadline;
  return l;
}

}  // namespace exedev::test
