// Streaming an `ssh` command's output as a chunked /exec answer (exe.dev's X-Exe-Exit trailer,
// the time limit, the client leaving). Apart from server.cpp so that the two Beast translation
// units compile in parallel.

#include "emulator/server_impl.hpp"

#include <fmt/format.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <set>
#include <utility>

namespace exedev::emulator {
namespace {

enum class StreamEnd { complete, no_trailer, client_gone };

// The /exec request being answered: its record is written once, with the status the client
// sees, before the client can see the answer's end.
template <typename Stream>
struct Answer {
  Stream& stream;
  const http::request<http::string_body>& request;
  CommandRecord& record;
  Lobby& lobby;

  void finish(unsigned status) {
    record.http_status = status;
    lobby.record(record);
  }
  asio::awaitable<bool> reply(const Reply& reply) {
    finish(reply.status);
    co_return co_await write_reply(stream, reply, request.version(), request.keep_alive());
  }
  // The connection reset without an answer (the client sees the request fail).
  bool reset_connection() {
    finish(0);
    reset(stream);
    return false;
  }
};

// The head of a streamed answer: chunked, with the X-Exe-Exit trailer announced when the modes
// send it.
http::response<http::empty_body> stream_head(const http::request<http::string_body>& request, const Modes& modes) {
  http::response<http::empty_body> response{http::status::ok, request.version()};
  response.set(http::field::content_type, "application/octet-stream");
  response.set("X-Content-Type-Options", "nosniff");
  if (modes.trailers == Trailers::send) response.set(http::field::trailer, "X-Exe-Exit");
  response.chunked(true);
  // In kill mode the server watches the socket for the client leaving, so it cannot read a
  // next request from it: the connection closes after the response.
  response.keep_alive(request.keep_alive() && modes.on_client_disconnect != OnClientDisconnect::kill);
  return response;
}

// Faults that answer something other than a stream: the command runs to its end first.
bool answers_after_run(const std::optional<Fault>& fault) {
  return fault && (fault->kind == FaultKind::reset_after_run || fault->kind == FaultKind::http_status ||
                   fault->kind == FaultKind::bad_json);
}

// What a fault that answers something other than a stream answers, once the command has run.
Reply fault_reply(const Fault& fault) {
  if (fault.kind == FaultKind::bad_json) {
    return Reply{200, {{"Content-Type", "application/json; charset=utf-8"}}, "{\"error\": <html>not JSON\n"};
  }
  return error_reply(fault.status, fault.status == 504 ? "command timed out" : "internal error");
}

// kill mode: a read on the socket completes when the client goes away, and the command's process
// group is killed then. The watcher only borrows from the frame that owns this object, which
// outlives it (stop() waits for it), and its coroutine captures nothing with a destructor: GCC 12
// destroys the captures of a lambda made in the same expression as a co_await twice (GCC PR
// 100611; a shared_ptr capture here was released twice in the ASan build).
template <typename Stream>
class DisconnectWatcher {
 public:
  explicit DisconnectWatcher(Stream& stream) : stream_(stream) {}

  void start(const asio::any_io_executor& executor, SshProcess& process) {
    running_ = true;
    asio::co_spawn(
        executor,
        [this, watched = &process]() -> asio::awaitable<void> {
          char byte;
          co_await stream_.async_read_some(asio::buffer(&byte, 1), use_tuple);
          client_gone_ = true;
          running_ = false;
          watched->kill_group();
          done_.notify();
        },
        asio::detached);
  }

  [[nodiscard]] const bool& client_gone() const { return client_gone_; }

  asio::awaitable<void> stop() {
    if (!running_) co_return;
    boost::system::error_code ignored;
    socket_of(stream_).cancel(ignored);
    while (running_) co_await done_.wait();
  }

 private:
  Stream& stream_;
  bool client_gone_ = false;
  bool running_ = false;
  detail::Event done_;
};

// Sends the command's output as chunks (`held` first) until it ends, `limit` bytes are sent (a
// truncate fault), the time limit passes or the client goes.
template <typename Stream>
asio::awaitable<StreamEnd> stream_chunks(Stream& stream, SshProcess& process, std::string held, std::size_t limit,
                                         Clock::time_point deadline, const bool& client_gone) {
  std::size_t sent = 0;
  while (true) {
    if (!held.empty() || process.has_output()) {
      std::string data = std::exchange(held, std::string()) + process.take_output();
      if (sent + data.size() > limit) data.resize(limit - sent);
      if (!data.empty()) {
        const auto chunk = http::make_chunk(asio::buffer(data));
        const auto [ec, n] = co_await asio::async_write(stream, chunk, use_tuple);
        if (ec) co_return StreamEnd::client_gone;
        sent += data.size();
      }
      if (sent >= limit) co_return StreamEnd::no_trailer;
      continue;
    }
    if (client_gone) co_return StreamEnd::client_gone;
    if (process.finished()) co_return StreamEnd::complete;
    if (Clock::now() >= deadline) co_return StreamEnd::no_trailer;
    co_await process.wait(deadline);
  }
}

}  // namespace

std::shared_ptr<SshProcess> Emulator::Impl::start_ssh_process(const SshPlan& plan, std::string& spawn_error) {
  std::shared_ptr<SshProcess> process;
  try {
    process = SshProcess::spawn(*ioc, plan, login_shell);
  } catch (const std::exception& e) {
    spawn_error = e.what();
  }
  if (!process) return nullptr;
  std::lock_guard lock(processes_mutex);
  std::erase_if(processes, [](const auto& weak) { return weak.expired(); });
  processes.push_back(process);
  return process;
}

template <typename Stream>
asio::awaitable<bool> Emulator::Impl::run_ssh(Stream& stream, const http::request<http::string_body>& request,
                                              const SshPlan& plan, const std::optional<Fault>& fault,
                                              CommandRecord& record) {
  const Modes modes = lobby->modes();
  const auto started = Clock::now();
  const auto deadline = modes.ssh_time_limit ? started + *modes.ssh_time_limit : Clock::time_point::max();
  Answer<Stream> answer{stream, request, record, *lobby};

  std::shared_ptr<SshProcess> process;
  if (!plan.answer_without_running) {
    std::string spawn_error;
    process = start_ssh_process(plan, spawn_error);
    if (!process) {
      const Reply refused = error_reply(422, "failed to start command: " + spawn_error);
      co_return co_await answer.reply(refused);
    }
  }

  if (answers_after_run(fault)) {
    while (process && !process->finished()) {
      process->take_output();
      co_await process->wait(Clock::time_point::max());
    }
    if (process) record.exit_code = process->exit_code();
    if (fault->kind == FaultKind::reset_after_run) co_return answer.reset_connection();
    const Reply reply = fault_reply(*fault);
    co_return co_await answer.reply(reply);
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
      co_return answer.reset_connection();
    }
    if (const int code = process->exit_code().value_or(255); code != 0) {
      record.exit_code = code;
      const Reply failed = error_reply(422, fmt::format("command exited with status {}", code));
      co_return co_await answer.reply(failed);
    }
  }

  const bool kill_on_disconnect = modes.on_client_disconnect == OnClientDisconnect::kill;
  const bool send_trailer = modes.trailers == Trailers::send;
  http::response<http::empty_body> response = stream_head(request, modes);
  http::response_serializer<http::empty_body> serializer{response};
  record.http_status = 200;
  if (const auto [ec, n] = co_await http::async_write_header(stream, serializer, use_tuple); ec) {
    if (process && kill_on_disconnect) process->kill_group();
    if (process) process->detach();
    answer.finish(200);
    co_return false;
  }

  DisconnectWatcher<Stream> watcher(stream);
  const auto executor = co_await asio::this_coro::executor;
  if (kill_on_disconnect && process) watcher.start(executor, *process);
  const std::size_t limit = fault && fault->kind == FaultKind::truncate_stream ? fault->after_bytes : SIZE_MAX;
  StreamEnd end = StreamEnd::complete;
  if (process) end = co_await stream_chunks(stream, *process, std::move(held), limit, deadline, watcher.client_gone());
  const bool truncated = limit != SIZE_MAX;
  if (end == StreamEnd::complete && limit == 0) end = StreamEnd::no_trailer;  // truncate after 0 bytes
  if (end == StreamEnd::complete && process && !lobby->vm_current(plan.vm_id, plan.generation)) {
    end = StreamEnd::no_trailer;  // the VM was removed or restarted under the command
  }
  // cut_exit_code: a stream cut by the time limit or the VM's removal ends properly instead.
  std::optional<int> exit_code_sent;
  if (end == StreamEnd::no_trailer && !truncated && modes.cut_exit_code) {
    end = StreamEnd::complete;
    exit_code_sent = *modes.cut_exit_code;
  }
  co_await watcher.stop();
  if (process) {
    record.exit_code = process->exit_code();
    if (end == StreamEnd::client_gone && kill_on_disconnect) process->kill_group();
    if (!process->finished()) process->detach();
  } else {
    record.exit_code = 0;
  }
  if (end != StreamEnd::complete) {
    answer.finish(200);
    reset(stream);
    co_return false;
  }
  http::fields trailer;
  if (send_trailer) trailer.set("X-Exe-Exit", std::to_string(exit_code_sent.value_or(record.exit_code.value_or(255))));
  const auto last_chunk = http::make_chunk_last(trailer);
  // Recorded before the client can see the end of the response, so a test that counts
  // commands right after a run returns never misses this one.
  answer.finish(200);
  const auto [ec, n] = co_await asio::async_write(stream, last_chunk, use_tuple);
  co_return !ec && response.keep_alive();
}

template asio::awaitable<bool> Emulator::Impl::run_ssh<PlainStream>(PlainStream&, const http::request<http::string_body>&,
                                                                     const SshPlan&, const std::optional<Fault>&,
                                                                     CommandRecord&);
template asio::awaitable<bool> Emulator::Impl::run_ssh<TlsStream>(TlsStream&, const http::request<http::string_body>&,
                                                                   const SshPlan&, const std::optional<Fault>&,
                                                                   CommandRecord&);

}  // namespace exedev::emulator
