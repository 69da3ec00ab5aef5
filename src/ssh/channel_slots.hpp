#pragma once
// Who may hold one of a connection's session channels, and when, sans-IO: the max_sessions
// slots, those who wait for one, the channel kept ready for a command, the upload lane (a second
// SFTP session) and the lock on channel openings. Connection (connection.cpp) asks it and
// carries its answers out with libssh2; every rule lives here and is tested without a socket
// (tests/unit/ssh/channel_slots_test.cpp).
//
// The rules:
// - At most max_sessions session channels are held (open, being opened, or closing: sshd counts
//   a channel until it has processed our close).
// - What only saves time (the ready channel, the upload lane) takes no slot while anyone waits
//   for one, and a waiter that finds every slot held has it give its slot up.
// - The upload lane opens only beside an open first SFTP session and leaves one slot free for
//   commands.
// - An exec of the ready command takes the waiting ready channel (its slot goes with it), or
//   waits for the one being made ready; one exec at a time claims that one, the others take
//   slots of their own.
// - One channel opening (or request awaiting its reply) at a time: libssh2 1.10 keeps the
//   opening's state in the session.

#include <cstddef>

namespace exedev::ssh {

class ChannelSlots {
 public:
  /// Where the channel kept ready for a command is.
  enum class Ready {
    none,       ///< no channel kept ready
    preparing,  ///< being opened and its command started (its slot taken)
    waiting,    ///< open with its command started, holding a slot
  };
  /// Where the upload lane is.
  enum class Lane {
    none,
    opening,  ///< its slot taken
    open,     ///< holding a slot
  };

  /// Someone waiting for a session channel, from start_waiting to stop_waiting.
  struct Waiter {
    bool wants_ready = false;  ///< runs the command kept ready: the ready channel serves it
    bool claimed = false;      ///< the channel being made ready is promised to it
  };
  /// What a waiter does next.
  enum class Next {
    take_ready,         ///< the ready channel is its (ready_taken(); its slot goes with it)
    await_ready,        ///< the channel being made ready is claimed for it: wait for a change
    open_new,           ///< a slot was taken for it: open a channel of its own
    give_up_and_await,  ///< every slot held: give up what only saves time, wait for a change
  };

  explicit ChannelSlots(std::size_t max_sessions) noexcept : max_sessions_(max_sessions) {}

  [[nodiscard]] std::size_t held() const noexcept { return held_; }
  /// A slot given back: its channel closed (or its opening failed), or the session that held it shut down.
  void release() noexcept;

  [[nodiscard]] Waiter start_waiting(bool wants_ready) noexcept;
  [[nodiscard]] Next next(Waiter& waiter) noexcept;
  void stop_waiting(Waiter& waiter) noexcept;

  /// Whether a command is to be kept ready at all (Connection::keep_ready).
  void set_ready_wanted(bool wanted) noexcept { ready_wanted_ = wanted; }
  [[nodiscard]] Ready ready() const noexcept { return ready_; }
  /// True when the next ready channel is to be prepared now (its slot is then taken): one is
  /// wanted, there is none, the connection is up, nobody waits and a slot is free.
  [[nodiscard]] bool start_preparing_ready(bool connection_up) noexcept;
  /// The preparation ended, with a channel or without (its slot given back). True when the
  /// channel is to be kept; false for a channel on a connection that went down meanwhile, which
  /// is closed (its slot given back once closed).
  [[nodiscard]] bool finish_preparing_ready(bool opened, bool connection_up) noexcept;
  /// The waiting ready channel was taken by the exec that next() gave it to; its slot goes with it.
  void ready_taken() noexcept;
  /// True when a ready channel waited: it is to be closed (its slot given back once closed).
  [[nodiscard]] bool discard_ready() noexcept;

  [[nodiscard]] Lane lane() const noexcept { return lane_; }
  /// True when the upload lane is to be opened now (its slot is then taken): none is there, the
  /// first SFTP session is open, the connection is up, nobody waits, and a slot is left for
  /// commands beside it.
  [[nodiscard]] bool start_opening_lane(bool first_sftp_open, bool connection_up) noexcept;
  /// The opening ended. True when the lane is to be kept; otherwise its slot is given back
  /// (failed), or it is dropped with a connection that went down meanwhile.
  [[nodiscard]] bool finish_opening_lane(bool opened, bool connection_up) noexcept;
  /// The open lane is being shut down (its slot given back once it is).
  void lane_shutting_down() noexcept;

  /// The lock on channel openings: true when it was free and is now the caller's.
  [[nodiscard]] bool try_lock_opening() noexcept;
  void unlock_opening() noexcept { opening_ = false; }

 private:
  [[nodiscard]] bool take_free_slot() noexcept;

  std::size_t max_sessions_;
  std::size_t held_ = 0;
  int waiters_ = 0;
  bool ready_wanted_ = false;
  Ready ready_ = Ready::none;
  bool ready_claimed_ = false;
  Lane lane_ = Lane::none;
  bool opening_ = false;
};

}  // namespace exedev::ssh
