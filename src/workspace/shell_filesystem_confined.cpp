// The shell filesystem's confined operations (SupportsConfinedFiles): the realpath check, the
// operation and what the caller shows of it in one script each. The script builders and the
// parser are sans-IO (tests/unit/workspace); the coroutines at the end send them.
//
// A script prints lines: `real` and its value, then either `outside`, `recheck` or `declined`
// (nothing was done), or what it found and did and a last `done`. A value is base64 text on the
// lines after its label, up to a `.` line (`.` is outside base64's alphabet).
#include "workspace/shell_filesystem.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "common/base64.hpp"
#include "common/coroutines.hpp"
#include "common/random_ids.hpp"
#include "common/shell_quote.hpp"
#include "workspace/data_codec.hpp"

namespace exedev::workspace::detail {

namespace {

// Prints the value of the shell word `word` as a labelled block.
std::string print_block(const std::string& label, const std::string& word) {
  return fmt::format("printf '{}\\n'; printf %s {} | base64; printf '\\n.\\n'\n", label, word);
}

// Room the confined write's checks take beyond a whole write's script, doubled for the
// request's escaping, plus a margin for the paths they repeat.
std::size_t confined_write_overhead(const ConfinedTarget& target, const std::string& expected_sha256) {
  return 2 * (1024 + 4 * (target.path.size() + target.root.size()) + expected_sha256.size());
}

// After the `file <size>` line of the regular file "$p": its content when it fits, gzip-
// compressed when $z is set.
std::string content_fragment(const ConfinedContent& content) {
  return fmt::format(
      "  if [ $size -gt {} ]; then :\n"
      "  elif [ -n \"$z\" ] && [ $size -gt 0 ]; then printf 'content gzip\\n'; gzip -1 < \"$p\" | base64; printf '\\n.\\n'\n"
      "  else printf 'content\\n'; base64 < \"$p\" || declined; printf '\\n.\\n'; fi\n",
      content.file_bytes);
}

// Sets $z when contents may travel gzip-compressed (the environment has gzip).
std::string gzip_switch(const ConfinedContent& content) {
  return content.compress ? "z=; command -v gzip >/dev/null 2>&1 && z=1\n" : "z=\n";
}

}  // namespace

ConfinedContent confined_content(const ShellFilesystemLimits& limits) {
  // Never more than read_bytes takes (max_read_bytes): a larger file comes without content, and
  // the read that follows refuses it by that limit.
  const auto read_limit = static_cast<std::size_t>(
      std::min<std::uint64_t>(limits.max_read_bytes, std::numeric_limits<std::size_t>::max()));
  ConfinedContent content;
  if (limits.confined_content_bytes == 0) {
    content.file_bytes = std::min({limits.read_page_bytes, limits.listing_inline_bytes, read_limit});
    return content;
  }
  content.file_bytes = std::min(limits.confined_content_bytes, read_limit);
  content.total_bytes = content.file_bytes;
  content.compress = limits.compress;
  return content;
}

std::string confined_prelude(const ConfinedTarget& target) {
  std::string script = "declined() { printf 'declined\\n'; exit 0; }\n";
  if (target.check_root) {
    script += realpath_fragment(target.root) + fmt::format("[ \"$value\" = {} ] || declined\n", shell_quote(target.root));
  }
  script += realpath_fragment(target.path);
  script += "real=$value\n" + print_block("real", "\"$real\"");
  if (target.root != "/") {
    script += fmt::format("root={}\ncase $real in \"$root\"|\"$root\"/*) ;; *) printf 'outside\\n'; exit 0;; esac\n",
                          shell_quote(target.root));
  }
  if (target.checked_real) {
    script += fmt::format("if [ \"$real\" != {} ]; then printf 'recheck\\n'; exit 0; fi\n",
                          shell_quote(*target.checked_real));
  }
  return script + fmt::format("p={}\n", shell_quote(target.path));
}

std::string confined_read_script(const ConfinedTarget& target, ConfinedReadOptions what, const ConfinedContent& content,
                                 const std::string& contents_word) {
  std::string script = confined_prelude(target);
  // Contents travel as one gzip member when the environment has gzip (and compression is on):
  // an answer is not limited as a request is, but a page of text is a quarter the size.
  script += gzip_switch(content);
  // A directory's entries as list_script finds them, each regular file with its size; anything
  // else (a special file, a dangling link, an unreadable file) without one.
  const std::string child =
      "for f do if test -d \"$f\"; then printf 'child d\\n'; "
      "elif test -f \"$f\" && test -r \"$f\" && s=$(wc -c < \"$f\"); then printf 'child f %s\\n' $s; "
      "else printf 'child -\\n'; fi; printf %s \"$f\" | base64; printf '\\n.\\n'; done";
  script += "if test -d \"$p\"; then printf 'dir\\n'\n";
  if (what.children && what.tree) {
    // find's own walk (-H: the directory itself may be a link); symlinks below are reported,
    // not followed. Dot-named directories are listed and, unless asked, not entered.
    // Contents with a total: each regular file that fits alone and in the total is appended to
    // the file $C (its record ends ` c`), which then travels as one block (find's batches are
    // processes of their own, so the running total is that file's size). Without a total,
    // each file that fits follows its record (`child-content`).
    const bool gathered = what.tree_contents && content.total_bytes;
    std::string appended = "c=; ";
    std::string inline_content;
    if (gathered) {
      appended = fmt::format("c=; if [ $s -eq 0 ]; then c=' c'; elif [ $s -le {} ] && t=$(wc -c < \"$C\") && "
                             "[ $((t + s)) -le {} ] && cat \"$f\" >> \"$C\"; then c=' c'; fi; ",
                             content.file_bytes, *content.total_bytes);
    } else if (what.tree_contents) {
      inline_content = fmt::format(
          "; if test -f \"$f\" && ! test -L \"$f\" && [ \"${{s:-{0}}}\" -le {1} ]; then printf 'child-content\\n'; "
          "base64 < \"$f\"; printf '\\n.\\n'; fi; s=",
          content.file_bytes + 1, content.file_bytes);
    }
    const std::string tree_child =
        "for f do if test -L \"$f\"; then printf 'child l\\n'; elif test -d \"$f\"; then printf 'child d\\n'; "
        "elif test -f \"$f\" && test -r \"$f\" && s=$(wc -c < \"$f\"); then " + appended + "printf 'child f %s%s\\n' $s \"$c\"; "
        "else printf 'child -\\n'; fi; printf %s \"$f\" | base64; printf '\\n.\\n'" + inline_content + "; done";
    const std::string depth = what.tree_depth ? fmt::format(" -maxdepth {}", *what.tree_depth) : "";
    const std::string prune = what.tree_hidden ? "" : " \\( -type d -name '.*' -prune -o -true \\)";
    if (gathered) {
      script += fmt::format("  C={}; trap 'rm -f \"$C\"' EXIT; : > \"$C\" || declined; export C\n", contents_word);
    }
    script += fmt::format("  find -H \"$p\" -mindepth 1{}{} -exec sh -c {} sh {{}} + || declined\n", depth, prune,
                          shell_quote(tree_child));
    if (gathered) {
      script += "  s=$(wc -c < \"$C\") || declined\n"
                "  if [ -n \"$z\" ] && [ $s -gt 0 ]; then printf 'contents %s gzip\\n' $s; gzip -1 < \"$C\" | base64\n"
                "  else printf 'contents %s\\n' $s; base64 < \"$C\"; fi; printf '\\n.\\n'\n";
    }
  } else if (what.children) {
    script += fmt::format("  find -H \"$p\" -mindepth 1 -maxdepth 1 -exec sh -c {} sh {{}} + || declined\n",
                          shell_quote(child));
  }
  script += "elif test -f \"$p\"; then test -r \"$p\" || declined\n"
            "  size=$(wc -c < \"$p\") || declined\n"
            "  printf 'file %s\\n' $size\n";
  if (what.content) script += content_fragment(content);
  script += "elif test -e \"$p\"; then declined\n"
            "else printf 'missing\\n'\n"
            "fi\n"
            "if test -L \"$p\"; then target=$(readlink -n -- \"$p\" && printf x) || declined; "
            "target=${target%x}\n" +
            print_block("link", "\"$target\"") + "fi\nprintf 'done\\n'\n";
  return script;
}

namespace {

// The checks of a confined write, then `write` in a subshell: its own exits end the subshell,
// not the checks' verdict.
std::string confined_write_around(const ConfinedTarget& target, const std::string& expected_sha256,
                                  const std::string& write) {
  std::string script = confined_prelude(target);
  script += fmt::format("test -d \"$p\" && declined\nparent={}\ntest -d \"$parent\" || declined\n",
                        shell_quote(posix_dirname(target.path)));
  if (!expected_sha256.empty()) {
    script += fmt::format(
        "if test -e \"$p\"; then sum=$(sha256sum < \"$p\" 2>/dev/null) || declined\n"
        "  [ \"$(printf %.{}s \"$sum\")\" = {} ] || declined; fi\n",
        expected_sha256.size(), shell_quote(expected_sha256));
  }
  return script + "(\n" + write + "\n) || declined\nprintf 'done\\n'\n";
}

}  // namespace

std::string confined_write_script(const ConfinedTarget& target, const std::string& temp_name, const WriteCheck& check,
                                  const std::string& expected_sha256) {
  return confined_write_around(target, expected_sha256, write_whole_script(target.path, temp_name, check));
}

std::string confined_write_begin_script(const ConfinedTarget& target, const std::string& temp_name, bool gzip,
                                        const std::string& expected_sha256) {
  return confined_write_around(target, expected_sha256, write_first_block_script(target.path, temp_name, gzip));
}

std::string confined_splice_script(const ConfinedTarget& target, const std::string& temp_name,
                                   const ConfinedSplice& splice, bool gzip, const ConfinedContent& content) {
  // The new content is the file's bytes before the splice, the inserted ones ($1, base64 of the
  // bytes or of their gzip member) and the file's bytes after it, made beside the real path and
  // committed as a whole write is: its size and digest checked, then renamed over the file. A
  // file whose digest is the result already was spliced by this same request, sent again.
  WriteCheck check;
  check.size = splice.result_size;
  check.sha256 = splice.result_sha256;
  const std::string inserted = gzip ? "printf '%s' \"$1\" | base64 -d | gzip -dc" : "printf '%s' \"$1\" | base64 -d";
  return confined_prelude(target) + gzip_switch(content) +
         "test -f \"$p\" && test -r \"$p\" && test -w \"$p\" || declined\n"
         "dir=${real%/*}; [ -n \"$dir\" ] || dir=/\n"
         "test -w \"$dir\" || declined\n" +
         (gzip ? "command -v gzip >/dev/null 2>&1 || declined\n" : "") +
         "size=$(wc -c < \"$p\") || declined\n"
         "sum=$(sha256sum < \"$p\" 2>/dev/null) || sum=\n" +
         fmt::format("case ${{sum%% *}} in\n"
                     "  {0}) ;;\n"
                     "  {1}) printf 'spliced\\ndone\\n'; exit 0;;\n"
                     "  *) printf 'file %s\\n' $size\n{2}  printf 'done\\n'; exit 0;;\n"
                     "esac\n"
                     "temp=\"$dir\"/{3}.$$\n"
                     "{{ head -c {4} \"$p\" && {5} && tail -c +{6} \"$p\"; }} > \"$temp\" || {{ rm -f \"$temp\"; declined; }}\n",
                     shell_quote(splice.base_sha256), shell_quote(splice.result_sha256), content_fragment(content),
                     shell_quote(temp_name), splice.offset, inserted, splice.offset + splice.length + 1) +
         "(\n" + commit_script("\"$real\"", "\"$temp\"", "\"$temp.decoded\"", check) + "\n) || declined\n"
         "printf 'spliced\\ndone\\n'\n";
}

std::string confined_make_dir_script(const ConfinedTarget& target) {
  // The nearest existing ancestor must be a writable directory, so that mkdir -p either fails
  // before it creates anything or succeeds.
  return confined_prelude(target) +
         "if test -d \"$p\"; then printf 'done\\n'; exit 0; fi\n"
         "if test -e \"$p\" || test -L \"$p\"; then declined; fi\n"
         "a=${p%/*}; [ -n \"$a\" ] || a=/\n"
         "while ! test -e \"$a\" && ! test -L \"$a\"; do a=${a%/*}; [ -n \"$a\" ] || a=/; done\n"
         "test -d \"$a\" && test -w \"$a\" || declined\n"
         "mkdir -p \"$p\" || declined\n"
         "printf 'done\\n'\n";
}

namespace {

// The lines of a confined script's output, read one label and its block at a time.
class ConfinedOutput {
 public:
  explicit ConfinedOutput(const std::string& text) : text_(text) {}
  [[nodiscard]] bool at_end() const { return at_ >= text_.size(); }
  std::string line() {
    const auto end = text_.find('\n', at_);
    if (end == std::string::npos) {
      damaged_ = true;
      at_ = text_.size();
      return {};
    }
    std::string out = text_.substr(at_, end - at_);
    at_ = end + 1;
    return out;
  }
  // A block's value, up to its `.` line.
  std::string block() {
    std::string encoded;
    while (!at_end()) {
      auto next = line();
      if (next == ".") {
        auto decoded = exedev::detail::base64_decode(encoded);
        if (!decoded) break;
        return std::move(*decoded);
      }
      encoded += next;
    }
    damaged_ = true;
    return {};
  }
  [[nodiscard]] bool damaged() const { return damaged_; }

 private:
  const std::string& text_;
  std::size_t at_ = 0;
  bool damaged_ = false;
};

bool parse_size(const std::string& text, std::uint64_t& size) {
  if (text.empty() || text.size() > 19 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  size = std::stoull(text);
  return true;
}

}  // namespace

namespace {

// A content block as `content` or `contents` labels it: base64 of the bytes, or with `gzip` of
// one gzip member holding them. nullopt unless it holds exactly `expected` bytes.
std::optional<Bytes> content_block(ConfinedOutput& output, const std::string& encoding, std::uint64_t expected,
                                   const ConfinedContent& content) {
  auto block = output.block();
  if (output.damaged() || (encoding != "" && (encoding != "gzip" || !content.compress))) return std::nullopt;
  if (encoding.empty()) {
    if (block.size() != expected) return std::nullopt;
    return block;
  }
  return gzip_decompress(block, static_cast<std::size_t>(expected));
}

}  // namespace

ConfinedResult parse_confined_output(const std::string& stdout_text, const ConfinedTarget& target,
                                     const ConfinedContent& content) {
  ConfinedResult declined;
  ConfinedResult out;
  ConfinedOutput output(stdout_text);
  if (output.line() != "real") return declined;
  out.real = output.block();
  if (output.damaged() || out.real.empty() || out.real.front() != '/') return declined;
  std::vector<std::size_t> with_content;  // indexes of the children whose bytes `contents` holds
  while (!output.at_end()) {
    const auto line = output.line();
    if (output.damaged()) return declined;
    const auto space = line.find(' ');
    const std::string label = line.substr(0, space);
    const std::string rest = space == std::string::npos ? "" : line.substr(space + 1);
    if (label == "outside" || label == "recheck") {
      out.status = label == "outside" ? ConfinedStatus::outside_root : ConfinedStatus::recheck;
      return output.at_end() ? out : declined;
    }
    if (label == "spliced") {
      out.spliced = true;
      continue;
    }
    if (label == "done") {
      out.status = ConfinedStatus::done;
      return output.at_end() ? out : declined;
    }
    if (label == "missing" || label == "dir" || label == "file") {
      FileEntry entry;
      entry.name = posix_basename(target.path);
      entry.path = target.path;
      entry.is_dir = label == "dir";
      if (label == "file") {
        std::uint64_t size = 0;
        if (!parse_size(rest, size)) return declined;
        entry.size = size;
      }
      if (label != "missing") out.entry = std::move(entry);
    } else if (label == "content") {
      // No more than was asked for: the size comes from the environment.
      if (!out.entry || !out.entry->size || *out.entry->size > content.file_bytes) return declined;
      // The file changed between its size and its bytes: not one state of it.
      out.content = content_block(output, rest, *out.entry->size, content);
      if (!out.content) return declined;
    } else if (label == "link") {
      out.link_target = output.block();
    } else if (label == "contents") {
      const auto blank = rest.find(' ');
      std::uint64_t total = 0;
      if (!parse_size(rest.substr(0, blank), total) || (content.total_bytes && total > *content.total_bytes)) return declined;
      auto bytes = content_block(output, blank == std::string::npos ? "" : rest.substr(blank + 1), total, content);
      if (!bytes) return declined;
      // The files' bytes one after the other, as their records list them; a file that changed
      // meanwhile leaves the sizes and the bytes out of step.
      std::uint64_t at = 0;
      for (const auto index : with_content) {
        const auto size = *out.children[index].size;
        if (size > total - at) return declined;
        out.child_contents[out.children[index].path] = bytes->substr(at, size);
        at += size;
      }
      if (at != total) return declined;
    } else if (label == "child-content") {
      if (out.children.empty() || !out.children.back().size) return declined;
      auto bytes = output.block();
      if (bytes.size() != *out.children.back().size) return declined;  // changed meanwhile
      out.child_contents[out.children.back().path] = std::move(bytes);
    } else if (label == "child") {
      FileEntry entry;
      entry.path = output.block();
      entry.name = posix_basename(entry.path);
      if (rest == "l") {
        out.symlinks_below = true;
      } else if (rest == "d") {
        entry.is_dir = true;
      } else if (rest.rfind("f ", 0) == 0) {
        const bool content = rest.size() > 2 && rest.compare(rest.size() - 2, 2, " c") == 0;
        std::uint64_t size = 0;
        if (!parse_size(rest.substr(2, rest.size() - 2 - (content ? 2 : 0)), size)) return declined;
        entry.size = size;
        if (content) with_content.push_back(out.children.size());
      } else if (rest != "-") {
        return declined;
      }
      out.children.push_back(std::move(entry));
    } else {
      return declined;  // `declined`, or a line no script prints
    }
    if (output.damaged()) return declined;
  }
  return declined;  // cut before `done`
}

// ---- ShellFilesystem ----

Task<ConfinedResult> ShellFilesystem::confined(std::string script, std::vector<std::string> args, bool idempotent,
                                               ConfinedTarget target) {
  CommandResult result;
  try {
    result = co_await sh(std::move(script), std::move(args), idempotent);
  } catch (const WorkspaceOutputLimitError&) {
    ConfinedResult declined;  // more than one answer holds: the separate operations page it
    co_return declined;
  }
  if (result.exit_code != 0) {
    ConfinedResult declined;
    co_return declined;
  }
  co_return parse_confined_output(result.stdout_text, target, confined_content(limits_));
}

Task<ConfinedResult> ShellFilesystem::confined_read(ConfinedTarget target, ConfinedReadOptions what) {
  const auto contents_word = listing_temp_word(".exedev-" + exedev::detail::random_hex(16) + ".contents");
  auto script = confined_read_script(target, what, confined_content(limits_), contents_word);
  co_return co_await confined(std::move(script), {}, true, std::move(target));
}

Task<ConfinedResult> ShellFilesystem::confined_write(ConfinedTarget target, Bytes data, std::string expected_sha256) {
  const std::size_t chunk = limits_.write_chunk_chars;
  const std::size_t room = chunk - std::min(chunk, confined_write_overhead(target, expected_sha256));
  const std::size_t quantum = confined_block_quantum(chunk);
  WriteCheck verify;
  verify.size = data.size();
  // Data meant for the file transfer channel takes the separate writes. Data past one request
  // (raw, else as a gzip member) goes in blocks, the checks with the first, when they are on.
  const bool transferred = co_await transfers(data.size());
  auto encoded = transferred ? std::nullopt : compressed_payload(data, room);
  verify.gzip = encoded.has_value();
  if (!encoded && !transferred) encoded = exedev::detail::base64_encode(data);
  const bool in_blocks = !transferred && encoded->size() > room;
  if (transferred || (in_blocks && (!limits_.confined_block_writes || room < quantum))) {
    ConfinedResult declined;
    co_return declined;
  }
  const auto temp_name = ".exedev-" + exedev::detail::random_hex(16) + ".tmp";
  verify.sha256 = sha256_hex(data);
  Task<ConfinedResult> write;
  if (in_blocks) {
    write = confined_write_in_blocks(target, temp_name, std::move(*encoded), verify, expected_sha256,
                                     room / quantum * quantum);
  } else {
    auto script = confined_write_script(target, temp_name, verify, expected_sha256);
    std::vector<std::string> args;
    if (!encoded->empty()) args.push_back(std::move(*encoded));
    // Sent again, it writes the same file (its temp file is the run's own).
    write = confined(std::move(script), std::move(args), true, target);
  }
  co_return co_await removing_temp_on_failure(std::move(write), target.path, temp_name);
}

Task<ConfinedResult> ShellFilesystem::removing_temp_on_failure(Task<ConfinedResult> operation, std::string path,
                                                               std::string temp_name) {
  std::exception_ptr error;
  ConfinedResult result;
  try {
    result = co_await std::move(operation);
  } catch (...) {
    error = std::current_exception();
  }
  if (error) {
    // As write_bytes: the temp file is removed even after cancellation, best effort.
    EXEDEV_AWAIT_DESPITE_CANCELLATION(cleanup_error, cleanup(write_cleanup_script(path, temp_name)));
    std::rethrow_exception(error);
  }
  co_return result;
}

Task<ConfinedResult> ShellFilesystem::confined_write_in_blocks(ConfinedTarget target, std::string temp_name,
                                                               std::string encoded, WriteCheck verify,
                                                               std::string expected_sha256, std::size_t first_chars) {
  std::vector<std::string> args;
  args.push_back(encoded.substr(0, first_chars));
  auto script = confined_write_begin_script(target, temp_name, verify.gzip, expected_sha256);
  // Sent again, it makes the same temp file with the same first block.
  auto begun = co_await confined(std::move(script), std::move(args), true, target);
  if (begun.status != ConfinedStatus::done) {
    // `outside` and `recheck` come before anything is made; a decline may come after.
    if (begun.status == ConfinedStatus::declined) co_await cleanup(write_cleanup_script(target.path, temp_name));
    co_return begun;
  }
  // The temp file is beside the real path the checks passed, which the commit replaces.
  const auto temp = posix_join(posix_dirname(begun.real), temp_name);
  const auto commit = commit_script(shell_quote(begun.real), shell_quote(temp), shell_quote(temp + ".decoded"), verify);
  // The last request carries the commit besides its block: the commit's room (doubled for the
  // request's escaping, which also covers what joins it to the block) is not the block's.
  const std::size_t chunk = limits_.write_chunk_chars;
  const std::size_t last_room = chunk - std::min(chunk, 2 * commit.size());
  const auto blocks = confined_write_blocks(encoded.size(), first_chars, chunk, last_room,
                                            confined_block_quantum(chunk));
  // Errors name the caller's path, as write_bytes' do.
  co_await write_blocks(temp, encoded, blocks, 1, blocks.count() - 1, target.path);
  const auto last = blocks.count() - 1;
  std::vector<std::string> last_args;
  if (blocks.length(last) > 0) last_args.push_back(encoded.substr(blocks.starts[last]));
  // Sent once, as write_chunked's commit: a second run would race the first over the temp file.
  const auto committed = co_await sh(write_last_block_script(temp, blocks, commit), std::move(last_args));
  co_await check_commit(committed, target.path);
  co_return begun;
}

Task<ConfinedResult> ShellFilesystem::confined_splice(ConfinedTarget target, ConfinedSplice splice) {
  if (!limits_.splices) {
    ConfinedResult declined;
    co_return declined;
  }
  const auto temp_name = ".exedev-" + exedev::detail::random_hex(16) + ".tmp";
  // The script's own room, doubled for the request's escaping, besides what a whole write's
  // script takes (the chunk size allows for that).
  const std::size_t overhead = 2 * confined_splice_script(target, temp_name, splice, true, confined_content(limits_)).size();
  const std::size_t room = limits_.write_chunk_chars - std::min(limits_.write_chunk_chars, overhead);
  auto encoded = compressed_payload(splice.inserted, room);
  const bool gzip = encoded.has_value();
  if (!encoded) encoded = exedev::detail::base64_encode(splice.inserted);
  if (encoded->size() > room) {
    ConfinedResult declined;
    co_return declined;
  }
  auto script = confined_splice_script(target, temp_name, splice, gzip, confined_content(limits_));
  std::vector<std::string> args;
  if (!encoded->empty()) args.push_back(std::move(*encoded));
  // Sent again after it was applied, it finds the result's digest and says so.
  Task<ConfinedResult> splice_run = confined(std::move(script), std::move(args), true, target);
  co_return co_await removing_temp_on_failure(std::move(splice_run), target.path, temp_name);
}

Task<ConfinedResult> ShellFilesystem::confined_make_dir(ConfinedTarget target) {
  auto script = confined_make_dir_script(target);
  co_return co_await confined(std::move(script), {}, true, std::move(target));
}

}  // namespace exedev::workspace::detail
