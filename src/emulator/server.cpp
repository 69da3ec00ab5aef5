// The emulator's HTTP(S) server: the only translation unit with Beast and Asio SSL.
//
// One thread runs one io_context. Every connection is a coroutine; `ssh` commands are child
// processes whose output pipe and pidfd are read asynchronously on the same io_context.

#include <exedev/emulator/emulator.hpp>

#include "emulator/control.hpp"
#include "emulator/lobby.hpp"
#include "emulator/processes.hpp"
#include "emulator/tls.hpp"

#include "common/event.hpp"
#include "common/random_ids.hpp"
#include "common/subprocess.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <unistd.h>
#include <utility>

namespace exedev::emulator {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

constexpr std::size_t max_body = 64 * 1024;           // 64 KiB; the 65 537th byte is refused
constexpr std::size_t max_pending_output = 1 << 20;   // pause reading a child beyond this
constexpr auto exit_drain_grace = std::chrono::seconds(1);

bool is_loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  return !ec && address.is_loopback();
}

// A command of `ssh` running as a child process in its own process group.
//
// Two coroutines own it (through shared_ptr) until it is over: `pump` reads the output pipe and
// `reap` waits on the pidfd. A session consumes `pending`; once the session is gone (client left,
// time limit) the output is discarded but the process keeps being drained and reaped.
class Process : public std::enable_shared_from_this<Process> {
 public:
  Process(asio::io_context& ioc, pid_t pid, int out_fd, int pid_fd)
      : pid_(pid), out_(ioc, out_fd), pidfd_(ioc, pid_fd), grace_(ioc) {}

  static std::shared_ptr<Process> spawn(asio::io_context& ioc, const SshPlan& plan, const std::string& login_shell) {
    detail::SpawnRequest request;
    request.program = login_shell;
    request.argv = {login_shell, "-c", plan.line};
    request.environment = {"HOME=" + plan.home.string(), "PWD=" + plan.home.string(),
                           "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                           "SHELL=" + login_shell, "LANG=C.UTF-8", "USER=exedev", "LOGNAME=exedev",
                           std::string(vm_marker_variable) + "=" + plan.vm_id,
                           "EXEDEV_EMULATOR_VM_NAME=" + plan.vm};
    request.environment.insert(request.environment.end(), plan.env.begin(), plan.env.end());
    request.directory = plan.home.string();
    request.grouping = detail::ProcessGrouping::new_group;
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
    request.stdout_fd = pipe_fds[1];
    request.stderr_fd = pipe_fds[1];
    // A login shell or home that cannot be used is refused (422 "failed to start command"), as a
    // failed fork is: nothing ran.
    const auto started = detail::spawn_process(request);
    ::close(pipe_fds[1]);
    if (started.error != 0) {
      ::close(pipe_fds[0]);
      throw std::system_error(started.error, std::generic_category(), "cannot start " + login_shell);
    }
    const pid_t pid = started.pid;
    int pid_fd = -1;
    try {
      pid_fd = detail::open_pidfd(pid);
    } catch (...) {
      detail::kill_and_reap_now(pid);
      ::close(pipe_fds[0]);
      throw;
    }
    auto process = std::make_shared<Process>(ioc, pid, pipe_fds[0], pid_fd);
    asio::co_spawn(ioc, process->pump(process), asio::detached);
    asio::co_spawn(ioc, process->reap(process), asio::detached);
    return process;
  }

  bool finished() const { return eof_ && exit_code_.has_value(); }
  std::optional<int> exit_code() const { return exit_code_; }
  bool has_output() const { return !pending_.empty(); }

  std::string take_output() {
    std::string out;
    out.swap(pending_);
    space_freed_.notify();
    return out;
  }

  // The consumer stops listening: output from now on is discarded.
  void detach() {
    attached_ = false;
    pending_.clear();
    space_freed_.notify();
  }

  void kill_group() { detail::kill_process_group(pid_); }

  // Waits until something changes (output, EOF, exit) or `deadline`.
  asio::awaitable<void> wait(Clock::time_point deadline) {
    co_await changed_.wait_until(deadline);
  }

  // Kills and reaps the process if it still runs (server shutdown, on the caller's thread).
  void terminate_now() {
    if (exit_code_) return;
    detail::kill_and_reap_now(pid_);
    exit_code_ = 128 + SIGKILL;
  }

 private:
  void notify() { changed_.notify(); }

  asio::awaitable<void> pump(std::shared_ptr<Process> /*keeps this alive*/) {
    std::array<char, 64 * 1024> buffer;
    while (true) {
      while (attached_ && pending_.size() >= max_pending_output) {
        co_await space_freed_.wait();
      }
      const auto [ec, n] = co_await out_.async_read_some(asio::buffer(buffer), use_tuple);
      if (n > 0 && attached_) pending_.append(buffer.data(), n);
      if (ec) break;
      notify();
    }
    boost::system::error_code ignored;
    out_.close(ignored);
    eof_ = true;
    notify();
  }

  asio::awaitable<void> reap(std::shared_ptr<Process> /*keeps this alive*/) {
    const auto status = co_await detail::reap_when_exited(pidfd_, pid_);
    exit_code_ = status ? detail::exit_code_of(*status) : 255;  // 255: no exit status, as ssh says
    boost::system::error_code ignored;
    pidfd_.close(ignored);
    notify();
    // A background process that kept the output pipe open must not hold the response forever.
    if (!eof_) {
      grace_.expires_after(exit_drain_grace);
      co_await grace_.async_wait(use_tuple);
      if (!eof_) out_.cancel(ignored);
    }
  }

  pid_t pid_;
  asio::posix::stream_descriptor out_;
  asio::posix::stream_descriptor pidfd_;
  detail::Event changed_;
  detail::Event space_freed_;
  asio::steady_timer grace_;
  std::string pending_;
  bool attached_ = true;
  bool eof_ = false;
  std::optional<int> exit_code_;
};

template <typename Stream>
tcp::socket& socket_of(Stream& stream) {
  return beast::get_lowest_layer(stream).socket();
}

// Closes with a TCP RST, as a crashed proxy or server would.
template <typename Stream>
void reset(Stream& stream) {
  boost::system::error_code ignored;
  socket_of(stream).set_option(asio::socket_base::linger(true, 0), ignored);
  socket_of(stream).close(ignored);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

struct Emulator::Impl {
  Options options;
  std::filesystem::path state_dir;
  bool temporary_state = false;
  std::filesystem::path ca_path;
  std::string control_secret;
  std::string login_shell;  ///< resolved from Options::login_shell
  TlsMaterial tls;
  std::unique_ptr<ssl::context> ssl_context;
  std::unique_ptr<Lobby> lobby;
  std::unique_ptr<asio::io_context> ioc;
  std::optional<tcp::acceptor> acceptor;
  std::thread thread;
  std::uint16_t port = 0;
  std::atomic<std::size_t> accepted{0};
  std::atomic<std::size_t> open{0};
  std::mutex processes_mutex;
  std::vector<std::weak_ptr<Process>> processes;

  void start();
  void stop();

  asio::awaitable<void> accept_loop();
  asio::awaitable<void> serve(tcp::socket socket);
  template <typename Stream>
  asio::awaitable<void> session(Stream& stream);
  template <typename Stream>
  asio::awaitable<bool> handle_exec(Stream& stream, beast::flat_buffer& buffer, http::request_parser<http::string_body>& parser);
  template <typename Stream>
  asio::awaitable<bool> run_ssh(Stream& stream, const http::request<http::string_body>& request, const SshPlan& plan,
                                const std::optional<Fault>& fault, CommandRecord& record);
};

namespace {

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

template <typename Stream>
asio::awaitable<bool> write_reply(Stream& stream, const Reply& reply, unsigned version, bool keep_alive) {
  http::response<http::string_body> response{static_cast<http::status>(reply.status), version};
  for (const auto& [name, value] : reply.headers) response.set(name, value);
  response.body() = reply.body;
  response.keep_alive(keep_alive);
  response.prepare_payload();
  const auto [ec, n] = co_await http::async_write(stream, response, use_tuple);
  co_return !ec && keep_alive;
}

}  // namespace

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
  thread = std::thread([this] { ioc->run(); });
}

void Emulator::Impl::stop() {
  if (!ioc) return;
  asio::post(*ioc, [this] {
    boost::system::error_code ignored;
    acceptor->close(ignored);
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
  lobby->kill_all_processes();
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
      else reply = control_request(*lobby, path.substr(11), parser.get().body(), {accepted.load(), open.load()});
      keep = co_await write_reply(stream, reply, request.version(), request.keep_alive() && !too_large);
    } else {
      bool broken = false;
      auto too_large = co_await read_body(stream, buffer, parser, broken);
      if (broken) break;
      // Named, not a temporary inside co_await: GCC 12 mishandles those (see docs/client.md).
      const Reply not_found = error_reply(404, "not found");
      keep = co_await write_reply(stream, not_found, request.version(), request.keep_alive() && !too_large);
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

  auto authorized = lobby->authorize(request.method_string(), request[http::field::authorization]);
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
  auto outcome = lobby->execute(command, started);
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

template <typename Stream>
asio::awaitable<bool> Emulator::Impl::run_ssh(Stream& stream, const http::request<http::string_body>& request,
                                              const SshPlan& plan, const std::optional<Fault>& fault,
                                              CommandRecord& record) {
  const Modes modes = lobby->modes();
  const auto started = Clock::now();
  const auto deadline = modes.ssh_time_limit ? started + *modes.ssh_time_limit : Clock::time_point::max();
  const auto finish = [&](unsigned status) {
    record.http_status = status;
    lobby->record(record);
  };

  std::shared_ptr<Process> process;
  if (!plan.answer_without_running) {
    std::string spawn_error;
    try {
      process = Process::spawn(*ioc, plan, login_shell);
    } catch (const std::exception& e) {
      spawn_error = e.what();
    }
    if (!process) {
      finish(422);
      const Reply refused = error_reply(422, "failed to start command: " + spawn_error);
      co_return co_await write_reply(stream, refused, request.version(), request.keep_alive());
    }
    std::lock_guard lock(processes_mutex);
    std::erase_if(processes, [](const auto& weak) { return weak.expired(); });
    processes.push_back(process);
  }
  const auto wait_for_end = [&]() -> asio::awaitable<void> {
    while (process && !process->finished()) {
      process->take_output();
      co_await process->wait(Clock::time_point::max());
    }
  };

  // Faults that answer something other than a stream: the command runs to its end first.
  if (fault && (fault->kind == FaultKind::reset_after_run || fault->kind == FaultKind::http_status ||
                fault->kind == FaultKind::bad_json)) {
    co_await wait_for_end();
    if (process) record.exit_code = process->exit_code();
    if (fault->kind == FaultKind::reset_after_run) {
      finish(0);
      reset(stream);
      co_return false;
    }
    const Reply reply = fault->kind == FaultKind::bad_json
                            ? Reply{200, {{"Content-Type", "application/json; charset=utf-8"}}, "{\"error\": <html>not JSON\n"}
                            : error_reply(fault->status, fault->status == 504 ? "command timed out" : "internal error");
    finish(reply.status);
    co_return co_await write_reply(stream, reply, request.version(), request.keep_alive());
  }

  // ssh_nonzero_exit=unprocessable: the status depends on the exit code, so the output is held
  // until the command ends (or the time limit cuts the request).
  std::string held;
  if (modes.ssh_nonzero_exit == SshNonzeroExit::unprocessable && process) {
    while (!process->finished() && Clock::now() < deadline) {
      held += process->take_output();
      co_await process->wait(deadline);
    }
    held += process->take_output();
    if (!process->finished()) {
      process->detach();
      finish(0);
      reset(stream);
      co_return false;
    }
    if (const int code = process->exit_code().value_or(255); code != 0) {
      record.exit_code = code;
      const Reply failed = error_reply(422, fmt::format("command exited with status {}", code));
      finish(422);
      co_return co_await write_reply(stream, failed, request.version(), request.keep_alive());
    }
  }

  const bool kill_on_disconnect = modes.on_client_disconnect == OnClientDisconnect::kill;
  const bool send_trailer = modes.trailers == Trailers::send;
  http::response<http::empty_body> response{http::status::ok, request.version()};
  response.set(http::field::content_type, "application/octet-stream");
  response.set("X-Content-Type-Options", "nosniff");
  if (send_trailer) response.set(http::field::trailer, "X-Exe-Exit");
  response.chunked(true);
  // In kill mode the server watches the socket for the client leaving, so it cannot read a
  // next request from it: the connection closes after the response.
  response.keep_alive(request.keep_alive() && !kill_on_disconnect);
  http::response_serializer<http::empty_body> serializer{response};
  record.http_status = 200;
  if (const auto [ec, n] = co_await http::async_write_header(stream, serializer, use_tuple); ec) {
    if (process && kill_on_disconnect) process->kill_group();
    if (process) process->detach();
    finish(200);
    co_return false;
  }

  // kill mode: a read on the socket completes when the client goes away.
  // The watcher only borrows from this frame, which outlives it (stop_watcher below waits for
  // it), and captures nothing with a destructor: GCC 12 destroys the captures of a lambda made
  // in the same expression as a co_await twice (GCC PR 100611; a shared_ptr capture here was
  // released twice in the ASan build).
  bool client_gone = false;
  bool watcher_running = false;
  const auto executor = co_await asio::this_coro::executor;
  detail::Event watcher_done;
  if (kill_on_disconnect && process) {
    watcher_running = true;
    asio::co_spawn(
        executor,
        [&stream, &client_gone, &watcher_running, &watcher_done, watched = process.get()]() -> asio::awaitable<void> {
          char byte;
          co_await stream.async_read_some(asio::buffer(&byte, 1), use_tuple);
          client_gone = true;
          watcher_running = false;
          watched->kill_group();
          watcher_done.notify();
        },
        asio::detached);
  }
  const auto stop_watcher = [&]() -> asio::awaitable<void> {
    if (!watcher_running) co_return;
    boost::system::error_code ignored;
    socket_of(stream).cancel(ignored);
    while (watcher_running) co_await watcher_done.wait();
  };

  std::size_t sent = 0;
  const std::size_t limit = fault && fault->kind == FaultKind::truncate_stream ? fault->after_bytes : SIZE_MAX;
  enum class End { complete, no_trailer, client_gone } end = End::complete;
  while (process) {
    if (!held.empty() || process->has_output()) {
      std::string data = std::exchange(held, std::string()) + process->take_output();
      if (sent + data.size() > limit) data.resize(limit - sent);
      if (!data.empty()) {
        const auto chunk = http::make_chunk(asio::buffer(data));
        const auto [ec, n] = co_await asio::async_write(stream, chunk, use_tuple);
        if (ec) {
          end = End::client_gone;
          break;
        }
        sent += data.size();
      }
      if (sent >= limit) {
        end = End::no_trailer;
        break;
      }
      continue;
    }
    if (client_gone) {
      end = End::client_gone;
      break;
    }
    if (process->finished()) break;
    if (Clock::now() >= deadline) {
      end = End::no_trailer;
      break;
    }
    co_await process->wait(deadline);
  }
  const bool truncated = limit != SIZE_MAX;
  if (end == End::complete && limit == 0) end = End::no_trailer;  // truncate after 0 bytes
  if (end == End::complete && process && !lobby->vm_current(plan.vm_id, plan.generation)) {
    end = End::no_trailer;  // the VM was removed or restarted under the command
  }
  // cut_exit_code: a stream cut by the time limit or the VM's removal ends properly instead.
  std::optional<int> exit_code_sent;
  if (end == End::no_trailer && !truncated && modes.cut_exit_code) {
    end = End::complete;
    exit_code_sent = *modes.cut_exit_code;
  }
  co_await stop_watcher();
  if (process) {
    record.exit_code = process->exit_code();
    if (end == End::client_gone && kill_on_disconnect) process->kill_group();
    if (!process->finished()) process->detach();
  } else {
    record.exit_code = 0;
  }
  if (end != End::complete) {
    finish(200);
    reset(stream);
    co_return false;
  }
  http::fields trailer;
  if (send_trailer) trailer.set("X-Exe-Exit", std::to_string(exit_code_sent.value_or(record.exit_code.value_or(255))));
  const auto last_chunk = http::make_chunk_last(trailer);
  // Recorded before the client can see the end of the response, so a test that counts
  // commands right after a run returns never misses this one.
  finish(200);
  const auto [ec, n] = co_await asio::async_write(stream, last_chunk, use_tuple);
  co_return !ec && response.keep_alive();
}

// ---------------------------------------------------------------------------------------------
// Emulator

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
  impl.lobby = std::make_unique<Lobby>(LobbyConfig{impl.state_dir, options.token, options.tokens, options.modes});
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
std::filesystem::path Emulator::ca_file() const { return impl_->ca_path; }
std::filesystem::path Emulator::state_dir() const { return impl_->state_dir; }
std::string Emulator::token() const { return impl_->lobby->default_token(); }
std::string Emulator::control_secret() const { return impl_->control_secret; }
std::string Emulator::issue_token(TokenSpec spec) { return impl_->lobby->issue_token(std::move(spec)); }
void Emulator::revoke_token(const std::string& token) { impl_->lobby->revoke_token(token); }
void Emulator::inject(Fault fault) { impl_->lobby->inject(std::move(fault)); }
void Emulator::clear_faults() { impl_->lobby->clear_faults(); }
Modes Emulator::modes() const { return impl_->lobby->modes(); }
void Emulator::set_modes(Modes modes) { impl_->lobby->set_modes(modes); }
std::vector<VMRecord> Emulator::vms() const { return impl_->lobby->vms(); }
std::optional<VMRecord> Emulator::vm(const std::string& name) const { return impl_->lobby->vm(name); }
std::vector<int> Emulator::vm_processes(const std::string& name) const {
  const auto id = impl_->lobby->vm_id(name);
  return id ? find_vm_processes(*id) : std::vector<int>{};
}
std::vector<CommandRecord> Emulator::commands() const { return impl_->lobby->commands(); }
void Emulator::clear_commands() { impl_->lobby->clear_commands(); }
std::size_t Emulator::connections_accepted() const { return impl_->accepted; }
std::size_t Emulator::open_connections() const { return impl_->open; }

void Emulator::restart() {
  Impl& impl = *impl_;
  impl.stop();
  // As a fresh emulator process would: state from disk; the records and modes carry over.
  impl.lobby->reload();
  impl.start();
}

}  // namespace exedev::emulator
