// LocalBackend's command streams: `sh -c` started as run() starts commands, with its stdin and
// stdout as non-blocking pipes awaited on the caller's executor.
#include <exedev/workspace/local_backend.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <exedev/workspace/errors.hpp>

#include "common/coroutines.hpp"
#include "common/subprocess.hpp"
#include "common/time_limits.hpp"
#include "workspace/local_backend_state.hpp"

namespace exedev::workspace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using Descriptor = asio::posix::stream_descriptor;

namespace {

// A read takes at most this much at once, whatever the caller's max_bytes.
constexpr std::size_t kMostBytesPerRead = 64 * 1024;

void make_non_blocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    throw WorkspaceError(fmt::format("cannot make a pipe non-blocking: {}", std::strerror(errno)));
  }
}

Clock::time_point deadline_in(std::chrono::milliseconds span) {
  return exedev::detail::deadline_after(std::chrono::duration<double>(span)).value_or(Clock::time_point::max());
}

// Waits until `fd` is ready for `what`, or until `deadline` (false). The descriptor is lent to
// Asio for the wait only: between operations the stream holds no I/O object, so it may be
// destroyed after its executor's io_context. Cancellation: throws operation_aborted; nothing
// was read or written.
Task<bool> wait_ready(int fd, Descriptor::wait_type what, Clock::time_point deadline) {
  using namespace asio::experimental::awaitable_operators;
  const auto executor = co_await asio::this_coro::executor;
  Descriptor descriptor(executor, fd);
  struct Lent {
    Descriptor& descriptor;
    ~Lent() { (void)descriptor.release(); }
  } lent{descriptor};
  asio::steady_timer timer(executor, deadline);
  // Captured: operator|| waits for the other side when one throws.
  auto ready = exedev::detail::capture(descriptor.async_wait(what, asio::use_awaitable));
  auto expiry = timer.async_wait(asio::use_awaitable);
  auto racing = std::move(ready) || std::move(expiry);
  const auto outcome = co_await std::move(racing);
  if (outcome.index() == 1) co_return false;
  if (const auto error = std::get<0>(outcome)) std::rethrow_exception(error);
  co_return true;
}

class LocalCommandStream final : public CommandStream {
 public:
  // Takes over the child (its pid and pidfd) and this process's ends of its stdin and stdout.
  LocalCommandStream(pid_t pid, int pidfd, int in, int out) : child_(pid), pid_(pid), pidfd_(pidfd), in_(in), out_(out) {
    make_non_blocking(in);
    make_non_blocking(out);
  }

  // Not closed: the child is killed and reaped here (ChildGuard; SIGKILL makes that prompt).
  ~LocalCommandStream() override = default;

  LocalCommandStream(const LocalCommandStream&) = delete;
  LocalCommandStream& operator=(const LocalCommandStream&) = delete;

  Task<void> write(Bytes data, std::chrono::milliseconds stall_timeout) override {
    if (in_.get() < 0) throw std::logic_error("the command stream's stdin was closed");
    std::size_t written = 0;
    while (written < data.size()) {
      const ssize_t n = exedev::detail::write_without_sigpipe(in_.get(), data.data() + written, data.size() - written);
      const int error = errno;
      if (n >= 0) {
        written += static_cast<std::size_t>(n);
        continue;
      }
      if (error == EPIPE) throw WorkspaceError("the command no longer reads its stdin");
      if (error != EAGAIN && error != EINTR) {
        ended_ = true;
        throw WorkspaceError(fmt::format("cannot write to the command's stdin: {}", std::strerror(error)));
      }
      const auto stall_deadline = deadline_in(stall_timeout);
      const bool writable = co_await wait_ready(in_.get(), Descriptor::wait_write, stall_deadline);
      if (!writable) {
        throw WorkspaceTimeoutError(
            fmt::format("the command took none of its input for {} ms ({} of {} bytes written)", stall_timeout.count(),
                        written, data.size()),
            PartialOutput{});
      }
    }
  }

  Task<void> close_stdin() override {
    in_.reset();
    co_return;
  }

  Task<Bytes> read_some(std::size_t max_bytes, std::chrono::milliseconds wait) override {
    if (max_bytes == 0) throw std::invalid_argument("read_some needs max_bytes of at least 1");
    co_await exedev::detail::throw_if_cancelled();  // cancelled before anything was taken
    const auto deadline = deadline_in(wait);
    Bytes chunk(std::min(max_bytes, kMostBytesPerRead), '\0');
    while (!ended_) {
      const ssize_t n = ::read(out_.get(), chunk.data(), chunk.size());
      const int error = errno;
      if (n > 0) {
        chunk.resize(static_cast<std::size_t>(n));
        co_return chunk;
      }
      if (n == 0) {
        ended_ = true;
        break;
      }
      if (error != EAGAIN && error != EINTR) {
        ended_ = true;
        throw WorkspaceError(fmt::format("cannot read the command's stdout: {}", std::strerror(error)));
      }
      const bool readable = co_await wait_ready(out_.get(), Descriptor::wait_read, deadline);
      if (!readable) break;
    }
    co_return Bytes{};
  }

  [[nodiscard]] bool ended() const noexcept override { return ended_; }

  Task<void> close() override {
    if (pidfd_.get() < 0) co_return;
    in_.reset();
    out_.reset();
    ended_ = true;
    // The pid stays the command's until it is reaped, so the group named after it is never a
    // stranger's.
    exedev::detail::kill_process_group(pid_);
    child_.release();  // reaped below, or by reap_killed's background waiter past its grace
    Descriptor pidfd(co_await asio::this_coro::executor, pidfd_.release());
    // Short (a SIGKILLed child, bounded by reap_killed's grace), so it runs to its end even
    // after a cancellation; reap_killed never throws for one.
    EXEDEV_AWAIT_DESPITE_CANCELLATION(failure, local::reap_killed(pidfd, pid_));
    if (failure) std::rethrow_exception(failure);
  }

 private:
  local::ChildGuard child_;  // kills and reaps the command when the stream goes without close()
  pid_t pid_;
  local::Fd pidfd_;
  local::Fd in_;
  local::Fd out_;
  bool ended_ = false;
};

}  // namespace

Task<std::unique_ptr<CommandStream>> LocalBackend::open_command_stream(std::string script, std::vector<std::string> args) {
  co_await exedev::detail::throw_if_cancelled();  // cancelled before the command started
  std::vector<std::string> argv{"/bin/sh", "-c", std::move(script), "sh"};
  argv.insert(argv.end(), std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
  const auto root = state_->ensure_alive();
  local::ChildPipes pipes;
  pipes.in = true;
  pipes.err = false;
  local::Child child;
  const int missing_code = state_->start_command(argv, {}, root, pipes, child);
  if (missing_code != 0) throw WorkspaceError(fmt::format("cannot start /bin/sh (exit code {})", missing_code));
  local::ChildGuard guard(child.pid);
  const int pidfd = exedev::detail::open_pidfd(child.pid);
  std::unique_ptr<CommandStream> stream =
      std::make_unique<LocalCommandStream>(child.pid, pidfd, child.in.release(), child.out.release());
  guard.release();
  co_return stream;
}

}  // namespace exedev::workspace
