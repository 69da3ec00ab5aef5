#pragma once
// SandboxBackend: a workspace backend (commands; files through the workspace's shell-derived
// filesystem) on one exe.dev VM. Provider "exedev", ref id = the VM name.
//
// - Without a ref, the first operation provisions a VM from the spec, exactly as
//   VMs::provision does (same implementation); concurrent first operations make one VM. The ref
//   is recorded as soon as the create returns, before the VM is made ready; if getting it ready
//   fails (VMInitializationError) the next operation retries that. After a
//   ProvisionOutcomeUnknownError every later operation raises it again rather than create a
//   second VM. A cancelled first operation keeps the VM it made (backends never destroy their
//   environment): the next operation finishes getting it ready.
// - With a ref, the first operation attaches without creating, resuming or changing the VM: it
//   checks with `ls` that the VM exists (VMNotFoundError) and carries the scope tag
//   (VMOutOfScopeError). The spec then only says where commands start (working_dir), which
//   must already exist.
// - Commands run in the VM user's login shell, starting in working_dir, with the VM's login
//   environment, then the backend's env, then the call's env (later wins). An argv is quoted
//   literally. Every operation recovers through one policy (docs/sandbox.md, "Recovery over
//   SSH"; SshOptions::recovery): a paused VM is resumed once and the operation runs after the
//   resume; over SSH a dropped connection is reopened and what had not started (or is
//   idempotent) runs again; a command that may have run never runs twice. A token that may not
//   resume (a tag-scoped token on exe.dev) gets ExeDevAccessError naming `resume` and saying
//   the VM is paused.
// - Errors: VMNotFoundError (VM gone, also during a command), VMOutOfScopeError,
//   ExeDevAccessError (401, 403 or a tag-scope refusal, no token), WorkspaceTimeoutError, WorkspaceOutputLimitError
//   (8 MiB of stdout+stderr), CommandOutcomeUnknownError (result unknown, the VM exists),
//   ProvisionOutcomeUnknownError, VMInitializationError; other client errors propagate
//   unchanged.
// - Process sessions (ShellProcessSessions): each operation is one shell script through
//   run_script, so one /exec request, or over SSH one channel (of the connection's session
//   slots) while it runs; a read's long poll holds it up to its wait (at most 20 s).
// - Threading: one executor (an io_context run by one thread, or a strand).

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <exedev/coawait_guard.hpp>
#include <exedev/client.hpp>
#include <exedev/sandbox/errors.hpp>
#include <exedev/sandbox/port_forward.hpp>
#include <exedev/sandbox/vm_spec.hpp>
#include <exedev/sandbox/vms.hpp>
#include <exedev/ssh/errors.hpp>
#include <exedev/ssh/options.hpp>
#include <exedev/workspace/backend.hpp>
#include <exedev/workspace/command_stream.hpp>
#include <exedev/workspace/sessions.hpp>
#include <exedev/workspace/types.hpp>

namespace exedev {

/// exe.dev's request body limit: a lobby line must be shorter than this.
inline constexpr std::size_t max_request_body_bytes = 64 * 1024;
/// The most stdout + stderr a command may write before it is stopped.
inline constexpr std::size_t max_command_output_bytes = 8 * 1024 * 1024;

/// How SandboxBackend moves files through the shell-derived filesystem. Each file operation is
/// one bounded exe.dev request (Client::run_script); larger files take more (docs/sandbox.md).
/// Defaults chosen by bench B3 (docs/performance.md).
struct FileTransferOptions {
  /// Write chunks in flight at once (each fills a request body; 1 = sequential).
  std::size_t write_window = 4;
  /// File bytes read per request; base64 of a page (in 76-character lines) must stay under the
  /// 8 MiB output cap, so at most 5.5 MiB.
  std::size_t read_page_bytes = 4 * 1024 * 1024;
  /// gzip when it pays (docs/sandbox.md): a write that takes more than one request and whose
  /// sample compresses travels compressed, and so do read pages the VM finds compressible;
  /// random data never does. Needs `gzip` on the VM (without it, the first compressed write is
  /// refused before writing anything and sent again uncompressed; the backend remembers).
  bool compression = true;
  /// The seed's reference design, for comparisons: sequential writes, 64 KiB read pages, no
  /// compression.
  bool reference_mode = false;
  /// The largest file a read returns and the largest listing a list_dir takes, on either
  /// transport (ShellFilesystemLimits::max_read_bytes, max_listing_bytes): a size the VM
  /// reports above them is refused before the data is fetched.
  std::uint64_t max_read_bytes = 256 * 1024 * 1024;
  std::uint64_t max_listing_bytes = 64 * 1024 * 1024;
};

/// How SandboxBackend reaches its VM's shell and files (docs/sandbox.md, "Transports"). VM
/// lifecycle (create, copy, list, resume, tags, readiness) always uses exe.dev's /exec API.
enum class Transport {
  /// SSH when a key is available (SshOptions, EXE_SSH_KEY, ssh-agent, ~/.ssh/id_ed25519 or
  /// id_rsa) and the VM's SSH endpoint accepts it, else /exec; the choice and its reason are
  /// logged once. A changed host key is never a reason to fall back: it is refused.
  automatic,
  ssh,   ///< SSH only: an error (with the reason) when SSH cannot be used.
  exec,  ///< exe.dev's POST /exec only (64 KiB requests, rate-limited, 30 s each).
};

/// "auto", "ssh" or "exec".
[[nodiscard]] const char* transport_name(Transport transport) noexcept;
/// The Transport a name gives ("auto", "ssh", "exec"), or nullopt.
[[nodiscard]] std::optional<Transport> parse_transport(std::string_view name) noexcept;

namespace detail {
struct SharedEndpointMemory;
}  // namespace detail

/// SSH endpoints that did not answer lately (SshRecoveryOptions::unanswered_memory), shared by
/// the backends given the same memory so that they pay one connect timeout between them, not
/// one each: a Sandbox gives its own to every run's backend. Copies share one memory; it may be
/// used from several threads. Default-constructed: a new, empty memory.
class SshEndpointMemory {
 public:
  SshEndpointMemory();

 private:
  friend class SandboxBackend;
  std::shared_ptr<detail::SharedEndpointMemory> shared_;
};

struct SandboxBackendOptions {
  /// Attach to this VM; without it, the first operation provisions one from `spec`.
  std::optional<workspace::WorkspaceRef> ref{};
  VMSpec spec{};
  std::optional<std::string> scope_tag{};
  /// Used as is and never closed for you.
  std::optional<Client> client{};
  /// Options of the client made on first use when `client` is unset.
  ClientOptions client_options{};
  /// Layered over the VM's login environment, under each call's env.
  workspace::Env env{};
  ReadinessOptions readiness{};
  FileTransferOptions transfer{};
  Transport transport = Transport::automatic;
  /// Keys, known_hosts and host key policy, timeouts of the SSH transport.
  SshOptions ssh{};
  /// Where the transport choice is logged (one line when it is made, one when it changes);
  /// empty = client_options.logger.
  Logger logger{};
  /// The SSH endpoints that did not answer, as this backend and those sharing the memory saw
  /// them (a Sandbox's runs share one).
  SshEndpointMemory ssh_endpoints{};
  EXEDEV_COAWAIT_GUARD;
};

/// The shell-filesystem sizes for `transfer`: write chunks that fill exe.dev's request body
/// (file scripts carry neither env nor working_dir). Throws std::invalid_argument when env and
/// working_dir leave commands less than 16 KiB of a request, or for a read page over 5.5 MiB or
/// a zero window.
[[nodiscard]] workspace::ShellFilesystemLimits exedev_shell_filesystem_limits(const workspace::Env& env,
                                                                              const std::optional<std::string>& working_dir,
                                                                              const FileTransferOptions& transfer = {});

class SandboxBackend final : public workspace::WorkspaceBackend,
                             public workspace::SupportsCommands,
                             public workspace::SupportsShellScripts,
                             public workspace::SupportsFileTransfer,
                             public workspace::SupportsTreeTransfer,
                             public workspace::SupportsCommandStreams,
                             public workspace::ShellProcessSessions {
 public:
  /// No I/O. Throws std::invalid_argument for a ref of another provider or an invalid VM name,
  /// a spec with copy_base_tags=false under a scope tag, an invalid scope tag, or an env too
  /// large for exe.dev's request limit.
  explicit SandboxBackend(SandboxBackendOptions options);
  SandboxBackend(std::optional<workspace::WorkspaceRef> ref, VMSpec spec, std::optional<std::string> scope_tag,
                 std::optional<Client> client = std::nullopt, workspace::Env env = {});
  ~SandboxBackend() override;
  SandboxBackend(const SandboxBackend&) = delete;
  SandboxBackend& operator=(const SandboxBackend&) = delete;

  [[nodiscard]] std::optional<workspace::WorkspaceRef> ref() const override;

  /// `pwd -P` in working_dir, once. Cancellation: as run().
  workspace::Task<std::string> working_dir() override;

  /// Cancellation (or the timeout) closes the request; the client stops the command's process
  /// group on the VM. A first operation cancelled mid-provision: see the header comment.
  workspace::Task<workspace::CommandResult> run(workspace::Command command, workspace::RunOptions options) override;

  [[nodiscard]] workspace::ShellFilesystemLimits shell_filesystem_limits() const override;
  /// From then on, limits come with compression off.
  void note_gzip_missing() override;

  /// One bounded request (Client::run_script; stdout streams to `on_stdout` when set); an
  /// idempotent script whose answer was lost is sent again (by the client's retry policy over
  /// /exec, on a new connection over SSH). Errors and cancellation as run().
  workspace::Task<workspace::CommandResult> run_script(std::string script, std::vector<std::string> args,
                                                      bool idempotent, workspace::ScriptStdoutSink on_stdout) override;

  /// Over SSH: a session channel kept open (one of the connection's max_sessions slots until
  /// the stream is closed), the program carried on its first line of stdin; at most half of
  /// SshOptions::max_sessions (5 of 10) at once, so that commands always find slots: past that,
  /// nullptr. Over /exec: nullptr (exe.dev's API has no stdin). Provisions or attaches first; errors as run(); the stream's
  /// own failures (the connection dropped under it) are WorkspaceError and are not recovered:
  /// open another. Cancellation: as run(); no channel is left open.
  workspace::Task<std::unique_ptr<workspace::CommandStream>> open_command_stream(std::string script,
                                                                               std::vector<std::string> args) override;

  /// Over SSH: SFTP, once the backend is connected and the VM's sshd serves it.
  workspace::Task<bool> file_transfer_available() override;
  /// True once this backend's SFTP session is open on a connection that stands.
  [[nodiscard]] bool file_transfer_open() const noexcept override;
  /// Over SFTP, recovered like an idempotent script (a new connection, a paused VM resumed
  /// once); errors as run() (WorkspaceError when the VM serves no SFTP).
  workspace::Task<void> upload(std::string path, std::string_view data) override;
  workspace::Task<workspace::Bytes> download(std::string path, std::uint64_t size) override;

  /// A listener on 127.0.0.1 (a port the system picks) whose connections reach `remote_port` on
  /// the VM ("localhost" as the VM's sshd resolves it), each over a direct-tcpip channel of the
  /// backend's one SSH connection; it serves while the returned handle lives (PortForward).
  /// Those channels take no max_sessions slot (OpenSSH's MaxSessions counts session channels
  /// only). Provisions or attaches first, like any operation, and connects over SSH if not yet
  /// connected. Nothing reaches remote_port before a connection arrives, so the service may
  /// start later; a connection the VM refuses (nothing listening) is closed at once. Throws
  /// TransportUnsupportedError when the route is /exec (Transport::exec, or `automatic` having
  /// fallen back: exe.dev's /exec API carries lobby commands only, it has no channel for TCP);
  /// connection and access errors as run(). Cancellation: provisioning or connecting under way
  /// is abandoned as for run(), operation_aborted is thrown and no listener is left.
  workspace::Task<PortForward> forward_port(std::uint16_t remote_port);

  /// The URL where exe.dev's HTTPS proxy serves `port` of the VM (proxy_url_for_port): provisions
  /// or attaches first, then asks `share show` (one request, either transport). Reaching it
  /// needs access unless the VM is public and `port` its proxy port (Client::share_set_public,
  /// set_share_port). Throws std::invalid_argument for a port exe.dev's proxy does not forward;
  /// errors as run(). Cancellation: nothing changes; operation_aborted is thrown.
  workspace::Task<std::string> served_url(std::uint16_t port);

  /// Tree transfers (docs/sandbox.md, "Trees"): the VM's end runs GNU tar, find and coreutils
  /// through run_script, on either transport (a download's archive is made by a command, run(),
  /// which may outlive one /exec request; TreeTransferOptions::archive_timeout); the archive
  /// travels in chunks at offsets (over /exec each fills a request body), so the number of
  /// requests follows its compressed size.
  /// A relative remote_dir starts in working_dir. Cancellation: the job directory beside the
  /// destination is removed (shielded, bounded by 10 s); the destination is as it was, unless
  /// the final script (which moves the staged tree into place by two renames) had started, in
  /// which case it is either as it was or entirely replaced. A download changes the local
  /// directory only after everything arrived.
  workspace::Task<workspace::TreeTransferResult> upload_tree(std::string local_dir, std::string remote_dir,
                                                             workspace::TreeTransferOptions options) override;
  workspace::Task<workspace::TreeTransferResult> download_tree(std::string remote_dir, std::string local_dir,
                                                               workspace::TreeTransferOptions options) override;

  /// The transport in use: nullopt until the first operation has chosen one (Transport::ssh or
  /// Transport::exec afterwards; `automatic` may later switch from SSH to /exec when SSH stops
  /// answering, never in the middle of a command).
  [[nodiscard]] std::optional<Transport> transport_in_use() const;

  /// The client in use (made on first use when none was given).
  workspace::Task<Client> client();

  /// Waits for a VM this backend is provisioning (so its ref is recorded), detaches its attached
  /// process sessions (they run on), then closes the SSH connection and the client this backend made (never one it was given). Never touches the VM. Once the close has
  /// started, the wait included, it finishes before a cancellation reaches the caller; the
  /// cancellation is then raised (operation_aborted, with the close's error nested
  /// if it failed). A failed close keeps the client; calling close() again retries. The
  /// backend stays usable: its next operation makes a new client.
  workspace::Task<void> close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace exedev
