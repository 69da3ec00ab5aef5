// FileSystem, the tool set: its options, which tools it offers, the dispatch of a call to its
// tool, and the mapping of what the model can correct to a retry. The tools themselves:
// file_system_reads.cpp, file_system_edits.cpp, file_search.cpp.
#include <exedev/tools/file_system.hpp>

#include "tools/arguments.hpp"
#include "tools/file_system_impl.hpp"
#include "tools/outcome.hpp"
#include "tools/paths.hpp"
#include "tools/schema.hpp"
#include "tools/text.hpp"
#include "tools/workspace_access.hpp"
#include "workspace/shell_filesystem.hpp"  // posixpath helpers

#include <exedev/tools/errors.hpp>

#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace exedev::tools {

using detail::ModelRetry;

std::string detail::model_safe_filename(const std::string& filename, const std::string& root) {
  if (filename.empty() || filename.front() != '/') return filename;
  const std::string path = workspace::normpath(filename);
  if (path_contains(root, path)) return relative_path(path, root);
  return "<outside-workspace>";
}

const std::vector<std::string>& default_read_only_patterns() {
  static const std::vector<std::string> patterns = {
      "**/.git/*", "**/.env", "**/.env.*", "*.pem", "*.key", "**/secrets*", std::string("**/") + detail::metadata_dir_name + "/**"};
  return patterns;
}

FileSystem::FileSystem(std::shared_ptr<workspace::Workspace> workspace)
    : FileSystem(std::move(workspace), FileSystemOptions{}) {}

FileSystem::FileSystem(std::shared_ptr<workspace::Workspace> workspace, FileSystemOptions options)
    : state_(std::make_shared<State>()) {
  if (!workspace) throw std::invalid_argument("FileSystem needs a workspace");
  const auto positive = [](int value, const char* name) {
    if (value <= 0) throw std::invalid_argument(std::string(name) + " must be a positive integer");
  };
  positive(options.max_read_lines, "max_read_lines");
  if (options.max_read_chars) positive(*options.max_read_chars, "max_read_chars");
  positive(options.max_list_results, "max_list_results");
  positive(options.max_search_results, "max_search_results");
  positive(options.max_find_results, "max_find_results");
  std::vector<std::string> unknown;
  for (const auto& tool : options.tools) {
    if (std::find(file_system_tool_names().begin(), file_system_tool_names().end(), tool) == file_system_tool_names().end()) unknown.push_back(tool);
  }
  if (!unknown.empty()) {
    std::sort(unknown.begin(), unknown.end());
    unknown.erase(std::unique(unknown.begin(), unknown.end()), unknown.end());
    std::string message = "Unknown filesystem tools: ";
    for (std::size_t i = 0; i < unknown.size(); ++i) message += (i == 0 ? "" : ", ") + unknown[i];
    message += ". Available: ";
    for (std::size_t i = 0; i < file_system_tool_names().size(); ++i) message += (i == 0 ? "" : ", ") + file_system_tool_names()[i];
    throw std::invalid_argument(message + ".");
  }
  if (options.root_dir) {
    const std::string normalized = workspace::normpath(*options.root_dir);
    const auto parts = detail::split_components(normalized);
    const bool only_up = !parts.empty() && std::all_of(parts.begin(), parts.end(), [](const std::string& p) { return p == ".."; });
    if (normalized.front() != '/' && normalized != "." && !only_up) {
      throw UserError("root_dir " + detail::python_repr(*options.root_dir) +
                      " is below the working directory, but root_dir must contain the working directory. To scope "
                      "the tools to a subfolder, attach the workspace there, e.g. "
                      "Workspace(std::make_shared<LocalBackend>(\"./src\")).");
    }
  }
  state_->ws = std::move(workspace);
  state_->options = std::move(options);
}

FileSystem::~FileSystem() = default;

std::string FileSystem::id() const { return state_->options.id; }

std::vector<std::string> FileSystem::State::offered() const {
  const bool read_only = options.read_only || ws->read_only();
  std::vector<std::string> names;
  for (const auto& name : file_system_tool_names()) {
    if (std::find(options.tools.begin(), options.tools.end(), name) == options.tools.end()) continue;
    const auto& read_only_tools = file_system_read_only_tools();
    if (read_only && std::find(read_only_tools.begin(), read_only_tools.end(), name) == read_only_tools.end()) continue;
    names.push_back(name);
  }
  return names;
}

Task<std::vector<ToolDefinition>> FileSystem::tools() {
  detail::require_workspace(*state_->ws, "FileSystem");
  std::vector<ToolDefinition> definitions;
  for (const auto& name : state_->offered()) definitions.push_back(detail::definition_of(detail::file_system_tool_spec(name, state_->options.content_hashes)));
  co_return definitions;
}

Task<ToolResult> FileSystem::call(std::string name, std::string arguments, ToolCallContext context) {
  detail::require_workspace(*state_->ws, "FileSystem");
  // Keeps the state alive across the awaits even if the tool set is destroyed meanwhile.
  const auto state = state_;
  // FileSystem's only live output: waits for exe.dev's rate limit.
  const auto executor = co_await boost::asio::this_coro::executor;
  const auto relay = detail::relay_wait_notices(executor, context.on_output);
  co_return co_await detail::to_tool_result(state->run_tool(std::move(name), std::move(arguments)));
}

Task<std::string> FileSystem::State::run_tool(std::string name, std::string arguments) {
  const auto names = offered();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    throw ModelRetry(detail::unknown_tool_message(name, names));
  }
  const auto spec = detail::file_system_tool_spec(name, options.content_hashes);
  const detail::Arguments args(spec, arguments);
  if (name == "read_file") {
    co_return co_await recoverable(read_file(args.text("path"), args.integer("offset"), args.optional_integer("limit")));
  }
  if (name == "write_file") {
    std::optional<std::string> expected;
    if (options.content_hashes) expected = args.optional_text("expected_hash");
    co_return co_await recoverable(write_file(args.text("path"), args.text("content"), std::move(expected)));
  }
  if (name == "edit_file") {
    const auto old_text = args.optional_text("old_text");
    const auto new_text = args.optional_text("new_text");
    const std::vector<std::string> fields = {"old_text", "new_text"};
    const auto records = args.optional_records("replacements", fields);
    std::vector<std::pair<std::string, std::string>> edits;
    if (!records) {
      if (!old_text || !new_text) throw ModelRetry("Provide old_text and new_text, or a non-empty replacements list.");
      edits.emplace_back(*old_text, *new_text);
    } else {
      if (old_text || new_text || records->empty()) {
        throw ModelRetry("Provide either old_text and new_text or a non-empty replacements list, not both.");
      }
      for (const auto& record : *records) edits.emplace_back(record[0], record[1]);
    }
    std::optional<std::string> expected;
    if (options.content_hashes) expected = args.optional_text("expected_hash");
    co_return co_await recoverable(edit_file(args.text("path"), std::move(edits), std::move(expected)));
  }
  if (name == "list_directory") co_return co_await recoverable(list_directory(args.text("path")));
  if (name == "search_files") {
    co_return co_await recoverable(
        search_files(args.text("pattern"), args.text("path"), args.optional_text("include_glob")));
  }
  if (name == "find_files") co_return co_await recoverable(find_files(args.text("pattern"), args.text("path"), false));
  if (name == "create_directory") co_return co_await recoverable(create_directory(args.text("path")));
  if (name == "file_info") co_return co_await recoverable(file_info(args.text("path")));
  if (name == "list_files") co_return co_await recoverable(list_files(args.text("path"), args.optional_text("glob")));
  co_return co_await recoverable(grep(args.text("pattern"), args.text("path"), args.optional_text("glob"),
                                      args.optional_text("file_type"), args.boolean("ignore_case"),
                                      args.boolean("literal"), args.integer("context")));
}

// The reference's _recoverable: what the model can correct becomes a retry, with OS paths shown
// relative to the root.
Task<std::string> FileSystem::State::recoverable(Task<std::string> body) {
  try {
    co_return co_await std::move(body);
  } catch (const UserError&) {
    throw;
  } catch (const std::filesystem::filesystem_error& error) {
    const auto code = error.code();
    if (code == std::errc::filename_too_long) throw ModelRetry("The path name is too long.");
    if (code == std::errc::too_many_symbolic_link_levels) throw ModelRetry("The path resolves through a symlink loop.");
    if (code == std::errc::illegal_byte_sequence) {
      throw ModelRetry("The path name contains a byte sequence the filesystem cannot represent.");
    }
    const bool recoverable_code = code == std::errc::permission_denied || code == std::errc::operation_not_permitted ||
                                  code == std::errc::no_such_file_or_directory || code == std::errc::not_a_directory ||
                                  code == std::errc::is_a_directory;
    if (!recoverable_code) throw;
    if (error.path1().empty()) throw ModelRetry(error.what());
    const std::string root = bounds ? bounds->root : "/";
    throw ModelRetry("[Errno " + std::to_string(code.value()) + "] " + std::strerror(code.value()) + ": " +
                     detail::python_repr(detail::model_safe_filename(error.path1().string(), root)));
  } catch (const std::invalid_argument& error) {
    throw ModelRetry(error.what());
  }
}

}  // namespace exedev::tools
