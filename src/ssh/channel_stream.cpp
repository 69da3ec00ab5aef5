// ChannelStream, and Connection::open_stream that makes one.
#include "ssh/channel_stream.hpp"

#include "common/coroutines.hpp"
#include "ssh/connection.hpp"
#include "ssh/session_driver.hpp"
#include "ssh/ssh_errors.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <fmt/format.h>
#include <libssh2.h>

#include <algorithm>

namespace exedev::ssh {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using Call = SessionDriver::Call;

namespace {

// Every call once the exec request is made: a drop means the command may have run.
constexpr Call stream_call{"a command stream", true, true};
// Stderr is read in pieces of this size and dropped.
constexpr std::size_t kStderrChunk = 4096;

}  // namespace

ChannelStream::ChannelStream(std::shared_ptr<SessionDriver> driver, LIBSSH2_CHANNEL* channel, ChannelStreamLinks links)
    : driver_(std::move(driver)), channel_(channel), links_(std::move(links)) {}

ChannelStream::~ChannelStream() {
  if (!closed_) links_.close_in_background(channel_);
}

asio::awaitable<bool> ChannelStream::wait_progress(std::uint64_t ticket, Clock::time_point deadline) {
  if (deadline == Clock::time_point::max()) {
    co_await driver_->wait(ticket, stream_call);
    co_return true;
  }
  const auto now = Clock::now();
  if (now >= deadline) co_return false;
  auto progress = driver_->wait(ticket, stream_call);
  auto timer = exedev::detail::sleep_for(deadline - now);
  auto racing = std::move(progress) || std::move(timer);
  const auto winner = co_await std::move(racing);
  co_return winner.index() == 0;
}

long ChannelStream::read_stream(int stream, std::string& into, std::size_t max_bytes, std::uint64_t ticket) {
  const auto old_size = into.size();
  into.resize(old_size + max_bytes);
  const long rc = driver_->attempt(ticket, [&] {
    return static_cast<long>(::libssh2_channel_read_ex(channel_, stream, into.data() + old_size, max_bytes));
  });
  into.resize(old_size + static_cast<std::size_t>(std::max(rc, 0L)));
  if (rc >= 0 || rc == LIBSSH2_ERROR_EAGAIN) return rc;
  if (is_channel_gone(rc)) return 0;
  driver_->throw_if_dropped(stream_call);
  throw ConnectionError(fmt::format("SSH: reading a command stream from {} failed: {}", driver_->where(),
                                    driver_->last_error_message()),
                        true, libssh2_error(static_cast<int>(rc)));
}

void ChannelStream::drain_stderr(std::uint64_t ticket) {
  std::string dropped;
  while (read_stream(SSH_EXTENDED_DATA_STDERR, dropped, kStderrChunk, ticket) > 0) dropped.clear();
}

asio::awaitable<std::size_t> ChannelStream::read_some(std::string& into, std::size_t max_bytes, Clock::duration wait) {
  if (closed_) throw std::logic_error("read from a closed command stream");
  const auto deadline = Clock::now() + wait;
  const auto ticket = driver_->new_ticket();
  try {
    while (!ended_) {
      // Stderr first, so that it never fills the window while stdout is waited for.
      drain_stderr(ticket);
      const long rc = read_stream(0, into, max_bytes, ticket);
      if (rc > 0) {
        co_await driver_->share_thread();  // a caller reading in a loop may never wait otherwise
        co_return static_cast<std::size_t>(rc);
      }
      if (rc == 0) {
        ended_ = true;
        break;
      }
      const bool progressed = co_await wait_progress(ticket, deadline);
      if (!progressed) break;
    }
  } catch (const ConnectionError&) {
    ended_ = true;
    throw;
  }
  co_return 0;
}

asio::awaitable<ChannelStream::WriteEnd> ChannelStream::write(std::string_view data, Clock::duration stall_timeout) {
  if (closed_) throw std::logic_error("write to a closed command stream");
  const auto ticket = driver_->new_ticket();
  std::size_t sent = 0;
  auto deadline = Clock::now() + stall_timeout;
  while (sent < data.size()) {
    const long rc = driver_->attempt(ticket, [&] {
      return static_cast<long>(::libssh2_channel_write_ex(channel_, 0, data.data() + sent, data.size() - sent));
    });
    if (rc > 0) {
      sent += static_cast<std::size_t>(rc);
      deadline = Clock::now() + stall_timeout;
      co_await driver_->share_thread();
      continue;
    }
    if (rc != LIBSSH2_ERROR_EAGAIN) {
      driver_->throw_if_dropped(stream_call);
      co_return WriteEnd::closed;
    }
    // Stderr is drained here too: a command blocked writing it would never read its stdin.
    drain_stderr(ticket);
    const bool progressed = co_await wait_progress(ticket, deadline);
    if (!progressed) co_return WriteEnd::stalled;
  }
  co_return WriteEnd::written;
}

asio::awaitable<void> ChannelStream::send_eof() {
  if (closed_) throw std::logic_error("EOF on a closed command stream");
  const auto ticket = driver_->new_ticket();
  for (;;) {
    const long rc = driver_->attempt(ticket, [&] { return static_cast<long>(::libssh2_channel_send_eof(channel_)); });
    if (rc != LIBSSH2_ERROR_EAGAIN) break;
    co_await driver_->wait(ticket, stream_call);
  }
  driver_->throw_if_dropped(stream_call);
}

asio::awaitable<void> ChannelStream::close() {
  if (closed_) co_return;
  closed_ = true;
  ended_ = true;
  co_await links_.close(channel_);
}

std::size_t Connection::max_streams() const noexcept { return std::max<std::size_t>(1, options_.max_sessions / 2); }

asio::awaitable<void> Connection::close_stream_channel(LIBSSH2_CHANNEL* channel) {
  --open_streams_;
  co_await close_channel(channel, true);
}

void Connection::close_stream_channel_in_background(LIBSSH2_CHANNEL* channel) {
  --open_streams_;
  close_channel_in_background(channel, true);
}

asio::awaitable<std::shared_ptr<ChannelStream>> Connection::open_stream(std::string command) {
  if (open_streams_ >= max_streams()) co_return nullptr;
  ++open_streams_;  // counted while it opens, so that concurrent openings keep to the bound
  LIBSSH2_CHANNEL* channel = nullptr;
  std::exception_ptr failure;
  try {
    channel = co_await open_stream_channel(command);
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure) {
    --open_streams_;
    std::rethrow_exception(failure);
  }
  auto self = shared_from_this();
  ChannelStreamLinks links{
      [self](LIBSSH2_CHANNEL* ch) { return self->close_stream_channel(ch); },
      [self](LIBSSH2_CHANNEL* ch) { self->close_stream_channel_in_background(ch); },
  };
  co_return std::make_shared<ChannelStream>(driver_, channel, std::move(links));
}

asio::awaitable<LIBSSH2_CHANNEL*> Connection::open_stream_channel(const std::string& command) {
  co_await acquire_session_slot();
  LIBSSH2_CHANNEL* channel = nullptr;
  try {
    channel = co_await open_channel("opening a command stream's channel");
  } catch (...) {
    release_session_slot();
    throw;
  }
  auto starting = start_command(channel, command, "a command stream's exec request");
  co_await closing_on_failure(channel, std::move(starting));
  co_return channel;
}

}  // namespace exedev::ssh
