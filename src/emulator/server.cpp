// The emulator's HTTP(S) server: accepting, sessions, /exec and the Emulator facade. With
// ssh_stream.cpp the only translation units with Beast and Asio SSL (server_impl.hpp).
//
// One thread runs one io_context. Every connection is a coroutine; `ssh` commands are child
// processes whose output pipe and pidfd are read asynchronously on the same io_context. That
// thread is the lobby's one strand: it calls the lobby, passing the time, and runs the host work
// the lobby plans, in order (complete_on_host); the public API posts its calls to it (with_lobby).

#include "emulator/server_impl.hpp"

#include "emulator/control.hpp"
#include "emulator/processes.hpp"

#include "common/random_ids.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>

#include <fmt/format.h>

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <utility>

namespace exedev::emulator {

namespace {

constexpr std::size_t max_body = 64 * 1024;           // 64 KiB; the 65 537th byte is refused

bool is_loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  return !ec && address.is_loopback();
}

// Reads the request body within the 64 KiB limit. Returns a 413 reply, or nothing when the
// body was read; throws nothing: a transport error sets `broken`.
template <typename Stream>
asio::awaitable<std::optional<Reply>> read_body(Stream& stream, beast::flat_buffer& buffer,
                                               http::request_parser<http::string_body>& parser, bool& broken) {
  if (parser.is_done()) co_return std::nullopt;
  if (const auto length = parser.content_length(); length && *length > max_body) {
    co_return error_reply(413, "request body exceeds 64KB limit");
  }
  parser.body_limit(max_body);
  // curl and others wait (about 1 s) for "100 Continue" before sending a larger body.
  if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
    http::response<http::empty_body> proceed{http::status::continue_, parser.get().version()};
    if (const auto [ec, n] = co_await http::async_write(stream, proceed, use_tuple); ec) {
      broken = true;
      co_return std::nullopt;
    }
  }
  const auto [ec, n] = co_await http::async_read(stream, buffer, parser, use_tuple);
  if (ec == http::error::body_limit) co_return error_reply(413, "request body exceeds 64KB limit");
  if (ec) broken = true;
  co_return std::nullopt;
}


}  // namespace

Reply Emulator::Impl::known_hosts_reply() const {
  // exe.dev's handleKnownHosts (execore/exe-web.go): the CA line, public, cacheable.
  return Reply{200,
               {{"Content-Type", "text/plain; charset=utf-8"}, {"Cache-Control", "public, max-age=300"}},
               ssh_server->cert_authority_line()};
}

void Emulator::Impl::start() {
  ioc = std::make_unique<asio::io_context>(1);
  const auto address = options.host == "localhost" ? asio::ip::make_address("127.0.0.1") : asio::ip::make_address(options.host);
  acceptor.emplace(*ioc);
  const tcp::endpoint endpoint(address, port);
  acceptor->open(endpoint.protocol());
  acceptor->set_option(asio::socket_base::reuse_address(true));
  acceptor->bind(endpoint);
  acceptor->listen();
  port = acceptor->local_endpoint().port();
  asio::co_spawn(*ioc, accept_loop(), asio::detached);
  if (ssl_context) {  // the proxy is HTTPS only: none under plain_http
    vm_proxy = std::make_unique<VmProxy>(*ioc, *lobby, *ssl_context, vm_proxy_port);
    vm_proxy_port = vm_proxy->port();
  }
  if (ssh_server) {
    ssh_endpoints = std::make_unique<SshEndpoints>(*ioc, *lobby, *ssh_server, known_hosts);
    host->attach_ssh(ssh_endpoints.get());
    // Every VM's endpoint again, on the port it had when the port is still free.
    for (const auto& [endpoint, ssh_port] : lobby->ssh_endpoints()) {
      run_host_plan(*host, lobby->set_ssh_port(endpoint, ssh_endpoints->open(endpoint, ssh_port)));
    }
  }
  thread = std::thread([this] { ioc->run(); });
}

void Emulator::Impl::stop() {
  if (!ioc) return;
  asio::post(*ioc, [this] {
    boost::system::error_code ignored;
    acceptor->close(ignored);
    if (vm_proxy) vm_proxy->stop();
    // On the thread sshd dies with: its connections' processes go first, while it lives.
    if (ssh_server) ssh_server->stop();
    ioc->stop();
  });
  thread.join();
  {
    std::lock_guard lock(processes_mutex);
    for (auto& weak : processes) {
      if (auto process = weak.lock()) process->terminate_now();
    }
    processes.clear();
  }
  host->attach_ssh(nullptr);
  run_host_plan(*host, lobby->kill_all_processes());
  ssh_endpoints.reset();
  vm_proxy.reset();
  acceptor.reset();
  ioc.reset();  // destroys the suspended coroutines and with them every socket
  open = 0;
}

asio::awaitable<void> Emulator::Impl::accept_loop() {
  while (true) {
    auto [ec, socket] = co_await acceptor->async_accept(use_tuple);
    if (ec) {
      if (!acceptor->is_open()) co_return;
      continue;  // e.g. EMFILE: keep serving the connections we have
    }
    ++accepted;
    asio::co_spawn(*ioc, serve(std::move(socket)), asio::detached);
  }
}

asio::awaitable<void> Emulator::Impl::serve(tcp::socket socket) {
  ++open;
  struct Guard {
    std::atomic<std::size_t>& count;
    ~Guard() { if (count > 0) --count; }
  } guard{open};
  boost::system::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  if (options.plain_http) {
    beast::tcp_stream stream(std::move(socket));
    co_await session(stream);
    co_return;
  }
  beast::ssl_stream<beast::tcp_stream> stream(beast::tcp_stream(std::move(socket)), *ssl_context);
  beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(30));
  const auto [ec] = co_await stream.async_handshake(ssl::stream_base::server, use_tuple);
  beast::get_lowest_layer(stream).expires_never();
  if (ec) co_return;
  co_await session(stream);
}

namespace {

// How long a connection whose request body was left unread lingers after the answer: Go's
// net/http (server.go, closeWriteAndWait and rstAvoidanceDelay) half-closes the connection and
// waits 500 ms before closing it, so that closing with unread bytes does not reset the
// connection before the client has read the answer.
constexpr auto rst_avoidance_delay = std::chrono::milliseconds(500);

// Half-closes the connection (the answer has been written) and discards what the client still
// sends until it closes its side or rst_avoidance_delay passes.
template <typename Stream>
asio::awaitable<void> half_close_and_linger(Stream& stream) {
  auto& lowest = beast::get_lowest_layer(stream);
  boost::system::error_code ignored;
  lowest.socket().shutdown(tcp::socket::shutdown_send, ignored);
  lowest.expires_after(rst_avoidance_delay);
  std::array<char, 16 * 1024> discarded{};
  while (true) {
    const auto [ec, n] = co_await lowest.async_read_some(asio::buffer(discarded), use_tuple);
    if (ec) break;
  }
  lowest.expires_never();
}

}  // namespace

template <typename Stream>
asio::awaitable<void> Emulator::Impl::session(Stream& stream) {
  beast::flat_buffer buffer;
  bool graceful = true;
  bool body_unread = false;
  while (true) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(64 * 1024);
    parser.body_limit(boost::none);  // the 64 KiB limit is checked after auth, as exe.dev does
    const auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, use_tuple);
    if (ec) break;
    const auto& request = parser.get();
    const std::string target(request.target());
    const std::string path = target.substr(0, target.find('?'));
    bool keep = false;
    if (path == "/exec") {
      keep = co_await handle_exec(stream, buffer, parser);
      if (!socket_of(stream).is_open()) {
        graceful = false;
        break;
      }
    } else if (path.rfind("/_emulator/", 0) == 0) {
      bool broken = false;
      auto too_large = co_await read_body(stream, buffer, parser, broken);
      if (broken) break;
      Reply reply;
      if (too_large) reply = *too_large;
      else if (request.method() != http::verb::post) reply = error_reply(405, "method not allowed");
      else if (request["X-Emulator-Control"] != control_secret) reply = error_reply(403, "control secret required");
      else {
        HostPlan plan;
        reply = control_request(*lobby, path.substr(11), parser.get().body(), {accepted.load(), open.load()},
                                Instant::now(), plan);
        run_host_plan(*host, plan);
      }
      keep = co_await write_reply(stream, reply, request.version(), request.keep_alive() && !too_large);
    } else {
      bool broken = false;
      auto too_large = co_await read_body(stream, buffer, parser, broken);
      if (broken) break;
      // Named, not a temporary inside co_await: GCC 12 mishandles those (see docs/client.md).
      const Reply answer = path == "/.well-known/ssh-known-hosts" && request.method() == http::verb::get && ssh_server
                               ? known_hosts_reply()
                               : error_reply(404, "not found");
      keep = co_await write_reply(stream, answer, request.version(), request.keep_alive() && !too_large);
    }
    if (!keep) {
      // A refused request (413, or refused before a body the client never sent) whose body
      // was not read to its end.
      body_unread = !parser.is_done();
      break;
    }
  }
  if (!socket_of(stream).is_open()) co_return;
  if (body_unread) {
    co_await half_close_and_linger(stream);
  } else if constexpr (!std::is_same_v<Stream, beast::tcp_stream>) {
    if (graceful) {
      beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(2));
      co_await stream.async_shutdown(use_tuple);
    }
  }
  boost::system::error_code ignored;
  socket_of(stream).shutdown(tcp::socket::shutdown_both, ignored);
  socket_of(stream).close(ignored);
}

template <typename Stream>
asio::awaitable<bool> Emulator::Impl::handle_exec(Stream& stream, beast::flat_buffer& buffer,
                                                   http::request_parser<http::string_body>& parser) {
  const auto& request = parser.get();
  const unsigned version = request.version();
  CommandRecord record;
  record.time = std::chrono::system_clock::now();
  const auto finish = [&](unsigned status) {
    record.http_status = status;
    lobby->record(record);
  };

  auto authorized = lobby->authorize(request.method_string(), request[http::field::authorization], Instant::now());
  if (auto* reply = std::get_if<Reply>(&authorized)) {
    // Refused before the body is read (spec §1.5). A client waiting for "100 Continue" never
    // sends it: answer and close. Otherwise read it, to keep the connection usable.
    finish(reply->status);
    if (beast::iequals(request[http::field::expect], "100-continue")) co_return co_await write_reply(stream, *reply, version, false);
    bool broken = false;
    auto too_large = co_await read_body(stream, buffer, parser, broken);
    if (broken) co_return false;
    co_return co_await write_reply(stream, *reply, version, request.keep_alive() && !too_large);
  }
  bool broken = false;
  if (auto too_large = co_await read_body(stream, buffer, parser, broken)) {
    finish(413);
    co_return co_await write_reply(stream, *too_large, version, false);
  }
  if (broken) co_return false;

  auto prepared = lobby->prepare(std::get<std::string>(authorized), parser.get().body());
  if (auto* reply = std::get_if<Reply>(&prepared)) {
    finish(reply->status);
    co_return co_await write_reply(stream, *reply, version, request.keep_alive());
  }
  const Prepared& command = std::get<Prepared>(prepared);
  record.words = command.words;
  record.command = command.command;
  record.vm = command.vm;

  const auto fault = lobby->take_fault(command.command, command.vm);
  if (fault && fault->kind == FaultKind::reset_before_run) {
    finish(0);
    reset(stream);
    co_return false;
  }
  if (fault && fault->kind == FaultKind::stall) {
    finish(0);  // recorded as the stall begins, so a test can act while the request hangs
    asio::steady_timer timer(co_await asio::this_coro::executor, fault->duration);
    co_await timer.async_wait(use_tuple);
    reset(stream);
    co_return false;
  }

  // The lobby deadline runs from here, as exe.dev starts it just before executing the command;
  // the added latency is time the command takes, so it counts against the deadline.
  const auto started = Clock::now();
  if (const auto latency = lobby->modes().latency; latency.count() > 0) {
    asio::steady_timer timer(co_await asio::this_coro::executor, latency);
    co_await timer.async_wait(use_tuple);
  }
  auto outcome = complete_on_host(*lobby, *host, lobby->execute(command, started, Instant::now()), &Instant::now);
  if (auto* plan = std::get_if<SshPlan>(&outcome)) co_return co_await run_ssh(stream, request, *plan, fault, record);

  Reply reply = std::get<Reply>(std::move(outcome));
  if (fault) {
    switch (fault->kind) {
      case FaultKind::reset_after_run:
        finish(0);
        reset(stream);
        co_return false;
      case FaultKind::http_status:
        reply = fault->status == 502 ? Reply{502, {{"Content-Type", "text/plain; charset=utf-8"}}, "Bad Gateway\n"}
                                     : error_reply(fault->status, fault->status == 504 ? "command timed out" : "internal error");
        break;
      case FaultKind::bad_json:
        reply.status = 200;
        reply.body = "{\"vm_name\": <html>this is not JSON\n";
        break;
      case FaultKind::truncate_stream: {
        // Announce the whole body, send only part of it, then close.
        http::response<http::string_body> response{static_cast<http::status>(reply.status), version};
        for (const auto& [name, value] : reply.headers) response.set(name, value);
        response.body() = reply.body;
        response.prepare_payload();
        http::response_serializer<http::string_body> serializer{response};
        co_await http::async_write_header(stream, serializer, use_tuple);
        const auto part = reply.body.substr(0, std::min(fault->after_bytes, reply.body.size()));
        co_await asio::async_write(stream, asio::buffer(part), use_tuple);
        finish(0);
        reset(stream);
        co_return false;
      }
      default:
        break;
    }
  }
  finish(reply.status);
  co_return co_await write_reply(stream, reply, version, request.keep_alive());
}

// ---------------------------------------------------------------------------------------------
// Emulator

Emulator::Emulator() : Emulator(Options{}) {}

Emulator::Emulator(Options options) : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  if (!is_loopback_host(options.host)) {
    throw std::invalid_argument("the emulator binds loopback addresses only, not \"" + options.host + "\"");
  }
  impl.options = options;
  if (options.state_dir.empty()) {
    std::string pattern = (std::filesystem::temp_directory_path() / "exedev-emulator-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::system_error(errno, std::generic_category(), "mkdtemp");
    impl.state_dir = pattern;
    impl.temporary_state = true;
  } else {
    impl.state_dir = std::filesystem::absolute(options.state_dir);
    std::filesystem::create_directories(impl.state_dir);
  }
  impl.control_secret = options.control_secret.empty() ? detail::secret_hex(16) : options.control_secret;
  impl.login_shell = !options.login_shell.empty()              ? options.login_shell
                     : ::access("/bin/bash", X_OK) == 0 ? std::string("/bin/bash")
                                                         : std::string("/bin/sh");
  impl.host = std::make_unique<FileVmHost>(impl.state_dir);
  LobbyConfig config;
  config.token = options.token;
  config.tokens = options.tokens;
  config.modes = options.modes;
  config.ssh_authorized_keys = options.ssh_authorized_keys;
  config.second_token = options.second_token;
  config.second_ssh_authorized_keys = options.second_ssh_authorized_keys;
  config.ssh_domain = options.ssh_domain;
  config.login_shell = impl.login_shell;
  impl.lobby = std::make_unique<Lobby>(std::move(config), *impl.host, impl.host->load_state(), Instant::now());
  run_host_plan(*impl.host, impl.lobby->startup_plan());
  try {
    impl.ssh_server = std::make_unique<SshServer>(impl.state_dir, impl.login_shell, options.ssh_sftp, options.ssh_domain);
    impl.known_hosts = impl.ssh_server->directory() / "known_hosts";
  } catch (const std::exception& e) {
    // The emulator serves /exec without SSH endpoints: answers then carry no ssh_port.
    std::cerr << "exedev-emulator: no SSH endpoints: " << e.what() << "\n";
  }
  if (!options.plain_http) {
    impl.tls = make_tls_material(options.expired_certificate);
    impl.ssl_context = std::make_unique<ssl::context>(ssl::context::tls_server);
    impl.ssl_context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                                  ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    impl.ssl_context->use_certificate_chain(asio::buffer(impl.tls.server_certificate_pem));
    impl.ssl_context->use_private_key(asio::buffer(impl.tls.server_key_pem), ssl::context::pem);
    impl.ca_path = impl.state_dir / "emulator-ca.pem";
    std::ofstream(impl.ca_path, std::ios::trunc) << impl.tls.ca_certificate_pem;
  }
  impl.port = options.port;
  impl.start();
}

Emulator::~Emulator() {
  impl_->stop();
  if (impl_->temporary_state) {
    std::error_code ignored;
    std::filesystem::remove_all(impl_->state_dir, ignored);
  }
}

std::string Emulator::url() const {
  const std::string host = impl_->options.host.find(':') != std::string::npos ? "[" + impl_->options.host + "]" : impl_->options.host;
  return fmt::format("{}://{}:{}", impl_->options.plain_http ? "http" : "https", host, impl_->port);
}
std::uint16_t Emulator::port() const { return impl_->port; }
std::uint16_t Emulator::vm_proxy_port() const { return impl_->vm_proxy_port; }
std::filesystem::path Emulator::ca_file() const { return impl_->ca_path; }
std::filesystem::path Emulator::state_dir() const { return impl_->state_dir; }
std::string Emulator::token() const {
  return impl_->with_lobby([&] { return impl_->lobby->default_token(); });
}
std::string Emulator::second_token() const {
  return impl_->with_lobby([&] { return impl_->lobby->second_token(); });
}
std::string Emulator::control_secret() const { return impl_->control_secret; }
std::string Emulator::issue_token(TokenSpec spec) {
  return impl_->with_lobby([&] {
    auto [token, plan] = impl_->lobby->issue_token(std::move(spec));
    run_host_plan(*impl_->host, plan);
    return token;
  });
}
void Emulator::revoke_token(const std::string& token) {
  impl_->with_lobby([&] { run_host_plan(*impl_->host, impl_->lobby->revoke_token(token)); });
}
void Emulator::inject(Fault fault) {
  impl_->with_lobby([&] { impl_->lobby->inject(std::move(fault)); });
}
void Emulator::clear_faults() {
  impl_->with_lobby([&] { impl_->lobby->clear_faults(); });
}
Modes Emulator::modes() const {
  return impl_->with_lobby([&] { return impl_->lobby->modes(); });
}
void Emulator::set_modes(Modes modes) {
  impl_->with_lobby([&] { impl_->lobby->set_modes(modes); });
}
std::vector<VMRecord> Emulator::vms() const {
  return impl_->with_lobby([&] { return impl_->lobby->vms(Instant::now().wall); });
}
std::optional<VMRecord> Emulator::vm(const std::string& name) const {
  return impl_->with_lobby([&] { return impl_->lobby->vm(name, Instant::now().wall); });
}
std::vector<int> Emulator::vm_processes(const std::string& name) const {
  const auto id = impl_->with_lobby([&] { return impl_->lobby->vm_id(name); });
  return id ? find_vm_processes(*id) : std::vector<int>{};
}
std::size_t Emulator::stop_vm_processes(const std::string& name) {
  const auto id = impl_->with_lobby([&] { return impl_->lobby->vm_id(name); });
  return id ? emulator::stop_vm_processes(*id) : 0;
}
std::vector<CommandRecord> Emulator::commands() const {
  return impl_->with_lobby([&] { return impl_->lobby->commands(); });
}
void Emulator::clear_commands() {
  impl_->with_lobby([&] { impl_->lobby->clear_commands(); });
}
std::size_t Emulator::connections_accepted() const { return impl_->accepted; }
std::size_t Emulator::open_connections() const { return impl_->open; }
std::filesystem::path Emulator::ssh_known_hosts() const { return impl_->known_hosts; }

std::filesystem::path Emulator::ssh_hosts_file() const {
  return impl_->ssh_server ? impl_->ssh_server->hosts_file() : std::filesystem::path();
}

std::vector<SshLanding> Emulator::ssh_landings() const {
  std::vector<SshLanding> landings;
  if (!impl_->ssh_server) return landings;
  // The key script's lines: connection, endpoint, fingerprint, account, decision, VM, message,
  // username (the rest of the line); `-` for an empty field.
  std::ifstream in(impl_->ssh_server->landings_file());
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::size_t start = 0;
    while (fields.size() < 7) {
      const auto tab = line.find('\t', start);
      if (tab == std::string::npos) break;
      fields.push_back(line.substr(start, tab - start));
      start = tab + 1;
    }
    if (fields.size() < 7) continue;  // a line being written
    const auto field = [&](std::size_t i) { return fields[i] == "-" ? std::string() : fields[i]; };
    SshLanding landing;
    landing.endpoint_port = static_cast<std::uint16_t>(std::strtoul(fields[1].c_str(), nullptr, 10));
    landing.fingerprint = fields[2];
    landing.account = field(3);
    landing.decision = fields[4] == "vm"         ? SshLandingDecision::vm
                       : fields[4] == "starting" ? SshLandingDecision::vm_starting
                       : fields[4] == "denied"   ? SshLandingDecision::denied
                                                 : SshLandingDecision::lobby;
    landing.vm = field(5);
    landing.message = field(6);
    landing.username = line.substr(start);
    landings.push_back(std::move(landing));
  }
  return landings;
}

void Emulator::restart() {
  Impl& impl = *impl_;
  impl.stop();
  // As a fresh emulator process would: state from disk; the records and modes carry over.
  impl.lobby->reload(impl.host->load_state());
  impl.start();
}

}  // namespace exedev::emulator
