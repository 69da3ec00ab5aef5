// SandboxBackend's command streams over SSH: a session channel kept open (ssh::ChannelStream)
// whose first line of stdin carries the program (ssh_commands.hpp), seen as a
// workspace::CommandStream.
#include "sandbox/ssh_vm.hpp"

#include <exedev/workspace/errors.hpp>

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

#include "sandbox/ssh_commands.hpp"

namespace exedev::detail {

namespace {

using Clock = std::chrono::steady_clock;

class SshCommandStream final : public workspace::CommandStream {
 public:
  explicit SshCommandStream(std::shared_ptr<ssh::ChannelStream> channel) : channel_(std::move(channel)) {}

  Task<void> write(workspace::Bytes data, std::chrono::milliseconds stall_timeout) override {
    if (stdin_closed_) throw std::logic_error("write to a command stream whose stdin was closed");
    const auto end = co_await connection_errors_mapped(channel_->write(data, stall_timeout));
    switch (end) {
      case ssh::ChannelStream::WriteEnd::written: co_return;
      case ssh::ChannelStream::WriteEnd::stalled:
        throw workspace::WorkspaceTimeoutError(
            fmt::format("a command stream took none of the rest of a write for {} ms (part may have been written)",
                        stall_timeout.count()),
            PartialOutput{});
      case ssh::ChannelStream::WriteEnd::closed: break;
    }
    throw workspace::WorkspaceError("the command of a stream no longer reads its stdin (part of a write may have been written)");
  }

  Task<void> close_stdin() override {
    stdin_closed_ = true;
    co_await connection_errors_mapped(channel_->send_eof());
  }

  Task<workspace::Bytes> read_some(std::size_t max_bytes, std::chrono::milliseconds wait) override {
    if (max_bytes == 0) throw std::invalid_argument("a command stream read takes at least one byte");
    workspace::Bytes data;
    auto reading = channel_->read_some(data, max_bytes, wait);  // appends to `data`; the count is its size
    (void)co_await connection_errors_mapped(std::move(reading));
    co_return data;
  }

  [[nodiscard]] bool ended() const noexcept override { return channel_->ended(); }

  Task<void> close() override { co_await channel_->close(); }

 private:
  // A connection that dropped under a stream is the stream's failure (WorkspaceError): its user
  // goes on by other means (process sessions: one command per operation, with the route's
  // recovery).
  template <typename T>
  static Task<T> connection_errors_mapped(Task<T> operation) {
    std::string message;
    try {
      co_return co_await std::move(operation);
    } catch (const ConnectionError& error) {
      message = error.what();
    }
    throw workspace::WorkspaceError("a command stream's SSH connection failed: " + message);
  }

  std::shared_ptr<ssh::ChannelStream> channel_;
  bool stdin_closed_ = false;
};

}  // namespace

Task<std::unique_ptr<workspace::CommandStream>> ssh_open_command_stream(std::shared_ptr<ssh::Connection> connection,
                                                                       std::string script, std::vector<std::string> args) {
  const auto program_line = ssh_stream_program_line(script, args);
  auto channel = co_await connection->open_stream(std::string(ssh_stream_command));
  if (!channel) co_return nullptr;  // the connection's streams are at their bound
  const auto end = co_await channel->write(program_line, std::chrono::seconds(10));
  if (end != ssh::ChannelStream::WriteEnd::written) {
    co_await channel->close();
    throw ConnectionError(
        fmt::format("SSH: {} did not take a command stream's program", connection->endpoint().host), true,
        std::make_error_code(std::errc::timed_out));
  }
  co_return std::make_unique<SshCommandStream>(std::move(channel));
}

}  // namespace exedev::detail
