#pragma once
// ClientOptions: how an exedev::Client reaches exe.dev (token or an SSH key that mints tokens,
// endpoint, CA, timeouts, retries, the rate limit, logging).

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <exedev/coawait_guard.hpp>
#include <exedev/ssh/key_source.hpp>

namespace exedev {

/// Which requests are re-sent after a failure, and how long to wait in between. Read-only
/// commands (`ls`, `whoami`, `help`) are retried on 5xx and connection errors; no other command
/// is, so nothing that changes state is ever re-sent once it may have run. Waits are exponential
/// (initial_backoff doubling up to max_backoff, with jitter between half and all of it). A 429
/// is not a failure but the rate limit: RateLimitOptions says what happens then. run()'s own
/// requests follow its protocol instead (see run()).
struct RetryPolicy {
  int max_retries = 3;  ///< 0 disables retries.
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{8000};
};

/// exe.dev's rate limit (exedev-api.md §6: a token bucket per key, 60 requests of burst, then 1
/// per second; a refused request still takes a token, down to 120 of debt) is waited for, not
/// thrown (ADR 11). Every Client of the same token and endpoint in the process shares one model
/// of the bucket. The model is learned from exe.dev's first 429 (and its Retry-After, when sent);
/// from then on a request waits until the model holds a token, and a 429 (refused before
/// anything ran) is sent again after the wait the model implies, for every command. A wait over
/// a second is logged (info). Only when the wait would pass an operation's own deadline (run()'s
/// timeout, the stop after it) is RateLimitedError thrown, its retry_after() the wait it needed.
/// The numbers are the first client's for the process.
struct RateLimitOptions {
  /// Off: nothing waits, and a 429 is thrown at once as RateLimitedError.
  bool wait = true;
  /// Pace from the first request with a full bucket, instead of from the first 429: for a
  /// process that knows it has the key to itself and would rather see no 429 at all.
  bool pace_from_start = false;
  double burst = 60;
  double per_second = 1;
  double overdraft = 120;
};

enum class LogLevel { debug, info, warning, error };

/// A log line. Never contains a token, an environment value or a response body.
using Logger = std::function<void(LogLevel, std::string_view)>;

/// exe0 tokens the client signs itself with an SSH key registered with exe.dev (`ssh exe.dev
/// ssh-key add`; exedev-api.md §2), instead of an API token: each allows only `cmds` and expires
/// `lifetime` after it is made; the next is made before that, so no request fails for an expired
/// token. A 401 then throws AuthenticationError naming the key's fingerprint. Tokens are never
/// logged or put in a message.
struct TokenMinting {
  /// The key, chosen as an SSH connection to ssh_config_host chooses it (SshKeySource; the
  /// user's ~/.ssh/config included).
  SshKeySource key{};
  /// The host whose ssh_config section (IdentityFile, IdentitiesOnly) applies: the one the key is
  /// registered through (`ssh exe.dev ssh-key add`).
  std::string ssh_config_host = "exe.dev";
  /// exp = now + lifetime (at least 10 s).
  std::chrono::seconds lifetime{300};
  /// The commands the tokens allow (exact names, e.g. "share show"); nullopt: every command the
  /// typed calls of Client send (not what Client::exec is given), and for a Client that VMs,
  /// SandboxBackend or Sandbox make from these options, only the commands that facade sends
  /// (docs/client.md, "What a token allows", lists each).
  std::optional<std::vector<std::string>> cmds{};
  EXEDEV_COAWAIT_GUARD;
};

struct ClientOptions {
  /// API token; when empty, EXE_TOKEN; when neither is set, tokens minted as `minting` says. A
  /// client with none of the three throws AuthenticationError (status 0) on its first request;
  /// the message says how to create a token.
  std::optional<std::string> token{};
  /// Mint exe0 tokens with an SSH key when no token is configured (token, EXE_TOKEN).
  std::optional<TokenMinting> minting{};
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
  RateLimitOptions rate_limit{};
  std::string user_agent = "exedev-cpp";
  Logger logger{};
  EXEDEV_COAWAIT_GUARD;
};

}  // namespace exedev
