#pragma once
// Reading /exec answers: the JSON shapes of each command and the mapping of error statuses to
// exceptions, sans-IO.

#include "errors/status_codes.hpp"

#include <exedev/client.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::detail {

/// The server's own message from a `{"error": …}` body; for anything else only its size (a
/// response body is never repeated), or nothing for an empty one. `secrets` are masked.
[[nodiscard]] std::string server_message(std::string_view body, const std::vector<std::string>& secrets);

/// Throws the APIError subclass that `status` maps to (400/405/413 BadRequestError, 401
/// AuthenticationError, 403 PermissionError, 404 NotFoundError, 422 CommandFailedError, 429
/// RateLimitedError, with `retry_after`, 504 GatewayTimeoutError, other 5xx ServerError, anything
/// else APIError).
[[noreturn]] void throw_api_error(unsigned status, const std::string& command, std::string_view body,
                                  const std::vector<std::string>& secrets,
                                  std::optional<std::chrono::milliseconds> retry_after = std::nullopt);

/// Checks a lobby answer: non-200 throws as above; a 200 whose (last) object is only
/// `{"error": …}` throws too (NotFoundError for "unknown command", else CommandFailedError).
void check_lobby_answer(unsigned status, const std::string& command, std::string_view body,
                        const std::vector<std::string>& secrets,
                        std::optional<std::chrono::milliseconds> retry_after = std::nullopt);

[[nodiscard]] VMInfo parse_vm_answer(std::string_view body, const std::string& command);  // new, cp
[[nodiscard]] std::vector<VMInfo> parse_list_answer(std::string_view body);
[[nodiscard]] RemoveResult parse_remove_answer(std::string_view body);
[[nodiscard]] std::vector<std::string> parse_tags_answer(std::string_view body);
[[nodiscard]] WhoAmI parse_whoami_answer(std::string_view body);
/// For answers whose shape is not pinned down (pause, resume, restart, comment): one JSON object.
void parse_object_answer(std::string_view body, const std::string& command);
/// The `share` answers (shapes: execore/ssh_share.go; docs/emulator.md, "share").
[[nodiscard]] ShareInfo parse_share_show_answer(std::string_view body);
[[nodiscard]] ShareRoute parse_share_route_answer(std::string_view body, const std::string& command);
[[nodiscard]] ShareLinkCreated parse_share_link_answer(std::string_view body);
[[nodiscard]] ShareChange parse_share_change_answer(std::string_view body, const std::string& command);
/// `resize`'s answer: the old and new sizes of what changed.
[[nodiscard]] ResizeResult parse_resize_answer(std::string_view body);

}  // namespace exedev::detail
