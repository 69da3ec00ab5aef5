#pragma once
// A command on a session channel kept open between operations: its stdin written as the caller
// writes, its stdout read as it comes (libssh2, on the connection's executor). Internal;
// Connection::open_stream() makes one, SandboxBackend attaches process sessions through it.

#include <exedev/task.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

struct _LIBSSH2_CHANNEL;

namespace exedev::ssh {

class SessionDriver;

/// What a stream needs of the connection that opened it, passed in by that connection (the
/// functions keep the connection alive while the stream lives).
struct ChannelStreamLinks {
  /// Closes the channel and frees its session slot.
  std::function<Task<void>(_LIBSSH2_CHANNEL*)> close;
  /// The same, finished in the background.
  std::function<void(_LIBSSH2_CHANNEL*)> close_in_background;
};

/// One session channel with its command started. Its stderr is read and discarded (so that it
/// never holds the channel's window). Use from one executor: one reader and one writer at a
/// time. A connection that drops throws ConnectionError (sent() true) from the operation that
/// finds it; the stream is ended from then on.
class ChannelStream {
 public:
  using Clock = std::chrono::steady_clock;

  /// How a write ended.
  enum class WriteEnd {
    written,  ///< every byte is in the channel
    stalled,  ///< the channel's window took nothing for the stall timeout (part may be in)
    closed,   ///< the VM's side closed or stopped reading the channel (part may be in)
  };

  ChannelStream(std::shared_ptr<SessionDriver> driver, _LIBSSH2_CHANNEL* channel, ChannelStreamLinks links);
  /// Closes in the background when close() was not awaited.
  ~ChannelStream();
  ChannelStream(const ChannelStream&) = delete;
  ChannelStream& operator=(const ChannelStream&) = delete;

  /// Writes `data` into the channel, waiting on the window while the command does not read.
  /// Cancellation (terminal): operation_aborted, part of `data` may be in.
  Task<WriteEnd> write(std::string_view data, Clock::duration stall_timeout);

  /// EOF on the command's stdin. Cancellation: EOF may or may not have been sent.
  Task<void> send_eof();

  /// Appends up to `max_bytes` (at least 1) of stdout to `into`, waiting up to `wait` for one:
  /// 0 when `wait` passed, or at the end of stdout (then ended()). Cancellation (terminal):
  /// operation_aborted, nothing taken.
  Task<std::size_t> read_some(std::string& into, std::size_t max_bytes, Clock::duration wait);

  [[nodiscard]] bool ended() const noexcept { return ended_; }

  /// Closes the channel (waiting for the server's close) and frees its slot. Idempotent; never
  /// throws for a connection that dropped. Not cancellable (it is short).
  Task<void> close();

 private:
  // One read of `stream` into `into`: bytes, 0 at its end, or LIBSSH2_ERROR_EAGAIN.
  long read_stream(int stream, std::string& into, std::size_t max_bytes, std::uint64_t ticket);
  // Reads what stderr holds and drops it.
  void drain_stderr(std::uint64_t ticket);
  // Waits for the connection's progress until `deadline`: false when the deadline came first.
  Task<bool> wait_progress(std::uint64_t ticket, Clock::time_point deadline);

  std::shared_ptr<SessionDriver> driver_;
  _LIBSSH2_CHANNEL* channel_;
  ChannelStreamLinks links_;
  bool ended_ = false;
  bool closed_ = false;
};

}  // namespace exedev::ssh
