// The transport against the emulator: keep-alive, replaced connections, TLS verification.
#include "support.hpp"

#include <exedev/testing/co_check.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>

using namespace exedev;
using namespace exedev::test;
using namespace boost::asio::experimental::awaitable_operators;
using Task0 = boost::asio::awaitable<void>;

TEST_CASE("keep-alive: many sequential requests share one connection") {
  Fixture f;
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    Client c(ex, f.options());
    co_await make_vm(c, "keep-vm");
    for (int i = 0; i < 20; ++i) CO_CHECK((co_await c.list_vms()).size() == 1);
    for (int i = 0; i < 3; ++i) CO_CHECK((co_await c.run("keep-vm", "echo hi")).stdout_bytes == "hi\n");
    CHECK(f.emu.connections_accepted() == 1);
    // Copies share the pool.
    Client copy = c;
    co_await copy.whoami();
    CHECK(f.emu.connections_accepted() == 1);
  });
}

TEST_CASE("a connection the server closed while idle is replaced without an error") {
  Fixture f;
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    Client c(ex, f.options());
    co_await c.list_vms();
    CHECK(f.emu.connections_accepted() == 1);
    // restart() returns once every server socket is closed; on loopback the FIN has then
    // reached the client's idle connection, which is now dead.
    f.emu.restart();
    CHECK(f.emu.open_connections() == 0);
    f.emu.clear_commands();
    // A state-changing command goes out on a fresh connection, exactly once.
    const auto vm = co_await make_vm(c, "after-restart");
    CHECK(vm.name == "after-restart");
    CHECK(f.count("new") == 1);
    f.emu.restart();
    const auto awaited0 = co_await c.run("after-restart", "echo ok");
    CHECK(awaited0.stdout_bytes == "ok\n");
    f.emu.restart();
    const auto awaited1 = co_await c.list_vms();
    CHECK(awaited1.size() == 1);
  });
}

TEST_CASE("the connection limit holds parallel requests back") {
  Fixture f;
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    auto o = f.options();
    o.max_connections = 2;
    Client c(ex, o);
    auto one = [&]() -> Task0 { co_await c.list_vms(); };
    co_await (one() && one() && one() && one() && one() && one());
    CHECK(f.emu.connections_accepted() <= 2);
  });
}

TEST_CASE("TLS: an untrusted CA and a wrong host name are refused") {
  Fixture f;
  Fixture stranger;  // its CA, made for the purpose, signed nothing f serves
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    auto untrusted = f.options();
    untrusted.ca_file.reset();
    Client c1(ex, untrusted);
    const auto e1 = co_await f.expect<ConnectionError>(c1.list_vms());
    CHECK_FALSE(e1.sent());
    CHECK(std::string(e1.what()).find("TLS") != std::string::npos);
    // The cause is OpenSSL's own code, in Asio's SSL category, seen as a std::error_code.
    CHECK(e1.cause());
    CHECK(std::string(e1.cause().category().name()).find("ssl") != std::string::npos);
    CHECK(e1.code() == exedev::errc::connection_failed);
    auto other_ca = f.options();
    other_ca.ca_file = stranger.options().ca_file;
    Client c0(ex, other_ca);
    const auto e0 = co_await f.expect<ConnectionError>(c0.list_vms());
    CHECK_FALSE(e0.sent());
    CHECK(std::string(e0.what()).find("TLS") != std::string::npos);
    CHECK(f.emu.commands().empty());
  });
  emulator::Options other;
  other.host = "127.0.0.2";  // its certificate names 127.0.0.1, ::1 and localhost only
  Fixture g(other);
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    Client c2(ex, g.options());
    const auto e2 = co_await g.expect<ConnectionError>(c2.list_vms());
    CHECK_FALSE(e2.sent());
    CHECK(g.emu.commands().empty());
    // The name the certificate does carry works.
    auto named = f.options();
    named.endpoint = "https://localhost:" + std::to_string(f.emu.port());
    Client c3(ex, named);
    const auto awaited2 = co_await c3.list_vms();
    CHECK(awaited2.empty());
  });
}

TEST_CASE("TLS: an expired certificate is refused before anything is sent") {
  emulator::Options expired;
  expired.expired_certificate = true;
  Fixture f(expired);
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    Client c(ex, f.options());
    const auto e = co_await f.expect<ConnectionError>(c.list_vms());
    CHECK_FALSE(e.sent());
    CHECK(std::string(e.what()).find("TLS") != std::string::npos);
    CHECK(f.emu.commands().empty());
  });
}

TEST_CASE("plain http endpoints work for an emulator in plain mode") {
  emulator::Options options;
  options.plain_http = true;
  Fixture f(options);
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    auto o = f.options();
    o.ca_file.reset();
    Client c(ex, o);
    CHECK(c.endpoint().rfind("http://", 0) == 0);
    const auto awaited3 = co_await c.list_vms();
    CHECK(awaited3.empty());
  });
}

TEST_CASE("a stalled answer ends at request_timeout: sent, never re-sent for a state change") {
  Fixture f;
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    auto o = f.options();
    o.request_timeout = 700ms;
    Client c(ex, o);
    NewVMOptions vm;
    vm.name = "stall-vm";
    co_await c.new_vm(vm);
    f.emu.clear_commands();
    auto stall = fault(emulator::FaultKind::stall, "pause", 1, 500, "", 0);
    stall.duration = 2s;
    f.emu.inject(stall);
    const auto e = co_await f.expect<ConnectionError>(c.pause_vm("stall-vm"));
    CHECK(e.sent());
    CHECK(e.may_have_run());
    CHECK(std::string(e.what()).find("timed out") != std::string::npos);
    CHECK(e.cause() == std::errc::timed_out);
    // A read-only command that stalls is retried on a new connection.
    auto stall_ls = fault(emulator::FaultKind::stall, "ls", 1, 500, "", 0);
    stall_ls.duration = 2s;
    f.emu.inject(stall_ls);
    const auto vms = co_await c.list_vms();
    CHECK(vms.size() == 1);
    // The emulator records a stalled request when the stall ends.
    for (int i = 0; i < 100 && f.count("ls") < 2; ++i) co_await sleep_for(100ms);
    CHECK(f.count("ls") == 2);
    CHECK(f.count("pause") == 1);
  });
}

TEST_CASE("a server that never answers the TLS handshake ends at handshake_timeout: not sent") {
  Fixture f;
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    // The kernel completes the TCP handshake for the listener's backlog; nothing ever reads the
    // ClientHello.
    boost::asio::ip::tcp::acceptor silent(ex, {boost::asio::ip::make_address("127.0.0.1"), 0});
    auto o = f.options();
    o.endpoint = "https://127.0.0.1:" + std::to_string(silent.local_endpoint().port());
    o.handshake_timeout = 300ms;
    o.retry.max_retries = 0;
    Client c(ex, o);
    const auto e = co_await f.expect<ConnectionError>(c.whoami());
    CHECK_FALSE(e.sent());
    CHECK(std::string(e.what()).find("TLS handshake") != std::string::npos);
    CHECK(std::string(e.what()).find("timed out") != std::string::npos);
    CHECK(e.cause() == std::errc::timed_out);
  });
}

TEST_CASE("a refused connection is a ConnectionError that was not sent") {
  Fixture f;
  exedev::testing::run([&](boost::asio::any_io_executor ex) -> Task0 {
    auto o = f.options();
    o.endpoint = "https://127.0.0.1:1";  // nothing listens there
    o.retry.max_retries = 1;
    Client c(ex, o);
    const auto e = co_await f.expect<ConnectionError>(c.whoami());
    CHECK_FALSE(e.sent());
    // The cause tells a refusal from a reset or a TLS failure without reading the message.
    CHECK(e.cause() == std::errc::connection_refused);
    CHECK(e.is_retryable());
    CHECK_FALSE(e.may_have_run());
  });
}
