// FileSystem's walking tools: search_files, find_files, and the walker forms of list_files
// and grep. They list directories through the workspace's file API (any backend).
#include "tools/file_system_impl.hpp"

#include "tools/outcome.hpp"
#include "tools/paths.hpp"
#include "tools/text.hpp"

#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/workspace.hpp>

#include "workspace/shell_filesystem.hpp"  // posixpath helpers

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>

namespace exedev::tools::detail {

namespace {

// Orders paths component by component, as sorting Path objects does.
bool component_less(const FileEntry& a, const FileEntry& b) {
  return split_components(a.path) < split_components(b.path);
}

// Python `re` syntax mapped onto std::regex (ECMAScript): a leading `(?i)` becomes the icase
// flag, `(?P<name>` an unnamed group, `\A` and `\Z` the anchors. The rest is passed through;
// ECMAScript rejects what it lacks (lookbehind, named backreferences), which is a retry.
std::regex compile_python_regex(std::string pattern) {
  auto flags = std::regex::ECMAScript;
  if (pattern.rfind("(?i)", 0) == 0) {
    pattern.erase(0, 4);
    flags |= std::regex::icase;
  }
  std::string translated;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[i + 1];
      if (next == 'A') translated += '^';
      else if (next == 'Z') translated += '$';
      else translated += pattern.substr(i, 2);
      ++i;
    } else if (pattern.compare(i, 4, "(?P<") == 0) {
      const auto close = pattern.find('>', i);
      if (close == std::string::npos) throw std::regex_error(std::regex_constants::error_paren);
      translated += '(';
      i = close;
    } else {
      translated += pattern[i];
    }
  }
  try {
    return std::regex(translated, flags);
  } catch (const std::regex_error& error) {
    throw ModelRetry(std::string("Invalid regex pattern: ") + error.what());
  }
}

std::string regex_escape(const std::string& text) {
  static const std::string special = R"(\^$.|?*+()[]{})";
  std::string out;
  for (const char c : text) {
    if (special.find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

Task<std::optional<FileSystemCore::ConfinedWalk>> FileSystemCore::confined_walk(std::string path,
                                                                               std::optional<std::size_t> max_depth,
                                                                               bool include_hidden, bool contents) {
  workspace::ConfinedReadOptions what;
  what.children = true;
  what.tree = true;
  what.tree_depth = max_depth;
  what.tree_hidden = include_hidden;
  what.tree_contents = contents;
  what.content = contents;
  auto read = co_await confined_read(path, false, false, std::move(what));
  if (!read) co_return std::nullopt;
  const std::string resolved = std::move(read->first);
  auto* found = &read->second;
  // A walk through symlinks (the directory's own, or below it) resolves and dedupes real paths:
  // walk() does that.
  if (found->real != resolved || found->symlinks_below) co_return std::nullopt;
  if (found->entry && !found->entry->is_dir && contents && !found->content) co_return std::nullopt;
  const Bounds b = co_await scope();
  ConfinedWalk out;
  out.resolved = resolved;
  out.entry = found->entry;
  if (found->content) out.contents[resolved] = std::move(*found->content);
  // walk()'s rule without symlinks: an entry is listed when every directory between it and the
  // start is entered: not dot-named (unless include_hidden) and not denied.
  std::set<std::string> directories;
  std::size_t directory_count = 1;
  for (const auto& child : found->children) {
    if (child.is_dir) {
      directories.insert(child.path);
      ++directory_count;
    }
  }
  if (directory_count >= max_walk_directories || found->children.size() >= max_walk_entries) co_return std::nullopt;
  const auto entered = [&](const std::string& directory) {
    const std::string name = workspace::detail::posix_basename(directory);
    return (include_hidden || name.empty() || name.front() != '.') &&
           first_matching_pattern(relative_path(directory, b.root), options.denied_patterns, true).empty();
  };
  for (auto& child : found->children) {
    bool listed = true;
    for (std::string parent = workspace::detail::posix_dirname(child.path); parent != resolved && listed;
         parent = workspace::detail::posix_dirname(parent)) {
      if (!path_contains(resolved, parent) || !directories.count(parent) || !entered(parent)) listed = false;
    }
    if (!listed) continue;
    child.size.reset();
    out.entries.push_back(std::move(child));
  }
  out.contents.merge(found->child_contents);
  co_return out;
}

Task<std::string> FileSystemCore::search_files(std::string pattern, std::string path,
                                               std::optional<std::string> include_glob) {
  const bool include_hidden = include_glob && names_hidden(*include_glob);
  // The walk and the contents in one confined read when the workspace offers it.
  auto confined = co_await confined_walk(path, std::nullopt, include_hidden, true);
  const Bounds b = co_await scope();
  std::string resolved;
  std::optional<FileEntry> entry;
  if (confined) {
    resolved = confined->resolved;
  } else {
    resolved = co_await safe_resolve(path, false, false);
  }
  const std::regex compiled = compile_python_regex(pattern);
  if (confined) {
    entry = confined->entry;
  } else {
    entry = co_await stat_or_none(resolved);
  }
  bool walk_cut = false;
  std::size_t hidden_count = 0;
  std::vector<FileEntry> files;
  if (entry && !entry->is_dir) {
    files.push_back(*entry);
  } else if (entry) {
    std::vector<FileEntry> walked;
    if (confined) {
      walked = confined->entries;
    } else {
      auto [listed, cut] = co_await walk(resolved, std::nullopt, include_hidden);
      walked = std::move(listed);
      walk_cut = cut;
    }
    for (const auto& child : walked) {
      if (!include_hidden && is_hidden(relative_path(child.path, resolved))) ++hidden_count;
      if (!child.is_dir) files.push_back(child);
    }
  }
  std::stable_sort(files.begin(), files.end(), component_less);
  const auto cap = static_cast<std::size_t>(options.max_search_results);
  std::vector<std::string> results;
  std::vector<std::string> skipped;
  bool capped = false;
  for (const auto& file : files) {
    const auto relative = walk_entry(file.path, resolved, include_hidden);
    if (!relative) continue;
    if (include_glob && !fnmatch_python(*relative, *include_glob)) continue;
    // Contents are read, so a file that links outside the root, or to a denied file, is skipped.
    // (A confined walk met no symlink: every real path is the entry's own.)
    bool readable = true;
    if (!confined && file.path != resolved) readable = co_await readable_entry(file.path);
    if (!readable) continue;
    const std::string shown = relative_path(file.path, b.cwd);
    if (file.size && *file.size > max_search_file_bytes) {
      skipped.push_back(shown);
      continue;
    }
    const workspace::Bytes* known = nullptr;
    if (confined) {
      const auto at = confined->contents.find(file.path);
      if (at != confined->contents.end()) known = &at->second;
    }
    workspace::Bytes raw;
    try {
      if (known) {
        raw = *known;
      } else {
        raw = co_await ws->read_bytes(file.path);
      }
    } catch (const workspace::WorkspaceUnavailableError&) {
      throw;
    } catch (const workspace::WorkspaceError&) {
      skipped.push_back(shown);  // one unreadable file must not hide matches in the rest
      continue;
    } catch (const std::filesystem::filesystem_error&) {
      skipped.push_back(shown);
      continue;
    }
    if (looks_binary(raw)) continue;
    const auto lines = split_lines(workspace::utf8_replace_invalid(raw), false);
    for (std::size_t i = 0; i < lines.size() && !capped; ++i) {
      if (!std::regex_search(lines[i], compiled)) continue;
      if (results.size() >= cap) {
        capped = true;
        break;
      }
      results.push_back(shown + ":" + std::to_string(i + 1) + ":" + lines[i]);
    }
    if (capped) break;
  }
  if (capped) results.push_back("[... truncated at " + std::to_string(cap) + " matches]");
  if (!skipped.empty()) {
    std::string listed;
    for (std::size_t i = 0; i < skipped.size() && i < 10; ++i) listed += (i == 0 ? "" : ", ") + skipped[i];
    results.push_back("[" + std::to_string(skipped.size()) + " files skipped (too large or unreadable): " + listed +
                      (skipped.size() > 10 ? ", ..." : "") + "]");
  }
  co_return with_walk_notice(std::move(results), walk_cut, hidden_count);
}

Task<std::string> FileSystemCore::find_files(std::string pattern, std::string path, bool files_only) {
  if (!pattern.empty() && pattern.front() == '/') {
    throw ModelRetry("Pattern " + python_repr(pattern) + " must be relative to the search path, not absolute.");
  }
  std::vector<std::string> parts;
  for (auto& part : split_components(pattern)) {
    if (part != ".") parts.push_back(std::move(part));
  }
  if (parts.empty() || std::find(parts.begin(), parts.end(), "..") != parts.end()) {
    throw ModelRetry("Pattern " + python_repr(pattern) + " is not a valid glob pattern.");
  }
  const bool directories_only = pattern.back() == '/';
  const bool recursive = std::find(parts.begin(), parts.end(), "**") != parts.end();
  const std::optional<std::size_t> max_depth = recursive ? std::nullopt : std::optional<std::size_t>(parts.size());
  const bool include_hidden = names_hidden(pattern);
  // The walk in one confined read when the workspace offers it.
  auto confined = co_await confined_walk(path, max_depth, include_hidden, false);
  const Bounds b = co_await scope();
  std::string resolved;
  std::optional<FileEntry> entry;
  if (confined) {
    resolved = confined->resolved;
    entry = confined->entry;
  } else {
    resolved = co_await safe_resolve(path, false, false);
    entry = co_await stat_or_none(resolved);
  }
  if (!entry || !entry->is_dir) throw ModelRetry("Not a directory: " + path);
  std::vector<FileEntry> walked;
  bool walk_cut = false;
  if (confined) {
    walked = std::move(confined->entries);
  } else {
    auto [listed, cut] = co_await walk(resolved, max_depth, include_hidden);
    walked = std::move(listed);
    walk_cut = cut;
  }
  std::size_t hidden_count = 0;
  std::vector<FileEntry> found;
  for (const auto& child : walked) {
    const std::string relative = relative_path(child.path, resolved);
    const bool matches = glob_match(parts, split_components(relative));
    if (!include_hidden && is_hidden(relative) && ((child.is_dir && recursive) || matches)) ++hidden_count;
    const bool kind_ok = files_only ? !child.is_dir : (child.is_dir || !directories_only);
    if (kind_ok && matches) found.push_back(child);
  }
  std::stable_sort(found.begin(), found.end(), component_less);
  const auto cap = static_cast<std::size_t>(options.max_find_results);
  std::vector<std::string> matches;
  bool capped = false;
  for (const auto& match : found) {
    if (!walk_entry(match.path, resolved, include_hidden)) continue;
    // A dangling symlink is inside the root but names nothing.
    // (A confined walk met no symlink, so nothing dangles.)
    if (!confined && !match.is_dir && !match.size) {
      const bool present = co_await ws->exists(match.path);
      if (!present) continue;
    }
    if (matches.size() >= cap) {
      capped = true;
      break;
    }
    matches.push_back(relative_path(match.path, b.cwd) + (match.is_dir ? "/" : ""));
  }
  if (capped) matches.push_back("[... truncated at " + std::to_string(cap) + " matches]");
  co_return with_walk_notice(std::move(matches), walk_cut, hidden_count);
}

Task<std::string> FileSystemCore::list_files(std::string path, std::optional<std::string> glob) {
  const std::string pattern = !glob ? "**" : glob->find('/') != std::string::npos ? *glob : "**/" + *glob;
  co_return co_await find_files(pattern, std::move(path), true);
}

Task<std::string> FileSystemCore::grep(std::string pattern, std::string path, std::optional<std::string> glob,
                                       std::optional<std::string> file_type, bool ignore_case, bool literal,
                                       std::int64_t context) {
  if (context < 0 || context > 20) throw ModelRetry("context must be between 0 and 20.");
  if (file_type) throw ModelRetry("`file_type` needs ripgrep, which this workspace cannot run; use `glob` instead.");
  if (context != 0) {
    throw ModelRetry(
        "`context` needs a search command, which this workspace cannot run, so context lines are unavailable; search "
        "with `context=0`, then call `read_file` with an `offset` near the match.");
  }
  std::string regex = literal ? regex_escape(pattern) : pattern;
  if (ignore_case) regex = "(?i)" + regex;
  co_return co_await search_files(std::move(regex), std::move(path), std::move(glob));
}

}  // namespace exedev::tools::detail
