#include <exedev/tools/file_system.hpp>

#include "tools/arguments.hpp"
#include "tools/content_hash.hpp"
#include "tools/file_system_impl.hpp"
#include "tools/outcome.hpp"
#include "tools/paths.hpp"
#include "tools/schema.hpp"
#include "tools/text.hpp"
#include "tools/workspace_access.hpp"
#include "workspace/shell_filesystem.hpp"  // posixpath helpers

#include <exedev/tools/errors.hpp>
#include <exedev/workspace/errors.hpp>

#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace exedev::tools {

namespace {

using detail::ModelRetry;

// Room kept for the longest notice read_file appends after the numbered lines.
constexpr std::size_t notice_chars = 200;
constexpr std::chrono::seconds readlink_timeout{10};

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) out += (i == 0 ? "" : "\n") + lines[i];
  return out;
}

// The reference's _model_safe_filename: a path relative to the root, or a placeholder.
std::string model_safe_filename(const std::string& filename, const std::string& root) {
  if (filename.empty() || filename.front() != '/') return filename;
  const std::string path = workspace::normpath(filename);
  if (detail::path_contains(root, path)) return detail::relative_path(path, root);
  return "<outside-workspace>";
}

bool is_missing(const std::filesystem::filesystem_error& error) {
  return error.code() == std::errc::no_such_file_or_directory || error.code() == std::errc::not_a_directory ||
         error.code() == std::errc::is_a_directory;
}

}  // namespace

const std::vector<std::string>& default_read_only_patterns() {
  static const std::vector<std::string> patterns = {
      "**/.git/*", "**/.env", "**/.env.*", "*.pem", "*.key", "**/secrets*", std::string("**/") + detail::metadata_dir_name + "/**"};
  return patterns;
}

struct FileSystem::State : detail::FileSystemCore {
  Task<std::string> run_tool(std::string name, std::string arguments);
  Task<std::string> recoverable(Task<std::string> body);
  /// The resolved path and what is there; no entry when nothing is (a path error included).
  Task<std::pair<std::string, std::optional<workspace::FileEntry>>> locate(std::string path);
  /// locate, in one confined read where the workspace offers it, with the file's content (when
  /// it fits) and the link target.
  struct Located {
    std::string resolved;
    std::optional<workspace::FileEntry> entry;
    std::optional<workspace::Bytes> content;
    bool link_known = false;  ///< Whether link_target says what readlink would.
    std::optional<std::string> link_target;
  };
  Task<Located> locate_with_content(std::string path);
  /// A regular file's bytes: `known` when the confined read brought them, else read; nullopt
  /// when the file is gone.
  Task<std::optional<workspace::Bytes>> content_of(std::string resolved, std::optional<workspace::Bytes> known);
  Task<std::string> read_file(std::string path, std::int64_t offset, std::optional<std::int64_t> limit);
  Task<std::string> write_file(std::string path, std::string content, std::optional<std::string> expected_hash);
  Task<std::string> edit_file(std::string path, std::vector<std::pair<std::string, std::string>> replacements,
                              std::optional<std::string> expected_hash);
  Task<std::string> list_directory(std::string path);
  Task<std::string> create_directory(std::string path);
  Task<std::string> file_info(std::string path);
  [[nodiscard]] std::vector<std::string> offered() const;
  [[nodiscard]] std::string read_header(const std::string& path, std::size_t total, const std::string& hash) const;
  [[nodiscard]] std::string hash_suffix(const std::string& hash) const {
    return options.content_hashes ? " [hash:" + hash + "]" : "";
  }
};

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
                     detail::python_repr(model_safe_filename(error.path1().string(), root)));
  } catch (const std::invalid_argument& error) {
    throw ModelRetry(error.what());
  }
}

std::string FileSystem::State::read_header(const std::string& path, std::size_t total, const std::string& hash) const {
  std::string label = path;
  if (options.max_read_chars) {
    const std::size_t quarter = static_cast<std::size_t>(*options.max_read_chars) / 4;
    if (detail::utf8_length(path) > quarter) label = "..." + detail::utf8_tail(path, quarter);
  }
  return "[" + label + " | " + std::to_string(total) + " lines" + (options.content_hashes ? " | hash:" + hash : "") + "]\n";
}

Task<std::pair<std::string, std::optional<workspace::FileEntry>>> FileSystem::State::locate(std::string path) {
  std::string resolved;
  std::optional<workspace::FileEntry> entry;
  try {
    resolved = co_await safe_resolve(path, false, true);
    entry = co_await stat_or_none(resolved);
  } catch (const std::filesystem::filesystem_error& error) {
    if (!is_missing(error)) throw;
  }
  co_return std::make_pair(std::move(resolved), std::move(entry));
}

Task<FileSystem::State::Located> FileSystem::State::locate_with_content(std::string path) {
  Located located;
  workspace::ConfinedReadOptions what;
  what.content = true;
  auto found = co_await confined_read(path, false, true, std::move(what));
  if (found) {
    located.resolved = std::move(found->first);
    located.entry = std::move(found->second.entry);
    located.content = std::move(found->second.content);
    if (located.content) known.remember(located.resolved, *located.content);
    located.link_known = true;
    located.link_target = std::move(found->second.link_target);
    co_return located;
  }
  auto [resolved, entry] = co_await locate(path);
  located.resolved = std::move(resolved);
  located.entry = std::move(entry);
  co_return located;
}

Task<std::optional<workspace::Bytes>> FileSystem::State::content_of(std::string resolved,
                                                                   std::optional<workspace::Bytes> known) {
  if (known) co_return known;
  try {
    co_return co_await ws->read_bytes(resolved);
  } catch (const std::filesystem::filesystem_error& error) {
    if (!is_missing(error)) throw;
  }
  co_return std::nullopt;
}

Task<std::string> FileSystem::State::read_file(std::string path, std::int64_t offset, std::optional<std::int64_t> limit) {
  if (offset < 0) throw ModelRetry("offset must be non-negative.");
  if (limit && *limit < 1) throw ModelRetry("limit must be at least 1.");
  const std::size_t window = limit ? static_cast<std::size_t>(*limit) : static_cast<std::size_t>(options.max_read_lines);
  const std::string not_found = "Path not found: " + path;
  auto located = co_await locate_with_content(path);
  if (!located.entry || located.entry->is_dir) co_return not_found;
  auto content = co_await content_of(located.resolved, std::move(located.content));
  if (!content) co_return not_found;
  const workspace::Bytes raw = std::move(*content);
  const std::string hash = detail::content_hash(raw);
  if (detail::looks_binary(raw)) {
    co_return "[Binary file: " + std::to_string(raw.size()) + " bytes. Use a binary-aware tool to inspect.]";
  }
  const std::string text = workspace::utf8_replace_invalid(raw);
  const auto lines = detail::split_lines(text, true);
  const std::string header = read_header(path, lines.size(), hash);
  if (lines.empty()) co_return header + "(empty file)\n";
  const auto first = static_cast<std::size_t>(offset);
  if (first >= lines.size()) {
    throw ModelRetry("Offset " + std::to_string(first) + " exceeds file length (" + std::to_string(lines.size()) +
                     " lines).");
  }
  std::optional<std::size_t> budget;
  if (options.max_read_chars) {
    const std::size_t used = detail::utf8_length(header) + notice_chars;
    const auto cap = static_cast<std::size_t>(*options.max_read_chars);
    budget = cap > used ? cap - used : 0;
  }
  std::string body;
  std::size_t shown = 0;
  for (std::size_t i = first; i < lines.size() && shown < window; ++i) {
    std::string number = std::to_string(i + 1);
    if (number.size() < 6) number.insert(0, 6 - number.size(), ' ');
    std::string rendered = number + "\t" + lines[i];
    const std::size_t length = detail::utf8_length(rendered);
    if (budget && length > *budget) {
      if (shown == 0) {
        co_return header + "... (Line " + std::to_string(i + 1) + " is " +
            detail::with_thousands(detail::utf8_length(lines[i])) +
            " characters and does not fit the read window. Use offset=" + std::to_string(i + 1) +
            " to skip it, or a shell byte range to inspect it.)\n";
      }
      break;
    }
    body += rendered;
    ++shown;
    if (budget) *budget -= length;
  }
  if (body.empty() || body.back() != '\n') body += '\n';
  const std::size_t remaining = lines.size() - (first + shown);
  if (remaining > 0) {
    body += "... (" + std::to_string(remaining) + " more lines. Use offset=" + std::to_string(first + shown) +
            " to continue reading.)\n";
  }
  co_return header + body;
}

namespace {

[[noreturn]] void conflict(const std::string& path, const std::string& current, const std::string& expected) {
  throw ModelRetry("Conflict: file " + detail::python_repr(path) + " has changed (expected hash:" + expected +
                   ", got hash:" + current + "). Re-read the file and retry.");
}

// edit_file's checks of the file's text and its replacements, in order; the edited text.
std::string edited(const std::string& path, std::string text,
                   const std::vector<std::pair<std::string, std::string>>& replacements,
                   const std::optional<std::string>& expected_hash) {
  if (detail::looks_binary(text)) throw ModelRetry(path + " is a binary file; edit_file only edits text files.");
  // Strict: the whole file is written back, so undecodable bytes are refused, not replaced.
  if (auto why = detail::utf8_decode_error(text)) throw ModelRetry(*why);
  const std::string current = detail::content_hash(text);
  if (expected_hash && current != *expected_hash) conflict(path, current, *expected_hash);
  for (std::size_t i = 0; i < replacements.size(); ++i) {
    const auto& [old_text, new_text] = replacements[i];
    const std::string label = replacements.size() > 1 ? "replacement " + std::to_string(i + 1) : "old_text";
    if (old_text.empty()) throw ModelRetry(label + " is empty; old_text must be the exact text to replace.");
    const std::size_t count = detail::count_occurrences(text, old_text);
    if (count == 0) throw ModelRetry(label + " not found in " + path + ". No changes were written.");
    if (count > 1) {
      throw ModelRetry(label + " found " + std::to_string(count) + " times in " + path +
                       ". Include more surrounding context to make the match unique. No changes were written.");
    }
    text.replace(text.find(old_text), old_text.size(), new_text);
  }
  return text;
}

// Whether a confined write can check `expected_hash` as write_file does (a content hash is 12
// hex digits; any other text never matches, which the separate operations report).
bool confined_checkable(const std::optional<std::string>& expected_hash) {
  return !expected_hash || (expected_hash->size() == 12 &&
                            expected_hash->find_first_not_of("0123456789abcdef") == std::string::npos);
}

}  // namespace

Task<std::string> FileSystem::State::write_file(std::string path, std::string content,
                                                std::optional<std::string> expected_hash) {
  bool written = false;
  // One confined write (checks, hash and write); what it declines, the separate operations do.
  auto target = co_await confined_target(path, true, true);
  if (target && confined_checkable(expected_hash)) {
    const auto guard = co_await locks.acquire(target->path);
    detail::ConfinedCall call;
    call.kind = detail::ConfinedCall::Kind::write;
    call.data = content;
    call.expected_sha256 = expected_hash.value_or("");
    const std::string resolved = target->path;
    const auto done = co_await run_confined(path, std::move(*target), true, true, std::move(call));
    written = done.has_value();
    if (written) known.remember(resolved, content);
  }
  if (!written) {
    const auto b = co_await scope();
    const std::string resolved = co_await safe_resolve(path, true, true);
    const auto guard = co_await locks.acquire(resolved);
    const auto entry = co_await stat_or_none(resolved);
    if (entry && entry->is_dir) throw ModelRetry("Path " + detail::python_repr(path) + " exists and is not a regular file.");
    const std::string parent = workspace::detail::posix_dirname(resolved);
    const std::string not_directory = "Path " + detail::python_repr(path) + " has a parent that is not a directory.";
    workspace::FileEntry parent_entry;
    try {
      parent_entry = co_await ws->stat(parent);
    } catch (const std::filesystem::filesystem_error& error) {
      if (error.code() == std::errc::no_such_file_or_directory) {
        throw ModelRetry("Parent directory '" + detail::relative_path(parent, b.root) +
                         "' does not exist. Create the parent directory first.");
      }
      if (error.code() == std::errc::not_a_directory) throw ModelRetry(not_directory);
      throw;
    }
    if (!parent_entry.is_dir) throw ModelRetry(not_directory);
    // expected_hash guards an existing file only; a missing one is simply created.
    if (entry && expected_hash) {
      try {
        const auto current = detail::content_hash(co_await ws->read_bytes(resolved));
        if (current != *expected_hash) conflict(path, current, *expected_hash);
      } catch (const std::filesystem::filesystem_error& error) {
        if (error.code() != std::errc::no_such_file_or_directory) throw;
      }
    }
    co_await ws->write_bytes(resolved, content);
  }
  const std::size_t lines = detail::split_lines(content, false).size();
  co_return "Wrote " + std::to_string(detail::utf8_length(content)) + " chars (" + std::to_string(lines) + " lines) to " +
      path + "." + hash_suffix(detail::content_hash(content));
}

Task<std::string> FileSystem::State::edit_file(std::string path,
                                               std::vector<std::pair<std::string, std::string>> replacements,
                                               std::optional<std::string> expected_hash) {
  const std::string file_not_found = "File not found: " + path;
  // One confined splice when the tool set knows the file's content and the edit applies to it
  // (the workspace applies it only while the file holds that content, else answers with the
  // content it holds), or a confined read; then a confined write that replaces only the content
  // read. What any of them declines, the separate operations do from the start.
  auto target = co_await confined_target(path, true, true);
  if (target) {
    const auto guard = co_await locks.acquire(target->path);
    std::optional<workspace::ConfinedResult> found;
    if (const auto* seen = known.find(target->path)) {
      std::optional<std::string> text;
      try {
        text = edited(path, *seen, replacements, expected_hash);
      } catch (const ModelRetry&) {
        // Said of content the file may no longer hold: the file as it is decides.
      }
      if (text) {
        detail::ConfinedCall splicing;
        splicing.kind = detail::ConfinedCall::Kind::splice;
        splicing.splice = detail::splice_between(*seen, *text);
        found = co_await run_confined(path, *target, true, true, std::move(splicing));
        if (found && found->spliced) {
          known.remember(target->path, *text);
          co_return "Edited " + path + "." + hash_suffix(detail::content_hash(*text));
        }
        if (!found) known.forget(target->path);  // declined: not worth a second try
      }
    }
    if (!found) {
      detail::ConfinedCall reading;
      reading.what.content = true;
      found = co_await run_confined(path, *target, true, true, std::move(reading));
    }
    if (found && (!found->entry || found->entry->is_dir)) throw ModelRetry(file_not_found);
    if (found && found->content) {
      std::string text = edited(path, *found->content, replacements, expected_hash);
      if (target->checked_real) target->checked_real = found->real;
      detail::ConfinedCall writing;
      writing.kind = detail::ConfinedCall::Kind::write;
      writing.data = text;
      writing.expected_sha256 = detail::sha256_hex(*found->content);
      const std::string resolved = target->path;
      const auto done = co_await run_confined(path, std::move(*target), true, true, std::move(writing));
      if (done) {
        known.remember(resolved, text);
        co_return "Edited " + path + "." + hash_suffix(detail::content_hash(text));
      }
    }
  }
  const std::string resolved = co_await safe_resolve(path, true, true);
  std::string text;
  {
    const auto guard = co_await locks.acquire(resolved);
    const auto entry = co_await stat_or_none(resolved);
    if (!entry || entry->is_dir) throw ModelRetry(file_not_found);
    auto current = co_await ws->read_bytes(resolved);
    text = edited(path, std::move(current), replacements, expected_hash);
    co_await ws->write_bytes(resolved, text);
  }
  co_return "Edited " + path + "." + hash_suffix(detail::content_hash(text));
}

Task<std::string> FileSystem::State::list_directory(std::string path) {
  const std::string not_directory = "Not a directory: " + path;
  std::string resolved;
  std::vector<workspace::FileEntry> children;
  bool listed = false;
  // One confined read with the entries and their sizes, else the separate operations.
  workspace::ConfinedReadOptions what;
  what.children = true;
  auto found = co_await confined_read(path, false, false, std::move(what));
  if (found) {
    if (!found->second.entry || !found->second.entry->is_dir) throw ModelRetry(not_directory);
    resolved = std::move(found->first);
    children = std::move(found->second.children);
    std::sort(children.begin(), children.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
    listed = true;
  }
  const auto b = co_await scope();
  if (!listed) {
    resolved = co_await safe_resolve(path, false, false);
    try {
      children = co_await ws->list_dir(resolved);
    } catch (const std::filesystem::filesystem_error& error) {
      if (error.code() != std::errc::no_such_file_or_directory && error.code() != std::errc::not_a_directory) throw;
      throw ModelRetry(not_directory);
    }
  }
  std::stable_sort(children.begin(), children.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::vector<std::string> entries;
  std::size_t hidden = 0;
  const auto cap = static_cast<std::size_t>(options.max_list_results);
  for (const auto& entry : children) {
    if (!entry.name.empty() && entry.name.front() == '.') ++hidden;
    if (!walk_entry(entry.path, resolved, false)) continue;
    const std::string rel = detail::relative_path(entry.path, b.cwd);
    std::string line;
    if (entry.is_dir) {
      line = rel + "/";
    } else {
      auto size = entry.size;
      if (!size) {
        const auto stat = co_await stat_or_none(entry.path);
        if (!stat) continue;  // a dangling symlink or an entry deleted meanwhile
        size = stat->size;
      }
      line = size ? rel + "  (" + std::to_string(*size) + " bytes)" : rel + "  (size unknown)";
    }
    if (entries.size() >= cap) {
      entries.push_back("[... truncated at " + std::to_string(cap) + " entries]");
      break;
    }
    entries.push_back(std::move(line));
  }
  if (hidden != 0) {
    entries.push_back("[" + std::to_string(hidden) + " hidden entries omitted; name a hidden path explicitly to include it]");
  }
  co_return entries.empty() ? std::string("(empty directory)") : join_lines(entries);
}

Task<std::string> FileSystem::State::create_directory(std::string path) {
  const std::string done = "Created directory: " + path;
  auto target = co_await confined_target(path, true, true);
  if (target) {
    detail::ConfinedCall call;
    call.kind = detail::ConfinedCall::Kind::make_dir;
    const auto made = co_await run_confined(path, std::move(*target), true, true, std::move(call));
    if (made) co_return done;
  }
  const std::string resolved = co_await safe_resolve(path, true, true);
  const std::string exists = "Path " + detail::python_repr(path) + " exists and is not a directory.";
  const std::string bad_parent = "Path " + detail::python_repr(path) + " has a parent that is not a directory.";
  if (const auto entry = co_await stat_or_none(resolved)) {
    if (entry->is_dir) co_return done;
    throw ModelRetry(exists);
  }
  // The nearest existing ancestor must be a directory.
  for (std::string current = workspace::detail::posix_dirname(resolved);;) {
    try {
      const auto parent = co_await ws->stat(current);
      if (!parent.is_dir) throw ModelRetry(bad_parent);
      break;
    } catch (const std::filesystem::filesystem_error& error) {
      if (error.code() == std::errc::not_a_directory) throw ModelRetry(bad_parent);
      if (error.code() != std::errc::no_such_file_or_directory) throw;
    }
    const std::string parent = workspace::detail::posix_dirname(current);
    if (parent == current) break;
    current = parent;
  }
  try {
    co_await ws->make_dir(resolved);
  } catch (const std::filesystem::filesystem_error& error) {
    if (error.code() == std::errc::file_exists) throw ModelRetry(exists);
    if (error.code() == std::errc::not_a_directory) throw ModelRetry(bad_parent);
    throw;
  }
  co_return done;
}

Task<std::string> FileSystem::State::file_info(std::string path) {
  const std::string not_found = "Path not found: " + path;
  auto located = co_await locate_with_content(path);
  const auto& resolved = located.resolved;
  const auto& entry = located.entry;
  if (!entry) co_return not_found;
  std::vector<std::string> parts;
  parts.push_back("path: " + path);
  parts.push_back(std::string("type: ") + (entry->is_dir ? "directory" : "file"));
  if (entry->size) parts.push_back("size: " + std::to_string(*entry->size) + " bytes");
  if (!entry->is_dir) {
    auto content = co_await content_of(resolved, std::move(located.content));
    if (!content) co_return not_found;
    const workspace::Bytes raw = std::move(*content);
    const bool binary = detail::looks_binary(raw);
    parts.push_back(std::string("binary: ") + (binary ? "True" : "False"));
    if (!binary) {
      parts.push_back("lines: " + std::to_string(detail::split_lines(workspace::utf8_replace_invalid(raw), false).size()));
      parts.push_back("hash: " + detail::content_hash(raw));
    }
  }
  // The filesystem API follows symlinks and cannot report one; readlink in the workspace can.
  if (detail::supports_commands(*ws) && located.link_known) {
    if (located.link_target) {
      parts.push_back("symlink_target: " + model_safe_filename(*located.link_target, bounds->root));
    }
  } else if (detail::supports_commands(*ws)) {
    std::vector<std::string> argv;
    argv.emplace_back("readlink");
    argv.push_back(resolved);
    workspace::RunOptions run_options;
    run_options.timeout = readlink_timeout;
    const auto result = co_await ws->run(workspace::Command::argv(std::move(argv)), std::move(run_options));
    if (result.exit_code == 0) {
      std::string target = result.stdout_text;
      if (!target.empty() && target.back() == '\n') target.pop_back();
      parts.push_back("symlink_target: " + model_safe_filename(target, bounds->root));
    }
  }
  co_return join_lines(parts);
}

}  // namespace exedev::tools
