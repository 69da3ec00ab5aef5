// Request economy (issue 11), side by side in one run against the bundled emulator:
//   B3 transfer    8 MiB write then read, random bytes and source-like text, emulator latency
//                  20 ms: windows 1, 4 and 8 (compression on, the default) and window 4 without
//                  compression, against the reference mode (the seed's design: sequential, 64 KiB
//                  read pages, no compression); then the client's CPU for the codecs.
//   B5 rate limit  the 8 MiB write with the emulator's rate limiter at exe.dev's numbers
//                  (60 burst, 1/s, overdraft 120): waiting off, the default (learned from the
//                  first 429, ADR 11) and paced from the start.
//   B6 requests    /exec requests per facade operation.
// Requests are counted from the emulator's request records. Absolute times depend on the
// machine; the ratios are what to compare. `bench_economy B3 B6` runs a subset.

#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/sandbox/sandbox_backend.hpp>
#include <exedev/testing/run.hpp>
#include <exedev/workspace/workspace.hpp>

#include "common/base64.hpp"
#include "workspace/data_codec.hpp"
#include "workspace/shell_filesystem.hpp"

#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace ws = exedev::workspace;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t kMiB = 1024 * 1024;
constexpr std::size_t kSize = 8 * kMiB;

ws::Bytes random_bytes(std::size_t size) {
  std::mt19937_64 engine{7};
  ws::Bytes data(size, '\0');
  for (auto& c : data) c = static_cast<char>(engine() & 0xFF);
  return data;
}

// C++-like lines with varying identifiers and numbers: compresses about as well as real code.
ws::Bytes source_text(std::size_t size) {
  std::mt19937_64 engine{11};
  const char* words[] = {"const", "auto", "return", "std::string", "value", "co_await", "if", "for", "options",
                         "result", "static_cast<int>", "namespace", "client", "request", "// why:"};
  ws::Bytes text;
  while (text.size() < size) {
    text += std::string(2 * (engine() % 4), ' ');
    for (int i = 0, n = 3 + static_cast<int>(engine() % 6); i < n; ++i) {
      text += words[engine() % std::size(words)];
      text += (engine() % 3 == 0) ? "_" + std::to_string(engine() % 1000) + " " : " ";
    }
    text += ";\n";
  }
  text.resize(size);
  return text;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Milliseconds of one call of `f`, the fastest of three.
template <typename F>
double best_ms(F f) {
  double best = 1e9;
  for (int i = 0; i < 3; ++i) {
    const auto start = Clock::now();
    f();
    best = std::min(best, seconds_since(start) * 1000);
  }
  return best;
}

// The client's own CPU per transfer step (what decoding pages as they stream in could overlap
// with the network): 8 MiB through the write side, one 4 MiB read page through the read side.
void codec_costs(const std::vector<std::pair<std::string, ws::Bytes>>& payloads) {
  namespace d = exedev::workspace::detail;
  std::printf("B3 client CPU per step, ms (fastest of 3)\n");
  std::printf("%-8s %9s %9s %9s %9s %11s %11s %9s\n", "data", "sample", "gzip 8M", "sha 8M", "b64 8M", "page b64", "page gunzip",
              "gz ratio");
  for (const auto& payload : payloads) {
    const auto& data = payload.second;
    const auto page = data.substr(0, 4 * kMiB);
    const auto member = d::gzip_compress(page);
    const auto page_text = exedev::detail::base64_encode(page);
    volatile std::size_t sink = 0;  // keeps each timed call from being optimized away
    const double sample = best_ms([&] { sink = d::compresses_well(data); });
    const double gzip = best_ms([&] { sink = d::gzip_compress(data).size(); });
    const double sha = best_ms([&] { sink = d::sha256_hex(data).size(); });
    const double encode = best_ms([&] { sink = exedev::detail::base64_encode(data).size(); });
    const double decode = best_ms([&] { sink = exedev::detail::base64_decode(page_text)->size(); });
    const double gunzip = best_ms([&] { sink = d::gzip_decompress(member, page.size())->size(); });
    std::printf("%-8s %9.1f %9.1f %9.1f %9.1f %11.1f %11.1f %9.2f\n", payload.first.c_str(), sample, gzip, sha, encode,
                decode, gunzip, static_cast<double>(member.size()) / static_cast<double>(page.size()));
  }
  std::printf("\n");
}

struct Subject {
  std::string name;
  std::shared_ptr<exedev::SandboxBackend> backend;
  std::shared_ptr<ws::Workspace> workspace;
};

Subject make_subject(exedev::emulator::Emulator& emulator, std::string name, exedev::FileTransferOptions transfer,
                     exedev::RateLimitOptions rate_limit = {}, std::optional<std::string> token = std::nullopt) {
  exedev::SandboxBackendOptions options;
  options.spec = exedev::VMSpec({.working_dir = "work"});
  options.client_options = exedev::emulator::client_options(emulator, std::move(token));
  options.client_options.rate_limit = rate_limit;
  options.transfer = transfer;
  auto backend = std::make_shared<exedev::SandboxBackend>(std::move(options));
  return {std::move(name), backend, std::make_shared<ws::Workspace>(backend)};
}

exedev::FileTransferOptions reference_mode() {
  exedev::FileTransferOptions transfer;
  transfer.reference_mode = true;
  return transfer;
}

std::size_t count_status(const exedev::emulator::Emulator& emulator, std::size_t from, unsigned status) {
  const auto records = emulator.commands();
  std::size_t n = 0;
  for (std::size_t i = from; i < records.size(); ++i) n += records[i].http_status == status;
  return n;
}

asio::awaitable<void> b3(exedev::emulator::Emulator& emulator) {
  auto modes = emulator.modes();
  modes.latency = 20ms;
  emulator.set_modes(modes);
  std::vector<Subject> subjects;
  subjects.push_back(make_subject(emulator, "reference", reference_mode()));
  const std::size_t windows[] = {1, 4, 8};  // (no braced lists in coroutines: GCC 12)
  for (const std::size_t window : windows) {
    exedev::FileTransferOptions transfer;
    transfer.write_window = window;
    subjects.push_back(make_subject(emulator, "window " + std::to_string(window), transfer));
  }
  exedev::FileTransferOptions uncompressed;
  uncompressed.compression = false;
  subjects.push_back(make_subject(emulator, "w4 no gzip", uncompressed));
  for (auto& subject : subjects) co_await subject.workspace->working_dir();  // provision outside the measurements
  std::printf("B3 transfer: 8 MiB, emulator latency 20 ms (goals: write <= 23 req/MiB, read <= 1 req/MiB, "
              ">= 10x faster than reference)\n");
  std::printf("%-8s %-10s %9s %9s %9s %9s %11s %11s\n", "data", "mode", "write s", "write r/M", "read s", "read r/M",
              "x ref write", "x ref read");
  const std::vector<std::pair<std::string, ws::Bytes>> payloads = {{"random", random_bytes(kSize)},
                                                                    {"text", source_text(kSize)}};
  for (const auto& payload : payloads) {
    double reference_write = 0, reference_read = 0;
    for (auto& subject : subjects) {
      const auto path = "b3-" + payload.first + ".bin";
      auto before = emulator.commands().size();
      auto start = Clock::now();
      co_await subject.workspace->write_bytes(path, payload.second);
      const double write_seconds = seconds_since(start);
      const auto write_requests = emulator.commands().size() - before;
      before = emulator.commands().size();
      start = Clock::now();
      const auto back = co_await subject.workspace->read_bytes(path);
      const double read_seconds = seconds_since(start);
      const auto read_requests = emulator.commands().size() - before;
      if (back != payload.second) throw std::runtime_error(subject.name + ": the file did not round-trip");
      co_await subject.workspace->remove(path);
      if (subject.name == "reference") {
        reference_write = write_seconds;
        reference_read = read_seconds;
      }
      std::printf("%-8s %-10s %9.2f %9.2f %9.2f %9.2f %11.1f %11.1f\n", payload.first.c_str(), subject.name.c_str(),
                  write_seconds, static_cast<double>(write_requests) / 8, read_seconds,
                  static_cast<double>(read_requests) / 8, reference_write / write_seconds, reference_read / read_seconds);
    }
  }
  for (auto& subject : subjects) co_await subject.backend->close();
  modes.latency = 0ms;
  emulator.set_modes(modes);
  std::printf("\n");
  codec_costs(payloads);
}

asio::awaitable<void> b5(exedev::emulator::Emulator& emulator) {
  std::printf("B5 rate limit: 8 MiB write, emulator limiter at exe.dev's numbers (60 burst, 1/s, overdraft 120)\n");
  std::printf("%-8s %-10s %9s %9s %9s  %s\n", "data", "rate limit", "seconds", "requests", "429s", "outcome");
  const std::vector<std::pair<std::string, ws::Bytes>> payloads = {{"random", random_bytes(kSize)},
                                                                    {"text", source_text(kSize)}};
  const char* rate_limit_modes[] = {"no wait", "default", "paced"};  // (no braced lists in coroutines: GCC 12)
  for (const std::string mode : rate_limit_modes) {
    for (const auto& payload : payloads) {
      exedev::RateLimitOptions rate_limit;
      rate_limit.wait = mode != "no wait";
      rate_limit.pace_from_start = mode == "paced";
      // A token of its own for each run: the limiter's bucket for it starts full.
      exedev::emulator::TokenSpec spec;
      spec.cmds = std::vector<std::string>{"new", "ls", "ssh", "rm", "tag", "comment", "whoami"};
      auto subject = make_subject(emulator, mode, {}, rate_limit, emulator.issue_token(spec));
      co_await subject.workspace->working_dir();
      auto modes = emulator.modes();
      modes.rate_limit = {};
      modes.rate_limit.enabled = true;
      emulator.set_modes(modes);
      const auto before = emulator.commands().size();
      const auto start = Clock::now();
      std::string outcome = "finished";
      try {
        co_await subject.workspace->write_bytes("b5.bin", payload.second);
      } catch (const std::exception& error) {
        outcome = std::string("failed: ") + error.what();
      }
      const double seconds = seconds_since(start);
      const auto requests = emulator.commands().size() - before;
      const auto refused = count_status(emulator, before, 429);
      modes.rate_limit.enabled = false;
      emulator.set_modes(modes);
      std::printf("%-8s %-10s %9.1f %9zu %9zu  %s\n", payload.first.c_str(), subject.name.c_str(), seconds, requests,
                  refused, outcome.c_str());
      co_await subject.backend->close();
    }
  }
  std::printf("\n");
}

asio::awaitable<void> b6(exedev::emulator::Emulator& emulator) {
  std::vector<Subject> subjects;
  subjects.push_back(make_subject(emulator, "reference", reference_mode()));
  subjects.push_back(make_subject(emulator, "default", {}));
  std::printf("B6 requests per facade operation (goal: 1 for each)\n%-22s", "operation");
  for (auto& subject : subjects) {
    co_await subject.workspace->working_dir();
    std::printf(" %10s", subject.name.c_str());
  }
  std::printf("\n");
  const auto small = ws::Bytes(2000, 'x');
  struct Op {
    const char* name;
    std::function<asio::awaitable<void>(ws::Workspace&)> run;
  };
  const std::vector<Op> ops = {
      {"write 2 KB", [&](ws::Workspace& w) -> asio::awaitable<void> { co_await w.write_bytes("b6/f.txt", small); }},
      {"read 2 KB", [](ws::Workspace& w) -> asio::awaitable<void> { (void)co_await w.read_bytes("b6/f.txt"); }},
      {"stat", [](ws::Workspace& w) -> asio::awaitable<void> { (void)co_await w.stat("b6/f.txt"); }},
      {"list_dir", [](ws::Workspace& w) -> asio::awaitable<void> { (void)co_await w.list_dir("b6"); }},
      {"make_dir", [](ws::Workspace& w) -> asio::awaitable<void> { co_await w.make_dir("b6/d/e"); }},
      {"realpath", [](ws::Workspace& w) -> asio::awaitable<void> { (void)co_await w.realpath("b6/d/../f.txt"); }},
      {"exists", [](ws::Workspace& w) -> asio::awaitable<void> { (void)co_await w.exists("b6/f.txt"); }},
      {"remove", [](ws::Workspace& w) -> asio::awaitable<void> { co_await w.remove("b6/f.txt"); }},
      {"run (echo ok)", [](ws::Workspace& w) -> asio::awaitable<void> { (void)co_await w.run(ws::Command::shell("echo ok")); }},
  };
  for (const auto& op : ops) {
    std::printf("%-22s", op.name);
    for (auto& subject : subjects) {
      const auto before = emulator.commands().size();
      co_await op.run(*subject.workspace);
      std::printf(" %10zu", emulator.commands().size() - before);
    }
    std::printf("\n");
  }
  for (auto& subject : subjects) co_await subject.backend->close();
  std::printf("\n");
}

// The error and the ones nested in it (what a failed transfer was caused by).
void print_error_chain(const std::exception& error) {
  std::fprintf(stderr, "bench_economy: %s\n", error.what());
  try {
    std::rethrow_if_nested(error);
  } catch (const std::exception& cause) {
    print_error_chain(cause);
  }
}

}  // namespace

int main(int argc, char** argv) try {
  std::set<std::string> wanted(argv + 1, argv + argc);
  const auto want = [&](const char* name) { return wanted.empty() || wanted.count(name) > 0; };
  exedev::emulator::Emulator emulator;
  const exedev::testing::RunLimits limits{.deadline = std::chrono::minutes(30), .settle = std::chrono::seconds(5)};
  exedev::testing::run(
      [&](asio::any_io_executor) -> asio::awaitable<void> {
        if (want("B6")) co_await b6(emulator);
        if (want("B3")) co_await b3(emulator);
        if (want("B5")) co_await b5(emulator);
      },
      limits);
  return 0;
} catch (const std::exception& error) {
  print_error_chain(error);
  return 1;
}
