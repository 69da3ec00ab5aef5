#include "common/script_path.hpp"
#include "common/shell_quote.hpp"
#include "client/run_protocol.hpp"

#include "common/base64.hpp"
#include "client/lobby.hpp"

#include <exedev/errors.hpp>

#include <fmt/format.h>

#include <charconv>
#include <stdexcept>

namespace exedev::detail {

namespace {

// Started by the launch script under setsid: $1 = record directory, $2 = VM-side timeout
// (seconds, may be empty), $3 = the login shell, $4 = the PATH the session had before the
// protocol put the standard directories first (the command gets it back: the library's own
// tools are found as script_path.hpp says, the user's command as the user's PATH says). The
// command gets its own session too, so its
// process group can be stopped without stopping this runner, which records the exit status
// afterwards. The watchdog is killed by process group and by pid: a command that ends at once
// can finish before the watchdog's setsid has made its group, and a group kill alone would then
// leave its `sleep` behind. A watchdog that outlives its runner anyway (the runner killed from
// outside) signals only while the record exists without an exit status: once the record is
// gone, the command's process-group id may belong to another process.
constexpr std::string_view runner_script = R"RUN(d=$1
[ -f "$d/void" ] && exit 0
setsid env PATH="$4" "$3" -l "$d/cmd" </dev/null >"$d/out" 2>"$d/err" &
p=$!
printf '%s\n' "$p" >"$d/pgid.tmp" && mv -f -- "$d/pgid.tmp" "$d/pgid"
[ -f "$d/cancel" ] && kill -s KILL -- "-$p" 2>/dev/null
w=
if [ -n "$2" ]; then
  setsid /bin/sh -c 'sleep "$2"; [ -d "$1" ] && [ ! -f "$1/status" ] && : >"$1/timedout" || exit 0; kill -s TERM -- "-$3" 2>/dev/null; sleep 5; [ -d "$1" ] && [ ! -f "$1/status" ] || exit 0; kill -s KILL -- "-$3" 2>/dev/null' sh "$d" "$2" "$p" </dev/null >/dev/null 2>&1 &
  w=$!
fi
wait "$p"
c=$?
if [ -f "$d/timedout" ] || [ -f "$d/cancel" ]; then kill -s KILL -- "-$p" 2>/dev/null; fi
[ -n "$w" ] && kill -s KILL -- "-$w" "$w" 2>/dev/null
printf '%s\n' "$c" >"$d/status.tmp" && mv -f -- "$d/status.tmp" "$d/status"
)RUN";

// Shared by every request: `emit` streams a file past an offset as a data frame (at most 4 MiB
// at a time); `pollw` streams until the exit (sets X to the exit status, Z=1), for at most $1
// seconds or 32 MiB, then says `r`. It sleeps only when nothing new arrived, briefly at first so a
// short command answers within milliseconds, then longer so a long one costs little.
constexpr std::string_view poll_functions = R"SH(emit() {
  R=$3
  [ -f "$2" ] || return 0
  s=$(wc -c <"$2" | tr -d ' ')
  [ -n "$s" ] && [ "$s" -gt "$3" ] || return 0
  m=$((s - $3))
  [ "$m" -gt 4194304 ] && m=4194304 && M=1
  printf '%s %s %s\n' "$B" "$1" "$3"
  tail -c +"$(($3 + 1))" "$2" | head -c "$m" | base64
  printf '%s .\n' "$B"
  R=$(($3 + m))
  W=1
}
pollw() {
  t=$(($(date +%s) + $1))
  n=0
  a=$((o + e))
  while :; do
    f=
    M=
    W=
    [ -f "$d/status" ] && f=1
    emit o "$d/out" "$o"; o=$R
    emit e "$d/err" "$e"; e=$R
    [ -n "$M" ] && f=
    if [ -n "$f" ]; then
      X=$(cat "$d/status")
      g=-
      [ -f "$d/timedout" ] && g=t
      [ -f "$d/cancel" ] && g=c
      printf '%s x %s %s\n' "$B" "$X" "$g"
      Z=1
      return 0
    fi
    if [ ! -d "$d" ]; then printf '%s l\n' "$B"; return 0; fi
    if [ "$(date +%s)" -ge "$t" ] || [ $((o + e - a)) -ge 33554432 ]; then
      if [ ! -f "$d/pgid" ]; then : >"$d/void"; printf '%s l\n' "$B"; return 0; fi
      printf '%s r\n' "$B"
      return 0
    fi
    [ -n "$W" ] && continue
    n=$((n + 1))
    if [ "$n" -lt 10 ]; then sleep 0.003; elif [ "$n" -lt 40 ]; then sleep 0.025; else sleep 0.2; fi
  done
}
)SH";

// A missing record is replaced by a tombstone (reported `l`), so a launch request still on its
// way cannot start the command afterwards.
constexpr std::string_view tombstone_if_missing =
    "if [ ! -d \"$d\" ]; then mkdir -p -- \"$r\" 2>/dev/null; "
    "if mkdir -- \"$d\" 2>/dev/null; then : >\"$d/void\"; printf '%s l\\n' \"$B\"; exit 0; fi; fi\n";

void require_no_nul(std::string_view text, std::string_view what) {
  if (text.find('\0') != std::string_view::npos) {
    throw std::invalid_argument(fmt::format("run: {} must not contain a NUL byte", what));
  }
}

bool valid_env_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (const char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

void require_hex(std::string_view id) {
  if (id.empty() || id.find_first_not_of("0123456789abcdef") != std::string_view::npos) {
    throw std::invalid_argument("run: a record id must be lowercase hex");
  }
}

}  // namespace

std::string command_text(const std::string& shell_line, const std::map<std::string, std::string>& env,
                         const std::optional<std::string>& working_dir) {
  require_no_nul(shell_line, "the command");
  std::string text;
  if (working_dir) {
    require_no_nul(*working_dir, "the working directory");
    if (working_dir->empty()) throw std::invalid_argument("run: the working directory must not be empty");
    text += "cd -- " + sh_single_quote(*working_dir) + " || exit 1\n";
  }
  for (const auto& [name, value] : env) {
    if (!valid_env_name(name)) throw std::invalid_argument("run: an environment variable name must match [A-Za-z_][A-Za-z0-9_]*");
    require_no_nul(value, "an environment value");
    text += "export " + name + "=" + sh_single_quote(value) + "\n";
  }
  text += shell_line;
  text += '\n';
  return text;
}

std::string_view login_shell_selection() {
  // POSIX-compatible login shells only (the command text's preamble is sh syntax), else /bin/sh.
  return "S=${SHELL:-/bin/sh}\n"
         "case ${S##*/} in csh|tcsh|fish|nu|xonsh|elvish|pwsh) S=/bin/sh ;; esac\n"
         "[ -x \"$S\" ] || S=/bin/sh\n";
}

std::string build_script(const ScriptRequest& r) {
  require_hex(r.id);
  for (const auto& ack : r.acks) require_hex(ack);
  if (r.boundary.empty() || r.boundary.find_first_of("' \t\r\n") != std::string::npos) {
    throw std::invalid_argument("run: invalid frame boundary");
  }
  // The protocol's own tools by the standard directories (common/script_path.hpp), so that a
  // profile that shadows `wc` or `base64` does not break every run; the user's PATH is kept
  // for the command.
  std::string s = "U=$PATH\n";
  s += script_path_line;
  s += poll_functions;
  s += "main() {\n";
  s += "B=" + sh_single_quote(r.boundary) + "\n";
  s += "r=\"${XDG_STATE_HOME:-$HOME/.local/state}/exedev-cpp/runs\"\n";
  s += "d=\"$r/" + r.id + "\"\n";
  if (!r.acks.empty()) {
    s += "rm -rf --";
    for (const auto& ack : r.acks) s += " \"$r/" + ack + "\"";
    s += "\n";
  }
  s += fmt::format("o={}; e={}; Z=\n", r.out_offset, r.err_offset);
  switch (r.mode) {
    case ScriptMode::launch: {
      std::string timeout;
      if (r.timeout_seconds) {
        if (!(*r.timeout_seconds > 0)) throw std::invalid_argument("run: the timeout must be positive");
        timeout = fmt::format("{:.3f}", *r.timeout_seconds);
      }
      s += "mkdir -p -- \"$r\" 2>/dev/null\n";
      s += "if ! mkdir -- \"$d\" 2>/dev/null; then printf '%s n\\n' \"$B\"; exit 0; fi\n";
      s += "if ! printf '%s' " + sh_single_quote(command_text(r.shell_line, r.env, r.working_dir)) + " >\"$d/cmd\" || ! printf '%s' " +
           sh_single_quote(runner_script) + " >\"$d/run\"; then rm -rf -- \"$d\"; printf '%s n\\n' \"$B\"; exit 0; fi\n";
      // The command runs in the login shell the ssh session names.
      s += login_shell_selection();
      s += "setsid /bin/sh \"$d/run\" \"$d\" " + sh_single_quote(timeout) + " \"$S\" \"$U\" </dev/null >/dev/null 2>&1 &\n";
      s += "printf '%s s\\n' \"$B\"\n";
      s += fmt::format("pollw {}\n", r.wait_seconds);
      break;
    }
    case ScriptMode::probe:
      s += tombstone_if_missing;
      [[fallthrough]];
    case ScriptMode::follow:
      s += "if [ ! -d \"$d\" ] || [ -f \"$d/void\" ]; then printf '%s l\\n' \"$B\"; exit 0; fi\n";
      s += fmt::format("pollw {}\n", r.wait_seconds);
      break;
    case ScriptMode::stop:
      s += tombstone_if_missing;
      s += "if [ ! -d \"$d\" ] || [ -f \"$d/void\" ]; then printf '%s l\\n' \"$B\"; exit 0; fi\n";
      s += ": >\"$d/cancel\"\n";
      s += "[ -f \"$d/pgid\" ] && kill -s TERM -- \"-$(cat \"$d/pgid\")\" 2>/dev/null\n";
      // Offsets past any file: emit never streams, so only the exit frame follows.
      if (r.skip_output) s += "o=4503599627370496; e=4503599627370496\n";
      s += "pollw 3\n";
      s += "if [ -z \"$Z\" ] && [ -d \"$d\" ]; then [ -f \"$d/pgid\" ] && kill -s KILL -- \"-$(cat \"$d/pgid\")\" 2>/dev/null; "
           "pollw 3; fi\n";
      s += "[ -n \"$Z\" ] && rm -rf -- \"$d\"\n";
      break;
    case ScriptMode::cleanup:
      break;
  }
  s += "exit 0\n";  // the status travels in the final frame (ADR 3)
  s += "}\n";
  s += "main </dev/null 2>/dev/null\n";
  return s;
}

std::string remote_command(const std::string& script) {
  return "echo " + base64_encode(script) + "|" + std::string(script_base64_decode) + "|/bin/sh";
}

FrameParser::FrameParser(std::string boundary) : boundary_(std::move(boundary)) {}

std::vector<FrameEvent> FrameParser::feed(std::string_view bytes) {
  std::vector<FrameEvent> out;
  while (!bytes.empty()) {
    const auto nl = bytes.find('\n');
    const auto piece = bytes.substr(0, nl);
    if (skipping_) {
      // Not a frame: drop it without buffering.
    } else {
      line_.append(piece);
      if (!in_data_ && line_.size() >= boundary_.size() && !line_.starts_with(boundary_)) {
        skipping_ = true;
        line_.clear();
      } else if (line_.size() > 64 * 1024) {
        throw ProtocolError("run: a frame line of the command's output is too long");
      }
    }
    if (nl == std::string_view::npos) break;
    bytes.remove_prefix(nl + 1);
    if (!skipping_) line(line_, out);
    skipping_ = false;
    line_.clear();
  }
  return out;
}

void FrameParser::line(std::string_view text, std::vector<FrameEvent>& out) {
  if (!text.starts_with(boundary_) || (text.size() > boundary_.size() && text[boundary_.size()] != ' ')) {
    if (!in_data_) return;  // noise before or between frames (e.g. a login banner)
    auto decoded = base64_decode(text);
    if (!decoded) throw ProtocolError("run: garbled data in the command's output frames");
    if (decoded->empty()) return;
    FrameEvent ev;
    ev.kind = FrameEvent::Kind::data;
    ev.stream = stream_;
    ev.offset = offset_;
    offset_ += decoded->size();
    ev.bytes = std::move(*decoded);
    out.push_back(std::move(ev));
    return;
  }
  std::string_view rest = text.substr(std::min(text.size(), boundary_.size() + 1));
  const auto garbled = [] { return ProtocolError("run: garbled frame in the command's output"); };
  if (rest.empty()) throw garbled();
  const char kind = rest[0];
  rest.remove_prefix(1);
  const auto number = [&](std::string_view& r, auto& value) {
    if (r.empty() || r[0] != ' ') throw garbled();
    r.remove_prefix(1);
    const auto [ptr, ec] = std::from_chars(r.data(), r.data() + r.size(), value);
    if (ec != std::errc() || ptr == r.data()) throw garbled();
    r.remove_prefix(static_cast<std::size_t>(ptr - r.data()));
  };
  if (in_data_) {
    if (kind != '.' || !rest.empty()) throw garbled();
    in_data_ = false;
    return;
  }
  FrameEvent ev;
  switch (kind) {
    case 's': ev.kind = FrameEvent::Kind::started; break;
    case 'r': ev.kind = FrameEvent::Kind::running; break;
    case 'l': ev.kind = FrameEvent::Kind::lost; break;
    case 'n': ev.kind = FrameEvent::Kind::not_created; break;
    case 'o':
    case 'e':
      number(rest, offset_);
      if (!rest.empty()) throw garbled();
      stream_ = kind;
      in_data_ = true;
      return;
    case 'x': {
      ev.kind = FrameEvent::Kind::exit;
      number(rest, ev.exit_code);
      if (rest.size() != 2 || rest[0] != ' ' || (rest[1] != '-' && rest[1] != 't' && rest[1] != 'c')) throw garbled();
      ev.flag = rest[1];
      rest = {};
      break;
    }
    default: throw garbled();
  }
  if (!rest.empty()) throw garbled();
  out.push_back(std::move(ev));
}

}  // namespace exedev::detail
