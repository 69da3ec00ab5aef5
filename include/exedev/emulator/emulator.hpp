#pragma once
// exedev::emulator: a local exe.dev. A real HTTPS server on loopback that speaks exe.dev's
// `POST /exec` protocol (docs/emulator.md). VMs are directories, their commands are real
// processes. Behaviours the specification leaves unknown are modes (Modes below), so a client
// can be tested against every plausible production behaviour.
//
// Thread safety: every member function may be called from any thread while the server runs on
// its own thread.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <exedev/coawait_guard.hpp>

namespace exedev::emulator {

/// What `ssh <vm> …` does when the VM is paused (unknown in production).
enum class PausedVmSsh {
  refuse,       ///< 422 {"error":"VM \"x\" is paused"} before anything runs (default).
  auto_resume,  ///< resume the VM (SIGCONT, status running), then run the command.
};

/// What happens to an `ssh` command when its HTTP client goes away (production: keeps running).
enum class OnClientDisconnect {
  keep_running,  ///< the command runs to its end; its output is discarded (default).
  kill,          ///< SIGKILL to the command's process group.
};

/// Whether the `X-Exe-Exit` trailer reaches the client.
enum class Trailers {
  send,   ///< `Trailer: X-Exe-Exit` header and the trailer after the last chunk (default).
  strip,  ///< neither the header nor the trailer, as a trailer-stripping proxy would do.
};

/// How `ssh` answers a command that exits non-zero (unknown in production; the addendum says
/// to assume 200 and accept 422 too).
enum class SshNonzeroExit {
  stream,         ///< 200, the output as it arrives, `X-Exe-Exit: <code>` (default).
  unprocessable,  ///< the response waits for the command's end: a non-zero exit answers 422
                  ///< {"error":"command exited with status N"} and its output is not delivered;
                  ///< exit 0 answers 200 with the output and the trailer.
};

/// The JSON shape of a successful `cp`.
enum class CpResponse {
  legacy,    ///< {"name","state":"starting","source","ssh","elapsed"} (May 2026 code; default).
  new_like,  ///< the fields of `new` (vm_name, ssh_dest, ssh_host, …) plus "source".
};

/// The token bucket of exe.dev's rate limiter (§6), one bucket per token.
struct RateLimit {
  bool enabled = false;            ///< off by default: tests should not trip over it.
  double burst = 60;               ///< bucket size.
  double refill_per_second = 1;    ///< tokens added per second.
  double overdraft = 120;          ///< how far into debt refused requests push the bucket.
  /// A 429 carries `Retry-After: <seconds until the bucket holds a token, rounded up>` (never
  /// seen in exe.dev's public code; off by default).
  bool retry_after = false;
};

/// Behaviours that can change at run time (Emulator::set_modes).
struct Modes {
  /// Limit on one `ssh` request. At the limit the response body just ends, without a trailer
  /// (the connection is closed); the command keeps running. nullopt = no limit.
  std::optional<std::chrono::milliseconds> ssh_time_limit = std::chrono::seconds(30);
  /// The lobby deadline: a lobby command that fails after it answers 504 (production: 30 s).
  std::chrono::milliseconds lobby_deadline = std::chrono::seconds(30);
  PausedVmSsh paused_vm_ssh = PausedVmSsh::refuse;
  OnClientDisconnect on_client_disconnect = OnClientDisconnect::keep_running;
  Trailers trailers = Trailers::send;
  SshNonzeroExit ssh_nonzero_exit = SshNonzeroExit::stream;
  /// How an `ssh` stream cut by the time limit or by its VM's removal ends (unknown in
  /// production): nullopt = the body just ends, without the last chunk (default); a value = the
  /// body ends properly with `X-Exe-Exit: <value>` (when trailers are sent).
  std::optional<int> cut_exit_code{};
  /// While a VM boots, `ssh <vm> true` succeeds (exe.dev's own REPL answers it) while any
  /// other command gets 422 `failed to connect to VM: …`. Off: every command gets the 422.
  bool unready_true_quirk = false;
  CpResponse cp_response = CpResponse::legacy;
  RateLimit rate_limit{};
  /// Added before every /exec request is handled (after it is read).
  std::chrono::milliseconds latency{0};
  /// Time a new or copied VM takes before it runs commands; `ls` shows `creating` meanwhile.
  std::chrono::milliseconds boot_delay{0};
};

/// What a token may do. An emulator token is an `exe1.` + 26 × [A-Z2-7] handle.
struct TokenSpec {
  /// Allowed canonical command names; nullopt = exe.dev's defaults (§2.3, which exclude ssh and
  /// rm); an empty list allows nothing. An entry "ssh <vm>" allows ssh to that VM only.
  std::optional<std::vector<std::string>> cmds{};
  /// Tag scope (§2.4): the token sees and touches only VMs with this tag.
  std::optional<std::string> tag{};
  /// Expiry of the token (401 after it).
  std::optional<std::chrono::system_clock::time_point> expires_at{};
  /// Expiry of the signing key row (403 "SSH key has expired" after it).
  std::optional<std::chrono::system_clock::time_point> key_expires_at{};
  /// The key label shown by whoami; empty = "api-key-N".
  std::string label{};
  EXEDEV_COAWAIT_GUARD;
};

/// The kinds of injected failure.
enum class FaultKind {
  reset_before_run,  ///< close the connection (TCP RST) without running the command.
  reset_after_run,   ///< run the command, then close the connection without answering.
  http_status,       ///< run the command, then answer `status` (500, 502 or 504) instead.
  truncate_stream,   ///< ssh only: send `after_bytes` output bytes, then close: no trailer.
  bad_json,          ///< run the command, answer 200 with a body that is not JSON.
  stall,             ///< hold the request for `duration` without answering, then close it.
};

/// A fault applied to the next `count` /exec requests that match.
struct Fault {
  FaultKind kind = FaultKind::reset_before_run;
  // (`{}` on every member: GCC 12 warns about members a designated initializer leaves out
  // unless they have one.)
  std::string command{};         ///< canonical command name ("ssh", "ls", …); empty = any.
  std::string vm{};              ///< VM name the request targets; empty = any.
  std::size_t count = 1;
  /// Matching requests let through untouched before the fault applies (to hit, say, the third
  /// request of an operation).
  std::size_t skip = 0;
  unsigned status = 500;         ///< http_status
  std::size_t after_bytes = 0;   ///< truncate_stream
  std::chrono::milliseconds duration = std::chrono::seconds(60);  ///< stall
  EXEDEV_COAWAIT_GUARD;
};

struct Options {
  /// VMs live here (one directory each, metadata in emulator-state.json). Empty = a fresh temporary
  /// directory removed on destruction. A new Emulator on the same directory sees the same VMs
  /// and accepts the same tokens.
  std::filesystem::path state_dir{};
  std::string host = "127.0.0.1";  ///< a loopback address only ("127.x.y.z", "::1", "localhost").
  std::uint16_t port = 0;          ///< 0 = pick a free port.
  bool plain_http = false;         ///< debugging only: no TLS.
  /// Tests only: serve a certificate (signed by the emulator's CA) whose validity ended a day ago.
  bool expired_certificate = false;
  /// Secret of the control endpoint `POST /_emulator/…` (header X-Emulator-Control);
  /// empty = a random one (control_secret()).
  std::string control_secret{};
  /// The all-commands token; empty = a random one (persisted in state_dir).
  std::string token{};
  /// Extra tokens to accept (for a tokens file or the command line).
  std::map<std::string, TokenSpec> tokens{};
  /// The VM user's login shell: `ssh` command lines run as `<shell> -c <line>` with
  /// SHELL=<shell>, as sshd runs them. Empty = /bin/bash when this machine has it (exeuntu's
  /// login shell is bash), else /bin/sh.
  std::string login_shell{};
  Modes modes{};
  EXEDEV_COAWAIT_GUARD;
};

struct VMRecord {
  std::string name;
  std::string status;  ///< creating, running, paused
  std::vector<std::string> tags;
  std::string comment;
  std::string image;
  std::filesystem::path dir;   ///< the VM's directory
  std::filesystem::path home;  ///< HOME and cwd of its commands
  std::chrono::system_clock::time_point created_at;
  unsigned cpus = 2;
  std::uint64_t memory_bytes = 0;
  std::uint64_t disk_bytes = 0;
  std::vector<std::string> env;  ///< KEY=VALUE from `new --env`
  std::vector<std::string> integrations;
  bool standalone = false;
  std::string egress;  ///< "all" or "integrations"
};

struct CommandRecord {
  std::vector<std::string> words;  ///< the lexed command line (empty if it did not lex)
  std::string command;             ///< canonical command name, empty if unresolved
  std::string vm;                  ///< the VM it targets, if any
  unsigned http_status = 0;        ///< 0 = no response was sent (reset, stall, disconnect)
  std::optional<int> exit_code;    ///< ssh: the remote exit code if the command finished
  std::chrono::system_clock::time_point time;
};

class Emulator {
 public:
  /// Starts the server on its own thread; returns once it listens. Throws std::runtime_error
  /// (or std::invalid_argument for a non-loopback host) if it cannot.
  explicit Emulator(Options options);
  /// With default options.
  Emulator();
  /// Stops the server, kills every VM process, removes a temporary state_dir.
  ~Emulator();
  Emulator(const Emulator&) = delete;
  Emulator& operator=(const Emulator&) = delete;

  std::string url() const;                  ///< e.g. https://127.0.0.1:PORT
  std::uint16_t port() const;
  std::filesystem::path ca_file() const;    ///< PEM of the CA that signed the server cert
  std::filesystem::path state_dir() const;
  std::string token() const;                ///< all commands allowed, no tag scope
  std::string control_secret() const;
  std::string issue_token(TokenSpec spec);  ///< a new exe1. token
  void revoke_token(const std::string& token);

  void inject(Fault fault);
  void clear_faults();
  Modes modes() const;
  void set_modes(Modes modes);

  std::vector<VMRecord> vms() const;
  std::optional<VMRecord> vm(const std::string& name) const;
  /// Process ids currently running for a VM (including detached ones).
  std::vector<int> vm_processes(const std::string& name) const;
  /// Every /exec request that was read, in order. A request is recorded before the client can
  /// see the end of its response (or the connection reset), so it is here once a call returns.
  std::vector<CommandRecord> commands() const;
  void clear_commands();
  std::size_t connections_accepted() const;
  std::size_t open_connections() const;

  /// Stops the server and starts it again on the same port, reloading VMs and tokens from
  /// state_dir as a fresh emulator process would: open connections and in-flight `ssh` streams
  /// are cut (no trailer), VM processes are killed, injected faults are dropped; command records,
  /// modes and the connection counters stay.
  void restart();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace exedev::emulator
