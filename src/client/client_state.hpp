#pragma once
// The state every copy of a Client shares, and the one path every lobby request takes (pacing,
// the retry policy). Internal to src/client: client.cpp holds the typed commands, client_run.cpp
// the run() protocol.

#include <exedev/client.hpp>

#include "client/lobby.hpp"
#include "client/retry.hpp"
#include "client/settings.hpp"
#include "client/transport.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::detail {

struct ClientState {
  boost::asio::any_io_executor executor;
  ClientOptions options;
  Settings settings;
  std::unique_ptr<Transport> transport;
  std::map<std::string, std::vector<std::string>> acks;  ///< VM → finished run records to remove
  std::optional<TokenBucket> pacing;  ///< Made on first use, from the final options.

  void log(LogLevel level, std::string_view text) const {
    if (options.logger) options.logger(level, text);
  }

  std::vector<std::string> secrets(std::vector<std::string> extra = {}) const {
    if (settings.token) extra.push_back(*settings.token);
    return extra;
  }

  /// Waits for a token of the pacing bucket (when pacing is on), then takes it.
  boost::asio::awaitable<void> pace();

  /// One lobby request with the retry policy: read-only commands are re-sent on 429, 5xx and
  /// connection errors, every other command on 429 only (answered before anything runs, §1.5).
  /// `sink` takes a 200 answer's body as it arrives.
  boost::asio::awaitable<HttpResponse> lobby(const std::string& line, const std::string& command, BodySink sink = {});

  /// The retry policy's backoff before retry number `attempt` (0-based), logged with `why`.
  boost::asio::awaitable<void> wait_before_retry(std::string_view command, std::string_view why, int attempt,
                                                 std::optional<std::chrono::milliseconds> retry_after);

  /// The retry policy's jittered backoff before retry number `attempt` (0-based).
  std::chrono::milliseconds retry_delay(int attempt, std::optional<std::chrono::milliseconds> retry_after);

  /// A lobby command whose answer must be a success: returns the body.
  /// GCC 12 destroys temporaries of a co_await full-expression twice: callers pass named objects.
  boost::asio::awaitable<std::string> call(const LobbyLine& line, const std::vector<std::string>& extra_secrets);
};

/// Removes the records of finished runs, in requests of a bounded size per VM. Records a
/// request did not remove stay listed, so the next close() (or run on that VM) tries again.
/// Throws the first failure once every VM was tried. (client_run.cpp)
boost::asio::awaitable<void> remove_finished_records(std::shared_ptr<ClientState> state);

}  // namespace exedev::detail
