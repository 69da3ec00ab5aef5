// Sftp: files over the connection's one SFTP session.
#include "common/coroutines.hpp"
#include "common/exceptions.hpp"
#include "common/inert_text.hpp"
#include "common/shell_quote.hpp"
#include "ssh/connection.hpp"
#include "ssh/session_driver.hpp"
#include "ssh/ssh_errors.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <fmt/format.h>
#include <libssh2.h>
#include <libssh2_sftp.h>

#include <algorithm>
#include <array>
#include <limits>
#include <filesystem>
#include <sys/stat.h>

namespace exedev::ssh {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace asio::experimental::awaitable_operators;
using Call = SessionDriver::Call;

namespace {

// One read call asks for this much: libssh2 keeps up to four times as much in flight.
constexpr std::size_t read_buffer = 2 * 1024 * 1024;
// One write call queues at most this much; libssh2 copies it into packets all in flight. Not
// more than sshd's own session window (2 MiB): what a client keeps in flight beyond what the
// server's sftp-server drains piles up in sshd's channel buffer, whose first growth on a
// connection costs sshd a fresh mmap per step (docs/performance.md, B9: a connection's first
// 8 MiB up took 1.17 s with 4 MiB in flight, 0.48 s with 2 MiB; later ones 0.15 s with either).
constexpr std::size_t write_window = 2 * 1024 * 1024;
// Larger writes go in two halves, over the connection's two SFTP sessions when it has both:
// each half then takes half the round trips sshd's window costs.
constexpr std::size_t split_above = 2 * write_window;
// How long the command that unblocks a FIFO's open may take.
constexpr auto kUnblockBound = std::chrono::seconds(10);
// Output of the mv or ln a rename or symlink runs on an exec channel, at most.
constexpr std::size_t kMostToolOutputBytes = 64 * 1024;
// A write's open: created if missing, emptied if not.
constexpr unsigned long truncating = LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_TRUNC;

SftpAttributes attributes_of(const LIBSSH2_SFTP_ATTRIBUTES& raw) {
  SftpAttributes out;
  if (raw.flags & LIBSSH2_SFTP_ATTR_SIZE) out.size = raw.filesize;
  if (raw.flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) out.mode = static_cast<std::uint32_t>(raw.permissions);
  if (raw.flags & LIBSSH2_SFTP_ATTR_ACMODTIME) out.mtime = static_cast<std::int64_t>(raw.mtime);
  return out;
}

unsigned int length_of(const std::string& text) { return static_cast<unsigned int>(text.size()); }

long file_mode_of(std::uint32_t mode) { return static_cast<long>(mode & 07777); }

}  // namespace

bool SftpAttributes::is_symlink() const noexcept { return S_ISLNK(mode); }
bool SftpAttributes::is_dir() const noexcept { return S_ISDIR(mode); }
bool SftpAttributes::is_regular() const noexcept { return S_ISREG(mode); }

Sftp::Sftp(std::shared_ptr<SessionDriver> driver, LIBSSH2_SFTP* sftp, std::weak_ptr<Connection> connection)
    : driver_(std::move(driver)), sftp_(sftp), connection_(std::move(connection)) {}

asio::awaitable<long> Sftp::call(const char* what, bool mutating, std::function<long()> fn, Clock::time_point deadline) {
  // libssh2 keeps one state per SFTP request kind in the SFTP session, so one call at a time,
  // each run to its end; a cancellation takes effect between calls.
  Call call{what, false, mutating};
  call.deadline = deadline;
  while (busy_) {
    co_await idle_.wait_until(deadline);
    co_await exedev::detail::throw_if_cancelled();
    if (busy_ && Clock::now() >= deadline) throw_past_deadline(what);
  }
  driver_->throw_if_dropped(call);
  if (shut_down_) {
    throw ConnectionError(fmt::format("SSH: SFTP {} on {}: that SFTP session was shut down", what, driver_->where()), false);
  }
  busy_ = true;
  std::exception_ptr failure;
  long rc = 0;
  try {
    rc = co_await driver_->run(call, std::move(fn));
  } catch (...) {
    failure = std::current_exception();
  }
  busy_ = false;
  idle_.notify();
  if (failure && !driver_->dropped() && Clock::now() >= deadline) {
    // The call was abandoned half-way (a server that does not answer: sftp-server blocked in the
    // open of a FIFO, say): libssh2's state for its request kind is lost, so this session takes
    // no more calls. The connection opens a new one for the next caller.
    shut_down_ = true;
    if (auto connection = connection_.lock()) connection->retire_sftp(shared_from_this());
    throw_past_deadline(what);
  }
  if (failure) std::rethrow_exception(failure);
  co_return rc;
}

void Sftp::throw_past_deadline(const char* what) {
  throw ConnectionError(fmt::format("SSH: SFTP {} on {} passed the operation's deadline (SshOptions::file_operation_timeout)",
                                    what, driver_->where()),
                        false, deadline_passed());
}

void Sftp::throw_error(long rc, const char* what, bool mutating, const std::string& path, std::errc refined) {
  const Call call{what, false, mutating};
  driver_->throw_if_dropped(call);
  if (rc != LIBSSH2_ERROR_SFTP_PROTOCOL) {
    throw ConnectionError(fmt::format("SSH: SFTP {} of {} on {} failed: {}", what, path, driver_->where(),
                                      driver_->last_error_message()),
                          mutating, libssh2_error(static_cast<int>(rc)));
  }
  const auto code = refined != std::errc{} ? refined : errc_for_sftp_status(::libssh2_sftp_last_error(sftp_));
  throw fs::filesystem_error(fmt::format("SFTP {}", what), fs::path(path), std::make_error_code(code));
}

// SFTP version 3 (OpenSSH) answers most refusals with a bare FAILURE (and rmdir's ENOTDIR with
// NO_SUCH_FILE); what the path is now says which one it was. Any other outcome: errc{}.
asio::awaitable<std::errc> Sftp::refine_failure(long rc, const std::string& path, const char* operation) {
  const std::string_view op(operation);
  const auto status = rc == LIBSSH2_ERROR_SFTP_PROTOCOL ? ::libssh2_sftp_last_error(sftp_) : LIBSSH2_FX_OK;
  const bool bare = status == LIBSSH2_FX_FAILURE || (op == "remove_dir" && status == LIBSSH2_FX_NO_SUCH_FILE);
  if (!bare) co_return std::errc{};
  // A read follows symlinks; the others act on the path itself.
  const int stat_type = op == "read" ? LIBSSH2_SFTP_STAT : LIBSSH2_SFTP_LSTAT;
  LIBSSH2_SFTP_ATTRIBUTES raw{};
  const long stat_rc = co_await call("stat", false, [&] {
    return static_cast<long>(::libssh2_sftp_stat_ex(sftp_, path.data(), length_of(path), stat_type, &raw));
  });
  if (stat_rc != 0) co_return op == "remove_dir" ? std::errc::no_such_file_or_directory : std::errc::io_error;
  const auto attributes = attributes_of(raw);
  if (op == "make_dir") co_return std::errc::file_exists;
  if (op == "read" && attributes.is_dir()) co_return std::errc::is_a_directory;
  if (op == "remove_file" && attributes.is_dir()) co_return std::errc::is_a_directory;
  if (op == "remove_dir") co_return attributes.is_dir() ? std::errc::directory_not_empty : std::errc::not_a_directory;
  co_return std::errc::io_error;
}

asio::awaitable<LIBSSH2_SFTP_HANDLE*> Sftp::open_handle(const std::string& path, unsigned long flags, long mode, int type,
                                                        Clock::time_point deadline) {
  LIBSSH2_SFTP_HANDLE* handle = nullptr;
  const bool mutating = (flags & LIBSSH2_FXF_WRITE) != 0;
  const char* what = type == LIBSSH2_SFTP_OPENDIR ? "opendir" : "open";
  const long rc = co_await call(what, mutating, [&] {
    handle = ::libssh2_sftp_open_ex(sftp_, path.data(), length_of(path), flags, mode, type);
    return handle != nullptr ? 0L : static_cast<long>(::libssh2_session_last_errno(driver_->session()));
  }, deadline);
  if (handle == nullptr) throw_error(rc, what, mutating, path);
  co_return handle;
}

asio::awaitable<void> Sftp::close_handle(LIBSSH2_SFTP_HANDLE* handle) {
  if (driver_->dropped()) co_return;  // freed with the session
  co_await call("close", false, [&] { return static_cast<long>(::libssh2_sftp_close_handle(handle)); });
}

asio::awaitable<std::string> Sftp::read_file(std::string path, std::uint64_t size, Clock::time_point deadline) {
  auto self = shared_from_this();
  LIBSSH2_SFTP_HANDLE* handle = nullptr;
  std::exception_ptr open_failure;
  try {
    handle = co_await open_handle(path, LIBSSH2_FXF_READ, 0, LIBSSH2_SFTP_OPENFILE, deadline);
  } catch (...) {
    open_failure = std::current_exception();
  }
  if (open_failure) {
    // An open that passed the deadline is most likely sftp-server blocked on a FIFO swapped in
    // for the file: a writer of our own lets that open return, so the server does not stay
    // stuck on the VM (best effort).
    if (shut_down_) {
      try {
        co_await run_command_within("test -p " + exedev::detail::sh_single_quote(path) + " && : 3<> " +
                                        exedev::detail::sh_single_quote(path),
                                    kUnblockBound);
      } catch (...) {
      }
    }
    std::rethrow_exception(open_failure);
  }
  std::string content;
  std::exception_ptr failure;
  try {
    // What was opened, not what the path was a moment ago: a file swapped for /dev/zero (or a
    // link to it) is refused here, before a byte is read.
    LIBSSH2_SFTP_ATTRIBUTES raw{};
    const long stat_rc = co_await call("fstat", false, [&] {
      return static_cast<long>(::libssh2_sftp_fstat_ex(handle, &raw, 0));
    }, deadline);
    if (stat_rc != 0) throw_error(stat_rc, "fstat", false, path);
    const auto opened = attributes_of(raw);
    if ((raw.flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) == 0 || !opened.is_regular()) {
      throw fs::filesystem_error("SFTP read", fs::path(path),
                                 std::make_error_code(opened.is_dir() ? std::errc::is_a_directory : std::errc::operation_not_supported));
    }
    // At most one byte past `size`: more says the file changed, and nothing grows past it.
    const std::uint64_t most = size == std::numeric_limits<std::uint64_t>::max() ? size : size + 1;
    std::string buffer(read_buffer, '\0');
    while (content.size() < most) {
      const auto ask = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), most - content.size()));
      const long n = co_await call("read", false, [&] {
        return static_cast<long>(::libssh2_sftp_read(handle, buffer.data(), ask));
      }, deadline);
      if (n == 0) break;
      if (n > 0) {
        content.append(buffer.data(), static_cast<std::size_t>(n));
        continue;
      }
      const auto refined = co_await refine_failure(n, path, "read");
      throw_error(n, "read", false, path, refined);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  // The handle is closed whatever happened, even after a cancellation, and nobody waits for
  // that round trip: a read's close has nothing to report (a failed read reports its own error).
  close_handle_in_background(handle);
  if (failure) std::rethrow_exception(failure);
  co_return content;
}

void Sftp::close_handle_in_background(LIBSSH2_SFTP_HANDLE* handle) {
  // `self` keeps the session's state alive until the close is answered; a connection that drops
  // meanwhile frees the handle with the session.
  auto closing = [](std::shared_ptr<Sftp> self, LIBSSH2_SFTP_HANDLE* h) -> asio::awaitable<void> {
    try {
      co_await self->close_handle(h);
    } catch (...) {
      // Nothing waits for this close (see its callers).
    }
  };
  asio::co_spawn(driver_->executor(), closing(shared_from_this(), handle), asio::detached);
}

asio::awaitable<void> Sftp::write_file(std::string path, std::string_view data, std::uint32_t mode, Clock::time_point deadline) {
  auto self = shared_from_this();
  std::shared_ptr<Sftp> lane;
  if (data.size() > split_above) {
    if (auto connection = connection_.lock()) lane = connection->upload_lane();
  }
  if (!lane) {
    co_await write_whole(std::move(path), data, mode, deadline);
    co_return;
  }
  // Both handles in one round trip, either may create the file but only the near one truncates
  // it; no write goes before both are open, so none can come before the truncation. Then each
  // half goes on its own session.
  const auto executor = co_await asio::this_coro::executor;
  auto opening = asio::experimental::make_parallel_group(
      asio::co_spawn(executor, open_handle(path, truncating, file_mode_of(mode), LIBSSH2_SFTP_OPENFILE, deadline), asio::deferred),
      asio::co_spawn(executor,
                     lane->open_handle(path, LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT, file_mode_of(mode), LIBSSH2_SFTP_OPENFILE, deadline),
                     asio::deferred));
  auto opened = co_await opening.async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
  LIBSSH2_SFTP_HANDLE* near = std::get<2>(opened);
  LIBSSH2_SFTP_HANDLE* far = std::get<4>(opened);
  const std::array open_errors{std::get<1>(opened), std::get<3>(opened)};
  if (near != nullptr && lane_broke(open_errors[1])) {
    // The second session broke (its sftp-server gone): it is let go, and the whole file goes
    // on this one.
    if (auto connection = connection_.lock()) connection->retire_upload_lane(lane);
    co_await write_through(near, std::move(path), data, 0, deadline);
    co_return;
  }
  if (open_errors[0] || open_errors[1]) {
    if (near != nullptr) close_handle_in_background(near);
    if (far != nullptr) lane->close_handle_in_background(far);
    exedev::detail::rethrow_first_failure(std::get<0>(opened), open_errors);
  }
  const auto half = data.size() / 2;
  auto writing = asio::experimental::make_parallel_group(
      asio::co_spawn(executor, write_through(near, path, data.substr(0, half), 0, deadline), asio::deferred),
      asio::co_spawn(executor, lane->write_through(far, path, data.substr(half), half, deadline), asio::deferred));
  auto written = co_await writing.async_wait(asio::experimental::wait_for_one_error(), asio::use_awaitable);
  const std::array write_errors{std::get<1>(written), std::get<2>(written)};
  if (!write_errors[0] && !write_errors[1]) co_return;
  // As above, when the second session broke during its half: the whole file goes again on this
  // one, which starts with a truncation.
  if (lane_broke(write_errors[1])) {
    if (auto connection = connection_.lock()) connection->retire_upload_lane(lane);
    co_await write_whole(std::move(path), data, mode, deadline);
    co_return;
  }
  exedev::detail::rethrow_first_failure(std::get<0>(written), write_errors);
}

asio::awaitable<void> Sftp::write_whole(std::string path, std::string_view data, std::uint32_t mode, Clock::time_point deadline) {
  auto self = shared_from_this();
  LIBSSH2_SFTP_HANDLE* handle = co_await open_handle(path, truncating, file_mode_of(mode), LIBSSH2_SFTP_OPENFILE, deadline);
  co_await write_through(handle, std::move(path), data, 0, deadline);
}

bool Sftp::lane_broke(const std::exception_ptr& error) const {
  if (!error || driver_->dropped() || exedev::detail::is_cancellation(error)) return false;
  const auto* failure = exedev::detail::exception_as<Error>(error);
  return failure != nullptr && failure->code() == errc::connection_failed;
}

asio::awaitable<void> Sftp::write_through(LIBSSH2_SFTP_HANDLE* handle, std::string path, std::string_view data,
                                          std::uint64_t offset, Clock::time_point deadline) {
  auto self = shared_from_this();
  std::exception_ptr failure;
  try {
    ::libssh2_sftp_seek64(handle, offset);
    std::size_t acked = 0;
    while (acked < data.size()) {
      // libssh2 keeps the packets of earlier calls in flight and queues only what is new in
      // [acked, acked + window); it returns how much the server acknowledged.
      const auto window = std::min(write_window, data.size() - acked);
      const long n = co_await call("write", true, [&] {
        return static_cast<long>(::libssh2_sftp_write(handle, data.data() + acked, window));
      }, deadline);
      if (n < 0) throw_error(n, "write", true, path);
      acked += static_cast<std::size_t>(n);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  // Every write is acknowledged (sftp-server answers one after its pwrite), so the data is in
  // the file: nobody waits for the close's round trip. Its failure would go unreported, as a
  // close after acknowledged writes to a local filesystem has nothing left to fail on.
  close_handle_in_background(handle);
  if (failure) std::rethrow_exception(failure);
}

asio::awaitable<void> Sftp::shut_down() {
  auto self = shared_from_this();
  // Whoever still holds this Sftp is refused from here on, before libssh2 frees the session.
  shut_down_ = true;
  while (busy_) co_await idle_.wait();
  try {
    const Call call{"shutdown", false, false};
    co_await driver_->run(call, [&] { return static_cast<long>(::libssh2_sftp_shutdown(sftp_)); });
  } catch (...) {
    co_return;  // dropped meanwhile: the session frees it
  }
  driver_->remove_sftp(sftp_);
}

asio::awaitable<SftpAttributes> Sftp::stat_with(std::string path, int stat_type) {
  auto self = shared_from_this();
  LIBSSH2_SFTP_ATTRIBUTES raw{};
  const char* what = stat_type == LIBSSH2_SFTP_LSTAT ? "lstat" : "stat";
  const long rc = co_await call(what, false, [&] {
    return static_cast<long>(::libssh2_sftp_stat_ex(sftp_, path.data(), length_of(path), stat_type, &raw));
  });
  if (rc != 0) throw_error(rc, what, false, path);
  co_return attributes_of(raw);
}

asio::awaitable<SftpAttributes> Sftp::stat(std::string path) { return stat_with(std::move(path), LIBSSH2_SFTP_STAT); }
asio::awaitable<SftpAttributes> Sftp::lstat(std::string path) { return stat_with(std::move(path), LIBSSH2_SFTP_LSTAT); }

asio::awaitable<std::vector<SftpDirEntry>> Sftp::list_dir(std::string path) {
  auto self = shared_from_this();
  LIBSSH2_SFTP_HANDLE* handle = co_await open_handle(path, 0, 0, LIBSSH2_SFTP_OPENDIR);
  std::vector<SftpDirEntry> entries;
  std::exception_ptr failure;
  try {
    std::string name(4096, '\0');
    while (true) {
      LIBSSH2_SFTP_ATTRIBUTES raw{};
      const long n = co_await call("readdir", false, [&] {
        return static_cast<long>(::libssh2_sftp_readdir_ex(handle, name.data(), name.size(), nullptr, 0, &raw));
      });
      if (n < 0) throw_error(n, "readdir", false, path);
      if (n == 0) break;
      std::string entry_name(name.data(), static_cast<std::size_t>(n));
      if (entry_name == "." || entry_name == "..") continue;
      entries.push_back(SftpDirEntry{std::move(entry_name), attributes_of(raw)});
    }
  } catch (...) {
    failure = std::current_exception();
  }
  EXEDEV_AWAIT_DESPITE_CANCELLATION(close_failure, detail::shielded(close_handle(handle)));
  if (failure) std::rethrow_exception(failure);
  if (close_failure) std::rethrow_exception(close_failure);
  co_return entries;
}

asio::awaitable<void> Sftp::make_dir(std::string path, std::uint32_t mode) {
  auto self = shared_from_this();
  const long rc = co_await call("mkdir", true, [&] {
    return static_cast<long>(::libssh2_sftp_mkdir_ex(sftp_, path.data(), length_of(path), static_cast<long>(mode & 07777)));
  });
  if (rc == 0) co_return;
  const auto refined = co_await refine_failure(rc, path, "make_dir");
  throw_error(rc, "mkdir", true, path, refined);
}

asio::awaitable<void> Sftp::remove_file(std::string path) {
  auto self = shared_from_this();
  const long rc = co_await call("unlink", true, [&] {
    return static_cast<long>(::libssh2_sftp_unlink_ex(sftp_, path.data(), length_of(path)));
  });
  if (rc == 0) co_return;
  const auto refined = co_await refine_failure(rc, path, "remove_file");
  throw_error(rc, "unlink", true, path, refined);
}

asio::awaitable<void> Sftp::remove_dir(std::string path) {
  auto self = shared_from_this();
  const long rc = co_await call("rmdir", true, [&] {
    return static_cast<long>(::libssh2_sftp_rmdir_ex(sftp_, path.data(), length_of(path)));
  });
  if (rc == 0) co_return;
  // OpenSSH answers rmdir's ENOTDIR as NO_SUCH_FILE and ENOTEMPTY as FAILURE.
  const auto refined = co_await refine_failure(rc, path, "remove_dir");
  throw_error(rc, "rmdir", true, path, refined);
}

asio::awaitable<void> Sftp::rename(std::string from, std::string to, bool overwrite) {
  auto self = shared_from_this();
  if (overwrite) {
    // Only a target that exists and is not a directory needs the atomic replace; SFTP's own
    // rename does the rest with rename(2)'s answers.
    LIBSSH2_SFTP_ATTRIBUTES raw{};
    const long rc = co_await call("lstat", false, [&] {
      return static_cast<long>(::libssh2_sftp_stat_ex(sftp_, to.data(), length_of(to), LIBSSH2_SFTP_LSTAT, &raw));
    });
    if (rc == 0 && !attributes_of(raw).is_dir()) {
      co_await run_command("mv", fmt::format("-f -- {} {}", detail::sh_single_quote(from), detail::sh_single_quote(to)),
                           "rename", from);
      co_return;
    }
  }
  const long rc = co_await call("rename", true, [&] {
    return static_cast<long>(::libssh2_sftp_rename_ex(sftp_, from.data(), length_of(from), to.data(), length_of(to),
                                                      LIBSSH2_SFTP_RENAME_ATOMIC | LIBSSH2_SFTP_RENAME_NATIVE));
  });
  if (rc == 0) co_return;
  const Call call_info{"rename", false, true};
  driver_->throw_if_dropped(call_info);
  if (rc != LIBSSH2_ERROR_SFTP_PROTOCOL) throw_error(rc, "rename", true, from);
  auto code = errc_for_sftp_status(::libssh2_sftp_last_error(sftp_));
  if (code == std::errc::io_error && !overwrite) {
    // SFTP version 3 refuses an existing target with a bare FAILURE.
    LIBSSH2_SFTP_ATTRIBUTES raw{};
    const long exists = co_await call("lstat", false, [&] {
      return static_cast<long>(::libssh2_sftp_stat_ex(sftp_, to.data(), length_of(to), LIBSSH2_SFTP_LSTAT, &raw));
    });
    if (exists == 0) code = std::errc::file_exists;
  }
  throw fs::filesystem_error("SFTP rename", fs::path(from), fs::path(to), std::make_error_code(code));
}

asio::awaitable<void> Sftp::set_mode(std::string path, std::uint32_t mode) {
  auto self = shared_from_this();
  LIBSSH2_SFTP_ATTRIBUTES raw{};
  raw.flags = LIBSSH2_SFTP_ATTR_PERMISSIONS;
  raw.permissions = mode & 07777;
  const long rc = co_await call("setstat", true, [&] {
    return static_cast<long>(::libssh2_sftp_stat_ex(sftp_, path.data(), length_of(path), LIBSSH2_SFTP_SETSTAT, &raw));
  });
  if (rc != 0) throw_error(rc, "setstat", true, path);
}

asio::awaitable<std::string> Sftp::symlink_call(std::string path, int kind) {
  auto self = shared_from_this();
  std::string target(4096, '\0');
  const char* what = kind == LIBSSH2_SFTP_REALPATH ? "realpath" : "readlink";
  const long n = co_await call(what, false, [&] {
    return static_cast<long>(::libssh2_sftp_symlink_ex(sftp_, path.data(), length_of(path), target.data(),
                                                       length_of(target), kind));
  });
  if (n < 0) throw_error(n, what, false, path);
  target.resize(static_cast<std::size_t>(n));
  co_return target;
}

asio::awaitable<std::string> Sftp::realpath(std::string path) { return symlink_call(std::move(path), LIBSSH2_SFTP_REALPATH); }
asio::awaitable<std::string> Sftp::read_link(std::string path) { return symlink_call(std::move(path), LIBSSH2_SFTP_READLINK); }

asio::awaitable<void> Sftp::symlink(std::string target, std::string link_path) {
  auto self = shared_from_this();
  // Not SSH_FXP_SYMLINK: with libssh2 1.10 against OpenSSH 9.2 it creates the link and then
  // reports FAILURE or BAD_MESSAGE once other requests went before it on the session, so its
  // answer cannot be trusted. ln(1) on an exec channel answers truly.
  co_await run_command("ln", fmt::format("-s -- {} {}", detail::sh_single_quote(target), detail::sh_single_quote(link_path)),
                       "symlink", link_path);
}

asio::awaitable<void> Sftp::run_command_within(std::string command, std::chrono::steady_clock::duration bound) {
  auto connection = connection_.lock();
  if (!connection) co_return;
  ExecRequest request;
  request.command = std::move(command);
  request.max_output_bytes = kMostToolOutputBytes;
  // Captured: operator|| waits for the other side when one throws.
  auto running = exedev::detail::capture(connection->exec(std::move(request)));
  auto bounding = exedev::detail::sleep_for(bound);
  auto racing = std::move(running) || std::move(bounding);
  (void)co_await std::move(racing);
}

asio::awaitable<void> Sftp::run_command(std::string tool, std::string arguments, const char* what, std::string path) {
  auto connection = connection_.lock();
  if (!connection) {
    const Call call{what, false, true};
    driver_->throw_if_dropped(call);
    throw ConnectionError(fmt::format("SSH: SFTP {} of {}: the connection is closed", what, path), false);
  }
  ExecRequest request;
  // The C locale, so that the tool's message is the English one read below.
  request.command = fmt::format("LC_ALL=C {} {}", tool, arguments);
  // mv and ln say a line at most: a VM that floods the channel gets it closed.
  request.max_output_bytes = kMostToolOutputBytes;
  const auto result = co_await connection->exec(std::move(request));
  if (result.exit_code == 0) co_return;
  // The tool's own line ("ln: …", "mv: …"): a login shell may print other lines first.
  const auto prefix = tool + ":";
  std::string_view message(result.stderr_bytes);
  for (std::size_t at = 0; at < result.stderr_bytes.size();) {
    const auto end_of_line = result.stderr_bytes.find('\n', at);
    const std::string_view line(result.stderr_bytes.data() + at,
                                (end_of_line == std::string::npos ? result.stderr_bytes.size() : end_of_line) - at);
    if (line.starts_with(prefix)) message = line;
    at = end_of_line == std::string::npos ? result.stderr_bytes.size() : end_of_line + 1;
  }
  const std::errc code = message.find("No such file") != std::string_view::npos        ? std::errc::no_such_file_or_directory
                         : message.find("File exists") != std::string_view::npos       ? std::errc::file_exists
                         : message.find("Permission denied") != std::string_view::npos ? std::errc::permission_denied
                         : message.find("Not a directory") != std::string_view::npos   ? std::errc::not_a_directory
                                                                                       : std::errc::io_error;
  // The VM's text: inert in the message.
  const std::string first_line = exedev::detail::inert_text(message.substr(0, message.find('\n')));
  throw fs::filesystem_error(fmt::format("SFTP {} ({})", what, first_line), fs::path(path), std::make_error_code(code));
}

}  // namespace exedev::ssh
