#include "tools/support.hpp"

#include "tools/python_format.hpp"
#include "workspace/shell_filesystem.hpp"

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/unavailable.hpp>

namespace exedev::tools {

namespace ws = exedev::workspace;

ToolResult retry_result(std::string text) {
  ToolResult result;
  result.outcome = ToolOutcome::retry;
  result.text = std::move(text);
  return result;
}

ToolResult tool_error_result(std::exception_ptr error) {
  ToolResult result;
  try {
    std::rethrow_exception(error);
  } catch (const ModelRetry& e) {
    return retry_result(e.what());
  } catch (const ws::WorkspaceUnavailableError& e) {
    result.outcome = ToolOutcome::end_run;
    result.text = e.what();
    result.error = error;
  } catch (const ws::WorkspaceReadOnlyError&) {
    result.outcome = ToolOutcome::failed;
    result.text = "The workspace is read-only; the change was refused.";
  } catch (const ws::WorkspaceError& e) {
    result.outcome = ToolOutcome::failed;
    result.text = *e.what() ? e.what() : "The workspace operation failed (WorkspaceError).";
  } catch (const std::filesystem::filesystem_error& e) {
    if (e.code() != std::errc::permission_denied) throw;
    return retry_result(e.what());
  }
  return result;
}

std::string truncate_tail(const std::string& text, std::size_t max_chars) {
  std::vector<std::size_t> starts;  // byte offset of every code point
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) starts.push_back(i);
  }
  const auto chars = starts.size();
  if (chars <= max_chars) return text;
  const auto marker = [](std::size_t kept) {
    return "[... output truncated, showing last " + std::to_string(kept) + " chars]\n";
  };
  const auto tail = [&](std::size_t kept) { return text.substr(kept == 0 ? text.size() : starts[chars - kept]); };
  if (marker(max_chars).size() >= max_chars) return tail(max_chars);
  std::size_t kept = max_chars - marker(max_chars).size();
  while (kept + 1 + marker(kept + 1).size() <= max_chars) ++kept;
  return marker(kept) + tail(kept);
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 failed");
  }
  std::string hex;
  char pair[3];
  for (unsigned int i = 0; i < length; ++i) {
    std::snprintf(pair, sizeof pair, "%02x", digest[i]);
    hex += pair;
  }
  return hex;
}

void require_workspace(const ws::Workspace& workspace, const std::string& owner) {
  if (workspace.attached()) return;
  const auto* unavailable = dynamic_cast<const ws::UnavailableBackend*>(workspace.backend().get());
  const std::string reason = unavailable ? unavailable->reason() : "it is not attached";
  throw ws::WorkspaceUsageError("`" + owner + "` cannot use this workspace: " + reason);
}

bool supports_commands(const ws::Workspace& workspace) {
  return workspace.attached() && !workspace.read_only() &&
         dynamic_cast<const ws::SupportsCommands*>(workspace.backend().get()) != nullptr;
}

workspace::Task<std::string> metadata_dir(std::shared_ptr<ws::Workspace> workspace, std::string name) {
  const auto root = ws::detail::posix_join(co_await workspace->working_dir(), ".pydantic-ai-harness");
  const auto directory = ws::detail::posix_join(root, name);
  const auto ignore = ws::detail::posix_join(root, ".gitignore");
  std::string failure;
  try {
    co_await workspace->make_dir(directory);
    if (!co_await workspace->exists(ignore)) co_await workspace->write_text(ignore, "*\n");
  } catch (const std::filesystem::filesystem_error& e) {
    failure = "Cannot create " + directory + ": " + e.code().message();
  }
  if (!failure.empty()) throw ws::WorkspaceError(failure);
  for (const auto& path : {root, directory, ignore}) {
    if (co_await workspace->realpath(path) != path) {
      throw ws::WorkspaceError("Refusing to use " + path + ": it is a symlink.");
    }
  }
  co_return directory;
}

std::string unknown_tool_message(const std::string& name, const std::vector<std::string>& tools) {
  if (tools.empty()) return "Unknown tool name: " + detail::python_repr(name) + ". No tools available.";
  std::string available;
  for (const auto& tool : tools) available += (available.empty() ? "" : ", ") + detail::python_repr(tool);
  return "Unknown tool name: " + detail::python_repr(name) + ". Available tools: " + available;
}

struct SchemaBuilder::Impl {
  nlohmann::json properties = nlohmann::json::object();
  nlohmann::json required = nlohmann::json::array();
};

SchemaBuilder::SchemaBuilder() : impl_(std::make_unique<Impl>()) {}
SchemaBuilder::~SchemaBuilder() = default;

void SchemaBuilder::required_string(const std::string& name, const std::string& description) {
  impl_->properties[name] = {{"description", description}, {"type", "string"}};
  impl_->required.push_back(name);
}

void SchemaBuilder::optional_number(const std::string& name, const std::string& description) {
  impl_->properties[name] = {{"anyOf", nlohmann::json::array({{{"type", "number"}}, {{"type", "null"}}})},
                             {"default", nullptr},
                             {"description", description}};
}

void SchemaBuilder::optional_enum(const std::string& name, const std::string& description,
                                  const std::vector<std::string>& values, const std::string& default_value) {
  impl_->properties[name] = {
      {"default", default_value}, {"description", description}, {"enum", values}, {"type", "string"}};
}

std::string SchemaBuilder::json() const {
  nlohmann::json schema = {{"additionalProperties", false},
                           {"properties", impl_->properties},
                           {"required", impl_->required},
                           {"type", "object"}};
  return schema.dump();
}

struct Arguments::Impl {
  nlohmann::json object;
  std::set<std::string> asked;
};

Arguments::Arguments(const std::string& json_text) : impl_(std::make_unique<Impl>()) {
  impl_->object = nlohmann::json::parse(json_text.empty() ? std::string("{}") : json_text, nullptr, false);
  if (impl_->object.is_discarded() || !impl_->object.is_object()) {
    throw ModelRetry("The arguments are not a JSON object.");
  }
}

Arguments::~Arguments() = default;

std::string Arguments::required_string(const std::string& name) {
  impl_->asked.insert(name);
  const auto found = impl_->object.find(name);
  if (found == impl_->object.end()) throw ModelRetry("Missing required argument " + detail::python_repr(name) + ".");
  if (!found->is_string()) throw ModelRetry("Argument " + detail::python_repr(name) + " must be a string.");
  return found->get<std::string>();
}

std::optional<double> Arguments::optional_number(const std::string& name) {
  impl_->asked.insert(name);
  const auto found = impl_->object.find(name);
  if (found == impl_->object.end() || found->is_null()) return std::nullopt;
  if (found->is_number()) return found->get<double>();
  throw ModelRetry("Argument " + detail::python_repr(name) + " must be a number or null.");
}

std::string Arguments::optional_enum(const std::string& name, const std::vector<std::string>& values,
                                     const std::string& default_value) {
  impl_->asked.insert(name);
  const auto found = impl_->object.find(name);
  if (found == impl_->object.end()) return default_value;
  if (found->is_string()) {
    const auto value = found->get<std::string>();
    for (const auto& allowed : values) {
      if (allowed == value) return value;
    }
  }
  std::string choices;
  for (const auto& value : values) choices += (choices.empty() ? "" : ", ") + detail::python_repr(value);
  throw ModelRetry("Argument " + detail::python_repr(name) + " must be one of " + choices + ".");
}

void Arguments::finish() {
  for (const auto& [key, value] : impl_->object.items()) {
    if (!impl_->asked.count(key)) throw ModelRetry("Unexpected argument " + detail::python_repr(key) + ".");
  }
}

}  // namespace exedev::tools
