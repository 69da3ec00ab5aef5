// Reaching what a VM serves. SandboxBackend::forward_port against the emulator's real sshd: an
// HTTP server a command starts on the VM is fetched through the local listener (once, then 100
// connections at once), a port nothing listens on closes the connection, closing the handle ends
// its connections, and /exec refuses with TransportUnsupportedError. And exe.dev's HTTPS proxy:
// the `share` calls and SandboxBackend::served_url against the emulator's proxy, fetched by curl.
#include "ssh_fixture.hpp"


#include <exedev/workspace/workspace.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/write.hpp>

#include <random>
#include <sstream>

using namespace sbx;
using exedev::workspace::Command;
using tcp = asio::ip::tcp;

namespace {

// An HTTP server serving directory argv[1] on 127.0.0.1 at a port the system picks, or with
// argv[2] "proxy-range" a free one in 3000-9999 (the ports exe.dev's proxy forwards). It is
// listening before the command returns: the parent prints "<port> <pid>" once bound and exits;
// the child leaves the session and serves until killed.
constexpr const char* kServerScript = R"(import functools, http.server, os, random, sys
class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 256
    daemon_threads = True
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=os.path.abspath(sys.argv[1]))
ports = random.sample(range(3000, 10000), 7000) if sys.argv[2:] == ["proxy-range"] else [0]
for port in ports:
    try:
        server = Server(("127.0.0.1", port), handler)
        break
    except OSError:
        pass
pid = os.fork()
if pid:
    print(server.server_address[1], pid, flush=True)
    os._exit(0)
os.setsid()
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
server.serve_forever()
)";

struct VmServer {
  std::uint16_t port = 0;
  std::string pid;
};

Task<VmServer> start_server(exedev::workspace::Workspace& w, std::string directory, bool in_proxy_range) {
  std::vector<std::string> argv{"python3", "-c", kServerScript};
  argv.push_back(std::move(directory));
  if (in_proxy_range) argv.push_back("proxy-range");
  auto starting = w.run(Command::argv(std::move(argv)));
  const auto result = co_await std::move(starting);
  REQUIRE(result.exit_code == 0);
  std::istringstream words(result.stdout_text);
  unsigned port = 0;
  VmServer server;
  words >> port >> server.pid;
  REQUIRE(port != 0);
  server.port = static_cast<std::uint16_t>(port);
  co_return server;
}

Task<void> stop_server(exedev::workspace::Workspace& w, const VmServer& server) {
  auto stopping = w.run(sh_c("kill " + server.pid));
  co_await std::move(stopping);
}

// Everything the local port answers to one request (HTTP/1.0: the server closes after it).
Task<std::string> fetch(std::uint16_t local_port, std::string path) {
  tcp::socket socket(co_await asio::this_coro::executor);
  const tcp::endpoint endpoint(asio::ip::address_v4::loopback(), local_port);
  co_await socket.async_connect(endpoint, asio::use_awaitable);
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  co_await asio::async_write(socket, asio::buffer(request), asio::use_awaitable);
  std::string response;
  boost::system::error_code ec;
  co_await asio::async_read(socket, asio::dynamic_buffer(response), asio::redirect_error(asio::use_awaitable, ec));
  if (ec != asio::error::eof && ec != asio::error::connection_reset) throw boost::system::system_error(ec);
  co_return response;
}

std::string body_of(const std::string& response) {
  const auto end = response.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : response.substr(end + 4);
}

std::string random_text(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 engine{seed};
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(engine() & 0xFF);
  return out;
}

Task<void> wait_for(std::function<bool()> condition) {
  while (!condition()) co_await sleep_for(20ms);
}

struct CurlAnswer {
  int status = 0;
  std::string body;
};

// curl fetching `url` through the emulator's HTTPS proxy (every host name connects to its port;
// TLS verified against the emulator's CA). Blocking: the emulator and the VM's server run on
// threads and processes of their own.
CurlAnswer curl(exedev::emulator::Emulator& emu, const std::string& url) {
  std::string output;
  const int exit_code = support::run_program({"/usr/bin/curl", "-sS", "--max-time", "30", "--cacert", emu.ca_file().string(),
                                              "--connect-to", "::127.0.0.1:" + std::to_string(emu.vm_proxy_port()), "-w",
                                              "\n%{http_code}", url},
                                             &output);
  INFO("curl " << url << ": " << output);
  REQUIRE(exit_code == 0);
  const auto newline = output.rfind('\n');
  REQUIRE(newline != std::string::npos);
  return CurlAnswer{std::stoi(output.substr(newline + 1)), output.substr(0, newline)};
}

}  // namespace

TEST_CASE("over SSH, a forwarded port reaches an HTTP server on the VM, 100 connections at once", "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip("the emulator's sshd")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = std::make_shared<exedev::SandboxBackend>(ssh_options(f, exedev::Transport::ssh, s.registered, std::nullopt));
    exedev::workspace::Workspace w(backend);
    const auto data = random_text(300 * 1024, 7);
    co_await w.write_bytes("site/data.bin", data);
    co_await w.write_text("site/small.txt", "hello through the tunnel\n");
    const auto server = co_await start_server(w, "site", false);
    std::exception_ptr failure;
    try {
      auto forward = co_await backend->forward_port(server.port);
      CHECK(forward.is_open());
      CHECK(forward.remote_port() == server.port);
      CHECK(forward.local_port() != 0);
      CHECK(forward.local_url() == "http://127.0.0.1:" + std::to_string(forward.local_port()));

      const auto first = co_await fetch(forward.local_port(), "/small.txt");
      CHECK(first.rfind("HTTP/1.0 200", 0) == 0);
      CHECK(body_of(first) == "hello through the tunnel\n");

      // 100 connections at once through the one SSH connection, each with the exact bytes.
      constexpr int kConnections = 100;
      int finished = 0;
      int exact = 0;
      std::vector<std::string> errors;
      const auto ex = co_await asio::this_coro::executor;
      for (int i = 0; i < kConnections; ++i) {
        asio::co_spawn(ex, fetch(forward.local_port(), "/data.bin"), [&](std::exception_ptr e, std::string response) {
          ++finished;
          if (e) {
            try {
              std::rethrow_exception(e);
            } catch (const std::exception& error) {
              errors.emplace_back(error.what());
            }
          } else if (response.rfind("HTTP/1.0 200", 0) == 0 && body_of(response) == data) {
            ++exact;
          }
        });
      }
      co_await wait_for([&] { return finished == kConnections; });
      for (const auto& error : errors) UNSCOPED_INFO("a connection failed: " << error);
      CHECK(exact == kConnections);
      co_await wait_for([&] { return forward.active_connections() == 0; });

      // Closing the handle closes the listener: nothing answers on the port any more.
      const auto local_port = forward.local_port();
      forward.close();
      CHECK_FALSE(forward.is_open());
      tcp::socket probe(ex);
      boost::system::error_code ec;
      co_await probe.async_connect(tcp::endpoint(asio::ip::address_v4::loopback(), local_port),
                                   asio::redirect_error(asio::use_awaitable, ec));
      CHECK(ec == asio::error::connection_refused);
    } catch (...) {
      failure = std::current_exception();
    }
    co_await stop_server(w, server);
    co_await backend->close();
    if (failure) std::rethrow_exception(failure);
  }, limits(180s));
}

TEST_CASE("over SSH, a forward to a port nothing listens on closes each connection, and closing a forward ends its connections",
          "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip("the emulator's sshd")) return;
  exedev::testing::run([&](Executor ex) -> Task<void> {
    auto backend = std::make_shared<exedev::SandboxBackend>(ssh_options(f, exedev::Transport::ssh, s.registered, std::nullopt));
    exedev::workspace::Workspace w(backend);
    // Port 1 needs root to listen on: nothing does.
    auto nowhere = co_await backend->forward_port(1);
    const auto refused = co_await fetch(nowhere.local_port(), "/");
    CHECK(refused.empty());
    CHECK(nowhere.is_open());  // one refused connection does not end the forward

    co_await w.write_text("site/index.html", "x");
    const auto server = co_await start_server(w, "site", false);
    std::exception_ptr failure;
    try {
      auto opening = backend->forward_port(server.port);
      std::optional<exedev::PortForward> forward(co_await std::move(opening));
      // A client that connects and waits: the server waits for its request meanwhile.
      tcp::socket idle(ex);
      co_await idle.async_connect(tcp::endpoint(asio::ip::address_v4::loopback(), forward->local_port()), asio::use_awaitable);
      co_await wait_for([&] { return forward->active_connections() == 1; });
      forward.reset();  // destroying the handle ends the connection at once
      char byte = 0;
      boost::system::error_code ec;
      co_await idle.async_read_some(asio::buffer(&byte, 1), asio::redirect_error(asio::use_awaitable, ec));
      CHECK((ec == asio::error::eof || ec == asio::error::connection_reset));
    } catch (...) {
      failure = std::current_exception();
    }
    co_await stop_server(w, server);
    co_await backend->close();
    CHECK_FALSE(nowhere.is_open());  // its SSH connection is closed
    if (failure) std::rethrow_exception(failure);
  }, limits(120s));
}

TEST_CASE("over /exec, forward_port is refused with TransportUnsupportedError", "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip()) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = std::make_shared<exedev::SandboxBackend>(ssh_options(f, exedev::Transport::exec, s.registered, std::nullopt));
    auto forwarding = capture(backend->forward_port(8000));
    const auto error = co_await std::move(forwarding);
    const auto e = expect_error<exedev::TransportUnsupportedError>(error);
    CHECK(e.code() == exedev::errc::transport_unsupported);
    CHECK_FALSE(e.may_have_run());
    CHECK(std::string(e.what()).find("/exec") != std::string::npos);
    CHECK(std::string(e.what()).find("SSH") != std::string::npos);
    co_await backend->close();
  }, limits(60s));
}

TEST_CASE("share calls against the emulator, and served_url reaching the VM's server through the HTTPS proxy",
          "[integration]") {
  SshSetup s;
  Fixture f(s.emulator_options());
  if (f.skip("the emulator's HTTPS proxy")) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = std::make_shared<exedev::SandboxBackend>(ssh_options(f, exedev::Transport::automatic, s.registered, std::nullopt));
    exedev::workspace::Workspace w(backend);
    co_await w.write_text("site/index.html", "served by the VM\n");
    const auto server = co_await start_server(w, "site", true);
    std::exception_ptr failure;
    try {
      const std::string name = exedev::VMTarget(*backend->ref()).name();
      const std::string https_url = "https://" + name + ".exe.xyz";
      auto c = co_await backend->client();

      const auto before = co_await c.share_port(name);
      CHECK(before.port == 80);
      CHECK(before.visibility == "private");
      const auto moved = co_await c.set_share_port(name, server.port);
      CHECK(moved.port == server.port);
      CHECK(moved.visibility == "private");
      const auto url = co_await backend->served_url(server.port);
      CHECK(url == https_url + "/");

      CHECK(curl(f.emu(), url).status == 401);  // private: only people with access
      const auto opened = co_await c.share_set_public(name);
      CHECK(opened.visibility == "public");
      const auto fetched = curl(f.emu(), url);
      CHECK(fetched.status == 200);
      CHECK(fetched.body == "served by the VM\n");

      const auto link = co_await c.share_add_link(name);
      CHECK(link.url == https_url + "/?share=" + link.token);
      const auto closed = co_await c.share_set_private(name);
      CHECK(closed.visibility == "private");
      CHECK(curl(f.emu(), url).status == 401);
      CHECK(curl(f.emu(), link.url).body == "served by the VM\n");

      const auto invited = co_await c.share_add(name, "Reviewer@Example.com", "have a look");
      CHECK(invited.shared_with == "reviewer@example.com");
      const auto allowed = co_await c.share_access(name, true);
      CHECK(allowed.team_access);
      const auto shown = co_await c.share_show(name);
      CHECK(shown.vm_name == name);
      CHECK(shown.url == https_url);
      CHECK(shown.port == server.port);
      CHECK(shown.visibility == "private");
      REQUIRE(shown.links.size() == 1);
      CHECK(shown.links[0].token == link.token);
      REQUIRE(shown.users.size() == 1);
      CHECK(shown.users[0].email == "reviewer@example.com");
      CHECK(shown.users[0].status == "pending");
      CHECK(shown.team_ssh);

      const auto unlinked = co_await c.share_remove_link(name, link.token);
      CHECK(unlinked.message == "Share link removed");
      CHECK(curl(f.emu(), link.url).status == 401);
      const auto uninvited = co_await c.share_remove(name, "reviewer@example.com");
      CHECK(uninvited.vm_name == name);
      auto removing_again = capture(c.share_remove(name, "reviewer@example.com"));
      const auto again = expect_error<exedev::CommandFailedError>(co_await std::move(removing_again));
      CHECK(std::string(again.what()).find("no share found") != std::string::npos);

      // Another port in 3000-9999 is served at its own URL; others are not served at all.
      const std::uint16_t other = server.port == 9999 ? 9998 : static_cast<std::uint16_t>(server.port + 1);
      const auto other_url = co_await backend->served_url(other);
      CHECK(other_url == https_url + ":" + std::to_string(other) + "/");
      auto serving_ssh = capture(backend->served_url(22));
      expect_error<std::invalid_argument>(co_await std::move(serving_ssh));
      auto bad_port = capture(c.set_share_port(name, 80));
      expect_error<std::invalid_argument>(co_await std::move(bad_port));
    } catch (...) {
      failure = std::current_exception();
    }
    co_await stop_server(w, server);
    co_await backend->close();
    if (failure) std::rethrow_exception(failure);
  }, limits(180s));
}
