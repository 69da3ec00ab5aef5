#include <exedev/sandbox/sandbox_backend.hpp>

#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "common/coroutines.hpp"
#include "sandbox/core.hpp"
#include "sandbox/provision.hpp"
#include "sandbox/route_recovery.hpp"
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
  limits.confined_block_writes = !transfer.reference_mode;
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

}  // namespace

namespace detail {

/// Turns the client's access errors into ExeDevAccessError: every public operation's wrapper.
template <typename T>
Task<T> access_mapped(Task<T> operation) {
  std::exception_ptr error;
  try {
    co_return co_await std::move(operation);
  } catch (...) {
    error = std::current_exception();
  }
  rethrow_access_mapped(error);
}

}  // namespace detail

struct SandboxBackend::Impl {
  using Clock = std::chrono::steady_clock;

  // What an operation on the route needs, for its recovery.
  struct RouteOperation {
    bool idempotent = false;  // running it twice leaves what once does
    bool needs_sftp = false;  // over SSH, the connection's SFTP session
  };

  // What an operation over SSH works with.
  struct SshAccess {
    std::shared_ptr<ssh::Connection> connection;
    std::shared_ptr<ssh::Sftp> sftp;  // when the operation needs it; nullptr when the VM serves none
  };

  detail::ProvisionSubject target;
  detail::ClientHolder client;
  workspace::Env env;
  workspace::ShellFilesystemLimits limits;
  std::optional<std::string> canonical_working_dir;
  // Each step of a file or tree operation over SSH (SshOptions::file_operation_timeout).
  std::chrono::milliseconds file_operation_timeout;
  detail::VmRoute route;

  Impl(SandboxBackendOptions& o, std::shared_ptr<detail::SharedEndpointMemory> ssh_endpoints)
      // A backend never destroys its environment: a cancelled provision keeps the VM it made.
      : target(o.ref ? detail::ProvisionPlan::Kind::attach : detail::ProvisionPlan::Kind::provision, false, std::move(o.spec),
           std::move(o.scope_tag), o.readiness),
        client(std::move(o.client), detail::with_minted_commands(o.client_options, detail::sandbox_backend_commands())),
        env(std::move(o.env)),
        limits(exedev_shell_filesystem_limits(env, target.spec.working_dir(), o.transfer)),
        file_operation_timeout(o.ssh.file_operation_timeout),
        route(o.transport, std::move(o.ssh), std::move(ssh_endpoints),
              o.logger ? std::move(o.logger) : std::move(o.client_options.logger)) {
    detail::check_spec_scope(target.spec, target.scope_tag);
    if (o.ref) target.name = VMTarget(*o.ref).name();
  }

  /// The VM's name once it exists and is ready (concurrent callers share one provision).
  Task<std::string> ensure_ready() {
    auto c = co_await client.get();
    co_await detail::walk_phases(c, target);
    co_return *target.name;
  }

  // Where the VM stands (`ls`), for the recovery; a failed `ls` says nothing, so the VM is taken
  // to be there. The VM's description is kept: it names the SSH endpoint to connect to next.
  Task<detail::VmCondition> inspect(Client c, std::string name) {
    std::exception_ptr error;
    std::optional<VMInfo> info;
    try {
      const auto listed = co_await c.list_vms(detail::one(name));
      const auto it = std::find_if(listed.begin(), listed.end(), [&](const VMInfo& vm) { return vm.name == name; });
      if (it == listed.end()) co_return detail::VmCondition::gone;
      info = *it;
    } catch (...) {
      error = std::current_exception();
    }
    if (error && detail::is_cancellation(error)) std::rethrow_exception(error);
    if (!info) co_return detail::VmCondition::present;
    target.state = *info;
    co_return info->status.kind == VMStatus::Kind::paused ? detail::VmCondition::paused : detail::VmCondition::present;
  }

  // Resumes the paused VM and waits until its shell answers. A token that may not resume (a
  // tag-scoped one, on exe.dev) can't use a paused VM: say so rather than pass on the refusal.
  Task<void> resume(Client c, std::string name) {
    std::exception_ptr resume_error;
    try {
      co_await c.resume_vm(name);
    } catch (...) {
      resume_error = std::current_exception();
    }
    if (resume_error) detail::rethrow_access_mapped(resume_error, "VM \"" + name + "\" is paused and can't be resumed");
    co_await detail::wait_ready(c, name, target.readiness);
  }

  // Why `automatic` leaves SSH, for the log.
  std::string fall_back_reason(const detail::FailureClass& failure, const std::string& name) const {
    using F = detail::RouteFailure;
    if (failure.kind == F::auth_denied || failure.kind == F::key_unusable) {
      return "SSH authentication to VM \"" + name + "\" failed: " + failure.message;
    }
    return "the SSH endpoint of VM \"" + name + "\" (" + route.endpoint() + ") did not answer: " + failure.message;
  }

  [[noreturn]] static void fail(detail::RouteError error, const std::exception_ptr& cause, const detail::FailureClass& failure,
                                const std::string& name) {
    switch (error) {
      case detail::RouteError::as_is: break;
      case detail::RouteError::timeout:
        throw workspace::WorkspaceTimeoutError("a command on VM \"" + name + "\" passed its timeout and was stopped",
                                               as_text(failure.output));
      case detail::RouteError::output_limit:
        throw workspace::WorkspaceOutputLimitError("a command on VM \"" + name + "\" wrote more than " +
                                                       std::to_string(failure.limit) + " bytes of output and was stopped",
                                                   failure.limit, as_text(failure.output));
      case detail::RouteError::vm_not_found: throw VMNotFoundError(name);
      case detail::RouteError::outcome_unknown:
        detail::throw_nested(cause, CommandOutcomeUnknownError(name, as_text(failure.output)));
    }
    std::rethrow_exception(cause);
  }

  /// One operation on the VM: `over_ssh(access)` while the route is SSH, else `over_exec()`,
  /// attempted until it succeeds or the route's recovery policy (route_recovery.hpp) ends it.
  /// This loop only carries the policy's answers out.
  template <typename T, typename OverSsh, typename OverExec>
  Task<T> on_route(Client c, RouteOperation operation, OverSsh over_ssh, OverExec over_exec) {
    const std::string name = *target.name;
    const auto began = Clock::now();
    detail::RouteAttempt attempt;
    attempt.transport = route.configured();
    attempt.idempotent = operation.idempotent;
    attempt.readiness_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(target.readiness.timeout);
    for (;; ++attempt.attempts) {
      std::exception_ptr error;
      std::shared_ptr<ssh::Connection> connection;
      attempt.step = detail::RouteStep::connecting;
      try {
        connection = co_await route.connection(c, target);
        attempt.over_ssh = connection != nullptr;
        SshAccess access{connection, nullptr};
        if (connection && operation.needs_sftp) {
          attempt.step = detail::RouteStep::opening_sftp;
          access.sftp = co_await route.sftp(connection);
        }
        attempt.step = detail::RouteStep::operating;
        if (!connection) co_return co_await over_exec();
        co_return co_await over_ssh(access);
      } catch (...) {
        error = std::current_exception();
      }
      if (attempt.step == detail::RouteStep::connecting) attempt.over_ssh = true;  // only SSH connects
      const auto failure = detail::classify_failure(error, attempt.step);
      attempt.may_have_run = failure.may_have_run;
      attempt.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - began);
      for (bool decided = false; !decided;) {
        const auto action = detail::next_action(failure.kind, attempt, route.limits());
        decided = action.kind != detail::RouteAction::Kind::inspect_vm;
        switch (action.kind) {
          case detail::RouteAction::Kind::inspect_vm: {
            const auto condition = co_await inspect(c, name);
            attempt.vm = condition;
            break;
          }
          case detail::RouteAction::Kind::reconnect:
            route.drop(connection);
            route.reconnecting("VM \"" + name + "\": " + failure.message, action.delay);
            if (action.delay.count() > 0) co_await detail::sleep_for(action.delay);
            break;
          case detail::RouteAction::Kind::resume:
            route.drop(connection);
            co_await resume(c, name);
            attempt.resumed = true;
            attempt.vm = detail::VmCondition::unknown;
            break;
          case detail::RouteAction::Kind::fall_back: route.fall_back(fall_back_reason(failure, name)); break;
          case detail::RouteAction::Kind::without_sftp: route.without_sftp(name); break;
          case detail::RouteAction::Kind::fail: fail(action.error, error, failure, name);
        }
      }
    }
  }

  static CommandResult as_command_result(const RunResult& result) {
    return CommandResult{result.exit_code, workspace::utf8_replace_invalid(result.stdout_bytes),
                         workspace::utf8_replace_invalid(result.stderr_bytes)};
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
    const auto over_ssh = [&](const SshAccess& access) {
      return detail::ssh_run_script(access.connection, script, options, file_operation_timeout);
    };
    const auto over_exec = [&] { return c.run_script(name, script, options); };
    RouteOperation operation;
    operation.idempotent = idempotent;
    const auto result = co_await on_route<RunResult>(c, operation, over_ssh, over_exec);
    co_return as_command_result(result);
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
    const auto over_ssh = [&](const SshAccess& access) { return detail::ssh_run(access.connection, line, run_options); };
    const auto over_exec = [&] { return c.run(name, line, run_options); };
    const RouteOperation operation;  // a command is never run twice once it may have run
    const auto result = co_await on_route<RunResult>(c, operation, over_ssh, over_exec);
    co_return as_command_result(result);
  }

  Task<std::unique_ptr<workspace::CommandStream>> open_command_stream(std::string script, std::vector<std::string> args) {
    co_await ensure_ready();
    auto c = co_await client.get();
    const auto over_ssh = [&](const SshAccess& access) {
      return detail::ssh_open_command_stream(access.connection, script, args);
    };
    // exe.dev's /exec has no stdin.
    const auto over_exec = []() -> Task<std::unique_ptr<workspace::CommandStream>> { co_return nullptr; };
    const RouteOperation operation;  // the script may have started once the channel was asked for
    co_return co_await on_route<std::unique_ptr<workspace::CommandStream>>(c, operation, over_ssh, over_exec);
  }

  Task<std::string> working_dir() {
    if (canonical_working_dir) co_return *canonical_working_dir;
    const workspace::RunOptions defaults;
    const auto result = co_await run(workspace::Command::shell("pwd -P"), defaults);
    std::string path = result.stdout_text;
    if (!path.empty() && path.back() == '\n') path.pop_back();
    if (result.exit_code != 0 || path.empty() || path.front() != '/') {
      throw workspace::WorkspaceError("the working directory " +
                                      (target.spec.working_dir() ? "\"" + *target.spec.working_dir() + "\" " : std::string()) +
                                      "is not usable on VM \"" + *target.name + "\" (exit code " +
                                      std::to_string(result.exit_code) + ")");
    }
    canonical_working_dir = path;
    co_return path;
  }

  // SFTP reads and writes go through the same recovery as commands: writing a temp file whole
  // (a truncating open) and reading a file are both idempotent.
  static RouteOperation sftp_operation() {
    RouteOperation operation;
    operation.idempotent = true;
    operation.needs_sftp = true;
    return operation;
  }

  // When an SFTP transfer of `bytes` must be done: the step's deadline plus 1 s per MiB, so that
  // a stalled or blocked sftp-server ends there. Each attempt gets its own.
  [[nodiscard]] Clock::time_point transfer_deadline(std::uint64_t bytes) const {
    if (file_operation_timeout.count() <= 0) return Clock::time_point::max();
    return Clock::now() + file_operation_timeout + std::chrono::seconds(bytes >> 20);
  }

  [[noreturn]] void throw_no_file_transfer() const {
    throw workspace::WorkspaceError("file transfer is not available on VM \"" + *target.name + "\"");
  }

  Task<bool> file_transfer_available() {
    co_await ensure_ready();
    auto c = co_await client.get();
    const auto over_ssh = [](const SshAccess& access) -> Task<bool> { co_return access.sftp != nullptr; };
    const auto over_exec = []() -> Task<bool> { co_return false; };
    co_return co_await on_route<bool>(c, sftp_operation(), over_ssh, over_exec);
  }

  Task<void> upload(std::string path, std::string_view data) {
    co_await ensure_ready();
    auto c = co_await client.get();
    const auto over_ssh = [&](const SshAccess& access) -> Task<void> {
      if (!access.sftp) throw_no_file_transfer();
      co_await access.sftp->write_file(path, data, 0600, transfer_deadline(data.size()));
    };
    const auto over_exec = [&]() -> Task<void> {
      throw_no_file_transfer();
      co_return;
    };
    co_await on_route<void>(c, sftp_operation(), over_ssh, over_exec);
  }

  Task<workspace::Bytes> download(std::string path, std::uint64_t size) {
    co_await ensure_ready();
    auto c = co_await client.get();
    const auto over_ssh = [&](const SshAccess& access) -> Task<workspace::Bytes> {
      if (!access.sftp) throw_no_file_transfer();
      co_return co_await access.sftp->read_file(path, size, transfer_deadline(size));
    };
    const auto over_exec = [&]() -> Task<workspace::Bytes> {
      throw_no_file_transfer();
      co_return workspace::Bytes{};
    };
    co_return co_await on_route<workspace::Bytes>(c, sftp_operation(), over_ssh, over_exec);
  }

  Task<PortForward> forward_port(std::uint16_t remote_port) {
    co_await ensure_ready();
    auto c = co_await client.get();
    const auto over_ssh = [&](const SshAccess& access) -> Task<PortForward> {
      co_return PortForward(ssh::PortForwarder::start(access.connection, "localhost", remote_port));
    };
    const auto over_exec = [&]() -> Task<PortForward> {
      throw TransportUnsupportedError("forwarding port " + std::to_string(remote_port) + " of VM \"" + *target.name + "\"",
                                      "exe.dev's /exec API", "it carries lobby commands only and has no channel for TCP; "
                                      "port forwarding needs the SSH transport");
    };
    const RouteOperation operation;
    co_return co_await on_route<PortForward>(c, operation, over_ssh, over_exec);
  }

  Task<std::string> served_url(std::uint16_t port) {
    const std::string name = co_await ensure_ready();
    auto c = co_await client.get();
    const auto share = co_await c.share_show(name);
    co_return proxy_url_for_port(share.url, share.port, port);
  }
};

SshEndpointMemory::SshEndpointMemory() : shared_(std::make_shared<detail::SharedEndpointMemory>()) {}

SandboxBackend::SandboxBackend(SandboxBackendOptions options)
    : impl_(std::make_unique<Impl>(options, options.ssh_endpoints.shared_)) {}

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

bool SandboxBackend::file_transfer_open() const noexcept { return impl_->route.sftp_open(); }

void SandboxBackend::note_gzip_missing() { impl_->limits.compress = false; }

Task<std::unique_ptr<workspace::CommandStream>> SandboxBackend::open_command_stream(std::string script,
                                                                                std::vector<std::string> args) {
  auto mapped = detail::access_mapped(impl_->open_command_stream(std::move(script), std::move(args)));
  co_return co_await std::move(mapped);
}

Task<Client> SandboxBackend::client() { co_return co_await impl_->client.get(); }

// Each operation: the Impl's, with the client's access errors as ExeDevAccessError.

Task<bool> SandboxBackend::file_transfer_available() {
  auto mapped = detail::access_mapped(impl_->file_transfer_available());
  co_return co_await std::move(mapped);
}

Task<void> SandboxBackend::upload(std::string path, std::string_view data) {
  auto mapped = detail::access_mapped(impl_->upload(std::move(path), data));
  co_await std::move(mapped);
}

Task<workspace::Bytes> SandboxBackend::download(std::string path, std::uint64_t size) {
  auto mapped = detail::access_mapped(impl_->download(std::move(path), size));
  co_return co_await std::move(mapped);
}

Task<PortForward> SandboxBackend::forward_port(std::uint16_t remote_port) {
  auto mapped = detail::access_mapped(impl_->forward_port(remote_port));
  co_return co_await std::move(mapped);
}

Task<std::string> SandboxBackend::served_url(std::uint16_t port) {
  auto mapped = detail::access_mapped(impl_->served_url(port));
  co_return co_await std::move(mapped);
}

Task<CommandResult> SandboxBackend::run(workspace::Command command, workspace::RunOptions options) {
  auto mapped = detail::access_mapped(impl_->run(std::move(command), std::move(options)));
  co_return co_await std::move(mapped);
}

Task<CommandResult> SandboxBackend::run_script(std::string script, std::vector<std::string> args, bool idempotent,
                                               workspace::ScriptStdoutSink on_stdout) {
  auto mapped = detail::access_mapped(impl_->run_script(std::move(script), std::move(args), idempotent, std::move(on_stdout)));
  co_return co_await std::move(mapped);
}

Task<std::string> SandboxBackend::working_dir() {
  auto mapped = detail::access_mapped(impl_->working_dir());
  co_return co_await std::move(mapped);
}

Task<void> SandboxBackend::close() {
  // Wait for a VM being provisioned, so that its ref is recorded before the client goes. A
  // cancellation (even one from before: a run that was cancelled is ending) does not cut this
  // short; it is raised once the client is closed.
  EXEDEV_AWAIT_DESPITE_CANCELLATION(error, [](SandboxBackend& backend, Impl& impl) -> Task<void> {
    while (impl.target.phases.phase() == detail::ProvisionPhase::busy) co_await impl.target.phase_changed.wait();
    co_await backend.detach_all_sessions();
    co_await impl.route.close();
    co_await impl.client.close();
  }(*this, *impl_));
  if (error) std::rethrow_exception(error);
}

}  // namespace exedev
