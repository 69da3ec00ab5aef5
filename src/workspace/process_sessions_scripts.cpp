// The process sessions' scripts: built here, sent by process_sessions.cpp. Every word that comes
// from the caller is single-quoted; names are validated before they get here.
#include <fmt/format.h>

#include "common/shell_quote.hpp"
#include "workspace/process_sessions.hpp"

namespace exedev::workspace::detail {

using exedev::detail::sh_single_quote;

namespace {

/// Sets b (the state root) and d (the session's directory), refusing a root that is a symlink
/// or another user's, and a session that does not exist.
std::string session_prelude(const std::string& name) {
  return fmt::format(
      "b=/tmp/exedev-sessions-$(id -u); d=\"$b\"/{0}\n"
      "if [ -L \"$b\" ] || {{ [ -e \"$b\" ] && [ ! -O \"$b\" ]; }}; then exit {1}; fi\n"
      "[ -d \"$d\" ] || exit {2}\n",
      sh_single_quote(name), static_cast<int>(kSessionUnsafeRoot), static_cast<int>(kSessionUnknown));
}

/// Sets `e` to the recorded status, `lost` when the holder and the program are gone without
/// one (the exit file is looked at again after the check: the holder writes it before leaving),
/// else `-`. A pid not recorded yet counts as alive.
std::string status_fragment() {
  return "e=-\n"
         "if [ -f \"$d/exit\" ]; then e=$(cat \"$d/exit\"); else\n"
         "  h=$(cat \"$d/holder.pid\" 2>/dev/null); p=$(cat \"$d/pid\" 2>/dev/null)\n"
         "  case $h.$p in *[!0-9.]*|.*|*.) ;; *)\n"
         "    if [ ! -d \"/proc/$h\" ] && [ ! -d \"/proc/$p\" ]; then\n"
         "      if [ -f \"$d/exit\" ]; then e=$(cat \"$d/exit\"); else e=lost; fi\n"
         "    fi;;\n"
         "  esac\n"
         "fi\n";
}

/// Refuses an ended or lost program.
std::string live_check() {
  return status_fragment() + fmt::format("[ \"$e\" = lost ] && exit {}\n[ \"$e\" = - ] || exit {}\n",
                                         static_cast<int>(kSessionLost), static_cast<int>(kSessionEnded));
}

/// Sets `t` to a valid pid (digits) read from the file $d/<file>, else exits 1.
std::string read_pid_fragment(const char* file) {
  return fmt::format("t=$(cat \"$d/{}\" 2>/dev/null); case $t in ''|*[!0-9]*) exit 1;; esac\n", file);
}

/// The launcher the holder runs: records the pid (and, for a pty, sets the size and records
/// the terminal), then becomes the program.
std::string launcher_text(const ProcessSessionSpec& spec, const std::string& cwd) {
  std::string text = "d=${0%/run}\n";
  if (spec.pty) {
    // The holder gave `script` SHELL=/bin/sh (script runs $SHELL -c); the program gets the
    // caller's SHELL back.
    text += "SHELL=$EXEDEV_SESSION_SHELL; unset EXEDEV_SESSION_SHELL; [ -n \"$SHELL\" ] || unset SHELL\n";
    text += fmt::format("stty rows {} cols {}\n", spec.size.rows, spec.size.cols);
    text += "tty >\"$d/tty.tmp\" && mv -f \"$d/tty.tmp\" \"$d/tty\"\n";
    text += "export TERM=" + sh_single_quote(spec.term) + "\n";
  }
  text += "echo $$ >\"$d/pid.tmp\" && mv -f \"$d/pid.tmp\" \"$d/pid\"\n";
  text += "cd " + sh_single_quote(cwd) + " || exit 126\n";
  for (const auto& [key, value] : spec.env) text += "export " + key + "=" + sh_single_quote(value) + "\n";
  text += "exec " + session_exec_words(spec.command) + "\n";
  return text;
}

/// The holder: started with setsid -f (so the program keeps the default SIGINT and SIGQUIT
/// dispositions a shell's background job would lose), it runs the program and records its
/// status by rename once it ends.
std::string holder_text(bool pty) {
  std::string text = "d=${0%/holder}\necho $$ >\"$d/holder.pid\"\n";
  if (pty) {
    // Read-write, the FIFO never reports EOF however writers come and go.
    text +=
        "exec 3<>\"$d/in\"\n"
        "EXEDEV_SESSION_SHELL=${SHELL-} SHELL=/bin/sh script -q -f -e -c \"exec sh $d/run\" /dev/null <&3 3<&- "
        ">>\"$d/out\" 2>&1\n";
  } else {
    // The keeper holds the FIFO's write end, so stdin sees EOF only once close_stdin stops it.
    text +=
        "sleep 2147483647 >\"$d/in\" &\n"
        "echo $! >\"$d/keeper\"\n"
        "setsid sh \"$d/run\" <\"$d/in\" >>\"$d/out\" 2>&1\n";
  }
  text += "s=$?\n";
  if (!pty) text += "kill \"$(cat \"$d/keeper\")\" 2>/dev/null\n";
  text += "echo \"$s\" >\"$d/exit.tmp\" && mv -f \"$d/exit.tmp\" \"$d/exit\"\n";
  return text;
}

/// Releases the log's bytes past its `keep` ones (in kSessionTrimStep steps, by punching a hole)
/// once `size` has passed them by a step; sets `t` to the bytes released so far and `keep`.
std::string trim_fragment() {
  return fmt::format(
      "t=0; [ -f \"$d/trimmed\" ] && t=$(cat \"$d/trimmed\"); keep=$(cat \"$d/keep\")\n"
      "if [ $((size - t)) -gt $((keep + {0})) ]; then\n"
      "  nt=$(((size - keep) / {0} * {0}))\n"
      "  if fallocate -p -o \"$t\" -l $((nt - t)) \"$d/out\" 2>/dev/null; then\n"
      "    echo \"$nt\" >\"$d/trimmed.tmp\" && mv -f \"$d/trimmed.tmp\" \"$d/trimmed\"; t=$nt\n"
      "  fi\n"
      "fi\n",
      kSessionTrimStep);
}

int polls_for_seconds(int seconds) { return seconds * 1000 / kSessionPollMilliseconds; }

std::string poll_sleep() { return fmt::format("sleep {}", kSessionPollMilliseconds / 1000.0); }

}  // namespace

std::string session_exec_words(const Command& command) {
  if (command.is_shell()) return "/bin/sh -c " + sh_single_quote(command.line());
  std::string words;
  for (const auto& arg : command.args()) {
    if (!words.empty()) words += ' ';
    words += sh_single_quote(arg);
  }
  return words;
}

std::string session_start_script(const std::string& name, const ProcessSessionSpec& spec, const std::string& cwd) {
  const char* tools = spec.pty ? "base64 mkfifo setsid stty timeout script" : "base64 mkfifo setsid stty timeout";
  std::string text = fmt::format(
      "missing=; for t in {0}; do command -v \"$t\" >/dev/null 2>&1 || missing=\"$missing $t\"; done\n"
      "if [ -n \"$missing\" ]; then printf 'missing%s\\n' \"$missing\"; exit {1}; fi\n"
      "b=/tmp/exedev-sessions-$(id -u); d=\"$b\"/{2}\n"
      "mkdir -m 700 \"$b\" 2>/dev/null\n"
      "if [ -L \"$b\" ] || [ ! -d \"$b\" ] || [ ! -O \"$b\" ]; then exit {3}; fi\n"
      "if [ -d \"$d\" ]; then [ -f \"$d/exit\" ] || exit {4}; rm -rf \"$d\"; fi\n"
      "mkdir -m 700 \"$d\" || exit {4}\n"
      "mkfifo -m 600 \"$d/in\" && : >\"$d/out\" || exit 1\n"
      "printf '%s' \"$1\" | base64 -d >\"$d/command\" || exit 1\n"
      "date +%s >\"$d/started\"; echo {5} >\"$d/keep\"\n",
      tools, static_cast<int>(kSessionMissingTools), sh_single_quote(name), static_cast<int>(kSessionUnsafeRoot),
      static_cast<int>(kSessionExists), spec.max_output_bytes);
  if (spec.pty) text += ": >\"$d/pty\"\n";
  text += "printf '%s' " + sh_single_quote(launcher_text(spec, cwd)) + " >\"$d/run\" || exit 1\n";
  text += "printf '%s' " + sh_single_quote(holder_text(spec.pty)) + " >\"$d/holder\" || exit 1\n";
  text += "setsid -f sh \"$d/holder\" </dev/null >/dev/null 2>&1 || exit 1\n";
  text += fmt::format(
      "n=0; while [ ! -f \"$d/pid\" ] && [ ! -f \"$d/exit\" ]; do "
      "[ \"$n\" -ge {} ] && exit {}; n=$((n + 1)); {}; done\n",
      polls_for_seconds(kSessionStartSeconds), static_cast<int>(kSessionNotStarted), poll_sleep());
  return text;
}

std::string session_write_script(const std::string& name) {
  // The FIFO is opened inside `timeout`: with no reader left (the program ended) the open itself
  // would block for good.
  return session_prelude(name) + live_check() +
         fmt::format(
             "[ -f \"$d/stdin-closed\" ] && exit {0}\n"
             "printf '%s' \"$1\" | timeout {1} sh -c 'exec base64 -d >\"$0\"' \"$d/in\"\n"
             "s=$?; [ \"$s\" -eq 0 ] && exit 0\n",
             static_cast<int>(kSessionStdinClosed), kSessionWriteTimeoutSeconds) +
         live_check() + "exit \"$s\"\n";
}

std::string session_close_stdin_script(const std::string& name) {
  return session_prelude(name) + live_check() +
         fmt::format(
             "if [ -f \"$d/pty\" ]; then printf '\\004' | timeout {} sh -c 'exec cat >\"$0\"' \"$d/in\"; exit $?; fi\n"
             ": >\"$d/stdin-closed\"\n",
             kSessionWriteTimeoutSeconds) +
         read_pid_fragment("keeper") + "kill \"$t\" 2>/dev/null; exit 0\n";
}

std::string session_read_script(const std::string& name, std::uint64_t from, std::size_t max_bytes, int wait_polls) {
  return session_prelude(name) +
         fmt::format(
             "from={0}; n=0\n"
             "while :; do\n{3}"
             "  size=$(wc -c <\"$d/out\") || exit 1; size=$((size + 0))\n"
             "  [ \"$size\" -gt \"$from\" ] || [ \"$e\" != - ] || [ \"$n\" -ge {1} ] && break\n"
             "  n=$((n + 1)); {2}\n"
             "done\n"
             "{4}"
             "start=$from; [ \"$start\" -lt \"$t\" ] && start=$t\n"
             "count=0; [ \"$size\" -gt \"$start\" ] && count=$((size - start)); [ \"$count\" -gt {5} ] && count={5}\n"
             "printf 'exit %s\\nsize %s\\nstart %s\\ncount %s\\n' \"$e\" \"$size\" \"$start\" \"$count\"\n"
             "[ \"$count\" -eq 0 ] || tail -c +$((start + 1)) \"$d/out\" | head -c \"$count\" | base64\n",
             from, wait_polls, poll_sleep(), status_fragment(), trim_fragment(), max_bytes);
}

std::string session_trim_script(const std::string& name) {
  return session_prelude(name) + "size=$(wc -c <\"$d/out\") || exit 1; size=$((size + 0))\n" + trim_fragment();
}

std::string session_attach_script(const std::string& name, std::uint64_t from) {
  // Its status goes to stdout (the stream has no other channel for it) until the header is out.
  // Then `tail` follows the log until the holder ends, and `cat` carries the stream's stdin to
  // the FIFO (opened read-write, so neither the open nor a write waits for a reader) until EOF,
  // when it stops `tail`. Neither holds the stream's stdout but `tail`: its end is the stream's.
  return "trap 'echo \"refused $?\"' EXIT\n" + session_prelude(name) + live_check() +
         fmt::format(
             "case $(tail --version 2>/dev/null) in *GNU*) ;; *) exit {0};; esac\n"
             "h=$(cat \"$d/holder.pid\" 2>/dev/null); case $h in ''|*[!0-9]*) exit {1};; esac\n"
             "size=0\n{2}"
             "start={3}; [ \"$start\" -lt \"$t\" ] && start=$t\n"
             "w=1; [ -f \"$d/stdin-closed\" ] && w=0\n"
             "trap - EXIT\n"
             "printf 'attached %s %s %s\\n' \"$start\" \"$keep\" \"$w\"\n"
             "exec 4<&0 </dev/null\n"
             "tail -c +$((start + 1)) --pid=\"$h\" -s 0.05 -f \"$d/out\" 4<&- 2>/dev/null &\n"
             "f=$!\n"
             "if [ \"$w\" = 1 ]; then\n"
             "  exec 3<>\"$d/in\"\n"
             "  {{ cat <&4 >&3 3>&- 4<&-; kill \"$f\" 2>/dev/null; }} >/dev/null 2>&1 &\n"
             "  exec 3>&-\n"
             "fi\n"
             "exec 4<&-\n"
             "wait \"$f\"\n",
             static_cast<int>(kSessionNoFollow), static_cast<int>(kSessionLost), trim_fragment(), from);
}

std::string session_resize_script(const std::string& name, TerminalSize size) {
  return session_prelude(name) + fmt::format("[ -f \"$d/pty\" ] || exit {}\n", static_cast<int>(kSessionNotPty)) +
         live_check() +
         fmt::format("t=$(cat \"$d/tty\") || exit 1\nstty -F \"$t\" rows {} cols {}\n", size.rows, size.cols);
}

std::string session_signal_script(const std::string& name, const std::string& signal) {
  // A pty's foreground group is field 8 (tpgid) of the program's /proc stat, counted after the
  // command name's closing parenthesis (the name itself may hold spaces).
  return session_prelude(name) + live_check() + read_pid_fragment("pid") +
         "g=$t\n"
         "if [ -f \"$d/pty\" ] && s=$(cat \"/proc/$t/stat\" 2>/dev/null); then\n"
         "  s=${s##*) }; set -- $s; case ${6:-} in ''|*[!0-9]*|0) ;; *) g=$6;; esac\n"
         "fi\n"
         "kill -s " +
         signal + " -- \"-$g\"\n";
}

std::string session_wait_script(const std::string& name, int wait_polls) {
  return session_prelude(name) +
         fmt::format("n=0\nwhile :; do\n{}  [ \"$e\" = - ] || break\n"
                     "  [ \"$n\" -ge {} ] && {{ echo running; exit 0; }}; n=$((n + 1)); {}\n"
                     "done\n"
                     "printf 'exit %s\\n' \"$e\"\n",
                     status_fragment(), wait_polls, poll_sleep());
}

std::string session_list_script() {
  return "b=/tmp/exedev-sessions-$(id -u)\n"
         "if [ -L \"$b\" ] || [ ! -d \"$b\" ] || [ ! -O \"$b\" ]; then exit 0; fi\n"
         "for d in \"$b\"/*/; do\n"
         "  [ -d \"$d\" ] || continue; n=${d%/}; n=${n##*/}\n" +
         status_fragment() +
         "  p=0; [ -f \"$d/pty\" ] && p=1\n"
         "  s=$(cat \"$d/started\" 2>/dev/null); c=$(base64 <\"$d/command\" 2>/dev/null | tr -d '\\n')\n"
         "  printf 'session %s %s %s %s %s\\n' \"$n\" \"${e:--}\" \"$p\" \"${s:--}\" \"${c:--}\"\n"
         "done\n";
}

std::string session_remove_script(const std::string& name) {
  const auto wait_exit = [](int seconds) {
    return fmt::format("n=0; while [ ! -f \"$d/exit\" ] && [ \"$n\" -lt {} ]; do n=$((n + 1)); {}; done\n",
                       polls_for_seconds(seconds), poll_sleep());
  };
  // A lost session's pids may name other processes by now: nothing is signalled.
  return session_prelude(name) + status_fragment() +
         "t=$(cat \"$d/pid\" 2>/dev/null)\n"
         "case $t in ''|*[!0-9]*) ;; *)\n"
         "  if [ \"$e\" = - ]; then\n"
         "    kill -s TERM -- \"-$t\" 2>/dev/null\n    " +
         wait_exit(kSessionGraceSeconds) + "    [ -f \"$d/exit\" ] || kill -s KILL -- \"-$t\" 2>/dev/null\n    " +
         wait_exit(2) +
         "  fi;;\n"
         "esac\n"
         // The keeper outlives a holder killed from outside: stopped if it is still our sleep.
         "k=$(cat \"$d/keeper\" 2>/dev/null); case $k in ''|*[!0-9]*) ;; *)\n"
         "  [ \"$(cat \"/proc/$k/comm\" 2>/dev/null)\" = sleep ] && kill \"$k\" 2>/dev/null;; esac\n"
         "rm -rf \"$d\"\n";
}

}  // namespace exedev::workspace::detail
