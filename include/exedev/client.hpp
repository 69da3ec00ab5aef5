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
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <exedev/coawait_guard.hpp>
#include <exedev/errors.hpp>
#include <exedev/string_list.hpp>

namespace exedev {

template <typename T>
using Task = boost::asio::awaitable<T>;

/// Which requests are re-sent, and how long to wait in between. Read-only commands (`ls`,
/// `whoami`, `help`) are retried on 429, 5xx and connection errors; every other command (new,
/// cp, rm, ssh, tag, …) only on 429, which exe.dev answers before the command runs
/// (exedev-api.md §1.5), so nothing that changes state is ever re-sent once it may have run.
/// Waits are exponential (initial_backoff doubling up to max_backoff, with jitter between half
/// and all of it); a Retry-After header, when longer, wins. run()'s own requests follow its
/// protocol instead (see run()).
struct RetryPolicy {
  int max_retries = 3;  ///< 0 disables retries.
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{8000};
};

/// Client-side pacing: a token bucket every request takes a token from before it is sent, so
/// bulk work waits locally instead of collecting 429s. The defaults are exe.dev's documented
/// limit (60 requests of burst, then 1 per second per key; exedev-api.md §6). Off by default.
struct PacingOptions {
  bool enabled = false;
  double burst = 60;
  double per_second = 1;
};

enum class LogLevel { debug, info, warning, error };

/// A log line. Never contains a token, an environment value or a response body.
using Logger = std::function<void(LogLevel, std::string_view)>;

struct ClientOptions {
  /// API token; when empty, EXE_TOKEN. A client with neither throws AuthenticationError
  /// (status 0) on its first request; the message says how to create a token.
  std::optional<std::string> token{};
  /// Base URL (`https://host[:port][/prefix]`, or `http://` for a plain-HTTP emulator); when
  /// empty, EXE_BASE_URL, else https://exe.dev. A malformed URL throws std::invalid_argument
  /// from the constructor.
  std::optional<std::string> endpoint{};
  /// PEM file of CAs trusted besides the system trust store; when empty, EXE_CA_FILE. Peers are
  /// always verified (certificate chain and host name); an unreadable file throws
  /// std::invalid_argument from the constructor.
  std::optional<std::string> ca_file{};
  std::chrono::milliseconds connect_timeout{10'000};    ///< Resolve + TCP connect.
  std::chrono::milliseconds handshake_timeout{10'000};  ///< TLS handshake.
  /// Limit on one lobby request (write + response), per attempt.
  std::chrono::milliseconds request_timeout{60'000};
  /// Most connections open at once; further requests wait for one.
  std::size_t max_connections = 8;
  /// Largest lobby response body read into memory (ProtocolError beyond).
  std::size_t max_response_bytes = 8 * 1024 * 1024;
  RetryPolicy retry{};
  PacingOptions pacing{};
  std::string user_agent = "exedev-cpp";
  Logger logger{};
  EXEDEV_COAWAIT_GUARD;
};

/// A VM's status. `raw` keeps the server's word, for values this library does not know.
struct VMStatus {
  enum class Kind { creating, starting, pending, running, paused, stopped, failed, building, unknown, other };
  Kind kind = Kind::unknown;
  std::string raw;
  /// Known words map to their Kind, the empty string to `unknown`, anything else to `other`.
  [[nodiscard]] static VMStatus parse(std::string_view text);
  friend bool operator==(const VMStatus&, const VMStatus&) = default;
};

/// One VM as `ls` (or `new`/`cp`) describes it. Fields the server left out stay empty (`ls`
/// leaves out `image` for the default image, exeuntu, and sends `shelley_url` only for it).
/// `cp` answers in a legacy form (`name`, `state`, `ssh`) or like `new`; both are read.
struct VMInfo {
  std::string name;
  VMStatus status;
  std::vector<std::string> tags;
  std::string comment;
  std::string image;
  std::string region;
  std::string region_display;  ///< e.g. "Los Angeles, USA"
  std::string shelley_url;
  std::string created_at;  ///< RFC 3339, as sent.
  std::string ssh_dest;
  std::string ssh_host;
  std::string ssh_user;
  std::string https_url;
  std::optional<std::uint64_t> disk_capacity_bytes;
  std::optional<std::uint64_t> memory_capacity_bytes;
  std::optional<unsigned> allocated_cpus;
};

/// `new` flags; each is sent as `--flag=value` only when set.
struct NewVMOptions {
  std::optional<std::string> name{};
  std::optional<std::string> image{};
  std::optional<unsigned> cpu{};
  std::optional<std::string> memory{};  ///< e.g. "8G".
  std::optional<std::string> disk{};
  std::vector<std::string> tags{};      ///< One `--tag=` each.
  std::optional<std::string> comment{}; ///< An empty comment is not sent.
  std::map<std::string, std::string> env{};  ///< VM-level environment (`--env=K=V`); values never appear in errors.
  std::vector<std::string> integrations{};
  /// `--egress=<value>` ("all" or "integrations"). exe.dev does not document this flag yet;
  /// the name is this library's choice.
  std::optional<std::string> egress{};
  bool standalone = false;  ///< `--standalone=true`.
  EXEDEV_COAWAIT_GUARD;
};

/// `cp <source> [name]` flags.
struct CopyVMOptions {
  std::string source{};
  std::optional<std::string> name{};
  bool copy_tags = true;  ///< false sends `--copy-tags=false`.
  std::optional<unsigned> cpu{};
  std::optional<std::string> memory{};
  std::optional<std::string> disk{};
  std::optional<std::string> egress{};
  bool standalone = false;
  EXEDEV_COAWAIT_GUARD;
};

/// `resize` flags; at least one must be set. Sizes as for `new` (e.g. "16G"; a plain number is
/// GiB). The disk only grows (exe.dev refuses a smaller or equal size, and growth over 250 GiB at
/// once). A memory or CPU change takes effect when the VM restarts.
struct ResizeVMOptions {
  std::optional<std::string> memory{};
  std::optional<unsigned> cpu{};
  std::optional<std::string> disk{};  ///< The new total size.
  EXEDEV_COAWAIT_GUARD;
};

/// What `resize` changed: before and after, for what was asked (memory and CPUs come together).
struct ResizeResult {
  std::optional<std::uint64_t> old_memory_bytes;
  std::optional<std::uint64_t> new_memory_bytes;
  std::optional<unsigned> old_cpus;
  std::optional<unsigned> new_cpus;
  std::optional<std::uint64_t> old_disk_bytes;
  std::optional<std::uint64_t> new_disk_bytes;
};

struct RemoveResult {
  std::vector<std::string> deleted;
  std::vector<std::string> failed;  ///< Missing or not deletable (exe.dev still answers 200).
};

struct WhoAmI {
  std::string email;
  std::string region;
};

/// The raw answer to one /exec request.
struct ExecResponse {
  unsigned status = 0;
  std::string body;
  /// An `ssh` answer's exit code from its X-Exe-Exit trailer; nullopt without one (a proxy
  /// stripped it, the stream was cut, or the command was not ssh).
  std::optional<int> exit_code;
};

/// Options of Client::run.
struct RunOptions {
  /// Exported before the command (names: [A-Za-z_][A-Za-z0-9_]*). Values never appear in
  /// errors or logs.
  std::map<std::string, std::string> env{};
  /// `cd` before the command; when it fails the command is not run and the exit code is 1.
  std::optional<std::string> working_dir{};
  /// Enforced on the VM (TERM, then KILL after 5 s, to the command's whole process group) and
  /// locally (8 s later, in case the VM cannot report it: the client then stops the command
  /// itself, in at most 12 s). run() returns at most 20 s after the timeout. Throws
  /// RunTimeoutError (OutcomeUnknownError when the stop could not be confirmed). A timeout of
  /// 100 years or more (or infinite) is no limit.
  std::optional<std::chrono::duration<double>> timeout{};
  /// stdout + stderr together; past it the command is stopped and OutputLimitError thrown.
  std::size_t max_output_bytes = 8 * 1024 * 1024;
  /// Called with output as it arrives (optional): raw bytes, in order, split anywhere. Called on
  /// the client's executor; it must not block. An exception thrown by a callback stops the
  /// command and propagates from run().
  std::function<void(std::string_view)> on_stdout{};
  std::function<void(std::string_view)> on_stderr{};
  EXEDEV_COAWAIT_GUARD;
};

/// Options of Client::run_script.
struct ScriptOptions {
  /// Positional parameters ($1, $2, …): each non-empty base64 text (A-Z a-z 0-9 + / =). They
  /// travel once, as they are; the script travels base64-encoded.
  std::vector<std::string> args{};
  /// Most stdout bytes read; a longer answer throws OutputLimitError (the script ran).
  std::size_t max_output_bytes = 8 * 1024 * 1024;
  /// Running the script twice leaves the same state as once. Then a 5xx, a connection lost
  /// after sending and a cut answer are retried under ClientOptions::retry; otherwise they
  /// throw (the script may have run). A request that was never sent is always retried.
  bool idempotent = false;
  EXEDEV_COAWAIT_GUARD;
};

/// A finished command: exact bytes, separate streams, the real exit code (128 + N when a
/// signal N ended it).
struct RunResult {
  int exit_code = 0;
  std::string stdout_bytes;
  std::string stderr_bytes;
};

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

  /// Sends one lobby command line as is and returns the answer, whatever its status. Retried
  /// (see RetryPolicy) only when its first word is a read-only command. Throws ConnectionError,
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
  /// `resize <vm>` (std::invalid_argument without any option; nothing is sent). exe.dev refuses
  /// it to a tag-scoped token. Cancellation: the VM may or may not have been resized.
  Task<ResizeResult> resize_vm(std::string name, ResizeVMOptions options);
  /// `rename <vm> <new_name>`: the VM must be running. Renaming to the same name sends nothing.
  /// Cancellation: the VM may or may not have been renamed (`ls` either name to know).
  Task<void> rename_vm(std::string name, std::string new_name);

  /// Runs a shell line on a VM and returns its exit code and its stdout and stderr, separate
  /// and exact. The line runs in the VM user's login shell (`$SHELL -l`, as the ssh session sets
  /// it; /bin/sh when SHELL is unset, not executable, or not POSIX-compatible: csh, tcsh, fish,
  /// nu, xonsh, elvish, pwsh), in their home directory unless working_dir says otherwise. Its
  /// environment is the login environment (the profile runs first), then RunOptions::env. The
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
  /// started, e.g. 422 for a missing or paused VM); ProtocolError (an answer could not be read
  /// and the VM confirmed the stop, or that the command never started). An exception thrown by
  /// an output callback stops the command and propagates as it is. A non-zero exit code is a
  /// result, never an exception. No error claims a stop the VM did not confirm.
  ///
  /// Bounds: with a timeout, run returns at most 20 s after it (whatever the server does:
  /// trickling, endless or unreadable answers); without one, each request is bounded (its
  /// 20 s wait plus 25 s), and after a cancellation, the output limit or an unreadable answer
  /// the stop takes at most 12 s. The launch request is never sent twice.
  ///
  /// Cancellation: the remote command's process group is stopped (TERM, then KILL) with a
  /// follow-up request that runs shielded from further cancellation (at most 12 s), then
  /// operation_aborted is thrown.
  Task<RunResult> run(std::string vm, std::string shell_line, RunOptions options);
  /// run() with default options.
  Task<RunResult> run(std::string vm, std::string shell_line);

  /// Runs a short POSIX sh script on a VM in one request (started like run(), in the home
  /// directory, stdin at EOF) and returns its exit code, stdout and the first 64 KiB of its
  /// stderr. For bounded work (file operations) that finishes well within exe.dev's ~30 s
  /// request limit: nothing is left on the VM and nothing is polled. Use run() for commands.
  ///
  /// A 429 is retried (RetryPolicy); nothing else is re-sent. Throws ConnectionError with
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
  /// until close() has finished (it is bounded by the request timeouts); close() itself does not
  /// throw operation_aborted, and a cancellation that arrived meanwhile stays recorded in the
  /// caller's cancellation state (its next co_await raises it).
  Task<void> close();

  struct Impl;  ///< Implementation detail (opaque).

 private:
  std::shared_ptr<Impl> impl_;
};

/// The largest /exec request body run() sends for this VM, command and options (its launch,
/// with the most records of finished runs a request removes), so callers can tell whether a
/// command fits exe.dev's 64 KiB limit. Throws std::invalid_argument as run() would.
[[nodiscard]] std::size_t run_request_bytes(const std::string& vm, const std::string& shell_line,
                                            const RunOptions& options);

/// The size of the /exec request body run_script sends for this VM, script and arguments (so
/// callers can fill a request to exe.dev's 64 KiB limit). Throws std::invalid_argument as
/// run_script would.
[[nodiscard]] std::size_t script_request_bytes(const std::string& vm, const std::string& script,
                                               const std::vector<std::string>& args);

/// Quotes a word for the lobby lexer (`'…'`, each `'` as `'\''`) so that it arrives exactly.
/// Throws std::invalid_argument for a word that cannot arrive: empty (the lexer drops empty
/// words), containing NUL, or not valid UTF-8.
[[nodiscard]] std::string lobby_quote(std::string_view word);

}  // namespace exedev
