#include <exedev/sandbox/sandbox_backend.hpp>

#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "common/coroutines.hpp"
#include "sandbox/core.hpp"
#include "sandbox/provision.hpp"
#include "sandbox/run_errors.hpp"
#include "sandbox/ssh_vm.hpp"
#include "sandbox/vm_route.hpp"
#include "ssh/port_forward.hpp"
#include "workspace/shell_filesystem.hpp"

namespace exedev {
namespace asio = boost::asio;
using workspace::CommandResult;
using workspace::WorkspaceRef;

namespace {

// The client's raw output as the workspace reports it: UTF-8, undecodable bytes as U+FFFD.
PartialOutput as_text(const PartialOutput& raw) {
  return {workspace::utf8_replace_invalid(raw.stdout_data), workspace::utf8_replace_invalid(raw.stderr_data)};
}

// What the request-size budget assumes about paths: file scripts carry paths (quoted, then
// base64-encoded with the script) up to this many bytes; longer ones are refused by the client
// (413, nothing sent).
constexpr std::size_t kPathAllowance = 1024;
// Commands need at least this much of a request once env and working_dir are in.
constexpr std::size_t kMinimumCommandRoom = 16 * 1024;
constexpr std::size_t kLongestVmName = 52;
constexpr std::size_t kReferencePageBytes = 64 * 1024;
// The largest read page whose output fits the output cap: base64 in 76-character lines (77
// bytes per 57 of data) of the page, or of a gzip member a little larger than it (deflate's
// stored blocks add 5 bytes per 16 KiB, the member 18), after the size and marker lines.
constexpr std::size_t kMaximumReadPageBytes = 5 * 1024 * 1024 + 512 * 1024;
static_assert((kMaximumReadPageBytes + kMaximumReadPageBytes / 1000 + 1024) / 57 * 77 + 1024 < max_command_output_bytes);

// The largest request Client::run sends for `shell_line` with this env and working directory.
std::size_t lobby_line_size(const std::string& shell_line, const workspace::Env& env,
                            const std::optional<std::string>& working_dir) {
  ClientRunOptions options;
  options.env = std::map<std::string, std::string>(env.begin(), env.end());
  options.working_dir = working_dir;
  return run_request_bytes(std::string(kLongestVmName, 'v'), shell_line, options);
}

// The largest request a write chunk of `chars` base64 characters travels in: the whole-file
// script (compressed, the longer one) or a block script, with paths at the allowance.
std::size_t largest_chunk_request(std::size_t chars) {
  const std::string vm(kLongestVmName, 'v');
  const std::string path = "/" + std::string(kPathAllowance - 1, 'p');
  const std::string name = ".exedev-" + std::string(32, 'f') + ".tmp";
  std::vector<std::string> args;
  args.push_back(std::string(chars, 'A'));
  workspace::detail::WriteCheck check;
  check.size = ~std::uint64_t{0} >> 1;
  check.sha256 = std::string(64, 'f');
  check.gzip = true;
  const auto whole = script_request_bytes(vm, workspace::detail::write_whole_script(path, name, check), args);
  const auto block = script_request_bytes(
      vm, workspace::detail::write_block_script(path + "/" + name, chars / 4 * 3, ~std::size_t{0} >> 1), args);
  return std::max(whole, block);
}

}  // namespace

const char* transport_name(Transport transport) noexcept {
  switch (transport) {
    case Transport::automatic: return "auto";
    case Transport::ssh: return "ssh";
    case Transport::exec: return "exec";
  }
  return "auto";
}

std::optional<Transport> parse_transport(std::string_view name) noexcept {
  if (name == "auto") return Transport::automatic;
  if (name == "ssh") return Transport::ssh;
  if (name == "exec") return Transport::exec;
  return std::nullopt;
}

workspace::ShellFilesystemLimits exedev_shell_filesystem_limits(const workspace::Env& env,
                                                                const std::optional<std::string>& working_dir,
                                                                const FileTransferOptions& transfer) {
  const std::size_t limit = max_request_body_bytes - 1;
  if (lobby_line_size("", env, working_dir) + kMinimumCommandRoom > limit) {
    throw std::invalid_argument("env and working_dir are too large: they leave commands fewer than 16 KiB of exe.dev's "
                                "64 KiB request");
  }
  if (transfer.write_window == 0) throw std::invalid_argument("the write window must be at least 1");
  if (transfer.read_page_bytes == 0 || transfer.read_page_bytes > kMaximumReadPageBytes) {
    throw std::invalid_argument("the read page must be between 1 byte and 5.5 MiB");
  }
  // A chunk costs one request byte per character (base64 needs no quoting), so the room left
  // by an empty chunk is the chunk size; align it to whole base64 quartets.
  std::size_t chars = (limit - (largest_chunk_request(4) - 4)) & ~std::size_t{3};
  while (chars > 0 && largest_chunk_request(chars) > limit) chars -= 4;
  workspace::ShellFilesystemLimits limits;
  limits.write_chunk_chars = chars;
  limits.write_window = transfer.reference_mode ? 1 : transfer.write_window;
  limits.read_page_bytes = transfer.reference_mode ? kReferencePageBytes : transfer.read_page_bytes;
  limits.compress = transfer.compression && !transfer.reference_mode;
  limits.max_read_bytes = transfer.max_read_bytes;
  limits.max_listing_bytes = transfer.max_listing_bytes;
  // A confined read's answer carries up to a read page of content: a file, or a tree's files in
  // all (as gzip members when they compress, which the page's size bound makes safe to inflate).
  limits.confined_content_bytes = transfer.reference_mode ? 0 : limits.read_page_bytes;
  limits.splices = !transfer.reference_mode;
  return limits;
}

namespace {

// What a script may print: a command's output, and the header lines of a read's whole file (a
// size of at most 20 digits, a marker).
constexpr std::size_t kScriptHeaderRoom = 64;
constexpr std::size_t max_script_output_bytes = max_command_output_bytes + kScriptHeaderRoom;

// Over SSH the scripts' pages and chunks travel on channels, not in 64 KiB requests; data past
// one chunk goes over SFTP (SupportsFileTransfer), so pages stay small enough to answer at once.
// `exec_limits`: the limits of /exec, whose maxima (FileTransferOptions) hold over SSH too.
workspace::ShellFilesystemLimits ssh_shell_filesystem_limits(const workspace::ShellFilesystemLimits& exec_limits) {
  workspace::ShellFilesystemLimits limits;
  limits.max_read_bytes = exec_limits.max_read_bytes;
  limits.max_listing_bytes = exec_limits.max_listing_bytes;
  limits.read_page_bytes = 1024 * 1024;
  limits.write_chunk_chars = 1024 * 1024;
  limits.listing_inline_bytes = 1024 * 1024;
  limits.write_window = 4;
  limits.compress = false;  // the link is faster than the VM's gzip
  // A script's stdout is the channel's own bytes: a file as large as a command's output may be
  // comes whole, behind its size line and marker (kScriptHeaderRoom).
  limits.raw_read_bytes = max_command_output_bytes;
  return limits;
}

// Attempts of one operation over SSH when its channel could not be used because the connection
// had just dropped (nothing ran, or the script is idempotent): each on a fresh connection.
constexpr int kSshAttempts = 3;

bool retry_on_fresh_connection(const std::exception_ptr& error, bool idempotent) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return e.code() == errc::connection_failed && (!e.may_have_run() || idempotent);
  } catch (...) {
    return false;
  }
}

}  // namespace

struct SandboxBackend::Impl {
  detail::ProvisionSubject target;
  detail::ClientHolder client;
  workspace::Env env;
  workspace::ShellFilesystemLimits limits;
  std::optional<std::string> canonical_working_dir;
  // Each step of a file or tree operation over SSH (SshOptions::file_operation_timeout).
  std::chrono::milliseconds file_operation_timeout;
  detail::VmRoute route;

  explicit Impl(SandboxBackendOptions& o)
      // A backend never destroys its environment: a cancelled provision keeps the VM it made.
      : target(o.ref ? detail::ProvisionPlan::Kind::attach : detail::ProvisionPlan::Kind::provision, false, std::move(o.spec),
           std::move(o.scope_tag), o.readiness),
        client(std::move(o.client), o.client_options), env(std::move(o.env)),
        limits(exedev_shell_filesystem_limits(env, target.spec.working_dir(), o.transfer)),
        file_operation_timeout(o.ssh.file_operation_timeout),
        route(o.transport, std::move(o.ssh), o.logger ? std::move(o.logger) : std::move(o.client_options.logger)) {
    detail::check_spec_scope(target.spec, target.scope_tag);
    if (o.ref) target.name = VMTarget(*o.ref).name();
  }

  /// The VM's name once it exists and is ready (concurrent callers share one provision).
  Task<std::string> ensure_ready() {
    auto c = co_await client.get();
    co_await detail::walk_phases(c, target);
    co_return *target.name;
  }

  // Throws what a failed client.run means for the workspace, or returns true when the VM was
  // paused (it is resumed: run the command once more).
  Task<bool> handle_run_error(Client c, const std::string& name, std::exception_ptr error, bool may_resume) {
    using K = detail::RunErrorClass::Kind;
    auto failure = detail::classify_run_error(error);
    switch (failure.kind) {
      case K::timeout:
        throw workspace::WorkspaceTimeoutError("a command on VM \"" + name + "\" passed its timeout and was stopped",
                                               as_text(failure.output));
      case K::output_limit:
        throw workspace::WorkspaceOutputLimitError("a command on VM \"" + name + "\" wrote more than " +
                                                       std::to_string(failure.limit) + " bytes of output and was stopped",
                                                   failure.limit, as_text(failure.output));
      case K::not_run: std::rethrow_exception(error);
      case K::refused:
      case K::may_have_run: break;
    }
    // Refused, or it may have run: first, does the VM still exist?
    std::optional<VMInfo> info;
    std::exception_ptr check_error;
    try {
      const auto listed = co_await c.list_vms(detail::one(name));
      const auto it = std::find_if(listed.begin(), listed.end(), [&](const VMInfo& vm) { return vm.name == name; });
      if (it != listed.end()) info = *it;
    } catch (...) {
      check_error = std::current_exception();
    }
    if (!check_error && !info) throw VMNotFoundError(name);
    if (failure.kind == K::refused) {
      if (info && may_resume && info->status.kind == VMStatus::Kind::paused) {
        std::exception_ptr resume_error;
        try {
          co_await c.resume_vm(name);
        } catch (...) {
          resume_error = std::current_exception();
        }
        // A token that may not resume (a tag-scoped one, on exe.dev) can't run commands on a
        // paused VM: say so rather than pass on the bare refusal.
        if (resume_error) detail::rethrow_access_mapped(resume_error, "VM \"" + name + "\" is paused and can't be resumed for the command");
        co_await detail::wait_ready(c, name, target.readiness);
        co_return true;
      }
      std::rethrow_exception(error);
    }
    try {
      std::rethrow_exception(error);
    } catch (...) {
      std::throw_with_nested(CommandOutcomeUnknownError(name, as_text(failure.output)));
    }
  }

  Task<CommandResult> run_script(std::string script, std::vector<std::string> args, bool idempotent,
                                 workspace::ScriptStdoutSink on_stdout) {
    const std::string name = co_await ensure_ready();
    auto c = co_await client.get();
    ScriptOptions options;
    options.args = std::move(args);
    options.max_output_bytes = max_script_output_bytes;
    options.idempotent = idempotent;  // the client re-sends it when an answer is lost
    options.on_stdout = std::move(on_stdout);
    auto recovering = with_recovery(c, name, [&] { return run_script_once(c, name, script, options); });
    co_return co_await std::move(recovering);
  }

  // One operation on the route in use: `over_ssh(connection)` when SSH is, else `over_exec()`.
  // A channel refused by a connection that had just dropped never started anything (nor ran an
  // idempotent script twice to any effect): it goes again on a fresh connection.
  template <typename OverSsh, typename OverExec>
  Task<RunResult> on_route(Client c, bool idempotent, OverSsh over_ssh, OverExec over_exec) {
    for (int attempt = 1;; ++attempt) {
      const auto connection = co_await route.connection(c, target);
      if (!connection) {
        co_return co_await over_exec();
      }
      std::exception_ptr error;
      try {
        co_return co_await over_ssh(connection);
      } catch (...) {
        error = std::current_exception();
      }
      if (attempt == kSshAttempts || !retry_on_fresh_connection(error, idempotent)) std::rethrow_exception(error);
      route.drop(connection);
    }
  }

  Task<RunResult> run_script_once(Client c, std::string name, std::string script, ScriptOptions options) {
    const auto over_ssh = [&](std::shared_ptr<ssh::Connection> connection) {
      return detail::ssh_run_script(std::move(connection), script, options, file_operation_timeout);
    };
    const auto over_exec = [&] { return c.run_script(name, script, options); };
    co_return co_await on_route(c, options.idempotent, over_ssh, over_exec);
  }

  Task<RunResult> run_once(Client c, std::string name, std::string line, ClientRunOptions options) {
    const auto over_ssh = [&](std::shared_ptr<ssh::Connection> connection) {
      return detail::ssh_run(std::move(connection), line, options);
    };
    const auto over_exec = [&] { return c.run(name, line, options); };
    co_return co_await on_route(c, false, over_ssh, over_exec);
  }

  // When an SFTP transfer of `bytes` must be done: the step's deadline plus 1 s per MiB, so that
  // a stalled or blocked sftp-server ends there.
  [[nodiscard]] std::chrono::steady_clock::time_point transfer_deadline(std::uint64_t bytes) const {
    if (file_operation_timeout.count() <= 0) return std::chrono::steady_clock::time_point::max();
    return std::chrono::steady_clock::now() + file_operation_timeout + std::chrono::seconds(bytes >> 20);
  }

  Task<std::shared_ptr<ssh::Sftp>> sftp() {
    co_await ensure_ready();
    auto c = co_await client.get();
    co_return co_await route.sftp(c, target);
  }

  // Awaits `start()` (a client call that runs something on VM `name`) and hands a failure to
  // handle_run_error, which may resume a paused VM once and have it started again.
  template <typename Start>
  Task<CommandResult> with_recovery(Client& c, const std::string& name, Start start) {
    for (bool may_resume = true;; may_resume = false) {
      std::exception_ptr error;
      try {
        auto result = co_await start();
        co_return CommandResult{result.exit_code, workspace::utf8_replace_invalid(result.stdout_bytes),
                                workspace::utf8_replace_invalid(result.stderr_bytes)};
      } catch (...) {
        error = std::current_exception();
      }
      auto handling = handle_run_error(c, name, error, may_resume);
      if (!co_await std::move(handling)) std::rethrow_exception(error);
    }
  }

  Task<CommandResult> run(workspace::Command command, workspace::RunOptions options) {
    workspace::validate_timeout(options.timeout);
    if (!command.is_shell() && command.args().empty()) throw std::invalid_argument("argv must not be empty");
    const std::string name = co_await ensure_ready();
    auto c = co_await client.get();
    ClientRunOptions run_options;
    run_options.env = std::map<std::string, std::string>(env.begin(), env.end());
    for (const auto& entry : options.env) run_options.env[entry.first] = entry.second;
    run_options.working_dir = target.spec.working_dir();
    if (options.timeout) run_options.timeout = *options.timeout;
    run_options.max_output_bytes = max_command_output_bytes;
    run_options.on_stdout = std::move(options.on_stdout);
    run_options.on_stderr = std::move(options.on_stderr);
    const std::string line = command.to_shell_line();
    auto recovering = with_recovery(c, name, [&] { return run_once(c, name, line, run_options); });
    co_return co_await std::move(recovering);
  }
};

SandboxBackend::SandboxBackend(SandboxBackendOptions options) : impl_(std::make_unique<Impl>(options)) {}

SandboxBackend::SandboxBackend(std::optional<WorkspaceRef> ref, VMSpec spec, std::optional<std::string> scope_tag,
                               std::optional<Client> client, workspace::Env env)
    : SandboxBackend(SandboxBackendOptions{std::move(ref), std::move(spec), std::move(scope_tag), std::move(client), {},
                                           std::move(env), {}}) {}

SandboxBackend::~SandboxBackend() = default;

std::optional<WorkspaceRef> SandboxBackend::ref() const {
  if (!impl_->target.name) return std::nullopt;
  return vm_ref(*impl_->target.name);
}

workspace::ShellFilesystemLimits SandboxBackend::shell_filesystem_limits() const {
  return impl_->route.in_use() == Transport::ssh ? ssh_shell_filesystem_limits(impl_->limits) : impl_->limits;
}

std::optional<Transport> SandboxBackend::transport_in_use() const { return impl_->route.in_use(); }

Task<bool> SandboxBackend::file_transfer_available() {
  std::exception_ptr error;
  try {
    auto opening = impl_->sftp();
    co_return (co_await std::move(opening)) != nullptr;
  } catch (...) {
    error = std::current_exception();
  }
  detail::rethrow_access_mapped(error);
}

bool SandboxBackend::file_transfer_open() const noexcept { return impl_->route.sftp_open(); }

Task<void> SandboxBackend::upload(std::string path, std::string_view data) {
  const auto sftp = co_await impl_->sftp();
  if (!sftp) throw workspace::WorkspaceError("file transfer is not available on VM \"" + *impl_->target.name + "\"");
  co_await sftp->write_file(std::move(path), data, 0600, impl_->transfer_deadline(data.size()));
}

Task<workspace::Bytes> SandboxBackend::download(std::string path, std::uint64_t size) {
  const auto sftp = co_await impl_->sftp();
  if (!sftp) throw workspace::WorkspaceError("file transfer is not available on VM \"" + *impl_->target.name + "\"");
  co_return co_await sftp->read_file(std::move(path), size, impl_->transfer_deadline(size));
}

Task<PortForward> SandboxBackend::forward_port(std::uint16_t remote_port) {
  std::exception_ptr error;
  try {
    co_await impl_->ensure_ready();
    auto c = co_await impl_->client.get();
    const auto connection = co_await impl_->route.connection(c, impl_->target);
    if (!connection) {
      throw TransportUnsupportedError("forwarding port " + std::to_string(remote_port) + " of VM \"" + *impl_->target.name + "\"",
                                      "exe.dev's /exec API", "it carries lobby commands only and has no channel for TCP; "
                                      "port forwarding needs the SSH transport");
    }
    co_return PortForward(ssh::PortForwarder::start(connection, "localhost", remote_port));
  } catch (...) {
    error = std::current_exception();
  }
  detail::rethrow_access_mapped(error);
}

Task<std::string> SandboxBackend::served_url(std::uint16_t port) {
  std::exception_ptr error;
  try {
    const std::string name = co_await impl_->ensure_ready();
    auto c = co_await impl_->client.get();
    const auto share = co_await c.share_show(name);
    co_return proxy_url_for_port(share.url, share.port, port);
  } catch (...) {
    error = std::current_exception();
  }
  detail::rethrow_access_mapped(error);
}

void SandboxBackend::note_gzip_missing() { impl_->limits.compress = false; }

Task<Client> SandboxBackend::client() { co_return co_await impl_->client.get(); }

Task<CommandResult> SandboxBackend::run(workspace::Command command, workspace::RunOptions options) {
  std::exception_ptr error;
  try {
    co_return co_await impl_->run(std::move(command), std::move(options));
  } catch (...) {
    error = std::current_exception();
  }
  detail::rethrow_access_mapped(error);
}

Task<CommandResult> SandboxBackend::run_script(std::string script, std::vector<std::string> args, bool idempotent,
                                               workspace::ScriptStdoutSink on_stdout) {
  std::exception_ptr error;
  try {
    co_return co_await impl_->run_script(std::move(script), std::move(args), idempotent, std::move(on_stdout));
  } catch (...) {
    error = std::current_exception();
  }
  detail::rethrow_access_mapped(error);
}

Task<std::string> SandboxBackend::working_dir() {
  if (impl_->canonical_working_dir) co_return *impl_->canonical_working_dir;
  std::exception_ptr error;
  try {
    const workspace::RunOptions defaults;
    const auto result = co_await impl_->run(workspace::Command::shell("pwd -P"), defaults);
    std::string path = result.stdout_text;
    if (!path.empty() && path.back() == '\n') path.pop_back();
    if (result.exit_code != 0 || path.empty() || path.front() != '/') {
      throw workspace::WorkspaceError("the working directory " +
                                      (impl_->target.spec.working_dir() ? "\"" + *impl_->target.spec.working_dir() + "\" " : std::string()) +
                                      "is not usable on VM \"" + *impl_->target.name + "\" (exit code " +
                                      std::to_string(result.exit_code) + ")");
    }
    impl_->canonical_working_dir = path;
    co_return path;
  } catch (...) {
    error = std::current_exception();
  }
  detail::rethrow_access_mapped(error);
}

Task<void> SandboxBackend::close() {
  // Wait for a VM being provisioned, so that its ref is recorded before the client goes. A
  // cancellation (even one from before: a run that was cancelled is ending) does not cut this
  // short; it is raised once the client is closed.
  EXEDEV_AWAIT_DESPITE_CANCELLATION(error, [](Impl& impl) -> Task<void> {
    while (impl.target.phases.phase() == detail::ProvisionPhase::busy) co_await impl.target.phase_changed.wait();
    co_await impl.route.close();
    co_await impl.client.close();
  }(*impl_));
  if (error) std::rethrow_exception(error);
}

}  // namespace exedev
