#pragma once
// The state every copy of a Client shares, and the one path every request takes (send: the rate
// limit, ADR 11; lobby: the retry policy). Internal to src/client: client.cpp holds the typed commands, client_run.cpp
// the run() protocol.

#include <exedev/client.hpp>

#include "client/lobby.hpp"
#include "client/minting.hpp"
#include "client/rate_limit.hpp"
#include "client/retry.hpp"
#include "client/settings.hpp"
#include "client/https_pool.hpp"

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
  std::unique_ptr<HttpsPool> https_pool;
  std::map<std::string, std::vector<std::string>> acks;  ///< VM → finished run records to remove
  /// The token's rate-limit model, shared in the process; made on first use (the token may be
  /// missing until then).
  std::shared_ptr<RateLimitModel> rate_limit;
  /// Client::account()'s first answer.
  std::optional<WhoAmI> account;
  /// Set when the client mints its tokens (ClientOptions::minting, no token configured).
  std::shared_ptr<TokenMinter> minter;

  void log(LogLevel level, std::string_view text) const {
    if (options.logger) options.logger(level, text);
  }

  std::vector<std::string> secrets(std::vector<std::string> extra = {}) const {
    if (settings.token) extra.push_back(*settings.token);
    if (minter) {
      if (auto minted = minter->current(); !minted.empty()) extra.push_back(std::move(minted));
    }
    return extra;
  }

  /// The token for a request sent now: the configured one, or the minter's (minted anew when
  /// the last is near its end). Throws AuthenticationError (status 0) when there is none.
  std::string request_token() const;
  /// The rate-limit model's identity: the token, or the minting key (one bucket per key, as
  /// exe.dev keeps them).
  std::string rate_limit_identity() const;
  /// A 401 to a minted token: throws AuthenticationError naming the key, and what to check.
  void check_minted_answer(const HttpResponse& response, std::string_view command) const;

  /// Every request goes through here: one POST under the rate-limit policy (ADR 11). With
  /// RateLimitOptions::wait, waits while the token's model holds no token and re-sends a request
  /// exe.dev refused with 429 (answered before anything runs) after the model's wait, logging a
  /// wait over a second and publishing it as a wait notice. Throws RateLimitedError, without
  /// sending again, when a wait would end after `deadline` (retry_after(): the wait needed).
  /// Otherwise returns the answer (a 429 only with waiting off) or throws what Transport::post
  /// throws. Cancellation: as Transport::post; a wait ends at once.
  boost::asio::awaitable<HttpResponse> send(const std::string& line, const PostOptions& post, std::string_view command,
                                            std::optional<std::chrono::steady_clock::time_point> deadline);

  /// One lobby request (send()) with the retry policy: read-only commands are re-sent on 5xx and
  /// connection errors; a 429 is send()'s.
  /// `sink` takes a 200 answer's body as it arrives.
  boost::asio::awaitable<HttpResponse> lobby(const std::string& line, const std::string& command, BodySink sink = {});

  /// The retry policy's jittered backoff before retry number `attempt` (0-based), logged with `why`.
  boost::asio::awaitable<void> wait_before_retry(std::string_view command, std::string_view why, int attempt,
                                                 std::optional<std::chrono::milliseconds> retry_after);

  /// A lobby command whose answer must be a success: returns the body.
  /// GCC 12 destroys temporaries of a co_await full-expression twice: callers pass named objects.
  boost::asio::awaitable<std::string> call(const LobbyLine& line, const std::vector<std::string>& extra_secrets);
};

/// Removes the records of finished runs, in requests of a bounded size per VM. Records a
/// request did not remove stay listed, so the next close() (or run on that VM) tries again.
/// Throws the first failure once every VM was tried. (client_run.cpp)
boost::asio::awaitable<void> remove_finished_records(std::shared_ptr<ClientState> state);

}  // namespace exedev::detail
