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

  std::shared_ptr<SshProcess> process;
  if (!plan.answer_without_running) {
    std::string spawn_error;
    try {
      process = SshProcess::spawn(*ioc, plan, login_shell);
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

template asio::awaitable<bool> Emulator::Impl::run_ssh<PlainStream>(PlainStream&, const http::request<http::string_body>&,
                                                                     const SshPlan&, const std::optional<Fault>&,
                                                                     CommandRecord&);
template asio::awaitable<bool> Emulator::Impl::run_ssh<TlsStream>(TlsStream&, const http::request<http::string_body>&,
                                                                   const SshPlan&, const std::optional<Fault>&,
                                                                   CommandRecord&);

}  // namespace exedev::emulator
