// Property: any file name (every byte but NUL and '/') and any content go through write, read,
// stat, list, realpath and remove unchanged, with no injection and no loss, on LocalBackend and
// on SandboxBackend (the shell filesystem over /exec). Fixed seeds, so a failure reproduces;
// cases go in batches of 500 per directory, so one listing checks 500 names.
#include "fixture.hpp"
#include "unit/workspace/support.hpp"

#include <exedev/workspace/local_backend.hpp>
#include <exedev/workspace/workspace.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <algorithm>
#include <set>

using namespace sbx;
using namespace boost::asio::experimental::awaitable_operators;
namespace ws = exedev::workspace;

namespace {

struct Case {
  std::string name;
  std::string content;
};

// Names of 1 to 24 bytes from every byte value but NUL and '/', never "." or "..", distinct.
std::vector<Case> random_cases(std::uint64_t seed, std::size_t count) {
  std::mt19937_64 engine(seed);
  std::set<std::string> seen;
  std::vector<Case> cases;
  while (cases.size() < count) {
    std::string name(1 + engine() % 24, 'x');
    for (auto& c : name) {
      do c = static_cast<char>(engine() & 0xFF);
      while (c == '\0' || c == '/');
    }
    if (name == "." || name == ".." || !seen.insert(name).second) continue;
    std::string content(engine() % 300, '\0');
    for (auto& c : content) c = static_cast<char>(engine() & 0xFF);
    cases.push_back({std::move(name), std::move(content)});
  }
  return cases;
}

// One batch in its own directory under `root`: every operation on every name, then the
// listing, then removal; a mismatch names the case by its index.
Task<void> check_batch(ws::Workspace& w, std::string dir, std::vector<Case> batch, std::size_t first) {
  co_await w.make_dir(dir);
  const auto real_dir = co_await w.realpath(dir);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto& c = batch[i];
    const auto path = dir + "/" + c.name;
    co_await w.write_bytes(path, c.content);
    const auto content = co_await w.read_bytes(path);
    const auto entry = co_await w.stat(path);
    const auto real = co_await w.realpath(path);
    const bool same = content == c.content && entry.name == c.name && !entry.is_dir &&
                      entry.size == std::optional<std::uint64_t>(c.content.size()) && real == real_dir + "/" + c.name;
    if (!same) FAIL_CHECK("case " << first + i << ": read, stat or realpath differs from what was written");
  }
  const auto listing = co_await w.list_dir(dir);
  std::vector<std::string> listed;
  for (const auto& entry : listing) listed.push_back(entry.name);
  std::vector<std::string> expected;
  for (const auto& c : batch) expected.push_back(c.name);
  std::sort(listed.begin(), listed.end());
  std::sort(expected.begin(), expected.end());
  if (listed != expected) FAIL_CHECK("cases " << first << "-" << first + batch.size() - 1 << ": the listing differs");
  for (const auto& c : batch) co_await w.remove(dir + "/" + c.name);
  const auto left = co_await w.list_dir(dir);
  CHECK(left.empty());
  co_await w.remove(dir);
}

// Takes batches from `next` until none is left; several run at once on one workspace.
Task<void> batch_worker(ws::Workspace& w, const std::string& root, const std::vector<Case>& cases,
                        std::size_t batch_size, std::size_t& next) {
  while (next < cases.size()) {
    const auto first = next;
    const auto last = std::min(cases.size(), first + batch_size);
    next = last;
    std::vector<Case> batch(cases.begin() + static_cast<std::ptrdiff_t>(first), cases.begin() + static_cast<std::ptrdiff_t>(last));
    co_await check_batch(w, root + "/batch-" + std::to_string(first), std::move(batch), first);
  }
}

// Checks every batch, two at a time (each in its own directory), so the emulator's two cores
// stay busy while the client waits for answers.
Task<void> check_all(ws::Workspace& w, const std::string& root, const std::vector<Case>& cases, std::size_t batch_size) {
  std::size_t next = 0;
  co_await (batch_worker(w, root, cases, batch_size, next) && batch_worker(w, root, cases, batch_size, next));
}

}  // namespace

TEST_CASE("property: 10,000 random names and contents on LocalBackend", "[integration][property]") {
  exedev::test::TempDir dir;
  ws::Workspace w(std::make_shared<ws::LocalBackend>(dir.path()));
  const auto cases = random_cases(20261203, 10000);
  const std::string root = dir.path();
  exedev::testing::run([&](Executor) -> Task<void> { co_await check_all(w, root, cases, 500); }, limits(600s));
  std::printf("property: %zu cases on LocalBackend\n", cases.size());
  CHECK(std::filesystem::is_empty(dir.path()));
}

// Each case costs about eight /exec requests here (a process each on the emulator), so the
// SandboxBackend run takes 500 cases by default (EXEDEV_PROPERTY_CASES sets another count).
TEST_CASE("property: random names and contents on SandboxBackend", "[integration][property]") {
  Fixture f;
  if (f.skip("many requests")) return;
  const char* count = std::getenv("EXEDEV_PROPERTY_CASES");
  const auto cases = random_cases(20261204, count ? std::stoul(count) : 500);
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = f.backend(std::nullopt, f.spec());
    ws::Workspace w(backend);
    const auto home = co_await w.working_dir();
    const std::string root = home + "/names";
    co_await check_all(w, root, cases, 500);
    const auto left = co_await w.list_dir(home + "/names");
    CHECK(left.empty());
    co_await backend->close();
  }, limits(std::max<std::chrono::seconds>(1200s, std::chrono::seconds(cases.size() / 2))));  // ~8 requests a case
  std::printf("property: %zu cases on SandboxBackend\n", cases.size());
}
