#include "sandbox/ssh_vm.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <stdexcept>
#include <utility>

#include "common/coroutines.hpp"
#include "common/event.hpp"
#include "common/exceptions.hpp"
#include "common/random_ids.hpp"
#include "common/time_limits.hpp"
#include "sandbox/ssh_commands.hpp"

namespace exedev::detail {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr std::string_view kBoundaryAlphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
// How long the stop of a command's process group may take: TERM, 5 s, KILL, and the channel.
constexpr auto kStopBound = std::chrono::seconds(10);

// Thrown from a script's stdout callback when the script passes its output limit: it ends the
// exec, which closes the channel.
struct ScriptOutputPastLimit {};
// Login-shell noise allowed on a script's stderr before its marker line.
constexpr std::size_t kMaxMarkerNoise = 64 * 1024;

// Why a running command is being ended before it exits by itself.
enum class StopReason { none, timeout, output_limit, callback_failed, forged_end };

// A command in flight: its output so far, the marker, and why it must stop (if it must).
struct CommandRun {
  explicit CommandRun(std::string marker_boundary)
      : boundary(marker_boundary), marker(marker_boundary), out_end(marker_boundary), err_end(marker_boundary) {}
  std::string boundary;
  StartMarkerReader marker;
  EndMarkerReader out_end;
  EndMarkerReader err_end;
  PartialOutput output;
  std::size_t limit = 0;
  StopReason stop = StopReason::none;
  bool stopped = false;  // the process group was stopped (confirmed by the stop program)
  std::exception_ptr callback_error;
  Event changed;  // a stop was asked for, the start marker or an end mark arrived

  // The channel's exit-status (ExecRequest::on_exit_status), once it arrived.
  std::optional<int> channel_status;

  // Both streams ended: the command exited (its channel may stay open for a background child).
  [[nodiscard]] bool ended() const { return out_end.exit_code() && err_end.exit_code(); }
  // The end marks agree with each other and with the channel's exit-status: the wrapper printed
  // them, not a process on the VM that learnt the boundary.
  [[nodiscard]] bool confirmed(int exit_status) const {
    return ended() && *out_end.exit_code() == *err_end.exit_code() && exit_status == ssh_channel_status(*err_end.exit_code());
  }
  void take_stdout(std::string_view bytes, const std::function<void(std::string_view)>& callback) {
    const bool had_ended = ended();
    const std::string own = out_end.feed(bytes);
    if (!own.empty() && admit(own)) {
      output.stdout_data.append(own);
      forward(callback, own);
    }
    if (!had_ended && ended()) changed.notify();
  }
  void take_stderr(std::string_view bytes, const std::function<void(std::string_view)>& callback) {
    const bool had_started = marker.started();
    const bool had_ended = ended();
    const std::string own = err_end.feed(marker.feed(bytes));
    if (!own.empty() && admit(own)) {
      output.stderr_data.append(own);
      forward(callback, own);
    }
    if ((!had_started && marker.started()) || (!had_ended && ended())) changed.notify();
  }
  // A stream that ended without its end mark (the program was killed): what was held back is
  // the command's too.
  void flush(const std::function<void(std::string_view)>& on_stdout, const std::function<void(std::string_view)>& on_stderr) {
    take_rest(out_end.finish(), on_stdout, output.stdout_data);
    take_rest(err_end.finish(), on_stderr, output.stderr_data);
  }
  void take_rest(const std::string& rest, const std::function<void(std::string_view)>& callback, std::string& into) {
    if (rest.empty() || !admit(rest)) return;
    into.append(rest);
    forward(callback, rest);
  }

  void request_stop(StopReason reason) {
    if (stop != StopReason::none) return;
    stop = reason;
    changed.notify();
  }
  // Counts `bytes` against the limit; false (and a stop) once it is passed.
  bool admit(std::string_view bytes) {
    if (stop != StopReason::none) return false;
    if (output.stdout_data.size() + output.stderr_data.size() + bytes.size() > limit) {
      request_stop(StopReason::output_limit);
      return false;
    }
    return true;
  }
  void forward(const std::function<void(std::string_view)>& callback, std::string_view bytes) {
    if (!callback || bytes.empty()) return;
    try {
      callback(bytes);
    } catch (...) {
      callback_error = std::current_exception();
      request_stop(StopReason::callback_failed);
    }
  }
};

Task<void> exec_into(std::shared_ptr<ssh::Connection> connection, ssh::ExecRequest request, ssh::ExecResult* result) {
  *result = co_await connection->exec(std::move(request));
}

// Stops the command's process group from a channel of its own, within kStopBound; `*stopped`
// says whether that was confirmed (false with no group known, no channel, or the bound passed).
Task<void> stop_group(std::shared_ptr<ssh::Connection> connection, std::optional<std::int64_t> pgid, bool* stopped) {
  *stopped = false;
  if (!pgid || !connection->is_open()) co_return;
  ssh::ExecRequest request;
  request.command = std::string(ssh_exec_command);
  request.stdin_data = ssh_stop_program(*pgid);
  request.max_output_bytes = ssh_script_stderr_bytes;  // it prints nothing; a VM's flood ends it
  ssh::ExecResult result;
  auto stopping = capture(exec_into(connection, std::move(request), &result));
  auto bound = sleep_for(kStopBound);
  auto racing = std::move(stopping) || std::move(bound);
  auto outcome = co_await std::move(racing);
  *stopped = outcome.index() == 0 && std::get<0>(outcome) == nullptr && result.exit_code == 0;
}

// Waits on the run's event until `done()` holds or `deadline` passes; false at the deadline.
// A cancellation ends the wait with operation_aborted at the next co_await.
template <typename Done>
Task<bool> wait_for(CommandRun* run, Done done, Event::Clock::time_point deadline) {
  while (!done()) {
    if (Event::Clock::now() >= deadline) co_return false;
    co_await run->changed.wait_until(deadline);
    co_await throw_if_cancelled();
  }
  co_return true;
}

// Races the command's channel: asks for the timeout stop at `deadline`; once a stop is asked for
// (timeout, output limit, failed callback), stops the process group while the channel stays open
// (its marker may still be on the way), then lets the channel end by itself. Returns, so that
// the channel is closed, only when the stop could not be confirmed or the channel outlived it.
Task<void> stopper(std::shared_ptr<ssh::Connection> connection, CommandRun* run, Event::Clock::time_point deadline) {
  const auto stop_asked_or_ended = [run] { return run->stop != StopReason::none || run->ended(); };
  const auto marker_seen = [run] { return run->marker.started(); };
  const auto never = [] { return false; };
  const auto stop_asked_or_status = [run] { return run->stop != StopReason::none || run->channel_status.has_value(); };
  auto waiting = wait_for(run, stop_asked_or_ended, deadline);
  if (!co_await std::move(waiting)) run->request_stop(StopReason::timeout);
  if (run->stop == StopReason::none) {
    // The end marks: the channel's exit-status follows them at once when the wrapper printed
    // them (it exits right after); marks with no such status, or another one, were forged by a
    // process on the VM, whose command still runs.
    auto confirming = wait_for(run, stop_asked_or_status, std::min(deadline, Event::Clock::now() + kStopBound));
    co_await std::move(confirming);
    if (run->stop == StopReason::none && run->channel_status && run->confirmed(*run->channel_status)) {
      co_return;  // it exited: close the channel a child holds
    }
    run->request_stop(run->channel_status || Event::Clock::now() < deadline ? StopReason::forged_end : StopReason::timeout);
  }
  co_await wait_for(run, marker_seen, Event::Clock::now() + kStopBound);
  // Shielded: the channel may end (the group's TERM ends it) while the stop still confirms.
  co_await shielded(stop_group(connection, run->marker.pgid(), &run->stopped));
  // Stopped: the channel ends by itself; a process that left the group may keep it open.
  auto draining = wait_for(run, never, Event::Clock::now() + kStopBound);
  if (run->stopped) co_await std::move(draining);
}

PartialOutput snapshot(const CommandRun& run) { return run.output; }

}  // namespace

std::optional<ssh::Endpoint> ssh_endpoint(const VMInfo& vm) {
  ssh::Endpoint endpoint;
  std::string dest_user;
  std::string dest_host = vm.ssh_dest;
  if (const auto at = dest_host.rfind('@'); at != std::string::npos) {
    dest_user = dest_host.substr(0, at);
    dest_host = dest_host.substr(at + 1);
  }
  endpoint.host = !vm.ssh_host.empty() ? vm.ssh_host : dest_host;
  if (endpoint.host.empty()) return std::nullopt;
  // No user named: the SSH layer takes ssh_config's User, else the local login name, never root.
  endpoint.user = !vm.ssh_user.empty() ? vm.ssh_user : dest_user;
  endpoint.port = vm.ssh_port.value_or(0);
  return endpoint;
}

Task<RunResult> ssh_run(std::shared_ptr<ssh::Connection> connection, std::string shell_line, ClientRunOptions options) {
  CommandRun run(random_chars(kBoundaryAlphabet, 24));
  run.limit = options.max_output_bytes;
  ssh::ExecRequest request;
  request.command = std::string(ssh_exec_command);
  request.stdin_data = ssh_command_program(run.boundary, shell_line, options.env, options.working_dir);
  request.on_stdout = [&run, &options](std::string_view bytes) { run.take_stdout(bytes, options.on_stdout); };
  request.on_stderr = [&run, &options](std::string_view bytes) { run.take_stderr(bytes, options.on_stderr); };
  request.on_exit_status = [&run](int status) {
    run.channel_status = status;
    run.changed.notify();
  };
  const auto deadline = deadline_after(options.timeout).value_or(Event::Clock::time_point::max());

  ssh::ExecResult result;
  auto executing = capture(exec_into(connection, std::move(request), &result));
  auto stopping = stopper(connection, &run, deadline);
  auto racing = std::move(executing) || std::move(stopping);
  auto outcome = co_await std::move(racing);

  // The state named first: GCC 12 mishandles a throw's temporaries in a statement that awaits.
  const auto cancellation = co_await asio::this_coro::cancellation_state;
  if (was_cancelled(cancellation)) {
    // The caller cancelled: both sides were cancelled; stop the group whatever happens next.
    bool stopped = false;
    EXEDEV_AWAIT_DESPITE_CANCELLATION(stop_error, shielded(stop_group(connection, run.marker.pgid(), &stopped)));
    (void)stop_error;  // best effort: the cancellation is what the caller asked about
    throw_cancelled();
  }
  const std::exception_ptr exec_error = outcome.index() == 0 ? std::get<0>(outcome) : nullptr;
  // Without its end marks, every byte that arrived is the command's (held back ones too).
  if (!run.ended()) run.flush(options.on_stdout, options.on_stderr);
  if (run.stop == StopReason::none) {
    if (exec_error) {
      // The channel was open: a connection that dropped after sending may have run it.
      const auto* failure = exception_as<Error>(exec_error);
      if (failure && failure->code() == errc::connection_failed && failure->may_have_run()) {
        throw OutcomeUnknownError("the SSH connection dropped while a command ran", snapshot(run));
      }
      std::rethrow_exception(exec_error);
    }
    // The exit status: the finished channel's, else (a background child holds it open) the
    // exit-status message the stopper waited for.
    const bool channel_finished = outcome.index() == 0;
    const int channel_status = channel_finished ? result.exit_code : run.channel_status.value_or(0);
    if (run.ended() && (result.signalled || !run.confirmed(channel_status))) {
      throw OutcomeUnknownError("a command's end marks differ from its channel's exit status: a process on the VM "
                                "printed them (forged)",
                                snapshot(run));
    }
    const int exit_code = run.ended()       ? *run.err_end.exit_code()
                          : result.signalled ? result.exit_code
                                             : ssh_command_status(result.exit_code);
    co_return RunResult{exit_code, std::move(run.output.stdout_data), std::move(run.output.stderr_data)};
  }
  switch (run.stop) {
    case StopReason::timeout:
      if (!run.stopped) throw OutcomeUnknownError("a command passed its timeout and its stop could not be confirmed", snapshot(run));
      throw RunTimeoutError("a command passed its timeout and was stopped", snapshot(run));
    case StopReason::output_limit:
      throw OutputLimitError("a command wrote more than " + std::to_string(run.limit) + " bytes of output and was stopped",
                             run.limit, snapshot(run));
    case StopReason::callback_failed: std::rethrow_exception(run.callback_error);
    case StopReason::forged_end:
      throw OutcomeUnknownError("a command's end marks were not confirmed by its channel's exit status: a process on the "
                                "VM printed them (forged); the command was stopped",
                                snapshot(run));
    case StopReason::none: break;
  }
  throw std::logic_error("ssh_run: unreachable");
}

namespace {

// A script in flight over SSH: its output so far and why its remote side must be stopped.
struct ScriptRun {
  explicit ScriptRun(const std::string& marker_boundary) : boundary(marker_boundary), marker(marker_boundary) {}
  std::string boundary;
  StartMarkerReader marker;
  std::string stdout_bytes;
  std::string stderr_bytes;
  std::uint64_t offset = 0;
  std::exception_ptr sink_error;
  bool past_deadline = false;
  bool stopped = false;  // the process group was stopped (confirmed by the stop program)
};

// Waits until `deadline`, then stops the script's process group (shielded, bounded) and returns,
// which ends the exec it races (its channel is closed) unless the stop ended it first.
Task<void> script_deadline(std::shared_ptr<ssh::Connection> connection, ScriptRun* run, Event::Clock::time_point deadline) {
  co_await sleep_for(deadline - Event::Clock::now());
  run->past_deadline = true;
  co_await shielded(stop_group(connection, run->marker.pgid(), &run->stopped));
}

// Whether a script's exec ended at its output limit (the stdout callback's or the channel's).
bool past_output_limit(const std::exception_ptr& error) {
  if (exception_as<ScriptOutputPastLimit>(error)) return true;
  const auto* failure = exception_as<Error>(error);
  return failure != nullptr && failure->code() == errc::output_limit;
}

}  // namespace

Task<RunResult> ssh_run_script(std::shared_ptr<ssh::Connection> connection, std::string script, ScriptOptions options,
                               std::chrono::milliseconds timeout) {
  ScriptRun run(random_chars(kBoundaryAlphabet, 24));
  ssh::ExecRequest request;
  request.command = std::string(ssh_exec_command);
  request.stdin_data = ssh_script_program(run.boundary, script, options.args);
  // A script's output may be a whole file (ShellFilesystemLimits::raw_read_bytes): room for all
  // of it to flow at once.
  request.extra_receive_window = static_cast<std::uint32_t>(options.max_output_bytes);
  // The channel's own bound on both streams together: past it the exec closes the channel at
  // once, whatever the VM keeps sending.
  request.max_output_bytes = options.max_output_bytes + ssh_script_stderr_bytes + kMaxMarkerNoise;
  request.on_stdout = [&run, &options](std::string_view bytes) {
    if (run.offset + bytes.size() > options.max_output_bytes) throw ScriptOutputPastLimit{};  // closes the channel
    if (options.on_stdout) {
      try {
        options.on_stdout(run.offset, bytes);
      } catch (...) {
        run.sink_error = std::current_exception();
        throw;
      }
    } else {
      run.stdout_bytes.append(bytes);
    }
    run.offset += bytes.size();
  };
  // After the marker, as on /exec: the first ssh_script_stderr_bytes of stderr are kept, the
  // rest is counted only.
  request.on_stderr = [&run](std::string_view bytes) {
    const std::string own = run.marker.feed(bytes);
    const std::size_t room = ssh_script_stderr_bytes - std::min(ssh_script_stderr_bytes, run.stderr_bytes.size());
    run.stderr_bytes.append(std::string_view(own).substr(0, room));
  };
  ssh::ExecResult result;
  std::exception_ptr failure;
  bool exec_finished = true;
  // Captured: operator|| waits for the other side when one throws.
  auto executing = capture(exec_into(connection, std::move(request), &result));
  if (timeout.count() > 0) {
    auto bounding = script_deadline(connection, &run, Event::Clock::now() + timeout);
    auto racing = std::move(executing) || std::move(bounding);
    auto outcome = co_await std::move(racing);
    exec_finished = outcome.index() == 0;
    if (exec_finished) failure = std::get<0>(outcome);
  } else {
    failure = co_await std::move(executing);
  }
  if (run.sink_error) std::rethrow_exception(run.sink_error);
  PartialOutput output{std::move(run.stdout_bytes), std::move(run.stderr_bytes)};
  if (run.past_deadline) {
    // The stop may end the channel before it confirms: a channel that ended is stopped too.
    const auto seconds = std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count());
    if (!run.stopped && !exec_finished) {
      throw OutcomeUnknownError("a script passed its deadline of " + seconds +
                                    " s (SshOptions::file_operation_timeout) and its stop could not be confirmed",
                                std::move(output));
    }
    throw RunTimeoutError("a script passed its deadline of " + seconds + " s (SshOptions::file_operation_timeout) and was stopped",
                          std::move(output));
  }
  if (failure && past_output_limit(failure)) {
    // The channel is closed; an endless writer on the VM is stopped too (shielded, bounded).
    bool ignored = false;
    EXEDEV_AWAIT_DESPITE_CANCELLATION(stop_error, shielded(stop_group(connection, run.marker.pgid(), &ignored)));
    (void)stop_error;  // best effort: the limit is what the caller is told about
    throw OutputLimitError("a script wrote more than " + std::to_string(options.max_output_bytes) +
                               " bytes of output (ScriptOptions::max_output_bytes); it was stopped and its channel closed",
                           options.max_output_bytes, std::move(output));
  }
  if (failure) std::rethrow_exception(failure);
  co_return RunResult{result.exit_code, std::move(output.stdout_data), std::move(output.stderr_data)};
}

}  // namespace exedev::detail
