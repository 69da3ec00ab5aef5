// Client::close reports a failure to remove finished runs' records, keeps them listed, and
// removes them on the next close.
#include "support.hpp"

#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>

#include <filesystem>
#include <vector>

using namespace exedev;
using namespace exedev::test;
using Task0 = boost::asio::awaitable<void>;

namespace {

bool has_records(emulator::Emulator& emu, const std::string& vm) {
  const auto runs = emu.vm(vm)->home / ".local/state/exedev-cpp/runs";
  return std::filesystem::exists(runs) && !std::filesystem::is_empty(runs);
}

}  // namespace

TEST_CASE("close: a failed removal of finished runs' records is raised, and the next close retries it") {
  Fixture f;
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    Client c(ex, f.options());
    co_await make_vm(c, "close-vm");
    const auto ran = co_await c.run("close-vm", "true");
    CHECK(ran.exit_code == 0);
    REQUIRE(has_records(f.emu, "close-vm"));

    // The cleanup request is reset before it runs (twice: the client re-sends once on a new
    // connection when a reused one closes before answering).
    f.emu.inject(fault(emulator::FaultKind::reset_before_run, "ssh", 2, 0, "close-vm", 0));
    const auto failed = co_await f.expect<ConnectionError>(c.close());
    CHECK_THAT(failed.what(), Catch::Contains("close-vm"));
    CHECK(has_records(f.emu, "close-vm"));
    f.emu.clear_faults();

    f.emu.clear_commands();
    co_await c.close();  // retries the same records
    CHECK(f.count("ssh") == 1);
    CHECK_FALSE(has_records(f.emu, "close-vm"));
    f.emu.clear_commands();
    co_await c.close();  // nothing left to remove
    CHECK(f.count("ssh") == 0);
  });
}

TEST_CASE("close: exe.dev's error answer to the cleanup is raised as its APIError") {
  Fixture f;
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    Client c(ex, f.options());
    co_await make_vm(c, "close-api");
    co_await c.run("close-api", "true");
    f.emu.inject(fault(emulator::FaultKind::http_status, "ssh", 1, 502, "close-api", 0));
    const auto failed = co_await f.expect<ServerError>(c.close());
    CHECK(failed.status() == 502);
    f.emu.clear_commands();
    co_await c.close();
    CHECK(f.count("ssh") == 1);  // retried, although the first request had run
  });
}

TEST_CASE("close: the records of many finished runs are removed in requests of bounded size") {
  Fixture f;
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    namespace asio = boost::asio;
    Client c(ex, f.options());
    co_await make_vm(c, "many-vm");
    // Twenty runs at once: each launch leaves the others' records alone, so twenty finished
    // records wait for close(), more than one request removes.
    using Op = decltype(asio::co_spawn(ex, c.run("many-vm", "true"), asio::deferred));
    std::vector<Op> runs;
    for (int i = 0; i < 20; ++i) runs.push_back(asio::co_spawn(ex, c.run("many-vm", "true"), asio::deferred));
    auto group = asio::experimental::make_parallel_group(std::move(runs));
    const auto ended = co_await group.async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
    for (const auto& error : std::get<1>(ended)) CHECK_FALSE(error);
    REQUIRE(has_records(f.emu, "many-vm"));
    f.emu.clear_commands();
    co_await c.close();
    CHECK(f.count("ssh") == 2);  // 16 records, then the other 4
    CHECK_FALSE(has_records(f.emu, "many-vm"));
  });
}
