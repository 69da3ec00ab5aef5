#include "ssh/session_driver.hpp"

#include "ssh/ssh_errors.hpp"
#include "common/coroutines.hpp"
#include "common/inert_text.hpp"

#include <exedev/errors.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <fmt/format.h>
#include <libssh2.h>
#include <libssh2_sftp.h>

#include <cerrno>
#include <mutex>
#include <sys/socket.h>

namespace exedev::ssh {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

namespace {

// libssh2_init is not thread-safe; the first session of the process calls it once.
void init_libssh2_once() {
  static std::once_flag once;
  std::call_once(once, [] { ::libssh2_init(0); });
}

SessionDriver& driver_of(void** abstract) { return *static_cast<SessionDriver*>(*abstract); }


}  // namespace

SessionDriver::SessionDriver(asio::ip::tcp::socket socket, std::string where)
    : socket_(std::move(socket)), where_(std::move(where)) {
  init_libssh2_once();
  session_ = ::libssh2_session_init_ex(nullptr, nullptr, nullptr, this);
  if (session_ == nullptr) throw std::bad_alloc();
  ::libssh2_session_set_blocking(session_, 0);
  ::libssh2_session_callback_set(session_, LIBSSH2_CALLBACK_RECV, reinterpret_cast<void*>(&SessionDriver::on_recv));
  ::libssh2_session_callback_set(session_, LIBSSH2_CALLBACK_SEND, reinterpret_cast<void*>(&SessionDriver::on_send));
}

SessionDriver::~SessionDriver() {
  // The callbacks fail from here on (stopped_), so freeing sends nothing and never waits.
  stopped_ = true;
  for (auto* sftp : sftps_) ::libssh2_sftp_shutdown(sftp);
  ::libssh2_session_free(session_);
}

ssize_t SessionDriver::on_recv(int socket, void* buffer, std::size_t length, int flags, void** abstract) {
  auto& self = driver_of(abstract);
  if (self.stopped_) return -ENOTCONN;
  const ssize_t n = ::recv(socket, buffer, length, flags);
  if (n > 0) {
    self.bytes_moved_ += static_cast<std::uint64_t>(n);
    return n;
  }
  if (n == 0) {
    self.mark_dropped(std::make_error_code(std::errc::connection_reset), "the server closed the connection");
    return 0;
  }
  const int error = errno;
  if (error == EAGAIN || error == EWOULDBLOCK) return -EAGAIN;
  if (error == EINTR) return -EAGAIN;
  self.mark_dropped(std::error_code(error, std::system_category()), "receiving failed");
  return -error;
}

ssize_t SessionDriver::on_send(int socket, const void* buffer, std::size_t length, int flags, void** abstract) {
  auto& self = driver_of(abstract);
  if (self.stopped_) return -ENOTCONN;
  const ssize_t n = ::send(socket, buffer, length, flags | MSG_NOSIGNAL);
  if (n >= 0) {
    self.bytes_moved_ += static_cast<std::uint64_t>(n);
    self.outbound_pending_ = static_cast<std::size_t>(n) < length;
    self.last_send_ = Clock::now();
    return n;
  }
  const int error = errno;
  if (error == EAGAIN || error == EWOULDBLOCK || error == EINTR) {
    // libssh2 keeps the packet and must be called again by the same caller to finish it.
    self.outbound_pending_ = true;
    return -EAGAIN;
  }
  self.mark_dropped(std::error_code(error, std::system_category()), "sending failed");
  return -error;
}

void SessionDriver::mark_dropped(std::error_code cause, const std::string& reason) {
  if (dropped_) return;
  dropped_ = true;
  drop_cause_ = cause;
  drop_reason_ = reason;
  progress_.notify();
  wake_pump_.notify();
}

void SessionDriver::throw_if_dropped(const Call& call) const {
  if (!dropped_) return;
  throw ConnectionError(fmt::format("SSH connection to {} {} during {}", where_, drop_reason_, call.what), call.sent,
                        drop_cause_);
}

bool SessionDriver::check_fatal(long rc) {
  if (dropped_) return true;
  switch (rc) {
    case LIBSSH2_ERROR_SOCKET_SEND: case LIBSSH2_ERROR_SOCKET_RECV: case LIBSSH2_ERROR_SOCKET_DISCONNECT:
    case LIBSSH2_ERROR_SOCKET_TIMEOUT: case LIBSSH2_ERROR_DECRYPT: case LIBSSH2_ERROR_ENCRYPT:
    case LIBSSH2_ERROR_INVALID_MAC: case LIBSSH2_ERROR_KEX_FAILURE: case LIBSSH2_ERROR_KEY_EXCHANGE_FAILURE:
    case LIBSSH2_ERROR_BANNER_RECV: case LIBSSH2_ERROR_BANNER_SEND: case LIBSSH2_ERROR_BAD_USE:
    case LIBSSH2_ERROR_PROTO:
      mark_dropped(libssh2_error(static_cast<int>(rc)), fmt::format("failed ({})", last_error_message()));
      return true;
    default:
      return false;
  }
}

std::string SessionDriver::last_error_message() const {
  char* message = nullptr;
  int length = 0;
  ::libssh2_session_last_error(session_, &message, &length, 0);
  // Inert: a message libssh2 records may quote what the server sent.
  return message != nullptr && length > 0 ? exedev::detail::inert_text(std::string_view(message, static_cast<std::size_t>(length)))
                                          : std::string("no detail");
}

long SessionDriver::attempt(std::uint64_t ticket, const std::function<long()>& fn) {
  if (dropped_) return LIBSSH2_ERROR_SOCKET_DISCONNECT;
  if (outbound_owner_ != 0 && outbound_owner_ != ticket) return LIBSSH2_ERROR_EAGAIN;
  const auto moved_before = bytes_moved_;
  const long rc = fn();
  bool notify = bytes_moved_ != moved_before;
  if (outbound_pending_) {
    outbound_owner_ = ticket;
  } else if (outbound_owner_ == ticket) {
    outbound_owner_ = 0;
    notify = true;  // the others may call libssh2 again
  }
  if (notify) progress_.notify();
  if (rc != LIBSSH2_ERROR_EAGAIN) check_fatal(rc);
  return rc;
}

asio::awaitable<void> SessionDriver::wait(std::uint64_t ticket, const Call& call) {
  throw_if_dropped(call);
  ++waiters_;
  // The pump waits on the socket only while someone waits, and for writability only while a
  // packet is half-sent: tell it when either changes what it should wait for.
  const bool wants_write = outbound_owner_ != 0 || outbound_pending_;
  if (pump_state_ == PumpState::idle || (wants_write && pump_state_ == PumpState::watching_read)) wake_pump_.notify();
  co_await progress_.wait_until(call.deadline);
  last_turn_ = Clock::now();
  --waiters_;
  throw_if_dropped(call);
  const bool owner = outbound_owner_ == ticket && ticket != 0;
  if (call.interruptible && !owner) co_await exedev::detail::throw_if_cancelled();
  if (Clock::now() >= call.deadline) {
    // A half-sent packet can never be finished now: the session is unusable.
    if (owner) mark_dropped(std::make_error_code(std::errc::timed_out), "timed out");
    throw ConnectionError(fmt::format("SSH connection to {}: {} timed out", where_, call.what), call.sent,
                          std::make_error_code(std::errc::timed_out));
  }
}

asio::awaitable<long> SessionDriver::run(Call call, std::function<long()> fn) {
  // Waits are retried here rather than abandoned on a cancellation; this coroutine decides when
  // a cancellation ends it (wait()), so Asio must not throw at each co_await meanwhile.
  const bool throw_if_cancelled = co_await asio::this_coro::throw_if_cancelled();
  co_await asio::this_coro::throw_if_cancelled(false);
  std::exception_ptr failure;
  long rc = 0;
  const auto ticket = new_ticket();
  try {
    throw_if_dropped(call);
    while (true) {
      rc = attempt(ticket, fn);
      if (rc != LIBSSH2_ERROR_EAGAIN) break;
      co_await wait(ticket, call);
    }
    throw_if_dropped(call);
  } catch (...) {
    failure = std::current_exception();
  }
  if (!failure) co_await share_thread();
  co_await asio::this_coro::throw_if_cancelled(throw_if_cancelled);
  if (failure) std::rethrow_exception(failure);
  co_return rc;
}

asio::awaitable<void> SessionDriver::share_thread() {
  constexpr auto turn = std::chrono::milliseconds(2);
  if (Clock::now() - last_turn_ < turn) co_return;
  const bool throw_if_cancelled = co_await asio::this_coro::throw_if_cancelled();
  co_await asio::this_coro::throw_if_cancelled(false);
  const auto executor = co_await asio::this_coro::executor;
  co_await asio::post(executor, asio::use_awaitable);
  co_await asio::this_coro::throw_if_cancelled(throw_if_cancelled);
  last_turn_ = Clock::now();
}

void SessionDriver::start_pump(std::chrono::seconds keepalive_interval) {
  keepalive_interval_ = keepalive_interval;
  if (keepalive_interval_.count() > 0) ::libssh2_keepalive_config(session_, 0, 1);
  asio::co_spawn(socket_.get_executor(), pump(shared_from_this()), asio::detached);
}

void SessionDriver::send_keepalive_if_due() {
  if (keepalive_interval_.count() <= 0 || outbound_owner_ != 0 || dropped_ || stopped_) return;
  if (Clock::now() - last_send_ < keepalive_interval_) return;
  // A peer that closed the connection shows as end of file; nobody may be reading to see it.
  char byte = 0;
  if (::recv(socket_.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
    mark_dropped(std::make_error_code(std::errc::connection_reset), "the server closed the connection");
    return;
  }
  int seconds_to_next = 0;
  const auto ticket = new_ticket();
  // Only sent between calls and with nothing half-sent, so its packet goes out whole (an idle
  // socket's buffer is empty); a send that fails marks the session dropped.
  attempt(ticket, [&] { return static_cast<long>(::libssh2_keepalive_send(session_, &seconds_to_next)); });
  last_send_ = Clock::now();
  // libssh2 cannot be made to finish a half-sent keepalive (it only resends after its interval),
  // and nothing else may be sent before it: a peer that does not drain one small packet after an
  // idle interval is gone.
  if (outbound_pending_) mark_dropped(std::make_error_code(std::errc::timed_out), "stopped reading (keepalive)");
}

asio::awaitable<void> SessionDriver::pump([[maybe_unused]] std::shared_ptr<SessionDriver> self) {
  // `self` keeps the driver alive while the pump runs.
  const auto executor = co_await asio::this_coro::executor;
  asio::steady_timer keepalive_timer(executor);
  // One code per branch: the branches `||` cancels complete after the winner and write theirs.
  boost::system::error_code socket_error;
  boost::system::error_code timer_error;
  while (!dropped_ && !stopped_) {
    const auto keepalive_at =
        keepalive_interval_.count() > 0 ? last_send_ + keepalive_interval_ : Clock::time_point::max();
    keepalive_timer.expires_at(keepalive_at);
    // Only a ready socket wakes the waiters: a wake-up of the pump itself (a new waiter, a
    // change of direction) would otherwise wake them for nothing, and they the pump again.
    bool socket_ready = false;
    if (waiters_ == 0) {
      pump_state_ = PumpState::idle;
      co_await wake_pump_.wait_until(keepalive_at);
    } else if (outbound_owner_ != 0 || outbound_pending_) {
      // Until the half-sent packet is out, only its owner calls libssh2, and its call only
      // sends: watching reads too would wake everyone in a loop while data waits unread.
      pump_state_ = PumpState::watching_write;
      const auto woken = co_await (
          socket_.async_wait(asio::socket_base::wait_write, asio::redirect_error(asio::use_awaitable, socket_error)) ||
          keepalive_timer.async_wait(asio::redirect_error(asio::use_awaitable, timer_error)) || wake_pump_.wait());
      socket_ready = woken.index() == 0 && !socket_error;
    } else {
      pump_state_ = PumpState::watching_read;
      const auto woken = co_await (
          socket_.async_wait(asio::socket_base::wait_read, asio::redirect_error(asio::use_awaitable, socket_error)) ||
          keepalive_timer.async_wait(asio::redirect_error(asio::use_awaitable, timer_error)) || wake_pump_.wait());
      socket_ready = woken.index() == 0 && !socket_error;
    }
    pump_state_ = PumpState::busy;
    if (dropped_ || stopped_) break;
    send_keepalive_if_due();
    if (socket_ready) progress_.notify();
  }
  pump_state_ = PumpState::ended;
  progress_.notify();
}

void SessionDriver::stop(const std::string& reason) {
  if (stopped_) return;
  if (!dropped_) mark_dropped(std::make_error_code(std::errc::not_connected), reason);
  stopped_ = true;
  boost::system::error_code ignored;
  socket_.cancel(ignored);
  socket_.shutdown(asio::socket_base::shutdown_both, ignored);
  progress_.notify();
  wake_pump_.notify();
}

}  // namespace exedev::ssh
