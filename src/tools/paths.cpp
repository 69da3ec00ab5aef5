#include "tools/paths.hpp"

#include <fnmatch.h>

#include <functional>
#include <map>

namespace exedev::tools::detail {

bool path_contains(const std::string& root, const std::string& path) {
  if (path == root) return true;
  std::string prefix = root;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  prefix += '/';
  return path.compare(0, prefix.size(), prefix) == 0;
}

std::vector<std::string> split_components(std::string_view path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = path.find('/', start);
    const auto part = path.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (!part.empty()) parts.emplace_back(part);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

std::string relative_path(const std::string& path, const std::string& start) {
  const auto to = split_components(path);
  const auto from = split_components(start);
  std::size_t common = 0;
  while (common < to.size() && common < from.size() && to[common] == from[common]) ++common;
  std::string out;
  for (std::size_t i = common; i < from.size(); ++i) out += out.empty() ? ".." : "/..";
  for (std::size_t i = common; i < to.size(); ++i) out += (out.empty() ? "" : "/") + to[i];
  return out.empty() ? "." : out;
}

std::string parent_path(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return "";
  std::string head = path.substr(0, slash + 1);
  // posixpath.dirname strips trailing slashes unless the head is all slashes.
  if (head.find_first_not_of('/') != std::string::npos) {
    while (!head.empty() && head.back() == '/') head.pop_back();
  }
  return head;
}

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string join_path(const std::string& a, const std::string& b) {
  if (!b.empty() && b.front() == '/') return b;
  if (a.empty() || a.back() == '/') return a + b;
  return a + "/" + b;
}

bool fnmatch_python(const std::string& name, const std::string& pattern) {
  return ::fnmatch(pattern.c_str(), name.c_str(), FNM_NOESCAPE) == 0;
}

bool pattern_matches(const std::string& path, const std::string& pattern) {
  if (fnmatch_python(path, pattern)) return true;
  return pattern.rfind("**/", 0) == 0 && fnmatch_python(path, pattern.substr(3));
}

std::string first_matching_pattern(const std::string& path, const std::vector<std::string>& patterns, bool ancestors) {
  std::vector<std::string> candidates;
  if (ancestors) {
    // "a/b/c" -> "a", "a/b", "a/b/c" (Python splits on every "/", empty parts included).
    std::size_t at = 0;
    while (true) {
      const auto slash = path.find('/', at);
      if (slash == std::string::npos) break;
      candidates.push_back(path.substr(0, slash));
      at = slash + 1;
    }
  }
  candidates.push_back(path);
  for (const auto& pattern : patterns) {
    for (const auto& candidate : candidates) {
      if (pattern_matches(candidate, pattern)) return pattern;
    }
  }
  return {};
}

bool is_hidden(const std::string& relative) {
  if (relative == ".") return false;
  std::size_t at = 0;
  while (true) {
    if (at < relative.size() && relative[at] == '.') return true;
    const auto slash = relative.find('/', at);
    if (slash == std::string::npos) return false;
    at = slash + 1;
  }
}

bool names_hidden(const std::string& pattern) { return pattern == "." || is_hidden(pattern); }

bool glob_match(const std::vector<std::string>& pattern, const std::vector<std::string>& path) {
  // Memoized on (pattern index, path index): each `**` tries every split.
  std::map<std::pair<std::size_t, std::size_t>, bool> memo;
  std::function<bool(std::size_t, std::size_t)> match = [&](std::size_t p, std::size_t q) -> bool {
    if (p == pattern.size()) return q == path.size();
    const auto key = std::make_pair(p, q);
    if (auto found = memo.find(key); found != memo.end()) return found->second;
    bool result = false;
    if (pattern[p] == "**") {
      for (std::size_t index = q; index <= path.size() && !result; ++index) result = match(p + 1, index);
    } else {
      result = q < path.size() && fnmatch_python(path[q], pattern[p]) && match(p + 1, q + 1);
    }
    memo[key] = result;
    return result;
  };
  return match(0, 0);
}

}  // namespace exedev::tools::detail
