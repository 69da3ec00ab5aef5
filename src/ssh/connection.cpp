// Connection: session slots, channels, exec, the shared SFTP session, close.
#include "ssh/connection.hpp"

#include "common/backoff.hpp"
#include "common/coroutines.hpp"
#include "ssh/session_driver.hpp"
#include "ssh/ssh_errors.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <fmt/format.h>
#include <libssh2.h>
#include <libssh2_sftp.h>

#include <algorithm>
#include <utility>

namespace exedev::ssh {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using Call = SessionDriver::Call;

namespace {

constexpr std::size_t read_chunk = 256 * 1024;
constexpr std::size_t write_chunk = 1024 * 1024;
// A command's calls once its exec request is made: a drop means it may have run.
constexpr Call running_command{"a command", true, true};
// The output of a command run briefly for an SFTP session, at most.
constexpr std::size_t kMostBriefOutputBytes = 64 * 1024;

// `command` on `connection`, abandoned after `bound`; nothing when the connection is gone.
asio::awaitable<void> run_briefly_on(std::weak_ptr<Connection> connection, std::string command,
                                     SessionDriver::Clock::duration bound) {
  auto running_on = connection.lock();
  if (!running_on) co_return;
  ExecRequest request;
  request.command = std::move(command);
  request.max_output_bytes = kMostBriefOutputBytes;
  // Captured: operator|| waits for the other side when one throws.
  auto running = exedev::detail::capture(running_on->exec(std::move(request)));
  auto bounding = exedev::detail::sleep_for(bound);
  auto racing = std::move(running) || std::move(bounding);
  (void)co_await std::move(racing);
}

}  // namespace

Connection::Connection(std::shared_ptr<SessionDriver> driver, Endpoint endpoint, SshOptions options, std::string fingerprint,
                       std::string user_key_fingerprint)
    : driver_(std::move(driver)), endpoint_(std::move(endpoint)), options_(std::move(options)), fingerprint_(std::move(fingerprint)),
      user_key_fingerprint_(std::move(user_key_fingerprint)), slots_(options_.max_sessions) {}

Connection::~Connection() { driver_->stop("was closed"); }

bool Connection::is_open() const noexcept { return !closed_ && !driver_->dropped(); }

asio::any_io_executor Connection::executor() const { return driver_->executor(); }

NegotiatedMethods Connection::negotiated_methods() const {
  const auto method = [&](int type) {
    const char* name = ::libssh2_session_methods(driver_->session(), type);
    return std::string(name != nullptr ? name : "");
  };
  return {method(LIBSSH2_METHOD_KEX),     method(LIBSSH2_METHOD_HOSTKEY), method(LIBSSH2_METHOD_CRYPT_CS),
          method(LIBSSH2_METHOD_CRYPT_SC), method(LIBSSH2_METHOD_MAC_CS),  method(LIBSSH2_METHOD_MAC_SC)};
}

asio::awaitable<void> Connection::wait_for_change(bool sent) {
  co_await wait_for_change_until(sent, SessionDriver::Clock::time_point::max());
}

asio::awaitable<void> Connection::wait_for_change_until(bool sent, SessionDriver::Clock::time_point deadline) {
  // The driver's event wakes this on a dropped connection, our own on a slot or an opening.
  co_await (state_.wait_until(deadline) || driver_->state_changed().wait_until(deadline));
  const Call call{"waiting for a session channel", true, sent};
  driver_->throw_if_dropped(call);
  co_await exedev::detail::throw_if_cancelled();
}

asio::awaitable<void> Connection::acquire_session_slot() {
  LIBSSH2_CHANNEL* none = co_await ready_channel_or_slot(false);  // nothing is kept ready for SFTP
  (void)none;
}

void Connection::keep_ready(std::string command) {
  ready_command_ = std::move(command);
  slots_.set_ready_wanted(!ready_command_.empty());
  prepare_ready_channel();
}

asio::awaitable<LIBSSH2_CHANNEL*> Connection::ready_channel_or_slot(bool wants_ready) {
  const Call call{"waiting for a session channel", true, false};
  auto waiter = slots_.start_waiting(wants_ready);
  LIBSSH2_CHANNEL* channel = nullptr;
  std::exception_ptr failure;
  try {
    for (;;) {
      driver_->throw_if_dropped(call);
      const auto next = slots_.next(waiter);
      if (next == ChannelSlots::Next::open_new) break;
      if (next == ChannelSlots::Next::take_ready) {
        channel = take_ready_channel();
        if (channel != nullptr) break;
        continue;  // its process had ended: the slot it held comes back once it is closed
      }
      if (next == ChannelSlots::Next::give_up_and_await) give_up_idle_sessions();
      co_await wait_for_change(false);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  slots_.stop_waiting(waiter);
  if (failure) std::rethrow_exception(failure);
  co_return channel;
}

LIBSSH2_CHANNEL* Connection::take_ready_channel() {
  slots_.ready_taken();
  LIBSSH2_CHANNEL* channel = std::exchange(ready_channel_, nullptr);
  // What arrived while it waited is read into libssh2 (nothing consumed), so that a process
  // killed meanwhile shows as the channel's end.
  char unused = 0;
  if (!driver_->dropped()) driver_->attempt(driver_->new_ticket(), [&] { return static_cast<long>(::libssh2_channel_read_ex(channel, 0, &unused, 0)); });
  if (driver_->dropped()) {
    close_channel_in_background(channel, true);  // frees the slot; the session frees the channel
    return nullptr;
  }
  char* signal_name = nullptr;
  ::libssh2_channel_get_exit_signal(channel, &signal_name, nullptr, nullptr, nullptr, nullptr, nullptr);
  const bool killed = signal_name != nullptr;
  if (killed) ::libssh2_free(driver_->session(), signal_name);
  if (killed || ::libssh2_channel_eof(channel) != 0 || ::libssh2_channel_get_exit_status(channel) != 0) {
    close_channel_in_background(channel, true);
    return nullptr;
  }
  return channel;
}

void Connection::discard_ready_channel() {
  // Its process reads EOF and ends; on a dropped session only the slot is given back.
  if (slots_.discard_ready()) close_channel_in_background(std::exchange(ready_channel_, nullptr), true);
}

void Connection::prepare_ready_channel() {
  if (!slots_.start_preparing_ready(is_open())) return;
  ++background_tasks_;
  auto preparing = [](std::shared_ptr<Connection> self) -> asio::awaitable<void> {
    LIBSSH2_CHANNEL* channel = nullptr;
    try {
      co_await self->open_ready_channel(&channel);
    } catch (...) {
      // A channel kept ready is an optimisation: without it, the next exec opens its own.
    }
    if (self->slots_.finish_preparing_ready(channel != nullptr, self->is_open())) {
      self->ready_channel_ = channel;
    } else if (channel != nullptr) {
      self->close_channel_in_background(channel, true);
    }
    --self->background_tasks_;
    self->state_.notify();
  };
  asio::co_spawn(driver_->executor(), preparing(shared_from_this()), asio::detached);
}

asio::awaitable<void> Connection::open_ready_channel(LIBSSH2_CHANNEL** opened) {
  long rc = 0;
  // One attempt: a refusal (a slot not yet freed by sshd) is not worth retrying for.
  LIBSSH2_CHANNEL* channel = co_await try_open_channel("opening a channel kept ready", rc);
  if (channel == nullptr) co_return;
  std::exception_ptr failure;
  try {
    rc = co_await request_exec(channel, ready_command_, "the exec request of a channel kept ready");
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure || rc != 0) {
    close_channel_in_background(channel, false);
    if (failure) std::rethrow_exception(failure);
    co_return;
  }
  *opened = channel;
}

void Connection::release_session_slot() {
  slots_.release();
  state_.notify();
}

asio::awaitable<long> Connection::request_exec(LIBSSH2_CHANNEL* channel, const std::string& command, const char* what) {
  co_return co_await run_under_opening_lock(what, [&] {
    return static_cast<long>(::libssh2_channel_process_startup(channel, "exec", 4, command.data(),
                                                               static_cast<unsigned int>(command.size())));
  });
}

asio::awaitable<long> Connection::run_under_opening_lock(const char* what, std::function<long()> fn) {
  const Call call{what, false, false};
  co_await lock_channel_opening();
  long rc = 0;
  std::exception_ptr failure;
  try {
    rc = co_await driver_->run(call, std::move(fn));
  } catch (...) {
    failure = std::current_exception();
  }
  unlock_channel_opening();
  if (failure) std::rethrow_exception(failure);
  co_return rc;
}

asio::awaitable<void> Connection::lock_channel_opening() {
  while (!slots_.try_lock_opening()) {
    co_await wait_for_change(false);
  }
}

void Connection::unlock_channel_opening() {
  slots_.unlock_opening();
  state_.notify();
}

asio::awaitable<LIBSSH2_CHANNEL*> Connection::open_channel(const char* what) {
  // sshd frees a session only once it has processed our close, so a channel opened right after
  // another closed may be refused for a moment (MaxSessions): the opening is retried when another
  // channel closes, or after a short backoff (SshRecoveryOptions).
  const auto& limits = options_.recovery;
  const auto give_up_at = SessionDriver::Clock::now() + limits.channel_refusal_patience;
  for (int attempt = 0;; ++attempt) {
    long rc = 0;
    LIBSSH2_CHANNEL* channel = co_await try_open_channel(what, rc);
    if (channel != nullptr) co_return channel;
    const bool refused = rc == LIBSSH2_ERROR_CHANNEL_FAILURE;
    if (!refused || SessionDriver::Clock::now() >= give_up_at) {
      throw ConnectionError(fmt::format("SSH: {} refused a session channel: {}", driver_->where(), driver_->last_error_message()),
                            false, libssh2_error(static_cast<int>(rc)));
    }
    const auto delay = detail::doubled_delay(limits.channel_retry_delay, attempt, limits.channel_retry_delay_cap);
    co_await wait_for_change_until(false, SessionDriver::Clock::now() + delay);
  }
}

asio::awaitable<LIBSSH2_CHANNEL*> Connection::try_open_channel(const char* what, long& rc) {
  // libssh2 keeps the state of a channel being opened in the session: one opening at a time,
  // each run to its end.
  LIBSSH2_CHANNEL* channel = nullptr;
  rc = co_await run_under_opening_lock(what, [&] {
    channel = ::libssh2_channel_open_session(driver_->session());
    return channel != nullptr ? 0L : static_cast<long>(::libssh2_session_last_errno(driver_->session()));
  });
  co_return channel;
}

asio::awaitable<void> Connection::close_channel(LIBSSH2_CHANNEL* channel, bool holds_session_slot) {
  // Nothing may touch a channel of a dropped session: freeing the session frees it.
  if (!driver_->dropped()) {
    try {
      const Call call{"closing a channel", false, true};
      co_await driver_->run(call, [&] { return static_cast<long>(::libssh2_channel_close(channel)); });
      co_await driver_->run(call, [&] { return static_cast<long>(::libssh2_channel_free(channel)); });
    } catch (const ConnectionError&) {
      // Dropped meanwhile: the session frees the channel.
    }
  }
  if (holds_session_slot) release_session_slot();
}

void Connection::close_channel_in_background(LIBSSH2_CHANNEL* channel, bool holds_session_slot) {
  if (driver_->dropped()) {
    // Nothing to send: the session frees the channel. Nothing is spawned either, so a channel's
    // owner may let it go after the connection closed, its executor gone too.
    if (holds_session_slot) release_session_slot();
    return;
  }
  ++background_tasks_;
  auto self = shared_from_this();
  // Closing waits for the server's close, which may come only when the remote process ends;
  // the caller does not wait for it. `self` keeps the connection alive until then.
  auto closing = [](std::shared_ptr<Connection> connection, LIBSSH2_CHANNEL* ch, bool slot) -> asio::awaitable<void> {
    co_await connection->close_channel(ch, slot);
    --connection->background_tasks_;
    connection->state_.notify();
  };
  asio::co_spawn(driver_->executor(), closing(std::move(self), channel, holds_session_slot), asio::detached);
}

asio::awaitable<ExecResult> Connection::exec(ExecRequest request) {
  auto self = shared_from_this();
  const bool wants_ready = !ready_command_.empty() && request.command == ready_command_;
  LIBSSH2_CHANNEL* channel = co_await ready_channel_or_slot(wants_ready);
  const bool started = channel != nullptr;
  if (!started) {
    try {
      channel = co_await open_channel("opening a session channel");
    } catch (...) {
      release_session_slot();
      throw;
    }
  }
  prepare_ready_channel();  // for the next exec, while this one runs
  auto running = run_on_channel(channel, request, started);
  co_return co_await closing_on_failure(channel, std::move(running));
}

asio::awaitable<void> Connection::start_command(LIBSSH2_CHANNEL* channel, const std::string& command, const char* what) {
  const long rc = co_await request_exec(channel, command, what);
  if (rc != 0) {
    throw ConnectionError(fmt::format("SSH: {} refused the exec request: {}", driver_->where(), driver_->last_error_message()),
                          false, libssh2_error(static_cast<int>(rc)));
  }
}

asio::awaitable<ExecResult> Connection::run_on_channel(LIBSSH2_CHANNEL* channel, ExecRequest& request, bool started) {
  if (!started) co_await start_command(channel, request.command, "the exec request");
  // From here on the command may run: a drop is sent() == true.
  const Call call = running_command;
  if (request.extra_receive_window > 0) {
    co_await driver_->run(call, [&] {
      return static_cast<long>(::libssh2_channel_receive_window_adjust2(channel, request.extra_receive_window, 0, nullptr));
    });
  }
  ExecResult result;
  co_await stream_command(channel, request, result);
  // The exit status comes before the server's close; wait for that close, then send ours.
  const long closed = co_await driver_->run(call, [&] { return static_cast<long>(::libssh2_channel_wait_closed(channel)); });
  if (closed != 0 && !is_channel_gone(closed)) {
    driver_->throw_if_dropped(call);
  }
  char* signal_name = nullptr;
  std::size_t signal_length = 0;
  ::libssh2_channel_get_exit_signal(channel, &signal_name, &signal_length, nullptr, nullptr, nullptr, nullptr);
  if (signal_name != nullptr) {
    result.exit_code = exit_code_for_signal(std::string_view(signal_name, signal_length));
    result.signalled = true;
    ::libssh2_free(driver_->session(), signal_name);
  } else {
    result.exit_code = ::libssh2_channel_get_exit_status(channel);
  }
  co_await close_channel(channel, true);
  co_return result;
}

asio::awaitable<void> Connection::stream_command(LIBSSH2_CHANNEL* channel, ExecRequest& request, ExecResult& result) {
  const Call call = running_command;
  const auto ticket = driver_->new_ticket();
  std::string buffer(read_chunk, '\0');
  StdinProgress stdin_progress;
  bool stdout_done = false;
  bool stderr_done = false;
  std::size_t output_bytes = 0;
  bool exit_status_reported = false;
  // One stream's new bytes: forwarded or collected, and counted against the limit.
  const auto deliver = [&](int stream, std::size_t count) {
    const std::string_view bytes(buffer.data(), count);
    const auto& forward = stream == 0 ? request.on_stdout : request.on_stderr;
    auto& collected = stream == 0 ? result.stdout_bytes : result.stderr_bytes;
    const bool over = request.max_output_bytes != 0 && output_bytes + count > request.max_output_bytes;
    const auto kept = over ? bytes.substr(0, request.max_output_bytes - output_bytes) : bytes;
    output_bytes += kept.size();
    if (forward) forward(kept);
    else collected.append(kept);
    if (over) {
      throw OutputLimitError(fmt::format("SSH: the output of a command on {} passed {} bytes; the channel was closed",
                                         driver_->where(), request.max_output_bytes),
                             request.max_output_bytes, PartialOutput{result.stdout_bytes, result.stderr_bytes});
    }
  };
  const auto read_stream = [&](int stream, bool& done) {
    const long rc = driver_->attempt(ticket, [&] {
      return static_cast<long>(::libssh2_channel_read_ex(channel, stream, buffer.data(), buffer.size()));
    });
    if (rc > 0) {
      deliver(stream, static_cast<std::size_t>(rc));
      return true;
    }
    if (rc == 0 || is_channel_gone(rc)) {
      done = true;
      return true;
    }
    if (rc != LIBSSH2_ERROR_EAGAIN) {
      driver_->throw_if_dropped(call);
      throw ConnectionError(fmt::format("SSH: reading a command's output from {} failed: {}", driver_->where(),
                                        driver_->last_error_message()),
                            true, libssh2_error(static_cast<int>(rc)));
    }
    return false;
  };
  while (!(stdout_done && stderr_done)) {
    bool progressed = feed_stdin(channel, request.stdin_data, stdin_progress, ticket);
    while (!stdout_done && read_stream(0, stdout_done)) progressed = true;
    while (!stderr_done && read_stream(SSH_EXTENDED_DATA_STDERR, stderr_done)) progressed = true;
    if (request.on_exit_status && !exit_status_reported) {
      // The reads above processed whatever packets came, the exit-status request among them.
      if (const int status = ::libssh2_channel_get_exit_status(channel); status != 0) {
        exit_status_reported = true;
        request.on_exit_status(status);
      }
    }
    if (progressed) co_await driver_->share_thread();
    else co_await driver_->wait(ticket, call);
  }
}

bool Connection::feed_stdin(LIBSSH2_CHANNEL* channel, const std::string& data, StdinProgress& progress, std::uint64_t ticket) {
  if (progress.done) return false;
  const Call call = running_command;
  if (progress.written < data.size()) {
    const auto size = std::min(write_chunk, data.size() - progress.written);
    const long rc = driver_->attempt(ticket, [&] {
      return static_cast<long>(::libssh2_channel_write_ex(channel, 0, data.data() + progress.written, size));
    });
    if (rc > 0) {
      progress.written += static_cast<std::size_t>(rc);
      return true;
    }
    if (rc != LIBSSH2_ERROR_EAGAIN) {
      driver_->throw_if_dropped(call);
      progress.done = true;  // the command closed its input; what it did not read is dropped, as with a pipe
    }
    return false;
  }
  const long rc = driver_->attempt(ticket, [&] { return static_cast<long>(::libssh2_channel_send_eof(channel)); });
  if (rc == LIBSSH2_ERROR_EAGAIN) return false;
  driver_->throw_if_dropped(call);
  progress.done = true;
  return true;
}

asio::awaitable<std::shared_ptr<Sftp>> Connection::sftp() {
  auto self = shared_from_this();
  while (!sftp_ && opening_sftp_) {
    co_await wait_for_change(false);
  }
  const Call call{"opening SFTP", false, false};
  driver_->throw_if_dropped(call);
  if (sftp_) co_return sftp_;
  opening_sftp_ = true;
  std::exception_ptr failure;
  std::shared_ptr<Sftp> opened;
  bool slot_taken = false;
  try {
    co_await acquire_session_slot();
    slot_taken = true;
    opened = co_await start_sftp("opening SFTP");
  } catch (...) {
    failure = std::current_exception();
  }
  opening_sftp_ = false;
  if (failure) {
    if (slot_taken) release_session_slot();
    state_.notify();
    std::rethrow_exception(failure);
  }
  sftp_ = std::move(opened);
  state_.notify();
  co_return sftp_;
}

asio::awaitable<std::shared_ptr<Sftp>> Connection::start_sftp(const char* what) {
  LIBSSH2_SFTP* sftp = nullptr;
  const long rc = co_await run_under_opening_lock(what, [&] {
    sftp = ::libssh2_sftp_init(driver_->session());
    return sftp != nullptr ? 0L : static_cast<long>(::libssh2_session_last_errno(driver_->session()));
  });
  if (sftp == nullptr) {
    throw ConnectionError(fmt::format("SSH: {} refused the SFTP subsystem: {}", driver_->where(), driver_->last_error_message()),
                          false, libssh2_error(static_cast<int>(rc)));
  }
  driver_->add_sftp(sftp);
  co_return std::make_shared<Sftp>(driver_, sftp, sftp_links());
}

SftpLinks Connection::sftp_links() {
  std::weak_ptr<Connection> weak = weak_from_this();
  SftpLinks links;
  links.upload_lane = [weak]() -> std::shared_ptr<Sftp> {
    auto connection = weak.lock();
    if (!connection) return nullptr;
    return connection->upload_lane();
  };
  links.retire = [weak](const std::shared_ptr<Sftp>& session) {
    if (auto connection = weak.lock()) connection->retire_sftp(session);
  };
  links.run_briefly = [weak](std::string command, SessionDriver::Clock::duration bound) {
    return run_briefly_on(weak, std::move(command), bound);
  };
  return links;
}

std::shared_ptr<Sftp> Connection::upload_lane() {
  if (!upload_lane_) open_upload_lane();
  return upload_lane_;
}

void Connection::open_upload_lane() {
  if (!slots_.start_opening_lane(sftp_ != nullptr, is_open())) return;
  ++background_tasks_;
  auto opening = [](std::shared_ptr<Connection> self) -> asio::awaitable<void> {
    std::shared_ptr<Sftp> lane;
    try {
      lane = co_await self->start_sftp("opening a second SFTP session");
    } catch (...) {
      // A second session only speeds large uploads up: without it, they go on the first.
    }
    // A lane opened on a connection that went down meanwhile is freed with the session.
    if (self->slots_.finish_opening_lane(lane != nullptr, self->is_open())) self->upload_lane_ = std::move(lane);
    --self->background_tasks_;
    self->state_.notify();
  };
  asio::co_spawn(driver_->executor(), opening(shared_from_this()), asio::detached);
}

void Connection::discard_idle_upload_lane() {
  // Idle: no upload holds it (an upload's handles, closing in the background, hold it too).
  if (upload_lane_ && upload_lane_.use_count() == 1) shut_down_upload_lane();
}

void Connection::retire_sftp(const std::shared_ptr<Sftp>& session) {
  if (!session) return;
  if (session == upload_lane_) {
    shut_down_upload_lane();
    return;
  }
  if (session != sftp_) return;
  ++background_tasks_;
  auto closing = [](std::shared_ptr<Connection> self, std::shared_ptr<Sftp> retired) -> asio::awaitable<void> {
    co_await retired->shut_down();
    self->release_session_slot();
    --self->background_tasks_;
    self->state_.notify();
  };
  asio::co_spawn(driver_->executor(), closing(shared_from_this(), std::move(sftp_)), asio::detached);
  sftp_.reset();
}

void Connection::shut_down_upload_lane() {
  slots_.lane_shutting_down();
  ++background_tasks_;
  auto closing = [](std::shared_ptr<Connection> self, std::shared_ptr<Sftp> lane) -> asio::awaitable<void> {
    co_await lane->shut_down();
    self->release_session_slot();
    --self->background_tasks_;
    self->state_.notify();
  };
  asio::co_spawn(driver_->executor(), closing(shared_from_this(), std::move(upload_lane_)), asio::detached);
}

void Connection::give_up_idle_sessions() {
  discard_ready_channel();
  discard_idle_upload_lane();
}

asio::awaitable<void> Connection::close() {
  if (closed_) co_return;
  closed_ = true;
  auto self = shared_from_this();
  const bool throw_if_cancelled_before = co_await asio::this_coro::throw_if_cancelled();
  co_await asio::this_coro::throw_if_cancelled(false);
  // Channels closing in the background end as the session goes; a disconnect message is sent
  // when the connection still stands. Failures here only mean it is already gone.
  try {
    if (!driver_->dropped()) {
      const Call call{"disconnecting", false, false, SessionDriver::Clock::now() + std::chrono::seconds(2)};
      co_await driver_->run(call, [&] {
        return static_cast<long>(::libssh2_session_disconnect(driver_->session(), "closed by the client"));
      });
    }
  } catch (const ConnectionError&) {
  }
  driver_->stop("was closed");
  discard_ready_channel();  // freed with the session
  while (background_tasks_ > 0) co_await state_.wait();
  co_await asio::this_coro::throw_if_cancelled(throw_if_cancelled_before);
}

}  // namespace exedev::ssh
