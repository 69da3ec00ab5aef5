#pragma once
// The emulator's modes: each behaviour the specification leaves unknown, selectable so that a
// client can be tested against every plausible production behaviour (docs/emulator.md).

#include <chrono>
#include <cstddef>
#include <optional>

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

/// Where `new`, `ls` and `cp` say a VM's SSH endpoint is (the shapes of exe.dev's answers).
enum class SshDestination {
  /// The newer API: `ssh_host` `<domain>`, `ssh_user` `vm+<name>` (a routing name),
  /// `ssh_dest` `vm+<name>@<domain>`, `ssh_port` the name endpoint's (default).
  vm_plus,
  /// `ssh_host` and `ssh_dest` `<name>.<domain>`, no `ssh_user`, `ssh_port` the VM's shard's.
  vm_domain,
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
  /// The SSH endpoints accept connections and never send a byte (what the client sends is read
  /// and dropped until it closes), as exe.dev's edge does with new connections to port 22 above
  /// its per-source-IP rate. Connections open before it was set are served on.
  bool ssh_silent = false;
  /// The shape of the SSH fields of `new`, `ls` and `cp` answers.
  SshDestination ssh_destination = SshDestination::vm_plus;
  /// Time a new or copied VM takes before it runs commands; `ls` shows `creating` meanwhile.
  std::chrono::milliseconds boot_delay{0};
};

}  // namespace exedev::emulator
