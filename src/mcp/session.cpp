#include "mcp/session.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

namespace exedev::mcp {

namespace {

using nlohmann::json;

// Tool output is meant to be UTF-8; a stray invalid byte must not make a message unsendable.
std::string dump(const json& message) { return message.dump(-1, ' ', false, json::error_handler_t::replace); }

SendMessage result_message(const std::string& id, json result) {
  return SendMessage{dump(json{{"jsonrpc", "2.0"}, {"id", json::parse(id)}, {"result", std::move(result)}})};
}

SendMessage error_message(const std::optional<std::string>& id, int code, std::string_view message) {
  return SendMessage{dump(json{{"jsonrpc", "2.0"},
                               {"id", id ? json::parse(*id) : json(nullptr)},
                               {"error", {{"code", code}, {"message", std::string(message)}}}})};
}

Actions one(Action action) {
  Actions actions;
  actions.push_back(std::move(action));
  return actions;
}

bool is_request_id(const json& id) { return id.is_string() || id.is_number_integer() || id.is_number_unsigned(); }

json text_content(std::string_view text, bool is_error) {
  return json{{"content", json::array({json{{"type", "text"}, {"text", std::string(text)}}})}, {"isError", is_error}};
}

}  // namespace

const std::vector<std::string>& supported_protocol_versions() {
  static const std::vector<std::string> versions{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
                                                 "2024-10-07"};
  return versions;
}

Session::Session(ServerInfo info) : info_(std::move(info)) {}

Actions Session::receive(std::string_view line) {
  if (shutting_down_) return {};
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == std::string_view::npos) return {};  // blank lines carry nothing

  const json message = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded()) return one(error_message(std::nullopt, parse_error, "parse error: the line is not JSON"));
  if (message.is_array())
    return one(error_message(std::nullopt, invalid_request, "invalid request: batches are not supported"));
  if (!message.is_object())
    return one(error_message(std::nullopt, invalid_request, "invalid request: a message must be a JSON object"));

  const auto id_field = message.find("id");
  const bool has_id = id_field != message.end();
  const std::optional<std::string> id =
      has_id && is_request_id(*id_field) ? std::optional<std::string>(id_field->dump()) : std::nullopt;
  const auto version = message.find("jsonrpc");
  if (version == message.end() || *version != "2.0")
    return one(error_message(id, invalid_request, "invalid request: \"jsonrpc\" must be \"2.0\""));

  const auto method = message.find("method");
  if (method == message.end()) {
    // A response: this server sends no requests, so there is nothing to match it with.
    if (message.contains("result") || message.contains("error")) return {};
    return one(error_message(id, invalid_request, "invalid request: no \"method\""));
  }
  if (!method->is_string()) return one(error_message(id, invalid_request, "invalid request: \"method\" must be a string"));
  if (has_id && !id)
    return one(error_message(std::nullopt, invalid_request, "invalid request: \"id\" must be a string or an integer"));

  static const json no_params = json::object();
  const auto params_field = message.find("params");
  const json& params = params_field == message.end() ? no_params : *params_field;
  if (!params.is_object() && !params.is_array())
    return one(error_message(id, invalid_request, "invalid request: \"params\" must be an object"));

  if (!id) return handle_notification(method->get<std::string>(), params);
  if (pending_ids_.contains(*id))
    return one(error_message(id, invalid_request, "invalid request: a request with this id is still in progress"));
  if (!params.is_object()) return one(error_message(id, invalid_params, "invalid params: \"params\" must be an object"));
  return handle_request(*id, method->get<std::string>(), params);
}

Actions Session::oversized_message(std::size_t limit) {
  if (shutting_down_) return {};
  return one(error_message(std::nullopt, parse_error,
                        "parse error: a message longer than " + std::to_string(limit) + " bytes was skipped"));
}

Actions Session::handle_notification(const std::string& method, const json& params) {
  if (method != "notifications/cancelled" || !params.is_object()) return {};  // others need no answer
  const auto request_id = params.find("requestId");
  if (request_id == params.end() || !is_request_id(*request_id)) return {};
  const std::string key = request_id->dump();
  for (auto& [work_id, work] : work_) {
    if (work.request_id != key || work.cancelled) continue;
    // The client forgets the request: its answer is never sent (MCP cancellation).
    work.cancelled = true;
    pending_ids_.erase(key);
    return one(CancelCall{work_id});
  }
  return {};  // already answered, or never seen: the spec says to ignore it
}

Actions Session::handle_request(const std::string& id, const std::string& method, const json& params) {
  if (method == "ping") return one(result_message(id, json::object()));
  if (method == "initialize") {
    if (initialized_) return one(error_message(id, invalid_request, "invalid request: the session is already initialized"));
    const auto requested = params.find("protocolVersion");
    if (requested == params.end() || !requested->is_string())
      return one(error_message(id, invalid_params, "invalid params: \"protocolVersion\" must be a string"));
    const auto& versions = supported_protocol_versions();
    const bool supported = std::find(versions.begin(), versions.end(), requested->get<std::string>()) != versions.end();
    protocol_version_ = supported ? requested->get<std::string>() : versions.front();
    initialized_ = true;
    json result{{"protocolVersion", protocol_version_},
                {"capabilities", {{"tools", {{"listChanged", false}}}}},
                {"serverInfo", {{"name", info_.name}, {"version", info_.version}}}};
    if (!info_.instructions.empty()) result["instructions"] = info_.instructions;
    return one(result_message(id, std::move(result)));
  }
  if (method != "tools/list" && method != "tools/call")
    return one(error_message(id, method_not_found, "method not found: " + method));
  if (!initialized_)
    return one(error_message(id, invalid_request, "invalid request: the session is not initialized (send initialize first)"));

  const WorkId work_id = next_work_++;
  if (method == "tools/list") {
    work_.emplace(work_id, Work{.request_id = id, .tool_name = {}, .progress_token = {}});
    pending_ids_.insert(id);
    return one(ListTools{work_id});
  }

  const auto name = params.find("name");
  if (name == params.end() || !name->is_string())
    return one(error_message(id, invalid_params, "invalid params: \"name\" must be a string"));
  const auto arguments = params.find("arguments");
  if (arguments != params.end() && !arguments->is_object())
    return one(error_message(id, invalid_params, "invalid params: \"arguments\" must be an object"));
  std::optional<std::string> progress_token;
  if (const auto meta = params.find("_meta"); meta != params.end() && meta->is_object()) {
    if (const auto token = meta->find("progressToken"); token != meta->end()) {
      if (!is_request_id(*token))
        return one(error_message(id, invalid_params, "invalid params: a progressToken must be a string or an integer"));
      progress_token = token->dump();
    }
  }
  work_.emplace(work_id, Work{.request_id = id, .tool_name = name->get<std::string>(), .progress_token = progress_token});
  pending_ids_.insert(id);
  return one(StartCall{.work = work_id,
                    .name = name->get<std::string>(),
                    .arguments = arguments == params.end() ? std::string("{}") : dump(*arguments),
                    .tool_call_id = id});
}

std::optional<Session::Work> Session::take(WorkId work) {
  const auto found = work_.find(work);
  if (found == work_.end()) return std::nullopt;
  Work done = std::move(found->second);
  work_.erase(found);
  if (done.cancelled) return std::nullopt;
  pending_ids_.erase(done.request_id);
  return done;
}

Session::Work* Session::live_work(WorkId work) {
  const auto found = work_.find(work);
  return found == work_.end() ? nullptr : &found->second;
}

Actions Session::tools_listed(WorkId work, const std::vector<tools::ToolDefinition>& tools) {
  const auto taken = take(work);
  if (!taken) return {};
  const Work& done = *taken;
  json list = json::array();
  for (const auto& tool : tools) {
    json schema = json::parse(tool.parameters_schema, nullptr, false);
    if (schema.is_discarded() || !schema.is_object())
      return one(error_message(done.request_id, internal_error, "internal error: tool " + tool.name + " has an invalid schema"));
    list.push_back(json{{"name", tool.name}, {"description", tool.description}, {"inputSchema", std::move(schema)}});
  }
  return one(result_message(done.request_id, json{{"tools", std::move(list)}}));
}

Actions Session::tools_list_failed(WorkId work, std::string_view message) {
  return finish(work, internal_error, "internal error: listing the tools failed: " + std::string(message));
}

Actions Session::call_output(WorkId work, std::string_view text) {
  Work* live = live_work(work);
  if (live == nullptr || live->cancelled || !live->progress_token || text.empty()) return {};
  // progress must grow with every notification: the output's size so far does.
  live->progress += text.size();
  return one(SendMessage{dump(json{{"jsonrpc", "2.0"},
                                {"method", "notifications/progress"},
                                {"params",
                                 {{"progressToken", json::parse(*live->progress_token)},
                                  {"progress", live->progress},
                                  {"message", std::string(text)}}}})});
}

Actions Session::call_finished(WorkId work, const tools::ToolResult& result) {
  const auto taken = take(work);
  if (!taken) return {};
  const Work& done = *taken;
  switch (result.outcome) {
    case tools::ToolOutcome::success:
      return one(result_message(done.request_id, text_content(result.text, false)));
    case tools::ToolOutcome::retry:
    case tools::ToolOutcome::failed:
      return one(result_message(done.request_id, text_content(result.text, true)));
    case tools::ToolOutcome::end_run: {
      Actions actions{error_message(done.request_id, workspace_unavailable,
                                    "the workspace is unavailable, the session ends: " + result.text)};
      for (auto& action : shut_down(1, "the workspace is unavailable: " + result.text)) actions.push_back(std::move(action));
      return actions;
    }
  }
  return {};
}

Actions Session::call_unknown_tool(WorkId work) {
  const Work* live = live_work(work);
  return finish(work, invalid_params, "invalid params: unknown tool " + (live ? live->tool_name : std::string()));
}

Actions Session::call_crashed(WorkId work, std::string_view message) {
  return finish(work, internal_error, "internal error: the tool failed unexpectedly: " + std::string(message));
}

// Ends work whose answer is an error.
Actions Session::finish(WorkId work, int code, const std::string& message) {
  const auto taken = take(work);
  if (!taken) return {};
  const Work& done = *taken;
  return one(error_message(done.request_id, code, message));
}

Actions Session::end_of_input() {
  if (shutting_down_) return {};
  return shut_down(0, "end of input");
}

Actions Session::shut_down(int exit_code, std::string reason) {
  shutting_down_ = true;
  Actions actions;
  for (auto& [work_id, work] : work_) {
    if (work.cancelled) continue;
    work.cancelled = true;
    actions.push_back(CancelCall{work_id});
  }
  pending_ids_.clear();
  actions.push_back(Shutdown{exit_code, std::move(reason)});
  return actions;
}

}  // namespace exedev::mcp
