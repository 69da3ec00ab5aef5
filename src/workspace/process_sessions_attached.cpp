// ShellProcessSessions' attached sessions: one command stream into the holder per attached
// session (session_attach_script), carrying writes in and the log out from where the reads are.
// Whatever the stream cannot serve (another offset, a second reader or writer at once, a stream
// that ended or broke) goes as a command, as on a session never attached.
#include <fmt/format.h>

#include <limits>
#include <stdexcept>

#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/sessions.hpp>

#include "workspace/process_sessions.hpp"

namespace exedev::workspace {

namespace {

/// How long attach waits for the stream's header.
constexpr std::chrono::seconds kAttachHeaderWait{10};

}  // namespace

namespace detail {

struct SessionAttachment {
  std::unique_ptr<CommandStream> stream;
  Bytes pending{};              // log bytes that came with the header, given first
  std::uint64_t position = 0;   // the log offset of the next byte a read gives
  std::uint64_t from = 0;       // attach_session's offset: a read from it starts at `start`
  std::uint64_t start = 0;      // where the stream began (later than `from` past released bytes)
  std::uint64_t keep = 0;       // the session's max_output_bytes
  std::uint64_t streamed_since_trim = 0;
  bool writable = false;
  bool reading = false;
  bool writing = false;
  bool released = false;  // detached: the last operation using it lets it go

  /// Where a read from `offset` starts in the log.
  [[nodiscard]] std::uint64_t read_start(std::uint64_t offset) const {
    return offset == from ? std::max(offset, start) : offset;
  }
};

}  // namespace detail

namespace {

/// Marks an operation on an attachment for its duration; the last one out of a released
/// attachment lets the stream go (closed in the background by its destructor).
class AttachmentUse {
 public:
  AttachmentUse(std::shared_ptr<detail::SessionAttachment> attachment, bool detail::SessionAttachment::*flag)
      : attachment_(std::move(attachment)), flag_(flag) {
    attachment_.get()->*flag_ = true;
  }
  ~AttachmentUse() {
    auto& a = *attachment_;
    a.*flag_ = false;
    if (a.released && !a.reading && !a.writing) a.stream.reset();
  }
  AttachmentUse(const AttachmentUse&) = delete;
  AttachmentUse& operator=(const AttachmentUse&) = delete;

 private:
  std::shared_ptr<detail::SessionAttachment> attachment_;
  bool detail::SessionAttachment::*flag_;
};

/// Reads the attach header line from `stream` (at most kMaxAttachHeaderBytes); what came after
/// it goes to `rest`.
Task<std::string> read_attach_header(CommandStream& stream, const std::string& name, Bytes& rest) {
  std::string received;
  std::size_t newline = std::string::npos;
  while ((newline = received.find('\n')) == std::string::npos) {
    if (received.size() >= detail::kMaxAttachHeaderBytes) throw detail::SessionOutputError(name);
    const auto piece = co_await stream.read_some(detail::kMaxAttachHeaderBytes - received.size(),
                                                 std::chrono::duration_cast<std::chrono::milliseconds>(kAttachHeaderWait));
    if (piece.empty() && stream.ended()) throw detail::SessionOutputError(name);
    if (piece.empty()) {
      throw WorkspaceError(fmt::format("process session '{}': attaching got no answer within {} s", name,
                                       kAttachHeaderWait.count()));
    }
    received += piece;
  }
  rest = received.substr(newline + 1);
  received.resize(newline);
  co_return received;
}

}  // namespace

bool ShellProcessSessions::session_attached(const std::string& name) const { return attachments_.contains(name); }

Task<bool> ShellProcessSessions::attach_session(std::string name, std::uint64_t from_offset) {
  validate_session_name(name);
  if (from_offset > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    throw std::invalid_argument("from_offset must be below 2^63");
  }
  if (const auto found = attachments_.find(name); found != attachments_.end()) {
    // Attached already where that read would start: nothing to do.
    if (found->second->read_start(from_offset) == found->second->position) co_return true;
    co_await detach_session(name);
  }
  auto* streams = dynamic_cast<SupportsCommandStreams*>(this);
  if (streams == nullptr) co_return false;
  auto stream = co_await streams->open_command_stream(detail::session_attach_script(name, from_offset), {});
  if (!stream) co_return false;
  auto attachment = std::make_shared<detail::SessionAttachment>();
  const auto line = co_await read_attach_header(*stream, name, attachment->pending);
  const auto header = detail::parse_session_attach_header(line, name, from_offset);
  if (header.refused) {
    co_await stream->close();
    const int status = *header.refused;
    if (status == detail::kSessionEnded || status == detail::kSessionLost || status == detail::kSessionNoFollow) {
      co_return false;
    }
    detail::raise_for_session_status(CommandResult{status, {}, {}}, name, "attach");
    throw detail::SessionOutputError(name);  // a status that means success cannot come here
  }
  attachment->stream = std::move(stream);
  attachment->from = from_offset;
  attachment->start = header.start;
  attachment->position = header.start;
  attachment->keep = header.keep;
  attachment->writable = header.writable;
  attachments_[name] = std::move(attachment);
  co_return true;
}

Task<void> ShellProcessSessions::detach_session(std::string name) {
  const auto found = attachments_.find(name);
  if (found == attachments_.end()) co_return;
  auto attachment = found->second;
  attachments_.erase(found);
  co_await release_attachment(std::move(attachment));
}

Task<void> ShellProcessSessions::detach_all_sessions() {
  while (!attachments_.empty()) {
    const auto name = attachments_.begin()->first;
    co_await detach_session(name);
  }
}

Task<void> ShellProcessSessions::release_attachment(std::shared_ptr<detail::SessionAttachment> attachment) {
  attachment->released = true;
  if (attachment->reading || attachment->writing) co_return;  // the last user lets it go
  auto stream = std::move(attachment->stream);
  if (stream) co_await stream->close();
}

Task<bool> ShellProcessSessions::write_attached(const std::string& name, const Bytes& data) {
  const auto found = attachments_.find(name);
  if (found == attachments_.end() || !found->second->writable || found->second->writing) co_return false;
  auto attachment = found->second;
  {
    const AttachmentUse use(attachment, &detail::SessionAttachment::writing);
    try {
      co_await attachment->stream->write(data, std::chrono::seconds(detail::kSessionWriteTimeoutSeconds));
      co_return true;
    } catch (const WorkspaceTimeoutError&) {
      throw WorkspaceTimeoutError(
          fmt::format("process session '{}': stdin did not take the bytes within {} s (part may have been delivered)",
                      name, detail::kSessionWriteTimeoutSeconds),
          PartialOutput{});
    } catch (const WorkspaceError&) {
      // The stream ended under the write: most often because the program did. Said below.
    }
  }
  co_await detach_session(name);
  const auto result = co_await session_script(detail::session_wait_script(name, 0), {}, true);
  detail::raise_for_session_status(result, name, "write");
  if (detail::parse_session_wait(result.stdout_text, name)) {
    throw WorkspaceError(fmt::format("process session '{}': the program has ended", name));
  }
  throw WorkspaceError(fmt::format(
      "process session '{}': its attached stream broke during the write (part of the bytes may have been delivered); "
      "the session is detached",
      name));
}

Task<std::optional<SessionOutput>> ShellProcessSessions::read_attached(const std::string& name,
                                                                       std::uint64_t from_offset, std::size_t max_bytes,
                                                                       std::chrono::milliseconds wait) {
  const auto found = attachments_.find(name);
  if (found == attachments_.end() || found->second->reading) co_return std::nullopt;
  auto attachment = found->second;
  auto& a = *attachment;
  const std::uint64_t at = a.read_start(from_offset);
  if (at != a.position) co_return std::nullopt;  // elsewhere in the log: a command
  SessionOutput output;
  output.offset = at;
  output.dropped_bytes = at - from_offset;
  if (!a.pending.empty()) {
    output.data = a.pending.substr(0, max_bytes);
    a.pending.erase(0, output.data.size());
    output.next_offset = at + output.data.size();
    a.position = output.next_offset;
    co_return output;
  }
  bool ended = false;
  {
    const AttachmentUse use(attachment, &detail::SessionAttachment::reading);
    try {
      output.data = co_await a.stream->read_some(max_bytes, wait);
      ended = output.data.empty() && a.stream->ended();
      // What has come already goes with it: one answer, not one per piece the stream was written in.
      while (!output.data.empty() && output.data.size() < max_bytes) {
        const auto more = co_await a.stream->read_some(max_bytes - output.data.size(), std::chrono::milliseconds(0));
        if (more.empty()) break;
        output.data += more;
      }
    } catch (const WorkspaceError&) {
      ended = true;  // broke: a command reads on
    }
  }
  if (ended) {
    // The program has ended (its holder did), or the stream broke: the end and its status come
    // from a command.
    co_await detach_session(name);
    co_return std::nullopt;
  }
  output.next_offset = at + output.data.size();
  a.position = output.next_offset;
  a.streamed_since_trim += output.data.size();
  if (a.streamed_since_trim >= a.keep) {
    // The log is released as reads go (max_output_bytes); these reads are not commands.
    a.streamed_since_trim = 0;
    (void)co_await session_script(detail::session_trim_script(name), {}, true);
  }
  co_return output;
}

}  // namespace exedev::workspace
