// Every typed command against the emulator, its errors, the status mapping and the retry policy.
#include "support.hpp"

using namespace exedev;
using namespace exedev::test;
using emulator::FaultKind;
using Task0 = boost::asio::awaitable<void>;

TEST_CASE("typed commands: new, ls, tag, comment, pause, resume, restart, whoami, rm") {
  Fixture f;
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    Client c(ex, f.options());
    NewVMOptions o;
    o.name = "alpha-one";
    o.tags = {"agents", "req-1"};
    o.comment = "nightly test, v2";
    o.env = {{"SECRET_KEY", "s3cr3t-value"}};
    const auto vm = co_await c.new_vm(o);
    CHECK(vm.name == "alpha-one");
    CHECK(vm.tags == std::vector<std::string>{"agents", "req-1"});
    CHECK_FALSE(vm.ssh_dest.empty());

    auto vms = co_await c.list_vms();
    REQUIRE(vms.size() == 1);
    CHECK(vms[0].name == "alpha-one");
    CHECK(vms[0].status.kind == VMStatus::Kind::running);
    CHECK(vms[0].comment == "nightly test, v2");
    const auto awaited0 = co_await c.list_vms(strings("req-1"));
    CHECK(awaited0.size() == 1);
    const auto awaited1 = co_await c.list_vms(strings("nothing-here"));
    CHECK(awaited1.empty());

    const auto awaited2 = co_await c.add_tags("alpha-one", strings("zeta", "beta"));
    CHECK(awaited2 ==
          std::vector<std::string>{"agents", "beta", "req-1", "zeta"});
    const auto awaited3 = co_await c.remove_tags("alpha-one", strings("zeta"));
    CHECK(awaited3 == std::vector<std::string>{"agents", "beta", "req-1"});
    co_await f.expect<CommandFailedError>(c.add_tags("alpha-one", strings("beta")));

    co_await c.set_comment("alpha-one", "nightly build");
    const auto awaited4 = co_await c.list_vms(strings("alpha-one"));
    CHECK(awaited4[0].comment == "nightly build");
    co_await c.clear_comment("alpha-one");
    const auto awaited5 = co_await c.list_vms(strings("alpha-one"));
    CHECK(awaited5[0].comment.empty());

    co_await c.pause_vm("alpha-one");
    const auto awaited6 = co_await c.list_vms(strings("alpha-one"));
    CHECK(awaited6[0].status.kind == VMStatus::Kind::paused);
    co_await c.resume_vm("alpha-one");
    const auto awaited7 = co_await c.list_vms(strings("alpha-one"));
    CHECK(awaited7[0].status.kind == VMStatus::Kind::running);
    co_await c.restart_vm("alpha-one");

    const auto who = co_await c.whoami();
    CHECK_FALSE(who.email.empty());
    // account() asks once for every copy of the client, until forgotten.
    f.emu.clear_commands();
    const auto first = co_await c.account();
    Client copy = c;
    const auto second = co_await copy.account();
    CHECK(second.email == first.email);
    CHECK(f.emu.commands().size() == 1);
    copy.forget_account();
    const auto third = co_await c.account();
    CHECK(third.email == first.email);
    CHECK(f.emu.commands().size() == 2);

    const auto taken = co_await f.expect<CommandFailedError>(c.new_vm(o));
    CHECK(taken.status() == 422);
    CHECK(taken.command() == "new");
    CHECK(taken.server_message().find("alpha-one") != std::string::npos);
    CHECK(std::string(taken.what()).find("s3cr3t-value") == std::string::npos);

    const auto removed = co_await c.remove_vms(strings("alpha-one", "ghost-vm"));
    CHECK(removed.deleted == std::vector<std::string>{"alpha-one"});
    CHECK(removed.failed == std::vector<std::string>{"ghost-vm"});
    const auto awaited8 = co_await c.list_vms();
    CHECK(awaited8.empty());
    co_await f.expect<CommandFailedError>(c.pause_vm("alpha-one"));
    co_await c.close();
  });
}

TEST_CASE("cp: legacy and new-like answers") {
  Fixture f;
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    Client c(ex, f.options());
    NewVMOptions o;
    o.name = "golden-base";
    o.tags = {"base"};
    co_await c.new_vm(o);
    CopyVMOptions cp;
    cp.source = "golden-base";
    cp.name = "copy-legacy";
    const auto legacy = co_await c.copy_vm(cp);
    CHECK(legacy.name == "copy-legacy");
    auto modes = f.emu.modes();
    modes.cp_response = emulator::CpResponse::new_like;
    f.emu.set_modes(modes);
    cp.name = "copy-modern";
    cp.copy_tags = false;
    const auto modern = co_await c.copy_vm(cp);
    CHECK(modern.name == "copy-modern");
    const auto vms = co_await c.list_vms(strings("copy-modern"));
    REQUIRE(vms.size() == 1);
    CHECK(vms[0].tags.empty());
    const auto awaited9 = co_await c.list_vms(strings("copy-legacy"));
    CHECK(awaited9[0].tags == std::vector<std::string>{"base"});
    const auto taken = co_await f.expect<CommandFailedError>(c.copy_vm(cp));
    CHECK(taken.command() == "cp");
  });
}

TEST_CASE("status codes map to their error types") {
  Fixture f;
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    Client c(ex, f.options());
    co_await make_vm(c, "status-vm");

    // 400: unparseable line; 404: unknown command (raw exec returns any status).
    const auto awaited10 = co_await c.exec("ls 'unterminated");
    CHECK(awaited10.status == 400);
    const auto unknown = co_await c.exec("frobnicate now");
    CHECK(unknown.status == 404);
    CHECK(unknown.body.find("unknown command") != std::string::npos);

    // 413 is refused before sending.
    const auto before = f.emu.commands().size();
    const auto big = co_await f.expect<BadRequestError>(c.exec("comment status-vm " + std::string(70 * 1024, 'x')));
    CHECK(big.status() == 413);
    CHECK(f.emu.commands().size() == before);

    // 401: a token the server does not know.
    auto bad = f.options();
    bad.token = "exe1.AAAAAAAAAAAAAAAAAAAAAAAAAA";
    Client stranger(ex, bad);
    const auto auth = co_await f.expect<AuthenticationError>(stranger.list_vms());
    CHECK(auth.status() == 401);

    // 403: a token whose cmds exclude the command.
    emulator::TokenSpec spec;
    spec.cmds = std::vector<std::string>{"ls"};
    auto narrow = f.options();
    narrow.token = f.emu.issue_token(spec);
    Client limited(ex, narrow);
    const auto awaited11 = co_await limited.list_vms();
    CHECK(awaited11.size() == 1);
    const auto denied = co_await f.expect<PermissionError>(limited.pause_vm("status-vm"));
    CHECK(denied.status() == 403);

    // 500, 502, 504 from a state-changing command: no retry, mapped at once. A 429 is decided
    // before anything runs: waited for and sent again, for every command (ADR 11); with waiting
    // off, thrown at once.
    f.emu.inject(fault(FaultKind::http_status, "comment", 1, 429, "", 0));
    co_await c.set_comment("status-vm", "rate");
    CHECK(f.count("comment") == 2);
    f.emu.clear_commands();
    auto no_wait = f.options();
    no_wait.rate_limit.wait = false;
    Client impatient(ex, no_wait);
    f.emu.inject(fault(FaultKind::http_status, "comment", 1, 429, "", 0));
    const auto limited_out = co_await f.expect<RateLimitedError>(impatient.set_comment("status-vm", "rate"));
    CHECK(f.count("comment") == 1);
    f.messages.emplace_back(limited_out.what());
    f.emu.clear_faults();
    f.emu.clear_commands();
    for (const auto& [status, name] : std::vector<std::pair<unsigned, std::string>>{
             {500, "server"}, {502, "gateway"}, {504, "timeout"}}) {
      f.emu.inject(fault(FaultKind::http_status, "comment", 1, status, "", 0));
      std::exception_ptr error;
      try {
        co_await c.set_comment("status-vm", name);
      } catch (...) {
        error = std::current_exception();
      }
      REQUIRE(error);
      try {
        std::rethrow_exception(error);
      } catch (const GatewayTimeoutError& e) {
        CHECK(status == 504);
        f.messages.emplace_back(e.what());
      } catch (const ServerError& e) {
        CHECK((status == 500 || status == 502));
        CHECK(e.status() == status);
        f.messages.emplace_back(e.what());
      }
    }
    CHECK(f.count("comment") == 3);

    // Unreadable JSON in a success answer.
    f.emu.inject(fault(FaultKind::bad_json, "ls", 1, 500, "", 0));
    co_await f.expect<ProtocolError>(c.list_vms());
  });
}

TEST_CASE("retries: ls and whoami retry on 5xx and resets, every command waits out a 429, new, cp, rm and ssh nothing else") {
  Fixture f;
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    Client c(ex, f.options());
    co_await make_vm(c, "retry-vm");
    f.emu.clear_commands();

    f.emu.inject(fault(FaultKind::http_status, "ls", 2, 503, "", 0));
    const auto awaited12 = co_await c.list_vms();
    CHECK(awaited12.size() == 1);
    CHECK(f.count("ls") == 3);

    f.emu.inject(fault(FaultKind::reset_before_run, "whoami", 1, 500, "", 0));
    f.emu.inject(fault(FaultKind::http_status, "whoami", 1, 429, "", 0));
    const auto awaited13 = co_await c.whoami();
    CHECK_FALSE(awaited13.email.empty());

    f.emu.inject(fault(FaultKind::http_status, "ls", 10, 500, "", 0));
    const auto exhausted = co_await f.expect<ServerError>(c.list_vms());
    CHECK(exhausted.status() == 500);
    f.emu.clear_faults();

    auto no_retry = f.options();
    no_retry.retry.max_retries = 0;
    Client once(ex, no_retry);
    f.emu.clear_commands();
    f.emu.inject(fault(FaultKind::http_status, "ls", 1, 503, "", 0));
    co_await f.expect<ServerError>(once.list_vms());
    CHECK(f.count("ls") == 1);

    f.emu.clear_commands();
    f.emu.inject(fault(FaultKind::http_status, "new", 1, 503, "", 0));
    NewVMOptions second;
    second.name = "retry-two";
    co_await f.expect<ServerError>(c.new_vm(second));
    CHECK(f.count("new") == 1);

    f.emu.inject(fault(FaultKind::reset_after_run, "cp", 1, 500, "", 0));
    CopyVMOptions cp;
    cp.source = "retry-vm";
    cp.name = "retry-copy";
    const auto lost = co_await f.expect<ConnectionError>(c.copy_vm(cp));
    CHECK(lost.sent());
    CHECK(f.count("cp") == 1);

    f.emu.inject(fault(FaultKind::http_status, "rm", 1, 502, "", 0));
    co_await f.expect<ServerError>(c.remove_vms(strings("retry-copy")));
    CHECK(f.count("rm") == 1);

    f.emu.inject(fault(FaultKind::http_status, "ssh", 1, 503, "", 0));
    const auto awaited14 = co_await c.exec("ssh retry-vm true");
    CHECK(awaited14.status == 503);
    CHECK(f.count("ssh") == 1);
  });
}

TEST_CASE("retries wait as long as a 429's Retry-After asks") {
  Fixture f;
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    Client c(ex, f.options());
    auto modes = f.emu.modes();
    // One token, refilled at 1/s; a refused request takes one too, so it says Retry-After: 2.
    // A client retrying sooner than that would be refused again.
    modes.rate_limit = {true, 1, 1, 10, true};
    f.emu.set_modes(modes);
    f.emu.clear_commands();
    (void)co_await c.list_vms();
    const auto listed = co_await c.list_vms();
    CHECK(listed.empty());
    // Refused before its body was read, the 429 is recorded without a command.
    std::vector<unsigned> statuses;
    for (const auto& record : f.emu.commands()) statuses.push_back(record.http_status);
    CHECK(statuses == std::vector<unsigned>{200, 429, 200});
  });
}

TEST_CASE("a missing token is a clear AuthenticationError before anything is sent") {
  Fixture f;
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    auto o = f.options();
    o.token = std::string();
    ::unsetenv("EXE_TOKEN");
    Client c(ex, o);
    const auto e = co_await f.expect<AuthenticationError>(c.list_vms());
    CHECK(e.status() == 0);
    CHECK(std::string(e.what()).find("generate-api-key") != std::string::npos);
    CHECK(f.emu.commands().empty());
  });
}

TEST_CASE("typed commands: resize and rename") {
  Fixture f;
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    Client c(ex, f.options());
    co_await make_vm(c, "grow-vm");
    ResizeVMOptions grow;
    grow.memory = "16G";
    grow.cpu = 4;
    grow.disk = "40";
    const auto resized = co_await c.resize_vm("grow-vm", grow);
    CHECK(resized.old_memory_bytes == std::optional<std::uint64_t>(8ull << 30));
    CHECK(resized.new_memory_bytes == std::optional<std::uint64_t>(16ull << 30));
    CHECK(resized.old_cpus == std::optional<unsigned>(2));
    CHECK(resized.new_cpus == std::optional<unsigned>(4));
    CHECK(resized.new_disk_bytes == std::optional<std::uint64_t>(40ull << 30));
    const auto listed = co_await c.list_vms(strings("grow-vm"));
    REQUIRE(listed.size() == 1);
    CHECK(listed[0].allocated_cpus == std::optional<unsigned>(4));
    CHECK(listed[0].disk_capacity_bytes == std::optional<std::uint64_t>(40ull << 30));
    ResizeVMOptions shrink;
    shrink.disk = "10";
    const auto refused = co_await f.expect<CommandFailedError>(c.resize_vm("grow-vm", shrink));
    CHECK(refused.server_message() == "--disk must be larger than current size (40 GB)");
    const ResizeVMOptions nothing;
    co_await f.expect<std::invalid_argument>(c.resize_vm("grow-vm", nothing));

    co_await c.rename_vm("grow-vm", "grown-vm");
    const auto renamed = co_await c.list_vms();
    REQUIRE(renamed.size() == 1);
    CHECK(renamed[0].name == "grown-vm");
    const auto ran = co_await c.run("grown-vm", "echo still here");
    CHECK(ran.stdout_bytes == "still here\n");
    f.emu.clear_commands();
    co_await c.rename_vm("grown-vm", "grown-vm");  // nothing to do, nothing sent
    CHECK(f.emu.commands().empty());
    const auto missing = co_await f.expect<CommandFailedError>(c.rename_vm("nosuch-vm", "other-vm"));
    CHECK(missing.server_message() == "vm \"nosuch-vm\" not found");
  });
}

TEST_CASE("a 429 not waited for carries exe.dev's Retry-After and says it is worth retrying") {
  emulator::Options options;
  options.modes.rate_limit = {.enabled = true, .burst = 2, .refill_per_second = 1,
                               .overdraft = 0, .retry_after = true};
  Fixture f(options);
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    auto o = f.options();
    o.rate_limit.wait = false;
    Client c(ex, o);
    co_await c.whoami();
    co_await c.whoami();
    const auto limited = co_await f.expect<RateLimitedError>(c.whoami());
    CHECK(limited.code() == errc::rate_limited);
    CHECK(limited.is_retryable());
    CHECK_FALSE(limited.may_have_run());
    // The emulator asks for the seconds until a whole token, rounded up: 1 s at 1 per second.
    REQUIRE(limited.retry_after());
    CHECK(*limited.retry_after() > std::chrono::milliseconds(0));
    CHECK(*limited.retry_after() <= std::chrono::milliseconds(1000));
  });
}
