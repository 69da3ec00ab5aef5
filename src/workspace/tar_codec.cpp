#include "workspace/tar_codec.hpp"

#include <algorithm>
#include <charconv>
#include <string>

#include <exedev/workspace/errors.hpp>

namespace exedev::workspace::detail {

namespace {

constexpr std::size_t kBlock = 512;

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
