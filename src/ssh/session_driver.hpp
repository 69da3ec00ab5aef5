#pragma once
// Drives one non-blocking libssh2 session from many coroutines on one executor. Internal.
//
// libssh2 answers EAGAIN whenever the socket would block, and any call may read packets meant
// for another channel into that channel's buffer, so a waiter cannot wait on the socket alone.
// Instead:
//   - every byte libssh2 moves goes through our recv/send callbacks, which count it;
//   - an operation calls libssh2 (attempt), and on EAGAIN waits on one event (wait);
//   - one pump coroutine per session waits on the socket while anyone waits (readable always,
//     writable when a packet is half-sent) and notifies the event when it is ready; a call that
//     moved bytes notifies it too. Every waiter then retries its own call. No byte moves without
//     every waiter retrying once, and nothing retries without a byte having moved, so nobody
//     hangs and nothing spins.
//   - libssh2 refuses (LIBSSH2_ERROR_BAD_USE) to send a packet while another is half-sent, and
//     only the call that started it can finish it. The send callback sees a short send, the
//     call's operation becomes the outbound owner, and until the owner's call has sent its
//     packet nobody else calls libssh2; the owner keeps retrying even when cancelled.
//   - libssh2 keeps some state per session (opening a channel) or per SFTP session (each SFTP
//     request kind), which a new call would resume with other arguments. Such calls run to
//     completion whatever happens to the caller (`Call::interruptible = false`); the caller's
//     cancellation takes effect right after.
// The pump also sends keepalives on an idle connection. A closed or failed socket marks the
// session dropped: every waiter wakes with ConnectionError and nothing calls libssh2 again
// (except to free it).

#include "common/event.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <sys/types.h>

struct _LIBSSH2_SESSION;
struct _LIBSSH2_SFTP;

namespace exedev::ssh {

class SessionDriver : public std::enable_shared_from_this<SessionDriver> {
 public:
  using Clock = std::chrono::steady_clock;

  /// How one libssh2 call is driven.
  struct Call {
    const char* what = "";  ///< for messages: "handshake", "exec", "SFTP read"...
    /// Whether a cancellation may abandon the call before it completes (else it completes first).
    bool interruptible = true;
    /// The sent() of the ConnectionError thrown if the connection drops meanwhile.
    bool sent = false;
    Clock::time_point deadline = Clock::time_point::max();  ///< then ConnectionError(timed_out)
  };

  /// `where` names the connection in messages ("user@host:port").
  SessionDriver(boost::asio::ip::tcp::socket socket, std::string where);
  ~SessionDriver();
  SessionDriver(const SessionDriver&) = delete;
  SessionDriver& operator=(const SessionDriver&) = delete;

  [[nodiscard]] _LIBSSH2_SESSION* session() const noexcept { return session_; }
  [[nodiscard]] const std::string& where() const noexcept { return where_; }
  [[nodiscard]] boost::asio::any_io_executor executor() { return socket_.get_executor(); }

  /// Calls `fn` (one libssh2 call returning a libssh2 code or a count) until it returns
  /// anything but LIBSSH2_ERROR_EAGAIN, and returns that. Throws ConnectionError when the
  /// connection drops or the deadline passes, and operation_aborted when cancelled (only when
  /// `call.interruptible`; otherwise the caller's cancellation stays pending for its next await).
  boost::asio::awaitable<long> run(Call call, std::function<long()> fn);

  /// One libssh2 call, unless another operation's packet is half-sent (then EAGAIN without
  /// calling). `ticket` names the operation (new_ticket()); an operation that calls libssh2
  /// several times in one loop (exec: stdin, stdout, stderr) uses one ticket for all.
  long attempt(std::uint64_t ticket, const std::function<long()>& fn);
  [[nodiscard]] std::uint64_t new_ticket() noexcept { return ++last_ticket_; }
  /// Waits until bytes moved or the socket is ready, then returns so the caller retries. Throws
  /// as run() does; `ticket` must be the one of the caller's attempts.
  boost::asio::awaitable<void> wait(std::uint64_t ticket, const Call& call);

  /// Lets the executor's other work run (one post) when this connection's calls have held the
  /// thread for a turn (2 ms) without waiting: a transfer whose peer keeps up succeeds at every
  /// call and would otherwise hold the thread to its end, timers and cancellations and the
  /// thread's other connections waiting. Not a cancellation point: a pending cancellation stays
  /// for the caller's next wait. Loops that make progress call it after each step.
  boost::asio::awaitable<void> share_thread();

  /// Throws the ConnectionError of a dropped or closed session.
  void throw_if_dropped(const Call& call) const;
  /// Classifies a libssh2 result after a call: a code meaning the session is dead marks it
  /// dropped (and returns true).
  bool check_fatal(long rc);
  [[nodiscard]] bool dropped() const noexcept { return dropped_; }
  [[nodiscard]] std::error_code drop_cause() const noexcept { return drop_cause_; }
  /// The last error libssh2 recorded, for messages.
  [[nodiscard]] std::string last_error_message() const;

  /// Starts the pump on the socket's executor (after the handshake, once keepalive is known).
  void start_pump(std::chrono::seconds keepalive_interval);
  /// Marks the session closed: no libssh2 call after this, every waiter wakes with
  /// ConnectionError, the pump ends and the socket closes. Idempotent.
  void stop(const std::string& reason);
  /// The SFTP sessions to shut down before the session is freed: added when opened, removed
  /// once shut down.
  void add_sftp(_LIBSSH2_SFTP* sftp) { sftps_.push_back(sftp); }
  void remove_sftp(_LIBSSH2_SFTP* sftp) { std::erase(sftps_, sftp); }

  /// An event notified whenever the driver's state changes in a way non-libssh2 waiters care
  /// about (dropped, stopped).
  detail::Event& state_changed() noexcept { return progress_; }

 private:
  static ssize_t on_recv(int socket, void* buffer, std::size_t length, int flags, void** abstract);
  static ssize_t on_send(int socket, const void* buffer, std::size_t length, int flags, void** abstract);
  void mark_dropped(std::error_code cause, const std::string& reason);
  boost::asio::awaitable<void> pump(std::shared_ptr<SessionDriver> self);
  void send_keepalive_if_due();

  boost::asio::ip::tcp::socket socket_;
  std::string where_;
  _LIBSSH2_SESSION* session_ = nullptr;
  std::vector<_LIBSSH2_SFTP*> sftps_;

  std::uint64_t last_ticket_ = 0;
  std::uint64_t outbound_owner_ = 0;  // the ticket whose packet is half-sent, or 0
  bool outbound_pending_ = false;     // the send callback's last send was short
  std::uint64_t bytes_moved_ = 0;     // counted by the callbacks
  int waiters_ = 0;
  // What the pump waits for now, so that a new waiter wakes it only when that must change.
  enum class PumpState { busy, idle, watching_read, watching_write, ended };
  PumpState pump_state_ = PumpState::busy;
  Clock::time_point last_send_ = Clock::now();
  Clock::time_point last_turn_ = Clock::now();  // when this connection's work last let others run
  std::chrono::seconds keepalive_interval_{0};

  bool dropped_ = false;
  bool stopped_ = false;
  std::error_code drop_cause_;
  std::string drop_reason_;

  detail::Event progress_;   // waiters of run()/wait(): retry
  detail::Event wake_pump_;  // the pump: re-read what to wait for
};

}  // namespace exedev::ssh
