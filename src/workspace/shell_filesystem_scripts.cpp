// The shell filesystem's sans-IO half: the scripts it sends and the parsers of their output,
// plain functions tested without a shell (tests/unit/workspace). The coroutines that send them
// are in shell_filesystem.cpp.
#include "workspace/shell_filesystem.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <exedev/workspace/workspace.hpp>

#include "common/base64.hpp"
#include "common/inert_text.hpp"
#include "workspace/data_codec.hpp"

namespace exedev::workspace::detail {

using exedev::detail::base64_decode;

DamagedOutputError::DamagedOutputError(const std::string& path)
    : WorkspaceError(fmt::format("shell filesystem returned damaged or incomplete output for '{}'", path)) {}

DamagedWriteError::DamagedWriteError(const std::string& path)
    : WorkspaceError(fmt::format("the data written to '{}' did not arrive intact (its size, SHA-256 digest or gzip "
                                 "stream differs from what was sent); the file was not replaced",
                                 path)) {}

// ---- posixpath helpers ----

std::string posix_basename(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string posix_dirname(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return "";
  std::string head = path.substr(0, slash + 1);
  if (head.find_first_not_of('/') != std::string::npos) {
    while (!head.empty() && head.back() == '/') head.pop_back();
  }
  return head;
}

std::string posix_join(const std::string& a, const std::string& b) {
  if (!b.empty() && b.front() == '/') return b;
  if (a.empty() || a.back() == '/') return a + b;
  return a + "/" + b;
}

std::string strip(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n\v\f");
  if (first == std::string::npos) return "";
  const auto last = text.find_last_not_of(" \t\r\n\v\f");
  return text.substr(first, last - first + 1);
}

// ---- script builders ----

std::string check_parents_fragment() {
  return "while [ \"$parent\" != / ]; do "
         "if [ -d \"$parent\" ]; then test -w \"$parent\" || exit 113; break; fi; "
         "if [ -e \"$parent\" ]; then exit 120; fi; "
         "parent=\"${parent%/*}\"; [ -n \"$parent\" ] || parent=/; "
         "done; ";
}

std::string stat_script(const std::string& path) {
  const auto q = shell_quote(path);
  return fmt::format(
      "if test -d {0}; then printf 'directory\\n'; elif test -f {0}; then test -r {0} || exit 113; wc -c < {0}; "
      "elif test -e {0}; then exit 122; else exit 102; fi",
      q);
}

std::string read_chunk_script(const std::string& source_word, std::size_t page_bytes, std::size_t index,
                              bool may_compress) {
  const auto page = fmt::format("dd if={} bs={} skip={} count=1 2>/dev/null", source_word, page_bytes, index);
  if (!may_compress) return fmt::format("printf 'raw\\n'; {} | base64", page);
  // The environment samples the page itself: the client has not seen it. Level 1: a read's
  // request count does not depend on the ratio, the VM's CPU time does (bench B3).
  return fmt::format(
      "if command -v gzip >/dev/null 2>&1 && raw=$({0} | head -c {1} | wc -c) && "
      "packed=$({0} | head -c {1} | gzip -1 | wc -c) && [ $((packed * 10)) -le $((raw * {2})) ]; then "
      "printf 'gzip\\n'; {0} | gzip -1 | base64; else printf 'raw\\n'; {0} | base64; fi",
      page, kCompressionSampleBytes, kCompressedTenthsAtMost);
}

std::string tool_probe_script() {
  std::string tools;
  for (const char* tool : kShellTools) {
    if (!tools.empty()) tools += ' ';
    tools += tool;
  }
  return fmt::format("for tool in {}; do command -v \"$tool\" >/dev/null 2>&1 || printf \"%s \" \"$tool\"; done",
                     tools);
}

std::string write_prepare_fragment(const std::string& path, const std::string& temp_name) {
  return realpath_fragment(path) + fmt::format(
      "dest=$value; dir=${{dest%/*}}; [ -n \"$dir\" ] || dir=/\n"
      "parent=$dir; {0}test -w \"$dir\" || ! test -e \"$dir\" || exit 113\n"
      "mkdir -p \"$dir\" || exit 1\n"
      "temp=\"$dir\"/{1}; decoded=\"$temp.decoded\"\n",
      check_parents_fragment(), shell_quote(temp_name));
}

namespace {
// First in a compressed write's first script, so that nothing is written without gzip.
std::string gzip_check_fragment(bool gzip) {
  return gzip ? fmt::format("command -v gzip >/dev/null 2>&1 || exit {}\n", static_cast<int>(kMissingGzip)) : "";
}
}  // namespace

std::string write_whole_script(const std::string& path, const std::string& temp_name, const WriteCheck& check) {
  std::string script = gzip_check_fragment(check.gzip) + write_prepare_fragment(path, temp_name);
  // A temp file of this run's own ($$): the script may be sent again while a first run, whose
  // answer was lost, still writes.
  script += "temp=\"$temp.$$\"; decoded=\"$temp.decoded\"\n";
  if (check.size == 0 && !check.gzip) {
    script += ": > \"$temp\" || exit 1\n";
  } else {
    script += "printf '%s' \"$1\" | base64 -d > \"$temp\" || { rm -f \"$temp\"; exit 1; }\n";
  }
  return script + commit_script("\"$dest\"", "\"$temp\"", "\"$decoded\"", check);
}

std::string write_begin_script(const std::string& path, const std::string& temp_name, bool gzip, bool creates_temp) {
  // Printing the destination takes four processes; most writes name their file as it is.
  return gzip_check_fragment(gzip) + write_prepare_fragment(path, temp_name) +
         (creates_temp ? ": > \"$temp\" || exit 1\n" : "") +
         "[ \"$dest\" = " + shell_quote(normpath(path)) + " ] && exit 0\n"
         "printf %s \"$dest\" | wc -c\n"
         "printf %s \"$dest\" | base64";
}

std::string write_first_block_script(const std::string& path, const std::string& temp_name, bool gzip) {
  // `>`: sent again, it makes the same temp file, holding the first block alone.
  return gzip_check_fragment(gzip) + write_prepare_fragment(path, temp_name) +
         "printf '%s' \"$1\" | base64 -d > \"$temp\" || exit 1\n";
}

std::string write_block_script(const std::string& temp, std::size_t block_bytes, std::size_t index) {
  // No `iflag=fullblock`: short reads from the pipe are written as they come, one after the
  // other, from offset index × block_bytes.
  return fmt::format("test -f {0} || exit 102\nprintf '%s' \"$1\" | base64 -d | dd of={0} bs={1} seek={2} "
                     "conv=notrunc 2>/dev/null",
                     shell_quote(temp), block_bytes, index);
}

WriteBlocks uniform_write_blocks(std::size_t chars, std::size_t chunk) {
  WriteBlocks blocks;
  blocks.chars = chars;
  blocks.granule_bytes = chunk / 4 * 3;
  for (std::size_t start = 0; start < chars; start += chunk) blocks.starts.push_back(start);
  return blocks;
}

std::size_t confined_block_quantum(std::size_t chunk) {
  std::size_t quantum = 4;
  while (quantum < 1024 && quantum * 2 * 256 <= chunk) quantum *= 2;
  return quantum;
}

WriteBlocks confined_write_blocks(std::size_t chars, std::size_t first_chars, std::size_t room, std::size_t last_room,
                                  std::size_t quantum) {
  WriteBlocks blocks;
  blocks.chars = chars;
  blocks.granule_bytes = quantum / 4 * 3;
  blocks.starts.push_back(0);
  blocks.starts.push_back(first_chars);
  const std::size_t rest = chars - first_chars;
  const std::size_t last = last_room < quantum ? 0 : last_room;
  if (rest <= last) return blocks;  // the first and the last
  // The middle blocks carry what the last cannot, rounded up to the quantum so that the last
  // starts on one (it then holds at least last - quantum + 1 characters); with no room in the
  // last, exactly the rest.
  const std::size_t middle = room / quantum * quantum;
  const std::size_t carried = last == 0 ? rest : (rest - last + quantum - 1) / quantum * quantum;
  for (std::size_t at = middle; at < carried; at += middle) blocks.starts.push_back(first_chars + at);
  blocks.starts.push_back(first_chars + carried);
  return blocks;
}

std::string write_last_block_script(const std::string& temp, const WriteBlocks& blocks, const std::string& commit) {
  const std::size_t last = blocks.count() - 1;
  if (blocks.length(last) == 0) return commit;
  return write_block_script(temp, blocks.granule_bytes, blocks.dd_index(last)) + " || exit 1\n" + commit;
}

std::string commit_script(const std::string& destination_word, const std::string& temp_word,
                          const std::string& decoded_word, const WriteCheck& check) {
  // An existing file: cp first, so that the data, written into the copy, keeps its mode bits. A
  // new one: the temp file itself is checked and renamed (unless it holds gzip data), one copy of
  // the data fewer. A damaged gzip stream fails gzip's own CRC check; a plain copy that fails is
  // an I/O error, said by cat. Without sha256sum (or a digest to check) the digest check is
  // skipped; the size is always checked. Short: it is in every whole write's one request.
  const std::string fill = check.gzip ? fmt::format("elif test -f {0} && ! cp {0} {2}; then status=1\n"
                                                    "elif ! gzip -dc {1} > {2}; then status={3}\n",
                                                    destination_word, temp_word, decoded_word, static_cast<int>(kShortWrite))
                                      : fmt::format("elif test -f {0} && ! {{ o={2}; cp {0} {2} && cat {1} > {2}; }}; then status=1\n",
                                                    destination_word, temp_word, decoded_word);
  // A temp file made by the transfer has the owner's bits only; a new file gets the shell's (the
  // environment's umask decides, as for a file the shell creates; chmod applies it).
  const std::string mode = check.transferred ? fmt::format("elif ! test -e {0} && ! chmod =rw {1}; then status=1\n",
                                                           destination_word, temp_word)
                                             : std::string();
  // Renamed, a transferred temp file leaves nothing to remove (one process fewer).
  const std::string done = check.transferred ? fmt::format("[ $status = 0 ] && [ \"$o\" = {} ] && exit 0\n", temp_word)
                                             : std::string();
  const std::string digest = check.sha256.empty() ? std::string()
                                                  : fmt::format("elif sum=$(sha256sum < \"$o\" 2>/dev/null) && [ \"${{sum%% *}}\" != {0} ]; then status={1}\n",
                                                                shell_quote(check.sha256), static_cast<int>(kShortWrite));
  return fmt::format(
      "o={5}\n"
      "if test -d {0}; then status=121\n"
      "elif test -e {0} && ! test -f {0}; then status=122\n"
      "elif test -e {0} && ! test -w {0}; then status=113\n"
      "{6}{8}"
      "elif ! size=$(wc -c < \"$o\") || [ $size -ne {3} ]; then status={7}\n"
      "{4}"
      "else mv -f \"$o\" {0}; status=$?\n"
      "fi\n"
      "{9}rm -f {1} {2}; exit $status",
      destination_word, temp_word, decoded_word, check.size, digest, check.gzip ? decoded_word : temp_word, fill,
      static_cast<int>(kShortWrite), mode, done);
}

std::optional<std::string> temp_beside_path_as_given(const std::string& path, const std::string& temp_name) {
  const auto as_given = normpath(path);
  if (as_given.front() != '/') return std::nullopt;
  return posix_join(posix_dirname(as_given), temp_name);
}

std::string write_cleanup_script(const std::string& path, const std::string& temp_name) {
  // Also the temp file beside the path as given, where a transfer may have begun (write_transferred).
  const auto early_temp = temp_beside_path_as_given(path, temp_name);
  const std::string beside_as_given = early_temp ? " " + shell_quote(*early_temp) : std::string();
  return realpath_fragment(path) +
         fmt::format("dest=$value; dir=${{dest%/*}}; [ -n \"$dir\" ] || dir=/\n"
                     "rm -f \"$dir\"/{0} \"$dir\"/{0}.decoded \"$dir\"/{0}.[0-9]*{1}",  // .[0-9]*: a whole write's
                     shell_quote(temp_name), beside_as_given);
}

std::string read_first_page_script(const std::string& path, std::size_t page_bytes, bool may_compress,
                                   bool no_page_when_larger, std::size_t raw_bytes_at_most) {
  const auto q = shell_quote(path);
  // `head -c $size`: a file that grew since `wc` still sends the size it said.
  const std::string whole = raw_bytes_at_most > 0 ? fmt::format("if [ $size -le {} ]; then printf 'bytes\\n'; head -c $size < {}; exit; fi\n",
                                                                raw_bytes_at_most, q)
                                                  : std::string();
  const std::string no_page =
      no_page_when_larger ? fmt::format("if [ $size -gt {} ]; then printf 'none\\n'; exit 0; fi\n", page_bytes) : std::string();
  return fmt::format(
      "if test -d {0}; then exit 121; elif test -f {0}; then test -r {0} || exit 113; "
      "elif test -e {0}; then exit 122; else exit 102; fi\n"
      "size=$(wc -c < {0}) || exit 1\nprintf '%s\\n' $size\n{3}{2}{1}",
      q, read_chunk_script(q, page_bytes, 0, may_compress), no_page, whole);
}

std::string remove_files_script(const std::vector<std::string>& shell_words) {
  std::string script = "rm -f";
  for (const auto& word : shell_words) script += " " + word;
  return script;
}

std::string listing_temp_word(const std::string& name) { return "\"${TMPDIR:-/tmp}\"/" + shell_quote(name); }

std::string list_script(const std::string& path, const std::string& temp_word, std::size_t inline_bytes) {
  // `find` is never piped into base64: the pipe would hide its failure. No `find -printf`:
  // BusyBox and macOS lack it.
  const std::string mark = "for f do test -d \"$f\" && d=d || d=-; printf \"%s%s\\000\" \"$d\" \"$f\"; done";
  return fmt::format(
      "file={1}; trap 'rm -f \"$file\"' EXIT HUP INT TERM; "
      "if ! test -d {0}; then test -e {0} && exit 120; exit 102; fi; "
      "find -H {0} -mindepth 1 -maxdepth 1 -exec sh -c {2} sh {{}} + > \"$file\" && "
      "size=$(wc -c < \"$file\") && printf \"%s\\n\" \"$size\" && "
      "if [ \"$size\" -le {3} ]; then base64 < \"$file\"; else printf \"PAGED\\n\"; trap - EXIT HUP INT TERM; fi",
      shell_quote(path), temp_word, shell_quote(mark), inline_bytes);
}

std::string make_dir_script(const std::string& path) {
  return fmt::format("if test -e {0} && ! test -d {0}; then exit 117; fi; parent={1}; {2}mkdir -p {0}",
                     shell_quote(path), shell_quote(posix_dirname(path)), check_parents_fragment());
}

std::string remove_script(const std::string& path, const std::string& root) {
  // The target is the parent resolved through symlinks plus the last name, as written; it is
  // refused when it is the root or one of its ancestors.
  return realpath_fragment(posix_dirname(path)) + fmt::format(
      "target=${{value%/}}/{1}; p=$target\n"
      "while case $p in */) true;; *) false;; esac; do p=${{p%/}}; done\n"
      "root={2}\n"
      "if [ \"$root\" = \"$target\" ]; then exit 101; fi\n"
      "case $root in \"$p\"/*) exit 101;; esac\n"
      "if test -e {0} || test -L {0}; then rm -rf {0}; else exit 102; fi",
      shell_quote(path), shell_quote(posix_basename(path)), shell_quote(root));
}

std::string exists_script(const std::string& path) { return "test -e " + shell_quote(path); }

std::string realpath_script(const std::string& path) {
  return realpath_fragment(path) +
         "printf %s \"$value\" | wc -c\n"
         "printf %s \"$value\" | base64";
}

std::string realpath_fragment(const std::string& path) {
  const auto first = path.find_first_not_of('/');
  const std::string rest = first == std::string::npos ? "" : path.substr(first);
  // The `x` sentinel keeps a link target's trailing newlines from $( ) stripping.
  return fmt::format(
      "rest={0}; resolved=; links=0\n"
      "while [ -n \"$rest\" ]; do\n"
      "  case $rest in */*) part=${{rest%%/*}}; rest=${{rest#*/}};; *) part=$rest; rest=;; esac\n"
      "  case $part in ''|.) continue;; ..) resolved=${{resolved%/*}}; continue;; esac\n"
      "  if [ \"$links\" -lt {1} ] && [ -L \"$resolved/$part\" ]; then\n"
      "    links=$((links + 1))\n"
      "    target=$(readlink -n -- \"$resolved/$part\" && printf x) || exit 1\n"
      "    target=${{target%x}}\n"
      "    case $target in /*) resolved=;; esac\n"
      "    rest=$target/$rest\n"
      "  else\n"
      "    resolved=$resolved/$part\n"
      "  fi\n"
      "done\n"
      "value=${{resolved:-/}}\n",
      shell_quote(rest), kRealpathMaxLinks);
}

// ---- parsers ----

std::uint64_t parse_size_line(const std::string& line, const std::string& path) {
  const auto text = strip(line);
  if (text.empty() || text.size() > 19 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    throw DamagedOutputError(path);
  }
  return std::stoull(text);
}

StatOutput parse_stat_output(const std::string& stdout_text, const std::string& path) {
  if (strip(stdout_text) == "directory") return {true, std::nullopt};
  return {false, parse_size_line(stdout_text, path)};
}

std::string decode_exact(const std::string& text, std::size_t expected, const std::string& path) {
  auto decoded = base64_decode(text);
  if (!decoded || decoded->size() != expected) throw DamagedOutputError(path);
  return std::move(*decoded);
}

namespace {
std::pair<std::string, std::string> split_first_line(const std::string& text, const std::string& path) {
  const auto newline = text.find('\n');
  if (newline == std::string::npos) throw DamagedOutputError(path);
  return {text.substr(0, newline), text.substr(newline + 1)};
}
}  // namespace

std::string decode_page(const std::string& text, std::size_t expected, const std::string& path) {
  std::string out;
  PageDecoder decoder(out, expected);
  decoder.feed(0, text);
  decoder.finish(path);
  return out;
}

PageDecoder::PageDecoder(std::string& out, std::size_t expected)
    : out_(out), base_(out.size()), expected_(expected), first_stage_(Stage::marker_line), stage_(first_stage_) {}

PageDecoder PageDecoder::after_size_line(std::string& out, std::size_t page_bytes) {
  PageDecoder decoder(out, 0);
  decoder.page_bytes_ = page_bytes;
  decoder.first_stage_ = decoder.stage_ = Stage::size_line;
  return decoder;
}

void PageDecoder::restart() {
  out_.resize(base_);
  stage_ = first_stage_;
  consumed_ = 0;
  if (page_bytes_) size_.reset();
  line_.clear();
  base64_ = {};
  member_.clear();
}

void PageDecoder::feed(std::uint64_t offset, std::string_view bytes) {
  if (offset == 0 && consumed_ > 0) restart();
  if (offset != consumed_) stage_ = Stage::damaged;  // a gap or an overlap: not one stream
  consumed_ += bytes.size();
  while (!bytes.empty() && (stage_ == Stage::size_line || stage_ == Stage::marker_line)) take_line(bytes);
  if (bytes.empty()) return;
  if (stage_ == Stage::no_page) stage_ = Stage::damaged;  // nothing follows `none`
  if (stage_ == Stage::bytes) {
    if (out_.size() - base_ + bytes.size() > expected_) stage_ = Stage::damaged;
    else out_.append(bytes);
  } else if (stage_ == Stage::raw) {
    if (!base64_.feed(bytes, out_) || out_.size() - base_ > expected_) stage_ = Stage::damaged;
  } else if (stage_ == Stage::gzip) {
    if (!base64_.feed(bytes, member_)) stage_ = Stage::damaged;
  }
  // The page can't be trusted any more: give back what it took.
  if (stage_ == Stage::damaged) out_.resize(base_);
}

void PageDecoder::take_line(std::string_view& bytes) {
  const auto newline = bytes.find('\n');
  line_.append(bytes.substr(0, newline));
  if (newline == std::string_view::npos) {
    bytes = {};
    // Header lines are a few bytes: a long one is not a header.
    if (line_.size() > 64) stage_ = Stage::damaged;
    return;
  }
  bytes.remove_prefix(newline + 1);
  on_line();
  line_.clear();
}

void PageDecoder::on_line() {
  if (stage_ == Stage::size_line) {
    try {
      size_ = parse_size_line(line_, {});
    } catch (const DamagedOutputError&) {
      stage_ = Stage::damaged;
      return;
    }
    expected_ = static_cast<std::size_t>(std::min<std::uint64_t>(*page_bytes_, *size_));
    stage_ = Stage::marker_line;
    return;
  }
  if (line_ == "raw") {
    stage_ = Stage::raw;
  } else if (line_ == "gzip") {
    stage_ = Stage::gzip;
  } else if (line_ == "bytes" && size_) {
    // The whole file, raw: as many bytes as the size line said (never reserved ahead).
    stage_ = Stage::bytes;
    expected_ = static_cast<std::size_t>(*size_);
  } else if (line_ == "none" && page_bytes_ && size_ && *size_ > *page_bytes_) {
    stage_ = Stage::no_page;
  } else {
    stage_ = Stage::damaged;
  }
}

void PageDecoder::finish(const std::string& path) {
  if (stage_ == Stage::no_page) return;  // the caller reads the file by transfer
  if (stage_ == Stage::bytes && out_.size() - base_ == expected_) return;
  if (stage_ == Stage::raw && base64_.finish(out_) && out_.size() - base_ == expected_) return;
  if (stage_ == Stage::gzip && base64_.finish(member_)) {
    auto data = gzip_decompress(member_, expected_);
    member_.clear();
    if (data) {
      out_ += *data;
      return;
    }
  }
  out_.resize(base_);
  throw DamagedOutputError(path);
}

ListingOutput parse_listing_output(const std::string& stdout_text, const std::string& path) {
  auto [first, rest] = split_first_line(stdout_text, path);
  ListingOutput out;
  out.size = parse_size_line(first, path);
  if (rest == "PAGED\n") {
    out.paged = true;
    return out;
  }
  out.records = decode_exact(rest, out.size, path);
  return out;
}

std::vector<FileEntry> parse_listing_records(const std::string& records, const std::string& path) {
  std::vector<FileEntry> entries;
  std::size_t start = 0;
  while (start < records.size()) {
    const auto end = records.find('\0', start);
    if (end == std::string::npos) throw DamagedOutputError(path);  // a record cut short
    const std::string record = records.substr(start, end - start);
    start = end + 1;
    if (record.size() < 2 || (record[0] != 'd' && record[0] != '-')) throw DamagedOutputError(path);
    std::string entry_path = record.substr(1);
    entries.push_back(FileEntry{posix_basename(entry_path), entry_path, record[0] == 'd', std::nullopt});
  }
  std::sort(entries.begin(), entries.end(), [](const FileEntry& a, const FileEntry& b) { return a.path < b.path; });
  return entries;
}

std::string parse_realpath_output(const std::string& stdout_text, const std::string& path) {
  auto [first, rest] = split_first_line(stdout_text, path);
  const auto size = parse_size_line(first, path);
  auto value = decode_exact(rest, size, path);
  if (value.empty() || value.front() != '/') throw DamagedOutputError(path);
  return value;
}

std::string parse_write_begin_output(const std::string& stdout_text, const std::string& path) {
  if (!stdout_text.empty()) return parse_realpath_output(stdout_text, path);
  auto as_given = normpath(path);
  if (as_given.front() != '/') throw DamagedOutputError(path);  // a relative path is never the destination as given
  return as_given;
}

std::vector<std::string> parse_missing_tools(const std::string& stdout_text) {
  std::vector<std::string> tools;
  std::size_t start = 0;
  while (start < stdout_text.size()) {
    const auto end = std::min(stdout_text.find(' ', start), stdout_text.size());
    if (end > start) tools.push_back(stdout_text.substr(start, end - start));
    start = end + 1;
  }
  return tools;
}

std::string missing_tools_message(const std::vector<std::string>& tools) {
  std::string names;
  for (const auto& tool : tools) {
    if (!names.empty()) names += ", ";
    names += "`" + tool + "`";
  }
  return fmt::format(
      "The workspace has no {}, which its file operations need: it has no native filesystem, so they run "
      "as shell commands. Install them in the image (coreutils and findutils provide them).",
      names);
}

void raise_for_private_status(const CommandResult& result, const std::string& path) {
  switch (result.exit_code) {
    case kNotFound: throw path_error(std::errc::no_such_file_or_directory, path);
    case kNotADirectory: throw path_error(std::errc::not_a_directory, path);
    case kIsADirectory: throw path_error(std::errc::is_a_directory, path);
    case kExists: throw path_error(std::errc::file_exists, path);
    case kNotARegularFile: throw path_error(not_a_regular_file, path, "not a regular file");
    case kPermission: throw path_error(std::errc::permission_denied, path);
    default: return;
  }
}

void raise_operation_failed(const CommandResult& result, const std::string& path) {
  const auto reason = strip(result.stderr_text);
  // The environment's stderr: inert in the message, as it came in the payload.
  const auto message = reason.empty() ? fmt::format("shell filesystem operation failed for '{}'", path)
                                      : exedev::detail::inert_text(reason);
  throw WorkspaceScriptError(message, PartialOutput{result.stdout_text, result.stderr_text});
}

}  // namespace exedev::workspace::detail
