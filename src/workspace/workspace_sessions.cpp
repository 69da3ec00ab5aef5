// The Workspace facade's process sessions: delegated to the backend's, refused by a read-only
// workspace where they would change something.
#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/unavailable.hpp>
#include <exedev/workspace/workspace.hpp>

#include "workspace/read_only.hpp"

namespace exedev::workspace {

namespace {

SupportsProcessSessions& process_sessions(const std::shared_ptr<WorkspaceBackend>& backend) {
  if (const auto* unavailable = dynamic_cast<const UnavailableBackend*>(backend.get())) {
    throw WorkspaceUnavailableError(unavailable->reason());
  }
  auto* sessions = dynamic_cast<SupportsProcessSessions*>(backend.get());
  if (!sessions) throw WorkspaceUsageError("This workspace does not support process sessions.");
  return *sessions;
}

}  // namespace

Task<void> Workspace::start_session(std::string name, ProcessSessionSpec spec) {
  auto& sessions = process_sessions(backend_);
  auto keep = backend_;
  co_await sessions.start_session(std::move(name), std::move(spec));
}

Task<void> Workspace::write_stdin(std::string name, Bytes data) {
  auto& sessions = process_sessions(backend_);
  auto keep = backend_;
  co_await sessions.write_stdin(std::move(name), std::move(data));
}

Task<void> Workspace::close_stdin(std::string name) {
  auto& sessions = process_sessions(backend_);
  auto keep = backend_;
  co_await sessions.close_stdin(std::move(name));
}

Task<SessionOutput> Workspace::read_output(std::string name, std::uint64_t from_offset, std::size_t max_bytes,
                                           std::chrono::milliseconds wait) {
  auto& sessions = process_sessions(backend_);
  auto keep = backend_;
  co_return co_await sessions.read_output(std::move(name), from_offset, max_bytes, wait);
}

Task<void> Workspace::resize_terminal(std::string name, TerminalSize size) {
  auto& sessions = process_sessions(backend_);
  auto keep = backend_;
  co_await sessions.resize_terminal(std::move(name), size);
}

Task<void> Workspace::signal_session(std::string name, std::string signal) {
  auto& sessions = process_sessions(backend_);
  auto keep = backend_;
  co_await sessions.signal_session(std::move(name), std::move(signal));
}

Task<SessionExit> Workspace::wait_session(std::string name, std::chrono::milliseconds timeout) {
  auto& sessions = process_sessions(backend_);
  auto keep = backend_;
  co_return co_await sessions.wait_session(std::move(name), timeout);
}

Task<std::vector<SessionInfo>> Workspace::list_sessions() {
  auto& sessions = process_sessions(backend_);
  auto keep = backend_;
  co_return co_await sessions.list_sessions();
}

Task<void> Workspace::remove_session(std::string name) {
  auto& sessions = process_sessions(backend_);
  auto keep = backend_;
  co_await sessions.remove_session(std::move(name));
}

Task<bool> Workspace::attach_session(std::string name, std::uint64_t from_offset) {
  auto& sessions = process_sessions(backend_);
  auto keep = backend_;
  co_return co_await sessions.attach_session(std::move(name), from_offset);
}

Task<void> Workspace::detach_session(std::string name) {
  auto& sessions = process_sessions(backend_);
  auto keep = backend_;
  co_await sessions.detach_session(std::move(name));
}

Task<void> ReadOnlyWorkspace::start_session(std::string, ProcessSessionSpec) {
  return detail::refused_as_read_only<void>();
}

Task<void> ReadOnlyWorkspace::write_stdin(std::string, Bytes) { return detail::refused_as_read_only<void>(); }

Task<void> ReadOnlyWorkspace::close_stdin(std::string) { return detail::refused_as_read_only<void>(); }

Task<void> ReadOnlyWorkspace::resize_terminal(std::string, TerminalSize) {
  return detail::refused_as_read_only<void>();
}

Task<void> ReadOnlyWorkspace::signal_session(std::string, std::string) { return detail::refused_as_read_only<void>(); }

Task<void> ReadOnlyWorkspace::remove_session(std::string) { return detail::refused_as_read_only<void>(); }

}  // namespace exedev::workspace
