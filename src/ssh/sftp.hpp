#pragma once
// Files over one SFTP session of a Connection (libssh2, on the connection's executor): whole
// files read and written, a large write split over the connection's upload lane
// (upload_split.hpp). Internal to the library; SandboxBackend gets one from Connection::sftp().

#include "common/event.hpp"

#include <exedev/task.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

struct _LIBSSH2_SFTP;
struct _LIBSSH2_SFTP_HANDLE;

namespace exedev::ssh {

class SessionDriver;
class Sftp;

/// What a session needs of the connection that opened it, passed in by that connection.
struct SftpLinks {
  /// The connection's second session, for the far half of a large upload; nullptr while there
  /// is none (asking may start opening one).
  std::function<std::shared_ptr<Sftp>()> upload_lane;
  /// Lets a session go that takes no more calls (one past a deadline, or an upload lane that
  /// broke), freeing its slot; the next caller gets a new one.
  std::function<void(const std::shared_ptr<Sftp>&)> retire;
  /// Runs a command line on the VM, abandoned after `bound` (best effort: never throws for its
  /// outcome).
  std::function<Task<void>(std::string command, std::chrono::steady_clock::duration bound)> run_briefly;
};

/// Files over SFTP. Failures throw std::filesystem::filesystem_error with the std::errc mapped
/// from the SFTP status and the path; a connection lost meanwhile, ConnectionError. Each call
/// to libssh2 completes before a cancellation takes effect (libssh2 keeps per-session state for
/// each request kind); a cancelled read or write closes its file handle and throws
/// operation_aborted. Concurrent callers share the session: their requests interleave.
class Sftp : public std::enable_shared_from_this<Sftp> {
 public:
  Sftp(std::shared_ptr<SessionDriver> driver, _LIBSSH2_SFTP* sftp, SftpLinks links);

  /// The regular file, several reads in flight: at most `size + 1` bytes (a caller that knows
  /// the size gets one byte more when the file grew; the default reads to the end). What the open
  /// gave is checked first (fstat): a directory is is_a_directory, anything else but a regular
  /// file (a device, say) std::errc::operation_not_supported. Returns once the last byte is in
  /// (the handle's close is answered later, before the next SFTP call proceeds).
  ///
  /// Every SFTP call of the read must be answered by `deadline`; past it the read throws
  /// ConnectionError (cause timed_out, naming SshOptions::file_operation_timeout), this session
  /// takes no more calls and the connection opens a new one for the next caller (libssh2's
  /// state of the abandoned request cannot be resumed). An open that timed out on a FIFO gets a
  /// writer of its own on the VM (best effort), so that sftp-server does not stay blocked there.
  Task<std::string> read_file(std::string path, std::uint64_t size = std::numeric_limits<std::uint64_t>::max(),
                              std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());
  /// Writes `data` to `path` (created with `mode` if new, truncated); several writes in flight,
  /// a large file in two halves over this session and the upload lane (upload_split.hpp).
  /// Returns once every write is acknowledged (the handle's close is answered later, as a
  /// read's). `data` must stay valid until then.
  /// Every SFTP call must be answered by `deadline`, as read_file's.
  Task<void> write_file(std::string path, std::string_view data, std::uint32_t mode,
                        std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());
  /// Ends the SFTP session (its channel). Never throws: on a dropped connection the session frees
  /// it. Nothing else may use this Sftp then.
  Task<void> shut_down();
  /// False once shut down (or retired after a call passed its deadline).
  [[nodiscard]] bool usable() const noexcept { return !shut_down_; }

 private:
  using Clock = std::chrono::steady_clock;
  Task<long> call(const char* what, bool mutating, std::function<long()> fn, Clock::time_point deadline = Clock::time_point::max());
  [[noreturn]] void throw_past_deadline(const char* what);
  [[noreturn]] void throw_error(long rc, const char* what, bool mutating, const std::string& path, std::errc refined = {});
  Task<std::errc> refine_read_failure(long rc, const std::string& path);
  Task<void> close_handle(_LIBSSH2_SFTP_HANDLE* handle);
  void close_handle_in_background(_LIBSSH2_SFTP_HANDLE* handle);
  Task<_LIBSSH2_SFTP_HANDLE*> open_handle(const std::string& path, unsigned long flags, long mode, Clock::time_point deadline);
  // Whether the upload lane's half failed for the lane's own sake (its channel, not the file, nor
  // the connection, nor a cancellation).
  [[nodiscard]] bool lane_broke(const std::exception_ptr& error) const;
  // The whole of `data` on this session, from a truncating open.
  Task<void> write_whole(std::string path, std::string_view data, std::uint32_t mode, Clock::time_point deadline);
  // `data` in two halves, the far one from `far_offset` on `lane`.
  Task<void> write_split(std::shared_ptr<Sftp> lane, std::string path, std::string_view data, std::size_t far_offset,
                         std::uint32_t mode, Clock::time_point deadline);
  // Writes `data` at `offset` through `handle`, then closes it in the background, whatever happened.
  Task<void> write_through(_LIBSSH2_SFTP_HANDLE* handle, std::string path, std::string_view data, std::uint64_t offset,
                           Clock::time_point deadline);

  std::shared_ptr<SessionDriver> driver_;
  _LIBSSH2_SFTP* sftp_;
  SftpLinks links_;
  detail::Event idle_;
  bool shut_down_ = false;
  bool busy_ = false;  // one libssh2 SFTP call at a time (libssh2 keeps per-session state per request kind)
};

}  // namespace exedev::ssh
