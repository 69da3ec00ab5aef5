#include "tools/shell_sessions.hpp"

#include "tools/outcome.hpp"
#include "tools/text.hpp"
#include "workspace/shell_filesystem.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>
#include <vector>

#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/sessions.hpp>

namespace exedev::tools::detail {

namespace ws = exedev::workspace;
using ws::SupportsProcessSessions;

namespace {

/// After the first output, a read goes on while the program keeps printing: it returns once
/// the program has been quiet this long (or at the caller's wait).
constexpr std::chrono::milliseconds kQuietWait{250};
/// Characters of an answer kept for its status lines (dropped bytes, the cut, the state with a
/// session name of up to 64 characters), at most.
constexpr std::size_t kStatusReserve = 250;

const std::vector<std::string>& key_names() {
  static const std::vector<std::string> names{"enter", "tab",  "escape", "backspace", "up",
                                              "down",  "left", "right",  "ctrl-c",    "ctrl-d"};
  return names;
}

Parameter wait_parameter(const std::string& what) {
  return typed_parameter("wait_seconds", JsonType::number,
                         "Seconds to wait for " + what + " (0 to 20, default 2). The answer comes once the program "
                         "has printed something and gone quiet for a quarter second, or at this limit.",
                         "2");
}

Parameter name_parameter() {
  return text_parameter("name", "The session's name, as given to start_session.");
}

/// A tool's name and description (tool_description's summary and returns).
ToolSpec described(std::string name, const std::string& summary, const std::string& returns) {
  ToolSpec spec;
  spec.name = std::move(name);
  spec.description = tool_description(summary, returns);
  return spec;
}

ToolSpec start_spec() {
  auto spec = described(
      "start_session",
      "Start an interactive program that keeps running between calls (a Python or Node REPL, a "
      "debugger, a prompt) as a named session.\n\n"
      "Send it input with `send_to_session`, read what it prints with `read_session`, and end it "
      "with `close_session`. The session outlives this run; `list_sessions` shows every session.",
      "The command started and the first output it printed within `wait_seconds`.");
  auto& ps = spec.parameters;
  ps.push_back(text_parameter("name", "A new name for the session: 1 to 64 letters, digits, `_`, `.` or `-`."));
  ps.push_back(text_parameter("command", "A shell command line to run, e.g. `python3 -i`. Give this or `argv`.", "null", true));
  auto argv = typed_parameter("argv", JsonType::string_array,
                              "The program and its arguments, each passed literally. Give this or `command`.", "null", true);
  ps.push_back(std::move(argv));
  ps.push_back(text_parameter("cwd", "Directory to start in (default: the working directory).", "null", true));
  ps.push_back(typed_parameter("pty", JsonType::boolean,
                               "Run in a terminal (default), as a person would: prompts, line editing, Ctrl-C. "
                               "false: plain pipes, for programs that read stdin as data.",
                               "true"));
  ps.push_back(typed_parameter("rows", JsonType::integer, "Terminal rows (1 to 9999).", "24"));
  ps.push_back(typed_parameter("cols", JsonType::integer, "Terminal columns (1 to 9999).", "80"));
  ps.push_back(wait_parameter("its first output"));
  return spec;
}

ToolSpec send_spec() {
  auto spec = described(
      "send_to_session",
      "Type input into a session: `text`, then Enter (unless `enter` is false), then an optional "
      "named `key` such as `ctrl-c` (interrupt) or `ctrl-d` (end of input).",
      "What the program printed since the last read of this session, within `wait_seconds`.");
  auto& ps = spec.parameters;
  ps.push_back(name_parameter());
  ps.push_back(text_parameter("text", "The text to type (may be empty when sending only a key).", "\"\""));
  ps.push_back(typed_parameter("enter", JsonType::boolean, "Press Enter after a non-empty `text` (default true).", "true"));
  auto key = text_parameter("key", "A key to press after the text.", "null", true);
  key.choices = key_names();
  ps.push_back(std::move(key));
  ps.push_back(wait_parameter("the answer"));
  return spec;
}

ToolSpec read_spec() {
  auto spec = described(
      "read_session",
      "Read what a session printed since the last read (or since it started).",
      "The new output (long output is cut: read again for the rest), then whether the program "
      "still runs or how it exited.");
  spec.parameters.push_back(name_parameter());
  spec.parameters.push_back(wait_parameter("new output"));
  return spec;
}

ToolSpec list_spec() {
  return described("list_sessions", "List the interactive sessions in the workspace.",
                   "One line per session: its name, whether it runs, and its command.");
}

ToolSpec close_spec() {
  auto spec = described("close_session", "End a session's program (if it still runs) and delete the session.",
                        "A confirmation.");
  spec.parameters.push_back(name_parameter());
  return spec;
}

std::chrono::milliseconds wait_of(const Arguments& args) {
  const double seconds = args.optional_number("wait_seconds").value_or(0.0);
  const double limit = std::chrono::duration<double>(SupportsProcessSessions::max_read_wait).count();
  if (!std::isfinite(seconds) || seconds < 0 || seconds > limit) {
    throw ModelRetry("wait_seconds must be between 0 and " + python_g(limit) + ".");
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

std::uint16_t terminal_dimension(const Arguments& args, const std::string& name) {
  const auto value = args.integer(name);
  if (value < 1 || value > 9999) throw ModelRetry(name + " must be between 1 and 9999.");
  return static_cast<std::uint16_t>(value);
}

std::string exit_text(const ws::SessionExit& exit) {
  auto text = "exit code " + std::to_string(exit.code);
  if (exit.signal) text += " (signal " + *exit.signal + ")";
  return text;
}

ws::Command command_of(const Arguments& args) {
  auto line = args.optional_text("command");
  auto argv = args.optional_strings("argv");
  if (line && argv) throw ModelRetry("Give either `command` or `argv`, not both.");
  if (argv) {
    if (argv->empty() || argv->front().empty()) throw ModelRetry("argv must name a program first.");
    return ws::Command::argv(std::move(*argv));
  }
  if (!line || line->empty()) throw ModelRetry("Give the program to run: `command` (a shell line) or `argv`.");
  return ws::Command::shell(std::move(*line));
}

}  // namespace

ToolSpec session_tool_spec(const std::string& name) {
  if (name == "start_session") return start_spec();
  if (name == "send_to_session") return send_spec();
  if (name == "read_session") return read_spec();
  if (name == "list_sessions") return list_spec();
  return close_spec();
}

std::optional<std::string> key_bytes(const std::string& key) {
  static const std::map<std::string, std::string> bytes{
      {"enter", "\n"},  {"tab", "\t"},      {"escape", "\x1b"},  {"backspace", "\x7f"},
      {"up", "\x1b[A"}, {"down", "\x1b[B"}, {"right", "\x1b[C"}, {"left", "\x1b[D"}};
  const auto found = bytes.find(key);
  if (found == bytes.end()) return std::nullopt;
  return found->second;
}

SessionTools::SessionTools(std::shared_ptr<ws::Workspace> workspace, SessionToolOptions options)
    : workspace_(std::move(workspace)), options_(std::move(options)) {}

Task<std::string> SessionTools::call(std::string name, Arguments args, std::string run_id,
                                     std::optional<std::string> default_cwd) {
  // What the workspace refuses as the caller's mistake is the model's to correct.
  std::optional<std::string> refusal;
  try {
    if (name == "start_session") co_return co_await start(std::move(args), std::move(run_id), std::move(default_cwd));
    if (name == "send_to_session") co_return co_await send(std::move(args), std::move(run_id));
    if (name == "list_sessions") co_return redacted(co_await list());
    auto session = args.text("name");
    if (name == "close_session") co_return redacted(co_await close(std::move(session)));
    const auto wait = wait_of(args);
    co_return co_await read_since_last(std::move(session), std::move(run_id), wait, std::string());
  } catch (const std::invalid_argument& e) {
    refusal = e.what();
  } catch (const ws::WorkspaceUsageError& e) {
    // An unknown name, a live session of that name, a resize of pipes.
    refusal = e.what();
  }
  throw ModelRetry(*refusal);
}

std::shared_ptr<SessionTools::Cursor> SessionTools::cursor(const std::string& name, const std::string& run_id) {
  auto& entry = cursors_[name + '\n' + run_id];
  if (!entry) entry = std::make_shared<Cursor>(Cursor{0, {}, RedactingStream(options_.redaction)});
  return entry;
}

Task<void> SessionTools::keep_attached(const std::string& name, const std::string& run_id, std::uint64_t offset) {
  if (attach_declined_.contains(name)) co_return;
  const auto [followed, first] = attached_runs_.try_emplace(name, run_id);
  if (!first && followed->second != run_id) co_return;
  bool attached = false;
  try {
    attached = co_await workspace_->attach_session(name, offset);
  } catch (const ws::WorkspaceError&) {
    // Attaching only saves commands: the operations that follow say what is wrong, if anything.
  }
  if (!attached) {
    attach_declined_.insert(name);
    attached_runs_.erase(name);
  }
}

std::string SessionTools::redacted(std::string text) const {
  return options_.redaction->apply(std::move(text));
}

void SessionTools::forget(const std::string& name) {
  attach_declined_.erase(name);
  attached_runs_.erase(name);
  const auto prefix = name + '\n';
  auto it = cursors_.lower_bound(prefix);
  while (it != cursors_.end() && it->first.compare(0, prefix.size(), prefix) == 0) it = cursors_.erase(it);
}

Task<std::string> SessionTools::start(Arguments args, std::string run_id, std::optional<std::string> default_cwd) {
  auto name = args.text("name");
  ws::validate_session_name(name);
  ws::ProcessSessionSpec spec;
  spec.command = command_of(args);
  const auto line = spec.command.to_shell_line();
  if (auto refused = command_refusal(options_.policy, line)) throw ModelRetry(*refused);
  spec.pty = args.boolean("pty");
  spec.size.rows = terminal_dimension(args, "rows");
  spec.size.cols = terminal_dimension(args, "cols");
  spec.env = options_.env;
  const auto wait = wait_of(args);
  auto cwd = args.optional_text("cwd");
  if (cwd && !cwd->empty() && cwd->front() == '/') {
    spec.cwd = std::move(*cwd);
  } else if (cwd || default_cwd) {
    if (!default_cwd) default_cwd = co_await workspace_->working_dir();
    spec.cwd = cwd ? ws::detail::posix_join(*default_cwd, *cwd) : *default_cwd;
  }
  std::string how = "with pipes";
  if (spec.pty) how = "in a " + std::to_string(spec.size.rows) + "x" + std::to_string(spec.size.cols) + " terminal";
  co_await workspace_->start_session(name, std::move(spec));
  forget(name);
  auto heading = "Started session " + python_repr(name) + " " + how + ": " + python_repr(line) + "\n";
  co_return co_await read_since_last(std::move(name), std::move(run_id), wait, std::move(heading));
}

Task<std::string> SessionTools::send(Arguments args, std::string run_id) {
  auto name = args.text("name");
  auto text = args.text("text");
  const auto key = args.optional_text("key");
  const auto wait = wait_of(args);
  if (text.empty() && !key) throw ModelRetry("Nothing to send: give `text`, a `key`, or both.");
  auto data = text;
  if (!text.empty() && args.boolean("enter")) data += '\n';
  std::string sent = text.empty() ? "" : python_repr(data);
  if (key) {
    if (auto bytes = key_bytes(*key)) data += *bytes;
    sent += std::string(sent.empty() ? "" : " and ") + "the key " + *key;
  }
  co_await keep_attached(name, run_id, cursor(name, run_id)->next_offset);
  for (std::size_t at = 0; at < data.size(); at += SupportsProcessSessions::max_write_bytes) {
    auto piece = data.substr(at, SupportsProcessSessions::max_write_bytes);
    co_await workspace_->write_stdin(name, std::move(piece));
  }
  // A signal and an end of input mean the same on a terminal and on pipes, where the bytes
  // "\x03" and "\x04" would be plain data.
  if (key == "ctrl-c") co_await workspace_->signal_session(name, "INT");
  if (key == "ctrl-d") co_await workspace_->close_stdin(name);
  auto heading = "Sent " + sent + " to session " + python_repr(name) + ".\n";
  co_return co_await read_since_last(std::move(name), std::move(run_id), wait, std::move(heading));
}

Task<std::string> SessionTools::read_since_last(std::string name, std::string run_id, std::chrono::milliseconds wait,
                                                std::string heading) {
  const auto position = cursor(name, run_id);
  co_await keep_attached(name, run_id, position->next_offset);
  // A byte is at most one character: this many bytes fit the answer's cap. (Where the cap is too
  // small for the heading and status lines, the Shell's truncate_tail still cuts, marked.)
  const std::size_t reserve = std::min(kStatusReserve + utf8_length(heading), options_.max_output_chars / 2);
  const std::size_t max_bytes =
      std::min(std::max<std::size_t>(1, options_.max_output_chars - reserve), SupportsProcessSessions::max_read_bytes);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  // Committed once the answer is made: a cancelled read leaves the position where it was.
  auto next_offset = position->next_offset;
  auto decoder = position->decoder;
  auto redactor = position->redactor;
  std::string text;
  // The end of the output, or a gap in it, ends whatever sequence (or redacted value) it began.
  const auto end_stream = [&decoder, &redactor, &text] {
    text += redactor.feed(decoder.finish());
    text += redactor.finish();
  };
  std::size_t bytes_read = 0;
  std::uint64_t dropped = 0;
  ws::SessionOutput output;
  auto this_wait = wait;
  for (;;) {
    output = co_await workspace_->read_output(name, next_offset, max_bytes - bytes_read, this_wait);
    if (output.dropped_bytes > 0) {
      end_stream();
      dropped += output.dropped_bytes;
    }
    std::string_view kept = output.data;
    next_offset = output.next_offset;
    bytes_read += output.data.size();
    const bool cut = bytes_read >= max_bytes && !output.complete;
    if (const auto line_end = kept.rfind('\n'); cut && line_end != std::string_view::npos) {
      // A cut read ends at a line's end: the rest of the line comes whole with the next read.
      kept = kept.substr(0, line_end + 1);
      next_offset = output.offset + kept.size();
    }
    text += redactor.feed(decoder.feed(kept));
    if (output.complete) end_stream();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (output.complete || output.data.empty() || bytes_read >= max_bytes || left <= std::chrono::milliseconds::zero()) {
      break;
    }
    this_wait = std::min(kQuietWait, left);
  }
  position->next_offset = next_offset;
  position->decoder = std::move(decoder);
  position->redactor = std::move(redactor);
  auto answer = redacted(std::move(heading));
  if (dropped > 0) {
    answer += "[" + with_thousands(dropped) + " bytes of older output were dropped before this read]\n";
  }
  answer += text.empty() ? "(no new output)" : text;
  if (answer.back() != '\n') answer += '\n';
  if (bytes_read >= max_bytes && !output.complete) {
    answer += "[output cut at " + with_thousands(max_bytes) + " bytes: call read_session for the rest]\n";
  }
  if (const auto held = position->redactor.held_back(); held > 0) {
    answer += "[" + with_thousands(held) + " bytes held back: they may begin a redacted value; the next read shows them]\n";
  }
  std::string status;
  if (output.lost) {
    status = "[session " + python_repr(name) + " was lost: its holder is gone and no end was recorded" +
             (output.complete ? "]" : "; output remains to be read]");
  } else if (output.complete) {
    status = "[session " + python_repr(name) + " exited: " + exit_text(*output.exit) + "]";
  } else if (output.exit) {
    status = "[session " + python_repr(name) + " exited (" + exit_text(*output.exit) + "); output remains to be read]";
  } else {
    status = "[session " + python_repr(name) + " is running]";
  }
  answer += redacted(std::move(status));
  co_return answer;
}

Task<std::string> SessionTools::list() {
  const auto sessions = co_await workspace_->list_sessions();
  if (sessions.empty()) co_return "(no sessions)";
  std::string answer;
  for (const auto& session : sessions) {
    std::string state = "running";
    if (session.state == ws::SessionState::lost) state = "lost (its holder is gone, no end recorded)";
    if (session.exit) state = "exited, " + exit_text(*session.exit);
    // The recorded command comes back from the environment: shown as a quoted literal.
    answer += python_repr(session.name) + ": " + state + (session.pty ? ", terminal" : ", pipes") + ", command " +
              python_repr(ws::utf8_replace_invalid(session.command)) + "\n";
  }
  answer.pop_back();
  co_return answer;
}

Task<std::string> SessionTools::close(std::string name) {
  co_await workspace_->remove_session(name);
  forget(name);
  co_return "Closed session " + python_repr(name) + ".";
}

}  // namespace exedev::tools::detail
