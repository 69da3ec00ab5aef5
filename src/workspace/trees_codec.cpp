#include "workspace/trees_codec.hpp"

#include <algorithm>
#include <charconv>
#include <deque>
#include <stdexcept>

#include <exedev/workspace/errors.hpp>

namespace exedev::workspace::detail {

namespace {

// Symlinks followed while resolving one link before it counts as a loop (Linux's limit).
constexpr int kMostLinkHops = 40;

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto slash = path.find('/', start);
    const auto end = slash == std::string_view::npos ? path.size() : slash;
    parts.emplace_back(path.substr(start, end - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return parts;
}

std::string join_path(const std::vector<std::string>& parts) {
  std::string joined;
  for (const auto& part : parts) {
    if (!joined.empty()) joined.push_back('/');
    joined += part;
  }
  return joined;
}

std::string_view base_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Matches `[...]` at the start of `pattern` against `c`; `length` is how much of the pattern
// the class takes (0 when it is not a class: no closing `]`).
bool class_match(std::string_view pattern, char c, std::size_t& length) {
  std::size_t i = 1;
  const bool negated = i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^');
  if (negated) ++i;
  bool matched = false;
  bool first = true;
  for (; i < pattern.size(); ++i) {
    if (pattern[i] == ']' && !first) {
      length = i + 1;
      return matched != negated;
    }
    first = false;
    char low = pattern[i];
    if (low == '\\' && i + 1 < pattern.size()) low = pattern[++i];
    char high = low;
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      high = pattern[i + 2];
      i += 2;
    }
    if (c >= low && c <= high) matched = true;
  }
  length = 0;
  return false;
}


}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) {
  while (!pattern.empty()) {
    if (pattern.substr(0, 2) == "**") {
      auto rest = pattern.substr(2);
      if (!rest.empty() && rest[0] == '/') {
        rest.remove_prefix(1);
        if (glob_match(rest, text)) return true;
        for (std::size_t i = 0; i < text.size(); ++i) {
          if (text[i] == '/' && glob_match(rest, text.substr(i + 1))) return true;
        }
        return false;
      }
      for (std::size_t i = 0; i <= text.size(); ++i) {
        if (glob_match(rest, text.substr(i))) return true;
      }
      return false;
    }
    const char p = pattern[0];
    if (p == '*') {
      const auto rest = pattern.substr(1);
      for (std::size_t i = 0;; ++i) {
        if (glob_match(rest, text.substr(i))) return true;
        if (i == text.size() || text[i] == '/') return false;
      }
    }
    if (text.empty()) return false;
    if (p == '?') {
      if (text[0] == '/') return false;
      pattern.remove_prefix(1);
    } else if (p == '[') {
      std::size_t length = 0;
      const bool matched = class_match(pattern, text[0], length);
      if (length == 0) {
        if (text[0] != '[') return false;
        pattern.remove_prefix(1);
      } else {
        if (!matched || text[0] == '/') return false;
        pattern.remove_prefix(length);
      }
    } else {
      char literal = p;
      if (p == '\\' && pattern.size() > 1) {
        literal = pattern[1];
        pattern.remove_prefix(1);
      }
      if (text[0] != literal) return false;
      pattern.remove_prefix(1);
    }
    text.remove_prefix(1);
  }
  return text.empty();
}

TreeFilter::TreeFilter(const std::vector<std::string>& patterns) {
  for (std::string line : patterns) {
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    Pattern pattern;
    if (line[0] == '!') {
      pattern.negated = true;
      line.erase(0, 1);
    } else if (line.substr(0, 2) == "\\!" || line.substr(0, 2) == "\\#") {
      line.erase(0, 1);
    }
    while (line.size() > 1 && line.back() == '/') {
      pattern.directory_only = true;
      line.pop_back();
    }
    pattern.anchored = line.find('/') != std::string::npos;
    while (!line.empty() && line[0] == '/') line.erase(0, 1);
    if (line.empty()) continue;
    pattern.glob = std::move(line);
    patterns_.push_back(std::move(pattern));
  }
}

bool TreeFilter::excludes(std::string_view path, bool is_dir) const {
  bool excluded = false;
  for (const auto& pattern : patterns_) {
    if (pattern.directory_only && !is_dir) continue;
    if (excluded != pattern.negated) continue;  // cannot change the answer
    if (glob_match(pattern.glob, pattern.anchored ? path : base_name(path))) excluded = !pattern.negated;
  }
  return excluded;
}

std::vector<std::string> TreeFilter::prunable_names() const {
  std::vector<std::string> names;
  for (const auto& pattern : patterns_) {
    if (pattern.negated) return {};  // a later `!` could re-include a name: decide locally
  }
  for (const auto& pattern : patterns_) {
    if (!pattern.anchored && pattern.glob.find("**") == std::string::npos) names.push_back(pattern.glob);
  }
  return names;
}

void restrict_modes(TreeManifest& manifest, std::uint32_t allowed) {
  for (auto& [path, entry] : manifest) {
    if (entry.type != TreeEntryType::symlink) entry.mode &= allowed & 0777;
  }
}

void apply_filter(TreeManifest& manifest, const TreeFilter& filter) {
  if (filter.empty()) return;
  std::set<std::string> excluded_dirs;
  for (auto it = manifest.begin(); it != manifest.end();) {
    const std::string& path = it->first;
    bool excluded = false;
    for (auto slash = path.find('/'); slash != std::string::npos && !excluded; slash = path.find('/', slash + 1)) {
      excluded = excluded_dirs.count(path.substr(0, slash)) != 0;
    }
    const bool is_dir = it->second.type == TreeEntryType::directory;
    if (!excluded) excluded = filter.excludes(path, is_dir);
    if (excluded) {
      if (is_dir) excluded_dirs.insert(path);
      it = manifest.erase(it);
    } else {
      ++it;
    }
  }
}

namespace {

// Whether the symlink at `link_path` resolves outside the tree, following the tree's links.
bool leaves_tree(const TreeManifest& manifest, const std::string& link_path) {
  std::vector<std::string> position = split_path(link_path);
  position.pop_back();
  std::deque<std::string> pending;
  int hops = 0;
  const auto take_target = [&](const std::string& target) {
    if (target.empty() || target[0] == '/') return false;
    const auto parts = split_path(target);
    pending.insert(pending.begin(), parts.begin(), parts.end());
    return ++hops <= kMostLinkHops;
  };
  if (!take_target(manifest.at(link_path).target)) return true;
  while (!pending.empty()) {
    const std::string part = pending.front();
    pending.pop_front();
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (position.empty()) return true;
      position.pop_back();
      continue;
    }
    position.push_back(part);
    const auto it = manifest.find(join_path(position));
    if (it != manifest.end() && it->second.type == TreeEntryType::symlink) {
      position.pop_back();
      if (!take_target(it->second.target)) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<std::string> drop_escaping_symlinks(TreeManifest& manifest) {
  std::vector<std::string> escaping;
  for (const auto& [path, entry] : manifest) {
    if (entry.type == TreeEntryType::symlink && leaves_tree(manifest, path)) escaping.push_back(path);
  }
  for (const auto& path : escaping) manifest.erase(path);
  return escaping;
}

bool is_tree_path(std::string_view path) {
  if (path.empty() || path.find('\0') != std::string_view::npos) return false;
  for (const auto& part : split_path(path)) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

TreePlan plan_tree(const TreeManifest& source, const TreeManifest& destination) {
  TreePlan plan;
  std::set<std::string> removed;
  const auto remove = [&](const std::string& path) {
    for (auto slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
      if (removed.count(path.substr(0, slash)) != 0) return;  // goes with its directory
    }
    removed.insert(path);
    plan.remove.push_back(path);
  };
  for (const auto& [path, wanted] : source) {
    const auto it = destination.find(path);
    if (it == destination.end()) {
      plan.send.push_back(path);
      continue;
    }
    const TreeEntry& present = it->second;
    if (present.type != wanted.type) {
      remove(path);
      plan.send.push_back(path);
      continue;
    }
    bool differs = false;
    switch (wanted.type) {
      case TreeEntryType::file:
        differs = present.size != wanted.size || present.mode != wanted.mode || wanted.sha256.empty() ||
                  present.sha256 != wanted.sha256;
        break;
      case TreeEntryType::directory: differs = present.mode != wanted.mode; break;
      case TreeEntryType::symlink: differs = present.target != wanted.target; break;
    }
    if (differs) plan.send.push_back(path);
  }
  for (const auto& [path, present] : destination) {
    if (source.count(path) == 0) remove(path);
  }
  return plan;
}

std::optional<ListedTree> parse_tree_listing(std::string_view text) {
  ListedTree listed;
  std::size_t at = 0;
  const auto next_field = [&](std::string_view& field) {
    const auto nul = text.find('\0', at);
    if (nul == std::string_view::npos) return false;
    field = text.substr(at, nul - at);
    at = nul + 1;
    return true;
  };
  std::string_view field;
  for (;;) {
    if (at == text.size()) return listed;  // nothing listed (no tree there)
    if (!next_field(field)) return std::nullopt;
    if (field.empty()) break;
    // "<t> <mode> <size> <path>"
    if (field.size() < 7 || field[1] != ' ') return std::nullopt;
    const auto mode_end = field.find(' ', 2);
    if (mode_end == std::string_view::npos) return std::nullopt;
    const auto size_end = field.find(' ', mode_end + 1);
    if (size_end == std::string_view::npos) return std::nullopt;
    TreeEntry entry;
    std::uint32_t mode = 0;
    std::uint64_t size = 0;
    const auto mode_text = field.substr(2, mode_end - 2);
    const auto size_text = field.substr(mode_end + 1, size_end - mode_end - 1);
    if (std::from_chars(mode_text.data(), mode_text.data() + mode_text.size(), mode, 8).ptr != mode_text.data() + mode_text.size() ||
        std::from_chars(size_text.data(), size_text.data() + size_text.size(), size).ptr != size_text.data() + size_text.size()) {
      return std::nullopt;
    }
    std::string path(field.substr(size_end + 1));
    std::string_view target;
    if (!next_field(target) || !is_tree_path(path)) return std::nullopt;
    entry.mode = mode & 07777;
    switch (field[0]) {
      case 'f':
        entry.type = TreeEntryType::file;
        entry.size = size;
        break;
      case 'd': entry.type = TreeEntryType::directory; break;
      case 'l':
        entry.type = TreeEntryType::symlink;
        entry.mode = 0777;
        entry.target = std::string(target);
        break;
      default: listed.others.push_back(std::move(path)); continue;
    }
    listed.manifest.emplace(std::move(path), std::move(entry));
  }
  while (at < text.size()) {
    if (!next_field(field)) return std::nullopt;
    // "<64 hex>  ./<path>"
    if (field.size() < 69 || field.substr(64, 4) != "  ./") return std::nullopt;
    const auto it = listed.manifest.find(std::string(field.substr(68)));
    if (it != listed.manifest.end() && it->second.type == TreeEntryType::file) it->second.sha256 = std::string(field.substr(0, 64));
  }
  return listed;
}

}  // namespace exedev::workspace::detail
