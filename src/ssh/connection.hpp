#pragma once
// One SSH connection to a VM (libssh2, driven from Asio on the caller's executor, no threads):
// commands on session channels, files over SFTP (a session opened on first use and shared by
// concurrent callers, and a second one, the upload lane, for the far half of a large upload).
// Internal to the library; SandboxBackend uses it. Run everything of one Connection on one
// executor that runs one thread at a time (an io_context run by one thread, or a strand).

#include "common/event.hpp"
#include "ssh/channel_slots.hpp"
#include "ssh/channel_stream.hpp"
#include "ssh/sftp.hpp"

#include <exedev/coawait_guard.hpp>
#include <exedev/ssh/errors.hpp>
#include <exedev/ssh/options.hpp>
#include <exedev/task.hpp>

#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct _LIBSSH2_CHANNEL;

namespace exedev::ssh {

class SessionDriver;

/// Where a connection goes, as exe.dev names it; the user's ssh_config fills in what it leaves
/// out (connection_settings.hpp).
struct Endpoint {
  std::string host;  ///< ssh_config's HostName for it, when one is set, is connected to instead
  std::uint16_t port = 0;  ///< 0: ssh_config's Port for the host, else 22
  std::string user;  ///< empty: ssh_config's User for the host, else the local login name
};

/// The SSH keys of the exe.dev account, when known (`whoami`): exe.dev's front lets the first key
/// a client offers decide where the connection lands (a key the account does not hold lands in
/// the lobby's registration shell), so only these keys are offered.
struct AccountKeys {
  std::vector<std::string> fingerprints;  ///< "SHA256:<base64 without padding>"
};

struct ExecRequest {
  /// The exec request's command line (sshd runs it with the user's shell -c).
  std::string command;
  /// Written, then EOF sent (empty: EOF at once).
  std::string stdin_data;
  /// Live output; when unset, the bytes are collected in ExecResult.
  std::function<void(std::string_view)> on_stdout{}, on_stderr{};
  /// 0 = unlimited. Past it (stdout + stderr), exec closes the channel and throws
  /// exedev::OutputLimitError with the output collected up to the limit.
  std::size_t max_output_bytes = 0;
  /// Added to the channel's receive window (libssh2's 2 MiB) before stdin is sent: that much
  /// more output may arrive without waiting for a window adjustment's round trip. For output
  /// that is large and read as it comes (a file on a script's stdout).
  std::uint32_t extra_receive_window = 0;
  /// Called once, as soon as the server's exit-status message has arrived (which OpenSSH sends
  /// when the session's process exits, even while a child of it holds the output open), with a
  /// non-zero status: libssh2 1.10 cannot tell an exit status of 0 from none yet, so a program
  /// that wants to be heard this way never exits 0.
  std::function<void(int)> on_exit_status{};
  EXEDEV_COAWAIT_GUARD;
};

struct ExecResult {
  int exit_code = 0;  ///< exit status, or 128 + N when killed by signal N
  bool signalled = false;  ///< killed by a signal (exit_code is 128 + N)
  std::string stdout_bytes, stderr_bytes;
};

/// The algorithms the connection negotiated (libssh2_session_methods).
struct NegotiatedMethods {
  std::string key_exchange, host_key, cipher_client_to_server, cipher_server_to_client, mac_client_to_server,
      mac_server_to_client;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  /// Settles the endpoint and options with the user's ssh_config (connection_settings.hpp),
  /// resolves, connects (connect_timeout), handshakes and checks the host key against
  /// known_hosts per the policy (handshake_timeout), authenticates (auth_timeout): the explicit
  /// key (private_key_pem, else private_key_file, else the EXE_SSH_KEY path) alone when given,
  /// else ssh_config's IdentityFile keys, then the agent's keys (unless IdentitiesOnly), then the
  /// default key files. endpoint() is the settled endpoint. Runs on the current coroutine's
  /// executor. Throws ConnectionError (resolve, connect, handshake; cause() says which),
  /// HostKeyError, SshAuthenticationError, SshKeyUnusableError. Cancellation: the connection
  /// being made is dropped and operation_aborted thrown. The agent's own unix socket is used
  /// blocking (a local, short exchange per key).
  static Task<std::shared_ptr<Connection>> open(Endpoint endpoint, SshOptions options);
  /// open(), offering only the keys `account` lists (none known: as open()); a candidate whose
  /// fingerprint cannot be read without its passphrase is read from the `.pub` file beside it.
  /// None of them held: SshAuthenticationError naming every key and why it was not offered.
  static Task<std::shared_ptr<Connection>> open(Endpoint endpoint, SshOptions options, std::optional<AccountKeys> account);

  Connection(std::shared_ptr<SessionDriver> driver, Endpoint endpoint, SshOptions options, std::string fingerprint,
             std::string user_key_fingerprint);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Opens a session channel (waiting for a free one while max_sessions are open: never fails
  /// for want of one), execs, streams stdin, forwards or collects stdout and stderr as they
  /// arrive, and returns the exit code. Cancellation (terminal): the channel is closed (its close
  /// finishes in the background) and operation_aborted thrown promptly; the REMOTE process is
  /// not killed by that under OpenSSH (the caller stops it). A connection that drops while the
  /// channel is open: ConnectionError with sent() == true (the command may have run).
  Task<ExecResult> exec(ExecRequest request);

  /// Opens a session channel (waiting for a free one, as exec does), execs `command` and returns
  /// the channel as a stream kept open (channel_stream.hpp): it holds one of max_sessions until
  /// it is closed. nullptr while max_streams() streams are open: streams never take the slots
  /// commands need. Throws ConnectionError (sent() false) when no channel could be opened or the
  /// exec request was refused. Cancellation (terminal): a channel being opened is closed in the
  /// background and operation_aborted thrown.
  Task<std::shared_ptr<ChannelStream>> open_stream(std::string command);
  /// Streams open at once at most: half of max_sessions (at least 1).
  [[nodiscard]] std::size_t max_streams() const noexcept;

  /// Keeps one session channel open with `command` already started, so that the next exec of
  /// exactly that command skips the channel's opening and its exec request (two round trips).
  /// `command` must do nothing until its stdin arrives (as `/bin/sh` reading its program does):
  /// it runs on the VM, idle, while the channel waits, and ends when the channel closes. The
  /// waiting channel holds one of max_sessions and gives it up to anyone who waits for one. A
  /// channel found ended when taken (its process was killed meanwhile) is replaced by a fresh
  /// one; a kill in the round trip before it is taken looks, to that exec, like a kill of its
  /// command.
  void keep_ready(std::string command);

  /// The connection's one SFTP session (a session channel, counted in max_sessions), opened on
  /// first use and shared by concurrent callers. Cancellation: operation_aborted; an opening
  /// that was under way completes for the next caller.
  Task<std::shared_ptr<Sftp>> sftp();

  /// A second SFTP session, for the far half of a large upload: sshd's session window (2 MiB)
  /// holds each channel to about that much per round trip, so two channels move twice as much.
  /// nullptr while there is none; then this starts opening one in the background, once the first
  /// session is open, when that leaves a max_sessions slot free and nobody waits for one. It
  /// gives its slot up, while no upload uses it, to anyone who waits for one.
  std::shared_ptr<Sftp> upload_lane();

  /// Carries one local TCP connection to `host`:`port` as the VM's sshd sees them, over a
  /// direct-tcpip channel, both ways, until both directions have ended (each side's end of
  /// stream is passed on as EOF) or either side is gone. These channels take no max_sessions
  /// slot: OpenSSH's MaxSessions counts session channels only (shells, commands, subsystems).
  /// Channels open one at a time (libssh2 keeps the opening's state in the session). Throws
  /// ConnectionError when the connection drops or the server refuses the channel (nothing
  /// listens there, forwarding disabled); a local socket's failure just ends the relay.
  /// Cancellation (terminal): the relay stops, `local` is closed, the channel closes in the
  /// background and operation_aborted is thrown.
  Task<void> forward(boost::asio::ip::tcp::socket local, std::string host, std::uint16_t port);

  /// The executor the connection runs on (its socket's).
  [[nodiscard]] boost::asio::any_io_executor executor() const;

  /// False once dropped or closed.
  [[nodiscard]] bool is_open() const noexcept;
  /// The server's host key, "SHA256:<base64>".
  [[nodiscard]] const std::string& host_key_fingerprint() const noexcept { return fingerprint_; }
  /// The key that authenticated, "SHA256:<base64>" (empty when it could not be read).
  [[nodiscard]] const std::string& user_key_fingerprint() const noexcept { return user_key_fingerprint_; }
  [[nodiscard]] const Endpoint& endpoint() const noexcept { return endpoint_; }
  [[nodiscard]] NegotiatedMethods negotiated_methods() const;

  /// Graceful disconnect: operations still running end with ConnectionError. Idempotent; never
  /// throws for a connection that already dropped. Not cancellable (it is short).
  Task<void> close();

 private:
  Task<void> wait_for_change(bool sent);
  Task<void> wait_for_change_until(bool sent, std::chrono::steady_clock::time_point deadline);
  // Held while a channel is opened or a request on one awaits its reply: libssh2 1.10 takes the
  // reply to another channel's request, read while it waits for one, as its own waiter's failure.
  Task<void> lock_channel_opening();
  void unlock_channel_opening();
  // One libssh2 call (an opening, a request) run to its end under that lock; its return code.
  Task<long> run_under_opening_lock(const char* what, std::function<long()> fn);
  // The exec request of `command` on `channel`, under that lock; libssh2's return code.
  Task<long> request_exec(_LIBSSH2_CHANNEL* channel, const std::string& command, const char* what);
  Task<void> acquire_session_slot();
  void release_session_slot();
  // `holds_session_slot`: a session channel (exec, SFTP), whose close frees a max_sessions slot.
  void close_channel_in_background(_LIBSSH2_CHANNEL* channel, bool holds_session_slot);
  Task<void> close_channel(_LIBSSH2_CHANNEL* channel, bool holds_session_slot);
  Task<_LIBSSH2_CHANNEL*> open_direct_tcpip(const std::string& host, std::uint16_t port, const boost::asio::ip::tcp::endpoint& origin);
  Task<void> relay_local_to_channel(boost::asio::ip::tcp::socket& local, _LIBSSH2_CHANNEL* channel);
  Task<void> relay_channel_to_local(_LIBSSH2_CHANNEL* channel, boost::asio::ip::tcp::socket& local);
  Task<_LIBSSH2_CHANNEL*> open_channel(const char* what);
  Task<_LIBSSH2_CHANNEL*> try_open_channel(const char* what, long& rc);
  // `started`: the channel's exec request was made already (a channel kept ready).
  Task<ExecResult> run_on_channel(_LIBSSH2_CHANNEL* channel, ExecRequest& request, bool started);
  // The command's stdin in, its output out (into `result` or the request's callbacks), until
  // both output streams have ended.
  Task<void> stream_command(_LIBSSH2_CHANNEL* channel, ExecRequest& request, ExecResult& result);
  struct StdinProgress {
    std::size_t written = 0;
    bool done = false;  // EOF sent, or the command closed its input
  };
  // One step of sending `data` and then EOF, without waiting; true when it got anywhere.
  bool feed_stdin(_LIBSSH2_CHANNEL* channel, const std::string& data, StdinProgress& progress, std::uint64_t ticket);
  // The channel kept ready (started) when `wants_ready` and one comes, else nullptr with a slot taken.
  Task<_LIBSSH2_CHANNEL*> ready_channel_or_slot(bool wants_ready);
  // The waiting ready channel (slots_ gave it to the caller) when its process has not ended;
  // nullptr otherwise (then it is closed in the background, freeing its slot).
  _LIBSSH2_CHANNEL* take_ready_channel();
  // Closes the waiting ready channel, so that its slot goes to someone who waits for one.
  void discard_ready_channel();
  // Starts opening the next ready channel when there is none, a slot is free and nobody waits.
  void prepare_ready_channel();
  Task<void> open_ready_channel(_LIBSSH2_CHANNEL** opened);
  // The exec request of `command` on `channel`; ConnectionError (sent() false) when refused.
  Task<void> start_command(_LIBSSH2_CHANNEL* channel, const std::string& command, const char* what);
  // `operation` on `channel`, a session channel holding a slot; when it throws, the channel is
  // closed in the background (its slot freed) and the failure rethrown.
  template <typename T>
  Task<T> closing_on_failure(_LIBSSH2_CHANNEL* channel, Task<T> operation);
  // A session channel with `command` started, on a slot of its own.
  Task<_LIBSSH2_CHANNEL*> open_stream_channel(const std::string& command);
  // A stream's channel closed (now, or in the background), its count and slot given back.
  Task<void> close_stream_channel(_LIBSSH2_CHANNEL* channel);
  void close_stream_channel_in_background(_LIBSSH2_CHANNEL* channel);
  // An SFTP session on a slot the caller holds.
  Task<std::shared_ptr<Sftp>> start_sftp(const char* what);
  // What an SFTP session of this connection needs of it (ssh/sftp.hpp).
  SftpLinks sftp_links();
  // Lets the SFTP session or the upload lane go and shuts it down, freeing its slot (the next
  // sftp() opens a new one): for a session past a call's deadline, or a lane that broke while the
  // connection stands. Whoever still uses it gets ConnectionError.
  void retire_sftp(const std::shared_ptr<Sftp>& session);
  void open_upload_lane();
  // Shuts the upload lane down, so that its slot goes to someone who waits for one, unless in use.
  void discard_idle_upload_lane();
  void shut_down_upload_lane();
  // Everything that holds a slot only to save time: the ready channel, an idle upload lane.
  void give_up_idle_sessions();

  std::shared_ptr<SessionDriver> driver_;
  Endpoint endpoint_;
  SshOptions options_;
  std::string fingerprint_;
  std::string user_key_fingerprint_;
  ChannelSlots slots_;  // who may hold a session channel and when; the members below carry its answers out
  int background_tasks_ = 0;  // channel closes and ready-channel openings close() waits for
  std::string ready_command_;                    // empty: no channel kept ready
  _LIBSSH2_CHANNEL* ready_channel_ = nullptr;    // started with ready_command_: slots_.ready() is waiting
  std::shared_ptr<Sftp> sftp_;
  bool opening_sftp_ = false;
  std::shared_ptr<Sftp> upload_lane_;  // a second SFTP session: slots_.lane() is open
  std::size_t open_streams_ = 0;  // ChannelStreams not closed yet
  bool closed_ = false;
  detail::Event state_;  // a session slot, the channel opening, the SFTP session, the ready channel or a background task changed
};

template <typename T>
Task<T> Connection::closing_on_failure(_LIBSSH2_CHANNEL* channel, Task<T> operation) {
  std::exception_ptr failure;
  try {
    co_return co_await std::move(operation);
  } catch (...) {
    failure = std::current_exception();
  }
  close_channel_in_background(channel, true);
  std::rethrow_exception(failure);
}

}  // namespace exedev::ssh
