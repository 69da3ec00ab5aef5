#include "workspace/trees_codec.hpp"

#include <algorithm>
#include <charconv>
#include <deque>
#include <stdexcept>

#include <exedev/workspace/errors.hpp>

namespace exedev::workspace::detail {

namespace {

constexpr std::size_t kBlock = 512;
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

bool all_zero(std::string_view block) {
  return std::all_of(block.begin(), block.end(), [](char c) { return c == 0; });
}

std::string field_text(std::string_view field) {
  const auto nul = field.find('\0');
  return std::string(field.substr(0, nul == std::string_view::npos ? field.size() : nul));
}

std::uint64_t parse_number(std::string_view field) {
  if (!field.empty() && (static_cast<unsigned char>(field[0]) & 0x80) != 0) {
    // GNU base-256: big-endian, the first byte's top bit a flag.
    std::uint64_t value = static_cast<unsigned char>(field[0]) & 0x7f;
    for (std::size_t i = 1; i < field.size(); ++i) value = (value << 8) | static_cast<unsigned char>(field[i]);
    return value;
  }
  std::uint64_t value = 0;
  for (const char c : field) {
    if (c == ' ' && value == 0) continue;
    if (c < '0' || c > '7') break;
    value = value * 8 + static_cast<std::uint64_t>(c - '0');
  }
  return value;
}

void put_octal(std::string& header, std::size_t offset, std::size_t width, std::uint64_t value) {
  // width - 1 digits, then NUL.
  for (std::size_t i = width - 1; i-- > 0;) {
    header[offset + i] = static_cast<char>('0' + (value & 7));
    value >>= 3;
  }
  header[offset + width - 1] = '\0';
}

std::string pax_record(const std::string& key, const std::string& value) {
  const std::size_t base = key.size() + value.size() + 3;  // ' ', '=', '\n'
  std::size_t length = base + 1;
  while (std::to_string(length).size() + base != length) length = std::to_string(length).size() + base;
  return std::to_string(length) + " " + key + "=" + value + "\n";
}

void pad_block(std::string& out) { out.append((kBlock - out.size() % kBlock) % kBlock, '\0'); }

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

void TarWriter::add_header(const std::string& path, char type, std::uint32_t mode, std::uint64_t size, const std::string& link) {
  constexpr std::uint64_t kLargestOctalSize = (std::uint64_t{1} << 33) - 1;  // 11 octal digits
  std::string pax;
  if (path.size() > 100) pax += pax_record("path", path);
  if (link.size() > 100) pax += pax_record("linkpath", link);
  if (size > kLargestOctalSize) pax += pax_record("size", std::to_string(size));
  if (!pax.empty()) {
    const std::string data = pax;
    add_header("PaxHeader", 'x', 0644, data.size(), {});
    out_ += data;
    pad_block(out_);
  }
  std::string header(kBlock, '\0');
  header.replace(0, std::min<std::size_t>(path.size(), 100), path.substr(0, 100));
  put_octal(header, 100, 8, mode & 07777);
  put_octal(header, 108, 8, 0);
  put_octal(header, 116, 8, 0);
  put_octal(header, 124, 12, size > kLargestOctalSize ? 0 : size);
  put_octal(header, 136, 12, mtime_);
  header[156] = type;
  header.replace(157, std::min<std::size_t>(link.size(), 100), link.substr(0, 100));
  header.replace(257, 6, std::string("ustar\0", 6));
  header.replace(263, 2, "00");
  header.replace(148, 8, 8, ' ');
  unsigned checksum = 0;
  for (const char c : header) checksum += static_cast<unsigned char>(c);
  put_octal(header, 148, 7, checksum);
  header[155] = ' ';
  out_ += header;
}

void TarWriter::add_directory(const std::string& path, std::uint32_t mode) { add_header(path + "/", '5', mode, 0, {}); }

void TarWriter::add_symlink(const std::string& path, const std::string& target) { add_header(path, '2', 0777, 0, target); }

void TarWriter::add_file(const std::string& path, std::uint32_t mode, std::string_view data) {
  add_header(path, '0', mode, data.size(), {});
  out_.append(data);
  pad_block(out_);
}

std::string TarWriter::finish() {
  out_.append(2 * kBlock, '\0');
  return std::move(out_);
}

void TarStream::feed(std::string_view bytes) {
  while (!bytes.empty()) {
    std::size_t used = 0;
    switch (state_) {
      case State::header:
        used = std::min(kBlock - held_.size(), bytes.size());
        held_.append(bytes.substr(0, used));
        if (held_.size() == kBlock) on_header();
        break;
      case State::meta:
        used = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, bytes.size()));
        held_.append(bytes.substr(0, used));
        remaining_ -= used;
        if (remaining_ == 0) on_meta();
        break;
      case State::data:
      case State::skip:
        if (remaining_ == 0) {
          used = static_cast<std::size_t>(std::min<std::uint64_t>(padding_, bytes.size()));
          padding_ -= used;
          if (padding_ == 0) state_ = State::header;
          break;
        }
        used = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, bytes.size()));
        remaining_ -= used;
        if (state_ == State::data) {
          visitor_.member_data(bytes.substr(0, used));
          if (remaining_ == 0) visitor_.member_end();
        }
        if (remaining_ == 0 && padding_ == 0) state_ = State::header;
        break;
      case State::end: return;
    }
    bytes.remove_prefix(used);
  }
}

void TarStream::finish() const {
  if (state_ != State::end) throw WorkspaceError("the tree archive is cut short");
}

void TarStream::on_meta() {
  const std::string data = std::move(held_);
  held_.clear();
  state_ = padding_ > 0 ? State::skip : State::header;
  if (meta_type_ == 'L' || meta_type_ == 'K') {
    (meta_type_ == 'L' ? long_path_ : long_link_) = field_text(data);
    return;
  }
  if (meta_type_ == 'g') return;
  for (std::size_t r = 0; r < data.size();) {
    const auto space = data.find(' ', r);
    std::size_t length = 0;
    if (space == std::string::npos || std::from_chars(data.data() + r, data.data() + space, length).ptr != data.data() + space ||
        length == 0 || length > data.size() - r || length < space - r + 2) {
      throw WorkspaceError("a pax header of the tree archive is malformed");
    }
    const std::string_view record(data.data() + space + 1, r + length - space - 2);
    const auto equals = record.find('=');
    if (equals != std::string_view::npos) {
      const auto key = record.substr(0, equals);
      const std::string value(record.substr(equals + 1));
      if (key == "path") long_path_ = value;
      if (key == "linkpath") long_link_ = value;
      if (key == "size") {
        std::uint64_t size = 0;
        const auto parsed = std::from_chars(value.data(), value.data() + value.size(), size);
        if (value.empty() || parsed.ec != std::errc() || parsed.ptr != value.data() + value.size()) {
          throw WorkspaceError("a pax header of the tree archive has a size that is not a number");
        }
        long_size_ = size;
      }
    }
    r += length;
  }
}

void TarStream::on_header() {
  const std::string header = std::move(held_);
  held_.clear();
  if (all_zero(header)) {
    state_ = State::end;
    return;
  }
  unsigned checksum = 0;
  for (std::size_t i = 0; i < kBlock; ++i) checksum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(header[i]);
  if (parse_number(std::string_view(header).substr(148, 8)) != checksum) {
    throw WorkspaceError("a tar header of the tree archive has a wrong checksum");
  }
  const char type = header[156];
  std::uint64_t size = parse_number(std::string_view(header).substr(124, 12));
  const bool is_meta = type == 'x' || type == 'g' || type == 'L' || type == 'K';
  if (long_size_ && !is_meta) size = *long_size_;
  remaining_ = size;
  padding_ = (kBlock - size % kBlock) % kBlock;
  if (is_meta) {
    if (size > kMostTarMetaBytes) {
      throw WorkspaceError("a pax or long-name header of the tree archive holds " + std::to_string(size) +
                           " bytes (at most " + std::to_string(kMostTarMetaBytes) + ")");
    }
    meta_type_ = type;
    state_ = State::meta;
    if (size == 0) on_meta();
    return;
  }
  TarEntry entry;
  if (long_path_) {
    entry.path = *long_path_;
  } else {
    entry.path = field_text(std::string_view(header).substr(0, 100));
    const std::string prefix = field_text(std::string_view(header).substr(345, 155));
    if (header.compare(257, 5, "ustar") == 0 && !prefix.empty()) entry.path = prefix + "/" + entry.path;
  }
  entry.target = long_link_ ? *long_link_ : field_text(std::string_view(header).substr(157, 100));
  long_path_.reset();
  long_link_.reset();
  long_size_.reset();
  entry.mode = static_cast<std::uint32_t>(parse_number(std::string_view(header).substr(100, 8)) & 07777);
  bool has_data = false;
  switch (type) {
    case '0':
    case '\0':
    case '7':
      entry.type = TreeEntryType::file;
      entry.size = size;
      entry.target.clear();
      has_data = true;
      break;
    case '5': entry.type = TreeEntryType::directory; break;
    case '2': entry.type = TreeEntryType::symlink; break;
    case '1':
      // A hard link: a copy of the file it names, which must come earlier in the archive.
      entry.type = TreeEntryType::file;
      entry.link_to = std::move(entry.target);
      entry.target.clear();
      while (entry.link_to->compare(0, 2, "./") == 0) entry.link_to->erase(0, 2);
      break;
    default:
      // The type byte is the archive's: shown as a number, never as a raw byte.
      throw WorkspaceError("a tar member has a type this transfer does not carry (type byte " +
                           std::to_string(static_cast<unsigned char>(type)) + ")");
  }
  while (entry.path.compare(0, 2, "./") == 0) entry.path.erase(0, 2);
  while (!entry.path.empty() && entry.path.back() == '/') entry.path.pop_back();
  // The root itself is no member; what any member carries beyond its kind is skipped.
  const bool is_member = !entry.path.empty() && entry.path != ".";
  state_ = is_member && has_data ? State::data : State::skip;
  if (!is_member) return;
  visitor_.member_begin(entry);
  if (state_ == State::data && remaining_ > 0) return;
  visitor_.member_end();
  state_ = State::skip;
}

namespace {

// The members of an archive held whole: files' data as views into it.
class MemberCollector final : public TarVisitor {
 public:
  std::vector<TarMember> members;

  void member_begin(const TarEntry& entry) override {
    TarMember member;
    member.path = entry.path;
    member.type = entry.type;
    member.mode = entry.mode;
    member.target = entry.target;
    if (entry.link_to) {
      const auto earlier = std::find_if(members.begin(), members.end(), [&](const TarMember& m) {
        return m.type == TreeEntryType::file && m.path == *entry.link_to;
      });
      if (earlier == members.end()) throw WorkspaceError("a hard link in the tree archive names no file before it");
      member.data = earlier->data;
    }
    members.push_back(std::move(member));
  }
  void member_data(std::string_view bytes) override {
    auto& data = members.back().data;
    // Fed whole, an archive's file data arrives in one piece, or in pieces side by side.
    data = data.empty() ? bytes : std::string_view(data.data(), data.size() + bytes.size());
  }
  void member_end() override {}
};

}  // namespace

std::vector<TarMember> read_tar(std::string_view archive) {
  MemberCollector collector;
  TarStream stream(collector);
  stream.feed(archive);
  stream.finish();
  return std::move(collector.members);
}

}  // namespace exedev::workspace::detail
