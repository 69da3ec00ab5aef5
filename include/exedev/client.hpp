#pragma once
// exedev::Client: exe.dev's `POST /exec` API over HTTPS.
//
// A Client is a cheap, copyable handle; copies share one connection pool. It runs on the
// executor given at construction and starts no threads. Use it from one thread at a time (an
// io_context run by one thread, or a strand). A moved-from Client may only be assigned to or
// destroyed.
//
// Cancellation: every operation honours Asio per-operation cancellation (terminal; e.g. the
// awaitable operators or bind_cancellation_slot). A cancelled operation throws
// boost::system::system_error(operation_aborted), and the connection it was using is closed,
// never reused. What the server did with a cancelled request is documented per operation.

#include <boost/asio/any_io_executor.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <exedev/client/client_options.hpp>
#include <exedev/client/command_results.hpp>
#include <exedev/client/run_options.hpp>
#include <exedev/client/share.hpp>
#include <exedev/client/vm_info.hpp>
#include <exedev/client/vm_options.hpp>
#include <exedev/errors.hpp>
#include <exedev/string_list.hpp>
#include <exedev/task.hpp>

namespace exedev {

namespace detail {
struct ClientState;  // src/client: the connection pool and the runs' bookkeeping
}  // namespace detail

class Client {
 public:
  /// Reads EXE_TOKEN / EXE_BASE_URL / EXE_CA_FILE when the options leave them out. Throws
  /// std::invalid_argument for a malformed endpoint or an unreadable CA file. Sends nothing.
  Client(boost::asio::any_io_executor executor, ClientOptions options);
  /// With default options. (No options struct is a defaulted argument in this library: GCC 12
  /// would make the default a temporary of the caller's co_await; see coawait_guard.hpp.)
  Client(boost::asio::any_io_executor executor);
  ~Client();
  Client(const Client&);
  Client& operator=(const Client&);
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;

  [[nodiscard]] boost::asio::any_io_executor get_executor() const;
  /// The endpoint in use, normalised (no credentials).
  [[nodiscard]] const std::string& endpoint() const;

  /// An exe0 token for the HTTPS proxy of VM `vm` (`https://<vm>.exe.xyz`, sent as
  /// `Authorization: Bearer <token>`), signed in its namespace `v0@<vm>.exe.xyz` with the key of
  /// ClientOptions::minting, valid for `lifetime` from now. Throws std::logic_error when the
  /// client does not mint, SshKeyUnusableError / SshAuthenticationError when no key can sign.
  /// Blocking (a key file read or one exchange with the local ssh-agent); sends nothing.
  [[nodiscard]] std::string mint_vm_token(const std::string& vm, std::chrono::seconds lifetime) const;

  /// Sends one lobby command line as is and returns the answer, whatever its status. A 429 is
  /// waited for and sent again (RateLimitOptions; returned only with waiting off); other
  /// failures are retried (see RetryPolicy) only when its first word is a read-only command.
  /// Throws ConnectionError,
  /// BadRequestError (413) for a line over 64 KiB, before sending.
  /// Cancellation: the request is abandoned; it may or may not have reached exe.dev.
  Task<ExecResponse> exec(std::string command_line);

  /// `new`. Cancellation: the VM may or may not have been created (look it up by name/tags).
  Task<VMInfo> new_vm(NewVMOptions options);
  /// `cp`. Cancellation: the copy may or may not have been made.
  Task<VMInfo> copy_vm(CopyVMOptions options);
  /// `ls [patterns...]`: names, globs or tags. Read-only: cancellation changes nothing.
  Task<std::vector<VMInfo>> list_vms(StringList patterns = {});
  /// `rm names...` (at least one). VMs that were missing are listed in `failed`.
  /// Cancellation: some or all VMs may have been deleted.
  Task<RemoveResult> remove_vms(StringList names);
  /// `pause`. Cancellation: the VM may or may not be paused.
  Task<void> pause_vm(std::string name);
  /// `resume`. Cancellation: the VM may or may not be resumed.
  Task<void> resume_vm(std::string name);
  /// `restart`. Cancellation: the VM may or may not be restarting.
  Task<void> restart_vm(std::string name);
  /// `tag <vm> tags...`; returns the VM's tags afterwards. Cancellation: the tags may or may not
  /// have been added.
  Task<std::vector<std::string>> add_tags(std::string name, StringList tags);
  /// `tag -d <vm> tags...`; returns the VM's tags afterwards. Cancellation: as add_tags.
  Task<std::vector<std::string>> remove_tags(std::string name, StringList tags);
  /// `comment <vm> <text>`; an empty text clears the comment. Cancellation: the comment may or
  /// may not have changed.
  Task<void> set_comment(std::string name, std::string comment);
  /// Clears the comment (sent as a single space, which exe.dev trims). Cancellation: as
  /// set_comment.
  Task<void> clear_comment(std::string name);
  /// `whoami`. Read-only: cancellation changes nothing.
  Task<WhoAmI> whoami();
  /// The account as `whoami` answered it first for this client: asked once, then kept for every
  /// copy of this Client (the SSH transport learns the account's keys from it; two callers at
  /// once may both ask). Cancellation: as whoami; nothing is kept.
  Task<WhoAmI> account();
  /// Forgets what account() kept, so that its next call asks again (e.g. after `ssh-key add`).
  void forget_account();
  /// `resize <vm>` (std::invalid_argument without any option; nothing is sent). exe.dev refuses
  /// it to a tag-scoped token. Cancellation: the VM may or may not have been resized.
  Task<ResizeResult> resize_vm(std::string name, ResizeVMOptions options);
  /// `rename <vm> <new_name>`: the VM must be running. Renaming to the same name sends nothing.
  /// Cancellation: the VM may or may not have been renamed (`ls` either name to know).
  Task<void> rename_vm(std::string name, std::string new_name);

  // `share`: who reaches the VM's HTTPS proxy (https://<vm>.exe.xyz/) and which port it serves
  // (docs/client.md, "Sharing"). Each is one request; none is retried after sending (exe.dev
  // treats `share` as a write). Cancellation: a reading call changes nothing; a changing one may
  // or may not have taken effect.
  /// `share show <vm>`.
  Task<ShareInfo> share_show(std::string name);
  /// `share port <vm>`: the proxy route as it is (vm_name, port, visibility).
  Task<ShareRoute> share_port(std::string name);
  /// `share port <vm> <port>`: the bare URL serves `port` (exe.dev accepts 3000-9999 only:
  /// std::invalid_argument otherwise, nothing sent). Visibility stays.
  Task<ShareRoute> set_share_port(std::string name, std::uint16_t port);
  /// `share set-public <vm>`: anyone may reach the proxy port's URL.
  Task<ShareRoute> share_set_public(std::string name);
  /// `share set-private <vm>`: only users with access (and share links).
  Task<ShareRoute> share_set_private(std::string name);
  /// `share add-link <vm>`: a new share link.
  Task<ShareLinkCreated> share_add_link(std::string name);
  /// `share remove-link <vm> <token>`.
  Task<ShareChange> share_remove_link(std::string name, std::string token);
  /// `share add <vm> <email|team> [--message=…]`: invites a person by email (exe.dev sends
  /// the email) or shares with the caller's team ("team"). An empty message sends none.
  Task<ShareChange> share_add(std::string name, std::string email_or_team, std::string message);
  /// `share remove <vm> <email|team>`.
  Task<ShareChange> share_remove(std::string name, std::string email_or_team);
  /// `share access allow|disallow <vm>`: team members' SSH and Shelley access.
  Task<ShareRoute> share_access(std::string name, bool allow);

  /// Runs a shell line on a VM and returns its exit code and its stdout and stderr, separate
  /// and exact. The line runs in the VM user's login shell (`$SHELL -l`, as the ssh session sets
  /// it; /bin/sh when SHELL is unset, not executable, or not POSIX-compatible: csh, tcsh, fish,
  /// nu, xonsh, elvish, pwsh), in their home directory unless working_dir says otherwise. Its
  /// environment is the login environment (the profile runs first), then ClientRunOptions::env. The
  /// protocol's own wrapper scripts are POSIX sh.
  ///
  /// The command runs detached on the VM with its output and status in a record directory
  /// (`${XDG_STATE_HOME:-$HOME/.local/state}/exedev-cpp/runs/<id>`); each request streams new
  /// output and waits at most 20 s for the exit, so a command may outlive exe.dev's 30 s
  /// request limit. A cut connection is recovered by reading the record again; a command is
  /// never started twice. The record of a finished run is removed by this client's next run
  /// on that VM or by close(). `run` returns when the command's main process has exited:
  /// background processes it started keep running. The protocol's own helpers on the VM (the
  /// timeout watchdog, the pollers) end when the command ends.
  ///
  /// Output reaches on_stdout / on_stderr as the VM produces it (a poll notices new output
  /// within 0.2 s and streams it while the request stays open), not when a request ends.
  ///
  /// Throws: RunTimeoutError, OutputLimitError (partial output held; the message says whether
  /// the VM confirmed the stop); OutcomeUnknownError (the VM is gone, its record was lost, it
  /// stayed unreachable, its answers could not be read and no stop was confirmed (the
  /// ProtocolError nested), or the timeout passed and no stop was confirmed: the command may
  /// have run and may still run; what arrived is held); ConnectionError with sent() false (the
  /// command was not started); APIError subclasses when exe.dev refused the ssh request (not
  /// started, e.g. 422 for a missing or paused VM; RateLimitedError when waiting for exe.dev's
  /// rate limit would pass the timeout, with the wait it needed); ProtocolError (an answer could not be read
  /// and the VM confirmed the stop, or that the command never started). An exception thrown by
  /// an output callback stops the command and propagates as it is. A non-zero exit code is a
  /// result, never an exception. No error claims a stop the VM did not confirm.
  ///
  /// Bounds: with a timeout, run returns at most 20 s after it (whatever the server does:
  /// trickling, endless or unreadable answers); without one, each request is bounded (its
  /// 20 s wait plus 25 s), and after a cancellation, the output limit or an unreadable answer
  /// the stop takes at most 12 s. The launch request is never sent twice once it may have run
  /// (a 429 proves it did not). Without a timeout, waits for exe.dev's rate limit are not
  /// bounded by the client (RateLimitOptions; cancellation ends them).
  ///
  /// Cancellation: the remote command's process group is stopped (TERM, then KILL) with a
  /// follow-up request that runs shielded from further cancellation (at most 12 s), then
  /// operation_aborted is thrown.
  Task<RunResult> run(std::string vm, std::string shell_line, ClientRunOptions options);
  /// run() with default options.
  Task<RunResult> run(std::string vm, std::string shell_line);

  /// Runs a short POSIX sh script on a VM in one request (started like run(), in the home
  /// directory, stdin at EOF) and returns its exit code, stdout and the first 64 KiB of its
  /// stderr. For bounded work (file operations) that finishes well within exe.dev's ~30 s
  /// request limit: nothing is left on the VM and nothing is polled. Use run() for commands.
  /// The answer is read as it arrives: stdout is ready (or handed to ScriptOptions::on_stdout)
  /// as its bytes come in, so a multi-MiB answer is never held twice.
  ///
  /// A 429 is waited for and sent again (RateLimitOptions); a 5xx or a lost answer only when
  /// ScriptOptions::idempotent (RetryPolicy). Throws ConnectionError with
  /// sent() false (the script did not run), APIError subclasses (refused before it ran),
  /// OutcomeUnknownError (the answer was cut or the connection lost after sending: the script
  /// may have run; a cut answer is never returned as a result), OutputLimitError,
  /// ProtocolError (garbled frames), BadRequestError (413: the request is over 64 KiB; see
  /// script_request_bytes). Cancellation: the request is abandoned; the script may still run
  /// to its end on the VM.
  Task<RunResult> run_script(std::string vm, std::string script, ScriptOptions options);
  /// run_script() with default options.
  Task<RunResult> run_script(std::string vm, std::string script);
  /// Removes the records of finished runs still on VMs (one request per VM), then closes idle
  /// connections. The client stays usable; the next request reconnects. A VM exe.dev refuses
  /// (422: deleted or paused) is skipped, its records dropped. When a record could not
  /// be removed otherwise, close() throws the first failure (ConnectionError, or the APIError subclass of
  /// exe.dev's answer) after trying every VM and closing the idle connections; the records it
  /// could not remove stay listed, so calling close() again retries them. Cancellation: deferred
  /// until close() has finished (it is bounded by the request timeouts and the rate limit's
  /// waits, RateLimitOptions); close() itself does not
  /// throw operation_aborted, and a cancellation that arrived meanwhile stays recorded in the
  /// caller's cancellation state (its next co_await raises it).
  Task<void> close();

 private:
  std::shared_ptr<detail::ClientState> impl_;
};

/// The largest /exec request body run() sends for this VM, command and options (its launch,
/// with the most records of finished runs a request removes), so callers can tell whether a
/// command fits exe.dev's 64 KiB limit. Throws std::invalid_argument as run() would.
[[nodiscard]] std::size_t run_request_bytes(const std::string& vm, const std::string& shell_line,
                                            const ClientRunOptions& options);

/// The size of the /exec request body run_script sends for this VM, script and arguments (so
/// callers can fill a request to exe.dev's 64 KiB limit). Throws std::invalid_argument as
/// run_script would.
[[nodiscard]] std::size_t script_request_bytes(const std::string& vm, const std::string& script,
                                               const std::vector<std::string>& args);

/// Quotes a word for the lobby lexer (`'…'`, each `'` as `'"'"'`, shlex.quote's escape) so that
/// it arrives exactly: `it's` becomes `'it'"'"'s'`.
/// Throws std::invalid_argument for a word that cannot arrive: empty (the lexer drops empty
/// words), containing NUL, or not valid UTF-8.
[[nodiscard]] std::string lobby_quote(std::string_view word);

}  // namespace exedev
