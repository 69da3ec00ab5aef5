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

}  // namespace

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

std::string confined_read_script(const ConfinedTarget& target, ConfinedReadOptions what, std::size_t content_bytes) {
  std::string script = confined_prelude(target);
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
    std::string tree_child =
        "for f do if test -L \"$f\"; then printf 'child l\\n'; elif test -d \"$f\"; then printf 'child d\\n'; "
        "elif test -f \"$f\" && test -r \"$f\" && s=$(wc -c < \"$f\"); then printf 'child f %s\\n' $s; "
        "else printf 'child -\\n'; fi; printf %s \"$f\" | base64; printf '\\n.\\n'";
    if (what.tree_contents) {
      tree_child += fmt::format(
          "; if test -f \"$f\" && ! test -L \"$f\" && [ \"${{s:-{0}}}\" -le {1} ]; then printf 'child-content\\n'; "
          "base64 < \"$f\"; printf '\\n.\\n'; fi; s=",
          content_bytes + 1, content_bytes);
    }
    tree_child += "; done";
    const std::string depth = what.tree_depth ? fmt::format(" -maxdepth {}", *what.tree_depth) : "";
    const std::string prune = what.tree_hidden ? "" : " \\( -type d -name '.*' -prune -o -true \\)";
    script += fmt::format("  find -H \"$p\" -mindepth 1{}{} -exec sh -c {} sh {{}} + || declined\n", depth, prune,
                          shell_quote(tree_child));
  } else if (what.children) {
    script += fmt::format("  find -H \"$p\" -mindepth 1 -maxdepth 1 -exec sh -c {} sh {{}} + || declined\n",
                          shell_quote(child));
  }
  script += "elif test -f \"$p\"; then test -r \"$p\" || declined\n"
            "  size=$(wc -c < \"$p\") || declined\n"
            "  printf 'file %s\\n' $size\n";
  if (what.content) {
    script += fmt::format(
        "  if [ $size -le {} ]; then printf 'content\\n'; base64 < \"$p\" || declined; printf '\\n.\\n'; fi\n",
        content_bytes);
  }
  script += "elif test -e \"$p\"; then declined\n"
            "else printf 'missing\\n'\n"
            "fi\n"
            "if test -L \"$p\"; then target=$(readlink -n -- \"$p\" && printf x) || declined; "
            "target=${target%x}\n" +
            print_block("link", "\"$target\"") + "fi\nprintf 'done\\n'\n";
  return script;
}

std::string confined_write_script(const ConfinedTarget& target, const std::string& temp_name, const WriteCheck& check,
                                  const std::string& expected_sha256) {
  std::string script = confined_prelude(target);
  script += fmt::format("test -d \"$p\" && declined\nparent={}\ntest -d \"$parent\" || declined\n",
                        shell_quote(posix_dirname(target.path)));
  if (!expected_sha256.empty()) {
    script += fmt::format(
        "if test -e \"$p\"; then sum=$(sha256sum < \"$p\" 2>/dev/null) || declined\n"
        "  [ \"$(printf %.{}s \"$sum\")\" = {} ] || declined; fi\n",
        expected_sha256.size(), shell_quote(expected_sha256));
  }
  // The whole write in a subshell: its own exits end the subshell, not the checks' verdict.
  return script + "(\n" + write_whole_script(target.path, temp_name, check) + "\n) || declined\nprintf 'done\\n'\n";
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

ConfinedResult parse_confined_output(const std::string& stdout_text, const ConfinedTarget& target) {
  ConfinedResult declined;
  ConfinedResult out;
  ConfinedOutput output(stdout_text);
  if (output.line() != "real") return declined;
  out.real = output.block();
  if (output.damaged() || out.real.empty() || out.real.front() != '/') return declined;
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
      out.content = output.block();
      // The file changed between its size and its bytes: not one state of it.
      if (!out.entry || !out.entry->size || out.content->size() != *out.entry->size) return declined;
    } else if (label == "link") {
      out.link_target = output.block();
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
        std::uint64_t size = 0;
        if (!parse_size(rest.substr(2), size)) return declined;
        entry.size = size;
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
  co_return parse_confined_output(result.stdout_text, target);
}

Task<ConfinedResult> ShellFilesystem::confined_read(ConfinedTarget target, ConfinedReadOptions what) {
  const std::size_t content_bytes = std::min(limits_.read_page_bytes, limits_.listing_inline_bytes);
  auto script = confined_read_script(target, what, content_bytes);
  co_return co_await confined(std::move(script), {}, true, std::move(target));
}

Task<ConfinedResult> ShellFilesystem::confined_write(ConfinedTarget target, Bytes data, std::string expected_sha256) {
  auto encoded = exedev::detail::base64_encode(data);
  const std::size_t overhead = confined_write_overhead(target, expected_sha256);
  // Data past one request, or meant for the file transfer channel, takes the separate writes.
  const bool transferred = co_await transfers(data.size());
  if (transferred || encoded.size() + overhead > limits_.write_chunk_chars) {
    ConfinedResult declined;
    co_return declined;
  }
  const auto temp_name = ".exedev-" + exedev::detail::random_hex(16) + ".tmp";
  WriteCheck verify;
  verify.size = data.size();
  verify.sha256 = sha256_hex(data);
  auto script = confined_write_script(target, temp_name, verify, expected_sha256);
  std::vector<std::string> args;
  if (!encoded.empty()) args.push_back(std::move(encoded));
  std::exception_ptr error;
  ConfinedResult result;
  try {
    // Sent again, it writes the same file (its temp file is the run's own).
    result = co_await confined(std::move(script), std::move(args), true, target);
  } catch (...) {
    error = std::current_exception();
  }
  if (error) {
    // As write_bytes: the temp file is removed even after cancellation, best effort.
    EXEDEV_AWAIT_DESPITE_CANCELLATION(cleanup_error, cleanup(write_cleanup_script(target.path, temp_name)));
    std::rethrow_exception(error);
  }
  co_return result;
}

Task<ConfinedResult> ShellFilesystem::confined_make_dir(ConfinedTarget target) {
  auto script = confined_make_dir_script(target);
  co_return co_await confined(std::move(script), {}, true, std::move(target));
}

}  // namespace exedev::workspace::detail
