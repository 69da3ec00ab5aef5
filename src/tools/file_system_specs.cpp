// FileSystem's tools as a model sees them: their names, which are read-only, and each one's
// description and parameters.
#include <exedev/tools/file_system.hpp>

#include "tools/file_system_impl.hpp"
#include "tools/schema.hpp"

#include <string>
#include <vector>

namespace exedev::tools {

namespace {

const std::vector<std::string> default_tools = {"read_file",   "write_file", "edit_file",        "list_directory",
                                                "search_files", "find_files", "create_directory", "file_info"};
const std::vector<std::string> all_tools = [] {
  auto names = default_tools;
  names.emplace_back("list_files");
  names.emplace_back("grep");
  return names;
}();
const std::vector<std::string> read_only_tools = {"read_file",  "list_directory", "search_files", "find_files",
                                                  "file_info",  "list_files",     "grep"};

}  // namespace

const std::vector<std::string>& file_system_default_tools() { return default_tools; }
const std::vector<std::string>& file_system_tool_names() { return all_tools; }
const std::vector<std::string>& file_system_read_only_tools() { return read_only_tools; }

namespace detail {

ToolSpec file_system_tool_spec(const std::string& name, bool hashes) {
  using detail::tool_description;
  ToolSpec spec;
  spec.name = name;
  auto& ps = spec.parameters;
  const auto expected_hash = text_parameter(
      "expected_hash", "", "null", true);
  if (name == "read_file") {
    spec.description = tool_description("Read a text file with line numbers.",
                                        "File content with line numbers, plus metadata header.");
    ps.push_back(text_parameter("path", "File path relative to the working directory."));
    ps.push_back(typed_parameter("offset", JsonType::integer, "Zero-based line offset to start reading from.", "0"));
    ps.push_back(typed_parameter("limit", JsonType::integer, "Maximum number of lines to return (default: 2000).",
                                 "null", true));
  } else if (name == "write_file") {
    spec.description = hashes ? tool_description("Create or overwrite a file with conflict detection.",
                                                  "Confirmation message with new hash.")
                              : "Create a file or replace its whole content.";
    ps.push_back(text_parameter("path", "File path relative to the working directory."));
    ps.push_back(text_parameter("content", "The text content to write."));
    if (hashes) {
      auto p = expected_hash;
      p.description = "If provided, the write is rejected when the file exists and its current hash doesn't match "
                      "(optimistic concurrency).";
      ps.push_back(p);
    }
  } else if (name == "edit_file") {
    const std::string summary =
        std::string(hashes ? "Edit a file by exact string replacement with conflict detection."
                           : "Edit a file by exact string replacement.") +
        "\n\nPass one `old_text`/`new_text` pair, or several as `replacements`. Each old_text must appear exactly once "
        "in the file as edited by the previous replacements; include surrounding context lines to ensure uniqueness. "
        "The file is only written once every replacement has matched.";
    spec.description = hashes ? tool_description(summary, "Summary with new hash for subsequent operations.") : summary;
    ps.push_back(text_parameter("path", "File path relative to the working directory."));
    ps.push_back(text_parameter("old_text", "The exact text to find (must appear exactly once).", "null", true));
    ps.push_back(text_parameter("new_text", "The replacement text.", "null", true));
    auto replacements = typed_parameter("replacements", JsonType::object_array,
                                        "Replacements to apply in order, instead of a single pair.", "null", true);
    replacements.item_fields.push_back(text_parameter("old_text", ""));
    replacements.item_fields.push_back(text_parameter("new_text", ""));
    ps.push_back(replacements);
    if (hashes) {
      auto p = expected_hash;
      p.description = "If provided, rejects the edit when the file's current hash doesn't match (optimistic "
                      "concurrency).";
      ps.push_back(p);
    }
  } else if (name == "list_directory") {
    spec.description = tool_description("List the contents of a directory.",
                                        "Paths relative to the working directory, with type indicators and sizes.");
    ps.push_back(text_parameter("path", "Directory path relative to the working directory.", "\".\""));
  } else if (name == "search_files") {
    spec.description = tool_description(
        "Search file contents using a regular expression.",
        "Matching lines formatted as file:line_number:text, with paths relative to the working directory.");
    ps.push_back(text_parameter("pattern", "Regex pattern to search for."));
    ps.push_back(text_parameter("path", "Directory to search in, relative to the working directory.", "\".\""));
    ps.push_back(text_parameter("include_glob",
                                "If provided, match this glob against root-relative paths (e.g. '*.py').", "null",
                                true));
  } else if (name == "find_files") {
    spec.description = tool_description(
        "Find files by glob pattern (name matching, not content search).",
        "Newline-separated list of matching file paths relative to the working directory.");
    ps.push_back(text_parameter(
        "pattern", "Glob pattern to match, relative to `path` (e.g. '*.py', '**/*.json'). Absolute patterns are rejected."));
    ps.push_back(text_parameter("path", "Directory to search in, relative to the working directory.", "\".\""));
  } else if (name == "create_directory") {
    spec.description = tool_description("Create a directory and any missing parents.", "Confirmation message.");
    ps.push_back(text_parameter("path", "Directory path relative to the working directory."));
  } else if (name == "file_info") {
    spec.description = tool_description("Get metadata about a file or directory.",
                                        "Formatted metadata including size, type, and permissions.");
    ps.push_back(text_parameter("path", "File or directory path relative to the working directory."));
  } else if (name == "list_files") {
    spec.description = tool_description(
        "List files under a directory, recursively, sorted by path, respecting ignore files and skipping hidden files.",
        "One file path per line, relative to the working directory.");
    ps.push_back(text_parameter("path", "Directory to list, relative to the working directory.", "\".\""));
    ps.push_back(text_parameter("glob", "If provided, only list files matching this glob (e.g. '*.py' or 'src/**').",
                                "null", true));
  } else if (name == "grep") {
    spec.description = tool_description(
        "Search file contents with ripgrep, respecting ignore files and skipping hidden files.",
        "Matches as `file:line:text`; context lines as `file-line-text`. Paths are relative to the working directory.");
    ps.push_back(text_parameter("pattern", "Regular expression (ripgrep syntax), or exact text when `literal` is set."));
    ps.push_back(text_parameter("path", "Directory or file to search, relative to the working directory.", "\".\""));
    ps.push_back(text_parameter("glob", "If provided, only search files matching this glob (e.g. '*.py').", "null", true));
    ps.push_back(text_parameter("file_type", "If provided, only search this ripgrep file type (e.g. 'py', 'rust').",
                                "null", true));
    ps.push_back(typed_parameter("ignore_case", JsonType::boolean, "Match case-insensitively.", "false"));
    ps.push_back(typed_parameter("literal", JsonType::boolean,
                                 "Treat `pattern` as exact text rather than a regular expression.", "false"));
    ps.push_back(typed_parameter("context", JsonType::integer, "Lines of context to show around each match (0 to 20).",
                                 "0"));
  }
  return spec;
}

}  // namespace detail

}  // namespace exedev::tools
