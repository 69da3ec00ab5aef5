// FileSystem's tools that read: read_file, list_directory, file_info (the walking ones are in
// file_search.cpp).
#include "tools/content_hash.hpp"
#include "tools/file_system_impl.hpp"
#include "tools/outcome.hpp"
#include "tools/paths.hpp"
#include "tools/text.hpp"
#include "tools/workspace_access.hpp"

#include <exedev/workspace/workspace.hpp>

#include <filesystem>

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

bool is_missing(const std::filesystem::filesystem_error& error) {
  return error.code() == std::errc::no_such_file_or_directory || error.code() == std::errc::not_a_directory ||
         error.code() == std::errc::is_a_directory;
}

}  // namespace

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
      parts.push_back("symlink_target: " + detail::model_safe_filename(*located.link_target, bounds->root));
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
      parts.push_back("symlink_target: " + detail::model_safe_filename(target, bounds->root));
    }
  }
  co_return join_lines(parts);
}

}  // namespace exedev::tools
