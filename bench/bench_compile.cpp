// B1 compile time: how long a user's translation unit takes to compile when it includes
// <exedev/exedev.hpp> and uses Client, VMs and SandboxBackend, side by side with
//   floor     the least an Asio coroutine program compiles (awaitable, io_context, co_spawn)
//   raw       one HTTPS request written directly on Beast + OpenSSL (header-only)
// compiled in this run with the project's compiler and the flags a consumer of exedev::exedev
// gets. Goal: consumer <= 1.3 x floor.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Unit {
  const char* name;
  const char* file;
  int repetitions;  // the fastest repetition counts (noise only ever adds time)
};

double compile_seconds(const std::string& file) {
  const std::string command = std::string(EXEDEV_BENCH_CXX) + " " + EXEDEV_BENCH_CXX_FLAGS + " @" +
                              EXEDEV_BENCH_FLAGS_FILE + " -c " + EXEDEV_BENCH_SOURCE_DIR + "/" + file +
                              " -o /dev/null";
  const auto start = Clock::now();
  if (std::system(command.c_str()) != 0) throw std::runtime_error("compiling " + file + " failed");
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main() try {
  const std::vector<Unit> units = {
      {"floor", "floor.cpp", 3},
      {"consumer", "consumer.cpp", 3},
      {"raw Beast+SSL", "beast_client.cpp", 1},
  };
  std::printf("B1 compile time (%s %s), fastest of the repetitions\n\n", EXEDEV_BENCH_CXX, EXEDEV_BENCH_CXX_FLAGS);
  std::printf("%-16s %10s %10s\n", "translation unit", "seconds", "x floor");
  double floor_seconds = 0;
  double consumer_seconds = 0;
  for (const auto& unit : units) {
    double best = 1e9;
    for (int i = 0; i < unit.repetitions; ++i) best = std::min(best, compile_seconds(unit.file));
    if (floor_seconds == 0) floor_seconds = best;
    if (std::string(unit.name) == "consumer") consumer_seconds = best;
    std::printf("%-16s %10.2f %10.2f\n", unit.name, best, best / floor_seconds);
  }
  const double ratio = consumer_seconds / floor_seconds;
  std::printf("\ngoal consumer <= 1.30 x floor: %.2f x (%s)\n", ratio, ratio <= 1.3 ? "met" : "NOT met");
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "bench_compile: %s\n", error.what());
  return 1;
}
