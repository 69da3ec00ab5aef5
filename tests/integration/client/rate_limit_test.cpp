// The rate limit waited for, not thrown (ADR 11), against the emulator's limiter.
#include "support.hpp"

#include "common/wait_notices.hpp"

#include <algorithm>

using namespace exedev;
using namespace exedev::test;
using Task0 = boost::asio::awaitable<void>;
using Clock = std::chrono::steady_clock;

namespace {

std::size_t with_status(const emulator::Emulator& emu, unsigned status) {
  const auto records = emu.commands();
  return static_cast<std::size_t>(
      std::count_if(records.begin(), records.end(), [&](const auto& r) { return r.http_status == status; }));
}

}  // namespace

TEST_CASE("a burst of 80 requests at exe.dev's numbers all succeed, paced at the refill rate after the first 429") {
  emulator::Options options;
  options.modes.rate_limit = {.enabled = true, .burst = 60, .refill_per_second = 1, .overdraft = 120};
  Fixture f(options);
  std::vector<std::string> notices;
  exedev::testing::run(
      [&](boost::asio::any_io_executor ex) -> Task0 {
        const auto subscription =
            exedev::detail::subscribe_wait_notices(ex, [&](std::string_view text) { notices.emplace_back(text); });
        Client c(ex, f.options());
        constexpr int requests = 80;
        const auto start = Clock::now();
        for (int i = 0; i < requests; ++i) {
          const auto who = co_await c.whoami();
          CHECK_FALSE(who.email.empty());
        }
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        const auto refused = with_status(f.emu, 429);
        WARN("80 requests in " << seconds << " s, " << refused << " answered 429");
        CHECK(with_status(f.emu, 200) == requests);
        // The bucket allows the 80th request 20 s after the first at the earliest; the model
        // learns from one refusal (a token of debt) and assumes the worst of where it was.
        CHECK(seconds >= 19.0);
        CHECK(seconds <= 26.0);
        CHECK(refused >= 1);
        CHECK(refused <= 2);
        // The wait after the refusal is over a second: logged once, and published as a notice.
        const auto logged = std::count_if(f.logs.begin(), f.logs.end(), [](const std::string& line) {
          return line.find("rate limit") != std::string::npos;
        });
        CHECK(logged >= 1);
        CHECK(logged <= 2);
        co_await sleep_for(std::chrono::milliseconds(0));  // the notices are posted to this executor
        CHECK(static_cast<std::size_t>(logged) == notices.size());
        for (const auto& notice : notices) CHECK(notice.find(f.emu.token()) == std::string::npos);
      },
      limits(120s));
}

TEST_CASE("a run whose wait for the rate limit would pass its timeout is RateLimitedError, never launched") {
  emulator::Options options;
  // A token every 20 s; exe.dev's Retry-After on (the emulator's option) makes the wait exact.
  options.modes.rate_limit = {.enabled = true, .burst = 1, .refill_per_second = 0.05, .overdraft = 10,
                              .retry_after = true};
  Fixture f(options);
  exedev::testing::run(
      [&](boost::asio::any_io_executor ex) -> Task0 {
        Client c(ex, f.options());
        co_await make_vm(c, "slow-vm");  // takes the only token
        ClientRunOptions run;
        run.timeout = std::chrono::seconds(1);
        const auto start = Clock::now();
        const auto limited = co_await f.expect<RateLimitedError>(c.run("slow-vm", "echo ran", run));
        CHECK(Clock::now() - start < 5s);  // given up at once, not after waiting
        REQUIRE(limited.retry_after());
        CHECK(*limited.retry_after() > 20s);  // the wait it would have needed (Retry-After: 40)
        CHECK(*limited.retry_after() <= 41s);
        CHECK_FALSE(limited.may_have_run());
        // One refused launch, nothing else: no stop for a command that never started.
        CHECK(f.emu.commands().size() == 2);
        CHECK(with_status(f.emu, 429) == 1);
      },
      limits(60s));
}
