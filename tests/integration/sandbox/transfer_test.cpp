// File transfers of SandboxBackend (issue 11): one request per small operation, chunked writes
// that survive cut answers, a commit that never leaves a half-written target, compression of
// data that compresses, 429s waited for and client-side pacing. Counts come from the emulator's
// request records. (Damaged gzip streams and digests: tests/unit/workspace/shell_transfer_test.cpp,
// which can reach into the temp files.)
#include "fixture.hpp"
#include "unit/workspace/support.hpp"

#include <exedev/workspace/workspace.hpp>

#include "workspace/data_codec.hpp"

#include <algorithm>

namespace {

using namespace sbx;
namespace ws = exedev::workspace;

ws::Bytes random_bytes(std::size_t size) { return exedev::test::random_bytes(size, 42); }

// A directory of its own: the home directory also holds run()'s records.
Task<std::string> own_directory(ws::Workspace& workspace) {
  const auto wd = co_await workspace.working_dir() + "/t";
  co_await workspace.make_dir(wd);
  co_return wd;
}

// Source-like text: compresses about five to one.
ws::Bytes source_text(std::size_t size) {
  std::mt19937_64 engine{43};
  const char* words[] = {"const ", "auto ", "result", " = ", "co_await ", "std::string ", ";\n", "if (", ") {\n", "}\n"};
  ws::Bytes text;
  while (text.size() < size) {
    text += words[engine() % std::size(words)];
    if (engine() % 7 == 0) text += std::to_string(engine() % 1000);
  }
  text.resize(size);
  return text;
}

std::size_t rate_limited(exedev::emulator::Emulator& emu) {
  const auto records = emu.commands();
  return static_cast<std::size_t>(
      std::count_if(records.begin(), records.end(), [](const auto& r) { return r.http_status == 429; }));
}

// Requests of a chunked write of `data` before its commit: the begin and every block (of its
// gzip member when the data compresses).
std::size_t requests_before_commit(const exedev::SandboxBackend& backend, const ws::Bytes& data) {
  const auto chars = backend.shell_filesystem_limits().write_chunk_chars;
  const bool packed = exedev::workspace::detail::compresses_well(data);
  const auto bytes = packed ? exedev::workspace::detail::gzip_compress(data).size() : data.size();
  return 1 + ((bytes + 2) / 3 * 4 + chars - 1) / chars;
}

}  // namespace

TEST_CASE("every small file operation is one request through the facade", "[integration]") {
  Fixture f;
  if (f.skip("the emulator's request records")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = f.backend(std::nullopt, f.spec());
    ws::Workspace workspace(backend);
    const auto wd = co_await own_directory(workspace);
    const auto requests = [&] { return f.emu().commands().size(); };
    const auto costs = [&](const char* what, std::size_t before) {
      INFO(what);
      CHECK(requests() - before == 1);
    };
    auto before = requests();
    co_await workspace.write_bytes(wd + "/small.txt", ws::Bytes(2048, 'x'));
    costs("write 2 KB", before);
    before = requests();
    const auto read_back = co_await workspace.read_bytes(wd + "/small.txt");
    CHECK(read_back == ws::Bytes(2048, 'x'));
    costs("read 2 KB", before);
    before = requests();
    const auto entry = co_await workspace.stat(wd + "/small.txt");
    CHECK(entry.size == 2048u);
    costs("stat", before);
    before = requests();
    const auto listed = co_await workspace.list_dir(wd);
    CHECK(listed.size() == 1);
    costs("list_dir", before);
    before = requests();
    co_await workspace.make_dir(wd + "/sub/dir");
    costs("make_dir", before);
    before = requests();
    const auto resolved = co_await workspace.realpath(wd + "/sub/../small.txt");
    CHECK(resolved == wd + "/small.txt");
    costs("realpath", before);
    before = requests();
    const bool present = co_await workspace.exists(wd + "/small.txt");
    CHECK(present);
    costs("exists", before);
    before = requests();
    co_await workspace.remove(wd + "/small.txt");
    costs("remove", before);
    co_await backend->close();
  }, limits(120s));
}

TEST_CASE("a chunked write's begin or block whose answer is cut is sent again and the file is exact", "[integration]") {
  Fixture f;
  if (f.skip("fault injection")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    exedev::FileTransferOptions transfer;
    transfer.write_window = 1;  // so that the cut request is a known block
    auto backend = f.backend(std::nullopt, f.spec(), {}, std::nullopt, transfer);
    ws::Workspace workspace(backend);
    const auto wd = co_await own_directory(workspace);
    // Raw chunks, and chunks of a gzip member.
    std::vector<ws::Bytes> payloads;  // (no braced lists in coroutines: GCC 12)
    payloads.push_back(random_bytes(300 * 1024));
    payloads.push_back(source_text(1200 * 1024));
    // The cut request: 0, the begin (its answer names the destination); 2, the second block.
    std::vector<std::size_t> passed_before_cut;
    passed_before_cut.push_back(0);
    passed_before_cut.push_back(2);
    for (const auto& data : payloads) {
      REQUIRE(requests_before_commit(*backend, data) >= 4);
      for (const auto skip : passed_before_cut) {
        INFO(data.size() << " bytes, the request after " << skip << " cut");
        exedev::emulator::Fault fault;
        fault.kind = exedev::emulator::FaultKind::truncate_stream;
        fault.command = "ssh";
        fault.skip = skip;
        fault.after_bytes = 5;
        f.emu().inject(fault);
        const auto before = f.count("ssh");
        co_await workspace.write_bytes(wd + "/big.bin", data);
        CHECK(f.count("ssh") - before == requests_before_commit(*backend, data) + 2);  // + commit + resend
        const auto back = co_await workspace.read_bytes(wd + "/big.bin");
        CHECK(back == data);
      }
    }
    co_await backend->close();
  }, limits(120s));
}

TEST_CASE("data that compresses travels compressed: fewer requests, the same bytes", "[integration]") {
  Fixture f;
  if (f.skip("the emulator's request records")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = f.backend(std::nullopt, f.spec());
    ws::Workspace workspace(backend);
    const auto wd = co_await own_directory(workspace);
    const auto text = source_text(600 * 1024);
    const auto noise = random_bytes(600 * 1024);
    auto before = f.count("ssh");
    co_await workspace.write_bytes(wd + "/text.cpp", text);
    const auto text_requests = f.count("ssh") - before;
    before = f.count("ssh");
    co_await workspace.write_bytes(wd + "/noise.bin", noise);
    const auto noise_requests = f.count("ssh") - before;
    CHECK(noise_requests == requests_before_commit(*backend, noise) + 1);
    CHECK(text_requests == requests_before_commit(*backend, text) + 1);
    CHECK(text_requests * 3 <= noise_requests);
    const auto text_back = co_await workspace.read_bytes(wd + "/text.cpp");
    CHECK(text_back == text);
    const auto noise_back = co_await workspace.read_bytes(wd + "/noise.bin");
    CHECK(noise_back == noise);
    co_await backend->close();
  }, limits(120s));
}

TEST_CASE("a whole small write whose answer is cut is sent again", "[integration]") {
  Fixture f;
  if (f.skip("fault injection")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = f.backend(std::nullopt, f.spec());
    ws::Workspace workspace(backend);
    const auto wd = co_await own_directory(workspace);
    exedev::emulator::Fault fault;
    fault.kind = exedev::emulator::FaultKind::reset_after_run;
    fault.command = "ssh";
    f.emu().inject(fault);
    co_await workspace.write_bytes(wd + "/a.txt", ws::Bytes("hello"));
    const auto back = co_await workspace.read_bytes(wd + "/a.txt");
    CHECK(back == "hello");
    co_await backend->close();
  }, limits(120s));
}

TEST_CASE("a commit whose answer is lost leaves the old or the new file, never a mix, and no temp files",
          "[integration]") {
  Fixture f;
  if (f.skip("fault injection")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    exedev::FileTransferOptions transfer;
    transfer.write_window = 1;
    auto backend = f.backend(std::nullopt, f.spec(), {}, std::nullopt, transfer);
    ws::Workspace workspace(backend);
    const auto wd = co_await own_directory(workspace);
    // Raw, and a gzip member unpacked by the commit.
    std::vector<ws::Bytes> payloads;  // (no braced lists in coroutines: GCC 12)
    payloads.push_back(random_bytes(200 * 1024));
    payloads.push_back(source_text(800 * 1024));
    std::vector<exedev::emulator::FaultKind> kinds;
    kinds.push_back(exedev::emulator::FaultKind::reset_after_run);
    kinds.push_back(exedev::emulator::FaultKind::truncate_stream);
    kinds.push_back(exedev::emulator::FaultKind::http_status);
    for (const auto& old_data : payloads) {
      ws::Bytes new_data = old_data;
      std::reverse(new_data.begin(), new_data.end());
      for (const auto kind : kinds) {
        co_await workspace.write_bytes(wd + "/target.bin", old_data);
        exedev::emulator::Fault fault;
        fault.kind = kind;
        fault.command = "ssh";
        fault.skip = requests_before_commit(*backend, new_data);
        f.emu().inject(fault);
        auto writing = workspace.write_bytes(wd + "/target.bin", new_data);
        const auto error = co_await capture(std::move(writing));
        expect_error<exedev::CommandOutcomeUnknownError>(error);
        const auto now = co_await workspace.read_bytes(wd + "/target.bin");
        CHECK((now == old_data || now == new_data));
        const auto entries = co_await workspace.list_dir(wd);
        CHECK(entries.size() == 1);  // the temp files are gone
      }
    }
    co_await backend->close();
  }, limits(120s));
}

TEST_CASE("a 429 on new is retried once the limit allows", "[integration]") {
  exedev::emulator::Options options;
  options.modes.rate_limit = {.enabled = true, .burst = 2, .refill_per_second = 20,
                               .overdraft = 0, .retry_after = true};
  Fixture f(options);
  if (f.skip("the emulator's rate limiter")) return;
  exedev::testing::run([&](Executor ex) -> Task<void> {
    exedev::Client c(ex, f.client_options());
    for (int i = 0; i < 4; ++i) {
      exedev::NewVMOptions vm;
      vm.name = f.vm_name("limited");
      co_await c.new_vm(vm);
    }
    CHECK(rate_limited(f.emu()) > 0);  // some were refused (before they ran), and sent again
    CHECK(f.count("new") == 4);        // each ran once
    CHECK(f.emu().vms().size() == 4);
    co_await c.close();
  }, limits(120s));
}

TEST_CASE("paced from the start, bulk requests wait locally and collect no 429", "[integration]") {
  exedev::emulator::Options options;
  options.modes.rate_limit = {.enabled = true, .burst = 3, .refill_per_second = 20, .overdraft = 0};
  Fixture f(options);
  if (f.skip("the emulator's rate limiter")) return;
  exedev::testing::run([&](Executor ex) -> Task<void> {
    auto o = f.client_options();
    o.rate_limit.pace_from_start = true;
    o.rate_limit.burst = 3;
    o.rate_limit.per_second = 10;  // slower than the server's refill
    exedev::Client c(ex, o);
    for (int i = 0; i < 12; ++i) co_await c.list_vms();
    CHECK(rate_limited(f.emu()) == 0);
    co_await c.close();
  }, limits(120s));
}
