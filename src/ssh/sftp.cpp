// Sftp: files over one SFTP session of a connection.
#include "ssh/sftp.hpp"

#include "common/coroutines.hpp"
#include "common/exceptions.hpp"
#include "common/shell_quote.hpp"
#include "ssh/session_driver.hpp"
#include "ssh/ssh_errors.hpp"
#include "ssh/upload_split.hpp"

#include <exedev/ssh/errors.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
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
using Call = SessionDriver::Call;

namespace {

// One read call asks for this much: libssh2 keeps up to four times as much in flight.
constexpr std::size_t read_buffer = 2 * 1024 * 1024;
// How long the command that unblocks a FIFO's open may take.
constexpr auto kUnblockBound = std::chrono::seconds(10);
// A write's open: created if missing, emptied if not.
constexpr unsigned long truncating = LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_TRUNC;

// The file type bits (S_IFMT) of what `raw` describes; 0 when the server sent no permissions.
std::uint32_t file_type_of(const LIBSSH2_SFTP_ATTRIBUTES& raw) {
  return (raw.flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) != 0 ? static_cast<std::uint32_t>(raw.permissions) & S_IFMT : 0;
}

unsigned int length_of(const std::string& text) { return static_cast<unsigned int>(text.size()); }

long file_mode_of(std::uint32_t mode) { return static_cast<long>(mode & 07777); }

}  // namespace

Sftp::Sftp(std::shared_ptr<SessionDriver> driver, LIBSSH2_SFTP* sftp, SftpLinks links)
    : driver_(std::move(driver)), sftp_(sftp), links_(std::move(links)) {}

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
    links_.retire(shared_from_this());
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

// SFTP version 3 (OpenSSH) answers most refusals with a bare FAILURE: a read's was a directory's
// when the path (followed) is one now. Any other outcome: errc{}.
asio::awaitable<std::errc> Sftp::refine_read_failure(long rc, const std::string& path) {
  const auto status = rc == LIBSSH2_ERROR_SFTP_PROTOCOL ? ::libssh2_sftp_last_error(sftp_) : LIBSSH2_FX_OK;
  if (status != LIBSSH2_FX_FAILURE) co_return std::errc{};
  LIBSSH2_SFTP_ATTRIBUTES raw{};
  const long stat_rc = co_await call("stat", false, [&] {
    return static_cast<long>(::libssh2_sftp_stat_ex(sftp_, path.data(), length_of(path), LIBSSH2_SFTP_STAT, &raw));
  });
  if (stat_rc == 0 && file_type_of(raw) == S_IFDIR) co_return std::errc::is_a_directory;
  co_return std::errc::io_error;
}

asio::awaitable<LIBSSH2_SFTP_HANDLE*> Sftp::open_handle(const std::string& path, unsigned long flags, long mode,
                                                        Clock::time_point deadline) {
  LIBSSH2_SFTP_HANDLE* handle = nullptr;
  const bool mutating = (flags & LIBSSH2_FXF_WRITE) != 0;
  const long rc = co_await call("open", mutating, [&] {
    handle = ::libssh2_sftp_open_ex(sftp_, path.data(), length_of(path), flags, mode, LIBSSH2_SFTP_OPENFILE);
    return handle != nullptr ? 0L : static_cast<long>(::libssh2_session_last_errno(driver_->session()));
  }, deadline);
  if (handle == nullptr) throw_error(rc, "open", mutating, path);
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
    handle = co_await open_handle(path, LIBSSH2_FXF_READ, 0, deadline);
  } catch (...) {
    open_failure = std::current_exception();
  }
  if (open_failure) {
    // An open that passed the deadline is most likely sftp-server blocked on a FIFO swapped in
    // for the file: a writer of our own lets that open return, so the server does not stay
    // stuck on the VM (best effort).
    if (shut_down_) {
      try {
        auto unblocking = links_.run_briefly("test -p " + exedev::detail::sh_single_quote(path) + " && : 3<> " +
                                                 exedev::detail::sh_single_quote(path),
                                             kUnblockBound);
        co_await std::move(unblocking);
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
    const auto opened = file_type_of(raw);
    if (opened != S_IFREG) {
      const auto code = opened == S_IFDIR ? std::errc::is_a_directory : std::errc::operation_not_supported;
      throw fs::filesystem_error("SFTP read", fs::path(path), std::make_error_code(code));
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
      const auto refined = co_await refine_read_failure(n, path);
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
  const auto split = upload_split(data.size());
  std::shared_ptr<Sftp> lane;
  if (split) lane = links_.upload_lane();
  if (!lane) {
    co_await write_whole(std::move(path), data, mode, deadline);
    co_return;
  }
  co_await write_split(std::move(lane), std::move(path), data, split->near_size, mode, deadline);
}

asio::awaitable<void> Sftp::write_split(std::shared_ptr<Sftp> lane, std::string path, std::string_view data,
                                        std::size_t far_offset, std::uint32_t mode, Clock::time_point deadline) {
  // Both handles in one round trip, either may create the file but only the near one truncates
  // it; no write goes before both are open, so none can come before the truncation. Then each
  // half goes on its own session.
  const auto executor = co_await asio::this_coro::executor;
  auto opening = asio::experimental::make_parallel_group(
      asio::co_spawn(executor, open_handle(path, truncating, file_mode_of(mode), deadline), asio::deferred),
      asio::co_spawn(executor, lane->open_handle(path, LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT, file_mode_of(mode), deadline),
                     asio::deferred));
  auto opened = co_await opening.async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
  LIBSSH2_SFTP_HANDLE* near = std::get<2>(opened);
  LIBSSH2_SFTP_HANDLE* far = std::get<4>(opened);
  const std::array open_errors{std::get<1>(opened), std::get<3>(opened)};
  if (near != nullptr && lane_broke(open_errors[1])) {
    // The second session broke (its sftp-server gone): it is let go, and the whole file goes
    // on this one.
    links_.retire(lane);
    co_await write_through(near, std::move(path), data, 0, deadline);
    co_return;
  }
  if (open_errors[0] || open_errors[1]) {
    if (near != nullptr) close_handle_in_background(near);
    if (far != nullptr) lane->close_handle_in_background(far);
    exedev::detail::rethrow_first_failure(std::get<0>(opened), open_errors);
  }
  auto writing = asio::experimental::make_parallel_group(
      asio::co_spawn(executor, write_through(near, path, data.substr(0, far_offset), 0, deadline), asio::deferred),
      asio::co_spawn(executor, lane->write_through(far, path, data.substr(far_offset), far_offset, deadline), asio::deferred));
  auto written = co_await writing.async_wait(asio::experimental::wait_for_one_error(), asio::use_awaitable);
  const std::array write_errors{std::get<1>(written), std::get<2>(written)};
  if (!write_errors[0] && !write_errors[1]) co_return;
  // As above, when the second session broke during its half: the whole file goes again on this
  // one, which starts with a truncation.
  if (lane_broke(write_errors[1])) {
    links_.retire(lane);
    co_await write_whole(std::move(path), data, mode, deadline);
    co_return;
  }
  exedev::detail::rethrow_first_failure(std::get<0>(written), write_errors);
}

asio::awaitable<void> Sftp::write_whole(std::string path, std::string_view data, std::uint32_t mode, Clock::time_point deadline) {
  auto self = shared_from_this();
  LIBSSH2_SFTP_HANDLE* handle = co_await open_handle(path, truncating, file_mode_of(mode), deadline);
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
      const auto window = std::min(sftp_write_window, data.size() - acked);
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

}  // namespace exedev::ssh
