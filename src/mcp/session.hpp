#pragma once
// The sans-IO core of exedev-mcp: one MCP session over JSON-RPC 2.0. Lines in (each one
// JSON-RPC message, without its newline), actions out: messages to write and work for the I/O
// layer (list tools, start or cancel a tool call, shut down). It never blocks and does no I/O,
// so every protocol rule is unit-tested without processes (tests/unit/mcp).
//
// Protocol: MCP revisions 2025-11-25 (the latest), 2025-06-18, 2025-03-26, 2024-11-05 and
// 2024-10-07 (what the official TypeScript SDK client offers). An initialize asking for one of
// them gets it; any other gets the latest. Requests, notifications and responses follow
// JSON-RPC 2.0; a batch (a JSON array, which the latest revision removed) is an invalid request.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <exedev/tools/toolset.hpp>

#include <nlohmann/json_fwd.hpp>

namespace exedev::mcp {

/// The I/O layer's handle of one request it works on (tools/list or tools/call).
using WorkId = std::uint64_t;

/// Write this JSON-RPC message (one line, without the newline).
struct SendMessage {
  std::string json;
};
/// Collect the tools of every tool set, then call Session::tools_listed (or tools_list_failed).
struct ListTools {
  WorkId work = 0;
};
/// Run tool `name`, then call Session::call_finished (or call_unknown_tool, call_crashed).
/// Live output goes to Session::call_output.
struct StartCall {
  WorkId work = 0;
  std::string name{};
  std::string arguments{};     ///< JSON object text.
  std::string tool_call_id{};  ///< The JSON-RPC request id, as JSON text.
};
/// Cancel a call started earlier; its result, when it comes, is dropped.
struct CancelCall {
  WorkId work = 0;
};
/// Stop reading, cancel what runs, write what is queued, exit with `exit_code`.
struct Shutdown {
  int exit_code = 0;
  std::string reason{};
};

using Action = std::variant<SendMessage, ListTools, StartCall, CancelCall, Shutdown>;
using Actions = std::vector<Action>;

/// The protocol revisions this server speaks, newest first.
[[nodiscard]] const std::vector<std::string>& supported_protocol_versions();

struct ServerInfo {
  std::string name = "exedev-mcp";
  std::string version{};
  std::string instructions{};  ///< Sent in the initialize result when not empty.
};

// JSON-RPC 2.0 and MCP error codes.
inline constexpr int parse_error = -32700;
inline constexpr int invalid_request = -32600;
inline constexpr int method_not_found = -32601;
inline constexpr int invalid_params = -32602;
inline constexpr int internal_error = -32603;
/// The workspace is gone (a tool's end_run outcome): the session ends after this error.
inline constexpr int workspace_unavailable = -32000;

class Session {
 public:
  explicit Session(ServerInfo info);

  /// One line read from the client.
  Actions receive(std::string_view line);
  /// A line longer than `limit` bytes arrived; the I/O layer skips it.
  Actions oversized_message(std::size_t limit);
  /// The input ended: cancel every call in flight, then shut down (exit code 0).
  Actions end_of_input();

  Actions tools_listed(WorkId work, const std::vector<tools::ToolDefinition>& tools);
  Actions tools_list_failed(WorkId work, std::string_view message);
  /// Live output of a call: a progress notification when the client asked for progress.
  Actions call_output(WorkId work, std::string_view text);
  Actions call_finished(WorkId work, const tools::ToolResult& result);
  /// No tool set has a tool of that name.
  Actions call_unknown_tool(WorkId work);
  /// The tool threw (a bug in a tool set; the session goes on).
  Actions call_crashed(WorkId work, std::string_view message);

  [[nodiscard]] bool initialized() const noexcept { return initialized_; }
  [[nodiscard]] const std::string& protocol_version() const noexcept { return protocol_version_; }
  [[nodiscard]] bool shutting_down() const noexcept { return shutting_down_; }
  /// Work started and not yet reported back (cancelled work included).
  [[nodiscard]] std::size_t work_in_flight() const noexcept { return work_.size(); }

 private:
  struct Work {
    std::string request_id;  ///< JSON text of the request's id.
    std::string tool_name;
    std::optional<std::string> progress_token;  ///< JSON text, when the client sent one.
    std::uint64_t progress = 0;
    bool cancelled = false;
  };

  Actions handle_request(const std::string& id, const std::string& method, const nlohmann::json& params);
  Actions handle_notification(const std::string& method, const nlohmann::json& params);
  Actions shut_down(int exit_code, std::string reason);
  Work* live_work(WorkId work);
  /// Removes finished work; returns it unless it was cancelled (then nothing is answered).
  std::optional<Work> take(WorkId work);
  Actions finish(WorkId work, int code, const std::string& message);

  ServerInfo info_;
  bool initialized_ = false;
  bool shutting_down_ = false;
  std::string protocol_version_{};
  WorkId next_work_ = 1;
  std::map<WorkId, Work> work_{};
  std::set<std::string> pending_ids_{};  ///< Request ids still to be answered.
};

}  // namespace exedev::mcp
