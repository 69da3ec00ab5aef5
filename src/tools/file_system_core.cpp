#include "tools/file_system_impl.hpp"

#include "tools/content_hash.hpp"
#include "tools/outcome.hpp"
#include "tools/paths.hpp"
#include "tools/text.hpp"

#include <exedev/tools/errors.hpp>
#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/workspace.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

namespace exedev::tools::detail {

namespace {

bool is_missing(const std::filesystem::filesystem_error& error) {
  return error.code() == std::errc::no_such_file_or_directory || error.code() == std::errc::not_a_directory;
}

std::string outside_root(const std::string& resolved, const std::string& root) {
  return "`" + resolved + "` is outside the project root `" + root + "`; use a path inside it.";
}

std::string escapes_root(const std::string& path, const std::string& root) {
  return "`" + path + "` leads outside the project root `" + root + "` through a symlink; use a path inside it.";
}

// Rechecks of a confined operation whose target's real path keeps changing, before the
// separate operations take over.
constexpr int max_confined_rechecks = 3;

}  // namespace

workspace::ConfinedSplice splice_between(std::string_view before, std::string_view after) {
  const std::size_t shorter = std::min(before.size(), after.size());
  std::size_t prefix = 0;
  while (prefix < shorter && before[prefix] == after[prefix]) ++prefix;
  std::size_t suffix = 0;
  while (suffix < shorter - prefix && before[before.size() - 1 - suffix] == after[after.size() - 1 - suffix]) ++suffix;
  workspace::ConfinedSplice splice;
  splice.base_sha256 = sha256_hex(before);
  splice.offset = prefix;
  splice.length = before.size() - prefix - suffix;
  splice.inserted = after.substr(prefix, after.size() - prefix - suffix);
  splice.result_size = after.size();
  splice.result_sha256 = sha256_hex(after);
  return splice;
}

void KnownContents::remember(const std::string& path, workspace::Bytes content) {
  forget(path);
  if (content.size() > max_known_content_bytes) return;
  bytes_ += content.size();
  entries_.emplace_back(path, std::move(content));
  while (bytes_ > max_known_content_bytes) {
    bytes_ -= entries_.front().second.size();
    entries_.pop_front();
  }
}

void KnownContents::forget(const std::string& path) {
  const auto at = std::find_if(entries_.begin(), entries_.end(), [&](const auto& entry) { return entry.first == path; });
  if (at == entries_.end()) return;
  bytes_ -= at->second.size();
  entries_.erase(at);
}

const workspace::Bytes* KnownContents::find(const std::string& path) const {
  const auto at = std::find_if(entries_.begin(), entries_.end(), [&](const auto& entry) { return entry.first == path; });
  return at == entries_.end() ? nullptr : &at->second;
}

bool looks_binary(std::string_view bytes) { return bytes.substr(0, 8192).find('\0') != std::string_view::npos; }

std::string with_walk_notice(std::vector<std::string> lines, bool walk_cut, std::size_t hidden_count) {
  if (hidden_count != 0) {
    lines.push_back("[" + std::to_string(hidden_count) +
                    " hidden entries omitted; name a hidden path explicitly to include it]");
  }
  if (walk_cut) {
    if (lines.empty()) lines.emplace_back("No matches found.");
    lines.push_back("[... walk cut short after " + std::to_string(max_walk_directories) + " directories or " +
                    std::to_string(max_walk_entries) + " entries; narrow the path]");
  }
  if (lines.empty()) return "No matches found.";
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) out += (i == 0 ? "" : "\n") + lines[i];
  return out;
}

Task<Bounds> FileSystemCore::scope() {
  if (bounds) co_return *bounds;
  std::string cwd = workspace::normpath(co_await ws->working_dir());
  std::string root;
  if (!options.root_dir) {
    if (cwd != "/") cwd = co_await ws->realpath(cwd);
    root = cwd;
  } else {
    root = co_await ws->resolve(*options.root_dir);
    if (root != "/") root = co_await ws->realpath(root);
    if (cwd != "/") cwd = co_await ws->realpath(cwd);
    if (!path_contains(root, cwd)) {
      throw UserError("The working directory '" + cwd + "' is outside root_dir '" + root + "'. To work in '" + root +
                      "', attach the workspace there; otherwise set root_dir to a directory that contains the "
                      "working directory.");
    }
  }
  const bool has_patterns = !options.allowed_patterns.empty() || !options.denied_patterns.empty() ||
                            !options.read_only_patterns.empty();
  bounds = Bounds{root, cwd, root != "/" || has_patterns};
  co_return *bounds;
}

Task<Bounds> FileSystemCore::presumed_scope() {
  if (bounds) co_return *bounds;
  if (options.root_dir) co_return co_await scope();
  if (!presumed) {
    const std::string cwd = workspace::normpath(co_await ws->working_dir());
    const bool has_patterns = !options.allowed_patterns.empty() || !options.denied_patterns.empty() ||
                              !options.read_only_patterns.empty();
    presumed = Bounds{cwd, cwd, cwd != "/" || has_patterns};
    if (cwd == "/") bounds = presumed;  // nothing to resolve, as scope() resolves nothing
  }
  co_return *presumed;
}

Task<std::pair<std::string, std::string>> FileSystemCore::resolve_path(std::string path) {
  const Bounds b = co_await scope();
  std::string resolved = co_await ws->resolve(path, b.cwd);
  if (!path_contains(b.root, resolved)) throw ModelRetry(outside_root(resolved, b.root));
  if (!b.checks_realpath) co_return std::make_pair(resolved, resolved);
  std::string real = co_await ws->realpath(resolved);
  if (!path_contains(b.root, real)) throw ModelRetry(escapes_root(path, b.root));
  co_return std::make_pair(std::move(resolved), std::move(real));
}

Task<std::optional<workspace::ConfinedTarget>> FileSystemCore::confined_target(std::string path, bool write,
                                                                              bool check_allowed) {
  const Bounds b = co_await presumed_scope();
  std::string resolved = co_await ws->resolve(path, b.cwd);
  // Refusals are reported by safe_resolve, against the root's real path.
  if (!path_contains(b.root, resolved)) co_return std::nullopt;
  try {
    check_access(relative_path(resolved, b.root), write, check_allowed);
  } catch (const ModelRetry&) {
    co_return std::nullopt;
  }
  workspace::ConfinedTarget target;
  target.path = std::move(resolved);
  target.root = b.root;  // "/" (checks_realpath false, no patterns): no real path is refused
  target.check_root = !bounds && b.root != "/";
  const bool has_patterns = !options.allowed_patterns.empty() || !options.denied_patterns.empty() ||
                            !options.read_only_patterns.empty();
  if (has_patterns) target.checked_real = target.path;
  co_return target;
}

Task<std::optional<workspace::ConfinedResult>> FileSystemCore::run_confined(std::string path,
                                                                           workspace::ConfinedTarget target,
                                                                           bool write, bool check_allowed,
                                                                           ConfinedCall call) {
  const Bounds b = co_await presumed_scope();
  for (int attempt = 0; attempt <= max_confined_rechecks; ++attempt) {
    workspace::ConfinedResult result;
    if (call.kind == ConfinedCall::Kind::read) {
      result = co_await ws->confined_read(target, call.what);
    } else if (call.kind == ConfinedCall::Kind::write) {
      result = co_await ws->confined_write(target, call.data, call.expected_sha256);
    } else if (call.kind == ConfinedCall::Kind::splice) {
      result = co_await ws->confined_splice(target, call.splice);
    } else {
      result = co_await ws->confined_make_dir(target);
    }
    if (result.status != workspace::ConfinedStatus::declined && target.check_root) {
      bounds = b;  // the operation found the presumed root real
      target.check_root = false;
    }
    switch (result.status) {
      case workspace::ConfinedStatus::done: co_return result;
      case workspace::ConfinedStatus::declined: co_return std::nullopt;
      case workspace::ConfinedStatus::outside_root: throw ModelRetry(escapes_root(path, b.root));
      case workspace::ConfinedStatus::recheck:
        // The checks safe_resolve makes on a real path that differs from the written one.
        check_access(relative_path(result.real, b.root), write, check_allowed);
        target.checked_real = result.real;
        break;
    }
  }
  co_return std::nullopt;
}

Task<std::optional<std::pair<std::string, workspace::ConfinedResult>>> FileSystemCore::confined_read(
    std::string path, bool write, bool check_allowed, workspace::ConfinedReadOptions what) {
  auto target = co_await confined_target(path, write, check_allowed);
  if (!target) co_return std::nullopt;
  ConfinedCall call;
  call.what = std::move(what);
  std::string resolved = target->path;
  auto found = co_await run_confined(path, std::move(*target), write, check_allowed, std::move(call));
  if (!found) co_return std::nullopt;
  co_return std::make_pair(std::move(resolved), std::move(*found));
}

void FileSystemCore::check_access(const std::string& relative, bool write, bool check_allowed) const {
  if (write && !options.read_only_patterns.empty()) {
    const auto matched = first_matching_pattern(relative, options.read_only_patterns, true);
    if (!matched.empty()) {
      throw ModelRetry("Path " + python_repr(relative) + " is protected (matches " + python_repr(matched) + ").");
    }
  }
  if (!options.denied_patterns.empty()) {
    const auto matched = first_matching_pattern(relative, options.denied_patterns, true);
    if (!matched.empty()) {
      throw ModelRetry("Path " + python_repr(relative) + " is denied by pattern " + python_repr(matched) + ".");
    }
  }
  if (check_allowed && !options.allowed_patterns.empty()) {
    const bool allowed = std::any_of(options.allowed_patterns.begin(), options.allowed_patterns.end(),
                                     [&](const std::string& pattern) { return pattern_matches(relative, pattern); });
    if (!allowed) throw ModelRetry("Path " + python_repr(relative) + " does not match any allowed pattern.");
  }
}

bool FileSystemCore::is_accessible(const std::string& relative) const {
  if (!options.denied_patterns.empty() && !first_matching_pattern(relative, options.denied_patterns, true).empty()) {
    return false;
  }
  if (!options.allowed_patterns.empty()) {
    return std::any_of(options.allowed_patterns.begin(), options.allowed_patterns.end(),
                       [&](const std::string& pattern) { return pattern_matches(relative, pattern); });
  }
  return true;
}

Task<std::string> FileSystemCore::safe_resolve(std::string path, bool write, bool check_allowed) {
  const Bounds b = co_await scope();
  auto [resolved, real] = co_await resolve_path(path);
  check_access(relative_path(resolved, b.root), write, check_allowed);
  if (real != resolved) check_access(relative_path(real, b.root), write, check_allowed);
  co_return resolved;
}

std::optional<std::string> FileSystemCore::walk_entry(const std::string& path, const std::string& start,
                                                      bool include_hidden) const {
  if (!path_contains(bounds->root, path)) return std::nullopt;
  std::string relative = relative_path(path, bounds->root);
  if ((!include_hidden && is_hidden(relative_path(path, start))) || !is_accessible(relative)) return std::nullopt;
  return relative;
}

Task<bool> FileSystemCore::readable_entry(std::string path) {
  const Bounds b = co_await scope();
  if (!b.checks_realpath) co_return true;
  const std::string real = co_await ws->realpath(path);
  co_return path_contains(b.root, real) && is_accessible(relative_path(real, b.root));
}

Task<std::optional<FileEntry>> FileSystemCore::stat_or_none(std::string resolved) {
  try {
    co_return co_await ws->stat(resolved);
  } catch (const std::filesystem::filesystem_error& error) {
    if (!is_missing(error)) throw;
  }
  co_return std::nullopt;
}

Task<std::pair<std::vector<FileEntry>, bool>> FileSystemCore::walk(std::string directory,
                                                                   std::optional<std::size_t> max_depth,
                                                                   bool include_hidden) {
  const Bounds b = co_await scope();
  std::vector<FileEntry> entries;
  std::vector<std::pair<std::string, std::size_t>> pending;
  pending.emplace_back(directory, 1);
  std::set<std::string> seen_dirs;
  seen_dirs.insert(co_await ws->realpath(directory));
  std::size_t listed = 0;
  while (!pending.empty()) {
    if (listed >= max_walk_directories || entries.size() >= max_walk_entries) {
      if (entries.size() > max_walk_entries) entries.resize(max_walk_entries);
      co_return std::make_pair(std::move(entries), true);
    }
    ++listed;
    auto [current, depth] = pending.back();
    pending.pop_back();
    std::vector<FileEntry> children;
    try {
      children = co_await ws->list_dir(current);
    } catch (const std::filesystem::filesystem_error&) {
      if (current == directory) throw;
      continue;
    }
    entries.insert(entries.end(), children.begin(), children.end());
    if (max_depth && depth >= *max_depth) continue;
    // Prefer a directory's own spelling over aliases; never revisit a real directory.
    std::vector<std::pair<FileEntry, std::string>> resolved_dirs;
    for (const auto& child : children) {
      if (!child.is_dir || (!include_hidden && !child.name.empty() && child.name.front() == '.')) continue;
      resolved_dirs.emplace_back(child, co_await ws->realpath(child.path));
    }
    std::stable_sort(resolved_dirs.begin(), resolved_dirs.end(), [](const auto& a, const auto& b) {
      return (a.first.path != a.second) < (b.first.path != b.second);
    });
    for (const auto& [child, real] : resolved_dirs) {
      if (seen_dirs.count(real) || !path_contains(b.root, real)) continue;
      if (!first_matching_pattern(relative_path(child.path, b.root), options.denied_patterns, true).empty()) continue;
      seen_dirs.insert(real);
      pending.emplace_back(child.path, depth + 1);
    }
  }
  co_return std::make_pair(std::move(entries), false);
}

}  // namespace exedev::tools::detail
