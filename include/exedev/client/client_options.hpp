#pragma once
// ClientOptions: how an exedev::Client reaches exe.dev (token, endpoint, CA, timeouts, retries,
// pacing, logging).

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <exedev/coawait_guard.hpp>

namespace exedev {

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

}  // namespace exedev
