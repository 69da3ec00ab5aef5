#pragma once
// Child processes: starting one in a session or process group of its own, signalling its
// group, waiting for its exit on a pidfd, and its exit code. Internal; Linux (pidfd_open).

#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace exedev::detail {

/// Where the child goes: a session of its own (no controlling terminal, its own process group)
/// or only a process group of its own. Either way its process group id is its pid.
enum class ProcessGrouping { new_session, new_group };

struct SpawnRequest {
  std::string program;  ///< a path: no PATH search
  std::vector<std::string> argv;
  std::vector<std::string> environment;  ///< the whole environment, "NAME=value" entries
  std::string directory;                 ///< the child's working directory
  ProcessGrouping grouping = ProcessGrouping::new_session;
  int stdin_fd = -1;   ///< becomes the child's stdin
  int stdout_fd = -1;  ///< becomes the child's stdout
  int stderr_fd = -1;  ///< becomes the child's stderr (may equal stdout_fd)
};

struct SpawnResult {
  pid_t pid = -1;
  int error = 0;  ///< the errno of a failed start (then pid is -1)
};

/// Starts a child with stdin, stdout and stderr on the given descriptors (/dev/null for each left
/// at -1), an empty signal mask, default signal dispositions and no other descriptor of ours. A program or
/// directory that is missing or not permitted is an `error` (ENOENT, EACCES…), not an exit code.
[[nodiscard]] SpawnResult spawn_process(const SpawnRequest& request);

/// A pidfd for the child `pid`; throws std::system_error.
[[nodiscard]] int open_pidfd(pid_t pid);

/// Waits until the child `pid` (its pidfd: `pidfd`) has exited, and reaps it. Returns its wait
/// status, or nullopt when the wait was cancelled or failed first (the child is not reaped then).
/// Never throws for a cancellation.
boost::asio::awaitable<std::optional<int>> reap_when_exited(boost::asio::posix::stream_descriptor& pidfd, pid_t pid);

/// SIGKILLs the child's process group (its id is the child's pid). Returns false when the group
/// could not be signalled (EPERM: a member changed its credentials) and only the child was.
bool kill_process_group(pid_t pid);

/// SIGKILLs the child's group and the child, and reaps it, blocking: for the paths that cannot
/// wait asynchronously (a coroutine frame destroyed with its io_context, a server's shutdown).
void kill_and_reap_now(pid_t pid);

/// ::write(fd, data, size) with its result and errno, for a pipe to a child: when the child
/// closed its end the write fails with EPIPE and the SIGPIPE it raises is discarded (blocked in
/// this thread meanwhile), so that it cannot end this process whatever SIGPIPE's disposition.
[[nodiscard]] ssize_t write_without_sigpipe(int fd, const void* data, std::size_t size);

/// The exit code a shell would report for a wait status: the exit status, or 128 + the signal
/// for a child killed by a signal.
[[nodiscard]] int exit_code_of(int wait_status);

}  // namespace exedev::detail
