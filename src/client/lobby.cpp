#include "client/lobby.hpp"

#include <exedev/errors.hpp>

#include "common/shell_quote.hpp"
#include "common/utf8.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace exedev {

std::string lobby_quote(std::string_view word) {
  if (word.empty()) throw std::invalid_argument("an empty word cannot be sent to exe.dev: the lobby lexer drops it");
  if (word.find('\0') != std::string_view::npos) throw std::invalid_argument("a NUL byte cannot be sent to exe.dev");
  // The lexer reads UTF-8 runes: an invalid sequence would arrive as U+FFFD, not as sent.
  if (!detail::is_valid_utf8(word)) throw std::invalid_argument("a word sent to exe.dev must be valid UTF-8");
  return detail::sh_single_quote(word);
}

namespace detail {

LobbyLine::LobbyLine(std::string command) : command_(std::move(command)) {}

LobbyLine& LobbyLine::word(std::string_view value, std::string_view what) {
  if (value.empty()) throw std::invalid_argument(fmt::format("{} must not be empty ({})", what, command_));
  // Quoted first: a refused word leaves the line as it was.
  words_.push_back(lobby_quote(value));
  if (value.front() == '-') dash_word_ = true;
  return *this;
}

LobbyLine& LobbyLine::flag(std::string_view name, std::string_view value) {
  // `--name=` followed by a quoted value lexes as one word; an empty value is `--name=`.
  std::string text = fmt::format("--{}=", name);
  if (!value.empty()) text += lobby_quote(value);
  head_.push_back(std::move(text));
  return *this;
}

std::string LobbyLine::str() const {
  std::string line = command_;
  for (const auto& h : head_) line += ' ' + h;
  if (dash_word_) line += " --";
  for (const auto& w : words_) line += ' ' + w;
  check_body_size(line.size(), command_);
  return line;
}

void check_body_size(std::size_t size, std::string_view command) {
  if (size > max_request_body) {
    throw BadRequestError(413, std::string(command),
                          fmt::format("request body of {} bytes exceeds the 64 KiB /exec limit (refused locally, not sent)", size));
  }
}

std::string command_name(std::string_view line) {
  // Enough of the lexer for a command name: skip whitespace, take the first word, unquoting
  // the simple forms. Used only to classify and describe requests.
  std::size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\n' || line[i] == '\r')) ++i;
  std::string name;
  char quote = 0;
  for (; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
      else name += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      break;
    } else if (c == '\\' && i + 1 < line.size()) {
      name += line[++i];
    } else {
      name += c;
    }
  }
  return name;
}

namespace {

std::string size_text(unsigned value) { return std::to_string(value); }

void add_common_size_flags(LobbyLine& line, const std::optional<unsigned>& cpu, const std::optional<std::string>& memory,
                           const std::optional<std::string>& disk) {
  if (cpu) line.flag("cpu", size_text(*cpu));
  if (memory) line.flag("memory", *memory);
  if (disk) line.flag("disk", *disk);
}

}  // namespace

LobbyLine new_vm_line(const NewVMOptions& o) {
  LobbyLine line("new");
  if (o.name) line.flag("name", *o.name);
  if (o.image) line.flag("image", *o.image);
  add_common_size_flags(line, o.cpu, o.memory, o.disk);
  for (const auto& tag : o.tags) {
    if (tag.empty()) throw std::invalid_argument("new: a tag must not be empty");
    line.flag("tag", tag);
  }
  if (o.comment && !o.comment->empty()) line.flag("comment", *o.comment);
  for (const auto& [key, value] : o.env) {
    if (key.empty() || key.find('=') != std::string::npos) {
      throw std::invalid_argument("new: an environment variable name must be non-empty and contain no '='");
    }
    line.flag("env", key + "=" + value);
  }
  for (const auto& integration : o.integrations) {
    if (integration.empty()) throw std::invalid_argument("new: an integration name must not be empty");
    line.flag("integration", integration);
  }
  if (o.egress) line.flag("egress", *o.egress);
  if (o.standalone) line.flag("standalone", "true");
  return line;
}

LobbyLine copy_vm_line(const CopyVMOptions& o) {
  LobbyLine line("cp");
  line.word(o.source, "the source VM name");
  if (o.name) line.word(*o.name, "the new VM name");
  if (!o.copy_tags) line.flag("copy-tags", "false");
  add_common_size_flags(line, o.cpu, o.memory, o.disk);
  if (o.egress) line.flag("egress", *o.egress);
  if (o.standalone) line.flag("standalone", "true");
  return line;
}

LobbyLine list_vms_line(const std::vector<std::string>& patterns) {
  LobbyLine line("ls");
  for (const auto& p : patterns) line.word(p, "an ls pattern");
  return line;
}

LobbyLine remove_vms_line(const std::vector<std::string>& names) {
  if (names.empty()) throw std::invalid_argument("rm: at least one VM name is needed");
  LobbyLine line("rm");
  for (const auto& n : names) line.word(n, "a VM name");
  return line;
}

LobbyLine vm_line(std::string command, std::string_view vm) {
  LobbyLine line(std::move(command));
  line.word(vm, "the VM name");
  return line;
}

LobbyLine resize_vm_line(std::string_view vm, const ResizeVMOptions& o) {
  if (!o.memory && !o.cpu && !o.disk) throw std::invalid_argument("resize: set at least one of memory, cpu or disk");
  LobbyLine line("resize");
  line.word(vm, "the VM name");
  add_common_size_flags(line, o.cpu, o.memory, o.disk);
  return line;
}

LobbyLine rename_vm_line(std::string_view vm, std::string_view new_name) {
  LobbyLine line("rename");
  line.word(vm, "the VM name");
  line.word(new_name, "the new VM name");
  return line;
}

LobbyLine share_line(std::string_view subcommand, std::string_view vm, const std::vector<std::string>& words) {
  LobbyLine line("share " + std::string(subcommand));
  line.word(vm, "the VM name");
  for (const auto& w : words) line.word(w, "a share argument");
  return line;
}

LobbyLine tag_line(std::string_view vm, const std::vector<std::string>& tags, bool remove) {
  if (tags.empty()) throw std::invalid_argument("tag: at least one tag is needed");
  LobbyLine line("tag");
  if (remove) line.flag("d", "true");
  line.word(vm, "the VM name");
  for (const auto& t : tags) line.word(t, "a tag");
  return line;
}

LobbyLine comment_line(std::string_view vm, std::string_view text) {
  LobbyLine line("comment");
  line.word(vm, "the VM name");
  // The lexer drops an empty word, and `comment` needs two words: a lone space is trimmed to
  // the empty comment by the server (exedev-api.md §3.8).
  line.word(text.empty() ? std::string_view(" ") : text, "the comment");
  return line;
}

}  // namespace detail
}  // namespace exedev
