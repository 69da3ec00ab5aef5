// Request economy (issue 11), side by side in one run against the bundled emulator:
//   B3 transfer    8 MiB write then read, random bytes and source-like text, emulator latency
//                  20 ms: windows 1, 4 and 8 (compression on, the default) and window 4 without
//                  compression, against the reference mode (the seed's design: sequential, 64 KiB
//                  read pages, no compression); then the client's CPU for the codecs.
//   B5 rate limit  the 8 MiB write with the emulator's rate limiter at exe.dev's numbers
//                  (60 burst, 1/s, overdraft 120): waiting off, the default (learned from the
//                  first 429, ADR 11) and paced from the start.
//   B6 requests    /exec requests per facade operation.
//   B8 session     a scripted coding-agent session of 30 FileSystem and Shell tool calls, on
//                  two projects (9 small modules; 9 source files of 2 KiB to 1 MiB): requests
//                  per tool call (the mean and the most) and in total, default and reference
//                  mode; then the same sessions under the emulator's limiter at exe.dev's
//                  numbers, with the rate limit waited for (the default) and not
//                  (RateLimitOptions::wait off).
// Requests are counted from the emulator's request records. Absolute times depend on the
// machine; the ratios are what to compare. `bench_economy B3 B6` runs a subset.

#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/sandbox/sandbox_backend.hpp>
#include <exedev/testing/run.hpp>
#include <exedev/workspace/workspace.hpp>

#include "support.hpp"

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
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace ws = exedev::workspace;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

using bench::kMiB;
using bench::random_bytes;
using bench::seconds_since;
using bench::source_text;
constexpr std::size_t kSize = 8 * kMiB;

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

using bench::Subject;

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

using bench::count_status;

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
      auto subject = make_subject(emulator, mode, {}, rate_limit, bench::fresh_token(emulator));
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

// ---- B8: the scripted agent session (bench/support.hpp) ------------------------------------------

using bench::run_session;
using bench::seed_project;
using bench::SessionResult;
using bench::SessionShape;

// Requests per call of each tool (the mean, and the most one call made), side by side.
void print_per_tool(const SessionResult& reference, const SessionResult& current) {
  std::printf("%-20s %10s %5s %10s %5s\n", "tool (calls)", "reference", "most", "default", "most");
  for (const auto& [tool, tally] : current.per_tool) {
    const auto at = reference.per_tool.find(tool);
    const bench::ToolTally before = at == reference.per_tool.end() ? bench::ToolTally{} : at->second;
    const auto mean = [](const bench::ToolTally& t) {
      return t.calls == 0 ? 0.0 : static_cast<double>(t.requests) / static_cast<double>(t.calls);
    };
    std::printf("%-20s %10.1f %5zu %10.1f %5zu\n", (tool + " (" + std::to_string(tally.calls) + ")").c_str(),
                mean(before), before.most, mean(tally), tally.most);
  }
  std::printf("%-20s %10zu %5s %10zu\n%-20s %10zu %5s %10zu\n%-20s %10.1f %5s %10.1f\n", "requests", reference.requests,
              "", current.requests, "failed calls", reference.failed, "", current.failed, "seconds", reference.seconds, "",
              current.seconds);
  if (!current.first_failure.empty()) std::printf("first failure (default): %s\n", current.first_failure.c_str());
  if (!reference.first_failure.empty()) std::printf("first failure (reference): %s\n", reference.first_failure.c_str());
}

asio::awaitable<void> b8(exedev::emulator::Emulator& emulator) {
  std::printf("B8 agent session: 30 FileSystem and Shell tool calls on SandboxBackend over /exec "
              "(goal: <= 1 request per call, edit_file <= 2, <= 35 in all; source files: <= 32)\n");
  const SessionShape shapes[] = {SessionShape::small_files, SessionShape::source_files};  // (no braced lists in coroutines: GCC 12)
  for (const auto shape : shapes) {
    std::vector<Subject> subjects;
    subjects.push_back(make_subject(emulator, "reference", reference_mode()));
    subjects.push_back(make_subject(emulator, "default", {}));
    std::vector<SessionResult> results;
    for (auto& subject : subjects) {
      co_await seed_project(subject, shape);
      results.push_back(co_await run_session(emulator, subject));
    }
    std::printf("\nB8 session, %s\n", bench::shape_name(shape));
    print_per_tool(results.front(), results.back());
    for (auto& subject : subjects) co_await subject.backend->close();
  }

  std::printf("\nB8 under the emulator's limiter at exe.dev's numbers (60 burst, 1/s, overdraft 120), a fresh token\n");
  std::printf("%-12s %-10s %-10s %9s %9s %9s %9s %9s  %s\n", "files", "transfer", "rate limit", "requests", "429s", "failed",
              "seconds", "bucket s", "first failure");
  const char* modes[] = {"reference", "default"};  // (no braced lists in coroutines: GCC 12)
  const char* waits[] = {"wait", "no wait"};
  for (const auto shape : shapes) {
    for (const std::string wait : waits) {
      for (const std::string mode : modes) {
        exedev::RateLimitOptions rate_limit;
        rate_limit.wait = wait == "wait";
        auto subject = make_subject(emulator, mode, mode == "reference" ? reference_mode() : exedev::FileTransferOptions{},
                                    rate_limit, bench::fresh_token(emulator));
        co_await seed_project(subject, shape);
        auto limited = emulator.modes();
        limited.rate_limit = {};
        limited.rate_limit.enabled = true;
        emulator.set_modes(limited);
        const auto result = co_await run_session(emulator, subject);
        // What the bucket allows: the 61st request a second after the first, and so on.
        const double bucket = std::max(0.0, static_cast<double>(result.requests) - static_cast<double>(result.refused) - 60.0);
        std::printf("%-12s %-10s %-10s %9zu %9zu %9zu %9.1f %9.1f  %s\n", bench::shape_name(shape), mode.c_str(), wait.c_str(),
                    result.requests, result.refused, result.failed, result.seconds, bucket, result.first_failure.c_str());
        limited.rate_limit.enabled = false;
        emulator.set_modes(limited);
        // The token's bucket may be in debt: closing (the run records' cleanup) waits or fails.
        try {
          co_await subject.backend->close();
        } catch (const std::exception& error) {
          std::printf("  close failed: %s\n", error.what());
        }
      }
    }
  }
  std::printf("\n");
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
        if (want("B8")) co_await b8(emulator);
      },
      limits);
  return 0;
} catch (const std::exception& error) {
  bench::print_error_chain("bench_economy", error);
  return 1;
}
