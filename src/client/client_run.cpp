// Client::run(): the detached run record on the VM, followed across requests (run_protocol.hpp
// builds the scripts and reads the frames, run_recovery.hpp decides what follows each request).
#include "client/client_state.hpp"

#include "client/api_response.hpp"
#include "client/lobby.hpp"
#include "client/run_protocol.hpp"
#include "client/run_outcome.hpp"
#include "client/run_recovery.hpp"
#include "common/coroutines.hpp"
#include "common/exceptions.hpp"
#include "common/random_ids.hpp"
#include "common/time_limits.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <variant>

namespace exedev {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;
using Clock = std::chrono::steady_clock;
using detail::is_cancellation;
using detail::sleep_for;

namespace {

// Each run request waits at most this long for the exit: well under exe.dev's ~30 s cut.
constexpr int long_poll_seconds = 20;
// Slack on top of a request's own wait before the client gives up on it.
constexpr auto request_slack = 25s;
// run() ends at most run_grace after ClientRunOptions::timeout (documented there): it waits
// vm_report_grace for the VM to report its own timeout (TERM, then KILL 5 s later), then spends
// at most stop_bound stopping the command itself.
constexpr auto vm_report_grace = 8s;
constexpr auto stop_bound = 12s;
static_assert(vm_report_grace + stop_bound <= 20s, "ClientRunOptions::timeout documents a grace of 20 s");
// Records of finished runs one run request removes at most (the rest wait for the next), so
// a request's size stays bounded: run_request_bytes counts this many.
constexpr std::size_t max_acks_per_request = 16;
// Run record ids and boundaries: this many random bytes, in hex.
constexpr std::size_t run_id_bytes = 12;

std::string run_boundary(std::string_view random) { return "#EXEDEV-" + std::string(random) + "#"; }

// The lobby line of one run request (launch, poll, stop or cleanup).
std::string run_lobby_line(const std::string& vm, const detail::ScriptRequest& request) {
  return "ssh " + lobby_quote(vm) + " " + lobby_quote(detail::remote_command(detail::build_script(request)));
}

struct RunState {
  std::string vm;
  std::string id = detail::random_hex(run_id_bytes);
  std::string boundary = run_boundary(detail::random_hex(run_id_bytes));
  const ClientRunOptions* options = nullptr;
  std::string out, err;
  std::uint64_t out_offset = 0, err_offset = 0;
  bool started = false;
  bool limit_hit = false;
  bool stopping = false;  ///< Output that arrives while stopping is kept but not passed to callbacks.

  // A data frame: appended when it continues what arrived (an overlap is skipped; a gap is a
  // protocol error), cut at the output limit.
  void data(const detail::FrameEvent& ev) {
    auto& offset = ev.stream == 'o' ? out_offset : err_offset;
    auto& buffer = ev.stream == 'o' ? out : err;
    if (ev.offset > offset) throw ProtocolError(fmt::format("run on VM \"{}\": output frames skipped bytes", vm));
    const auto skip = offset - ev.offset;
    if (skip >= ev.bytes.size() || limit_hit) return;
    std::string_view bytes(ev.bytes);
    bytes.remove_prefix(static_cast<std::size_t>(skip));
    const std::size_t total = out.size() + err.size();
    const std::size_t room = options->max_output_bytes > total ? options->max_output_bytes - total : 0;
    if (bytes.size() > room) {
      bytes = bytes.substr(0, room);
      limit_hit = true;
    }
    buffer.append(bytes);
    offset += bytes.size();
    const auto& callback = ev.stream == 'o' ? options->on_stdout : options->on_stderr;
    if (callback && !bytes.empty() && !stopping) callback(bytes);
  }
};

using Outcome = detail::RunAnswer;

Outcome limit_outcome() {
  Outcome o;
  o.kind = Outcome::Kind::limit;
  return o;
}

// One run request. Waiting for the rate limit ends at `deadline` with RateLimitedError (nothing
// sent again).
asio::awaitable<Outcome> run_request(detail::ClientState& impl, RunState& st, const detail::ScriptRequest& request,
                                     std::optional<Clock::time_point> deadline) {
  const auto line = run_lobby_line(st.vm, request);
  detail::check_body_size(line.size(), "ssh");

  detail::FrameParser parser(st.boundary);
  Outcome outcome;
  bool terminal = false;
  bool framed = false;          // a frame arrived: the script ran and speaks the protocol
  std::uint64_t body_bytes = 0;
  const bool probing = request.mode == detail::ScriptMode::probe;
  auto sink = [&](std::string_view bytes) {
    body_bytes += bytes.size();
    for (auto& ev : parser.feed(bytes)) {
      framed = true;
      using K = detail::FrameEvent::Kind;
      if (terminal) throw ProtocolError(fmt::format("run on VM \"{}\": output after the final frame", st.vm));
      switch (ev.kind) {
        case K::started: st.started = true; break;
        case K::data:
          if (probing) st.started = true;
          st.data(ev);
          break;
        case K::exit:
          outcome.kind = Outcome::Kind::exited;
          outcome.exit_code = ev.exit_code;
          outcome.flag = ev.flag;
          terminal = true;
          break;
        case K::running:
          if (probing) st.started = true;
          outcome.kind = Outcome::Kind::running;
          terminal = true;
          break;
        case K::lost: outcome.kind = Outcome::Kind::lost; terminal = true; break;
        case K::not_created: outcome.kind = Outcome::Kind::not_created; terminal = true; break;
      }
      if (st.limit_hit) return false;
    }
    return true;
  };
  const bool idempotent = request.mode != detail::ScriptMode::launch;
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::seconds(request.wait_seconds) + request_slack);
  detail::HttpResponse response;
  try {
    detail::PostOptions post;
    post.idempotent = idempotent;
    post.timeout = timeout;
    post.sink = sink;
    response = co_await impl.send(line, post, "ssh", deadline);
  } catch (const ConnectionError& e) {
    if (st.limit_hit) co_return limit_outcome();
    impl.log(LogLevel::debug, fmt::format("exe.dev: run request to VM \"{}\" ended early: {}", st.vm, e.what()));
    Outcome cut;
    cut.sent = e.sent();
    co_return cut;
  }
  if (response.status == 200 && !request.acks.empty()) {
    auto& pending = impl.acks[st.vm];
    std::erase_if(pending, [&](const std::string& id) { return std::ranges::find(request.acks, id) != request.acks.end(); });
  }
  if (st.limit_hit) co_return limit_outcome();
  if (response.status != 200) {
    outcome.kind = Outcome::Kind::http_error;
    outcome.status = response.status;
    outcome.body = std::move(response.body);
    outcome.retry_after = response.retry_after;
    co_return outcome;
  }
  // The exit status comes from the final frame only: the script exits 0 once it has reported,
  // so the X-Exe-Exit trailer (and whether exe.dev answers a non-zero exit with 422) never
  // matters here (ADR 3).
  if (!terminal && !framed && body_bytes > 0 && response.complete) {
    // A whole answer, and not one frame in it: something other than the script answered.
    throw ProtocolError(fmt::format("run on VM \"{}\": exe.dev answered with {} bytes of output that carry none of the "
                                    "run protocol's frames",
                                    st.vm, body_bytes));
  }
  if (!terminal) co_return Outcome{};  // the stream ended without a final frame: it was cut
  co_return outcome;
}

// One request's outcome or what it threw. Never thrown, so that `||` with a timer completes
// as soon as the request ends, however it ends (`||` waits for the first *success*: a request
// that threw would otherwise be raced to the deadline and reported as a timeout).
struct Attempt {
  Outcome outcome;
  std::exception_ptr error;
};

asio::awaitable<Attempt> request_after(detail::ClientState& impl, RunState& st, detail::ScriptRequest request,
                                       std::chrono::milliseconds delay, std::optional<Clock::time_point> deadline) {
  Attempt attempt;
  try {
    if (delay.count() > 0) co_await sleep_for(delay);
    attempt.outcome = co_await run_request(impl, st, request, deadline);
  } catch (...) {
    attempt.error = std::current_exception();
  }
  co_return attempt;
}

// Runs one request after `delay`, the whole cut short at `deadline` (nullopt when the deadline
// won: the request, if sent, is abandoned and its connection closed). Rethrows what the
// request threw (RateLimitedError when waiting for the rate limit would pass the deadline).
asio::awaitable<std::optional<Outcome>> request_until(detail::ClientState& impl, RunState& st, detail::ScriptRequest request,
                                                      std::optional<Clock::time_point> deadline,
                                                      std::chrono::milliseconds delay = {}) {
  Attempt attempt;
  if (!deadline) {
    attempt = co_await request_after(impl, st, std::move(request), delay, deadline);
  } else {
    asio::steady_timer timer(impl.executor, *deadline);
    auto result =
        co_await (request_after(impl, st, std::move(request), delay, deadline) || timer.async_wait(asio::use_awaitable));
    if (result.index() == 1) co_return std::nullopt;
    attempt = std::get<0>(std::move(result));
  }
  if (attempt.error) std::rethrow_exception(attempt.error);
  co_return std::move(attempt.outcome);
}

detail::ScriptRequest script_request(detail::ClientState& impl, const RunState& st, detail::ScriptMode mode, int wait) {
  detail::ScriptRequest r;
  r.mode = mode;
  r.id = st.id;
  r.boundary = st.boundary;
  r.out_offset = st.out_offset;
  r.err_offset = st.err_offset;
  r.wait_seconds = wait;
  if (auto it = impl.acks.find(st.vm); it != impl.acks.end()) {
    const auto& pending = it->second;
    r.acks.assign(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(std::min(pending.size(), max_acks_per_request)));
  }
  return r;
}

using detail::StopResult;

// Stops the remote command (TERM, then KILL to its process group) and removes its record, in
// at most stop_bound. Failures are logged, not thrown.
asio::awaitable<StopResult> stop_remote(detail::ClientState& impl, RunState& st) {
  try {
    auto request = script_request(impl, st, detail::ScriptMode::stop, 6);
    request.skip_output = st.limit_hit;
    // (A 429 is waited for within the stop's bound: ClientState::send.)
    const auto until = Clock::now() + stop_bound;
    auto outcome = co_await request_until(impl, st, request, until);
    if (outcome && outcome->kind == Outcome::Kind::exited) {
      impl.log(LogLevel::debug, fmt::format("exe.dev: stopped the command on VM \"{}\"", st.vm));
      co_return StopResult::stopped;
    }
    if (outcome && outcome->kind == Outcome::Kind::lost) {
      impl.acks[st.vm].push_back(st.id);  // the tombstone
      co_return StopResult::never_started;
    }
    impl.log(LogLevel::warning, fmt::format("exe.dev: could not confirm that the command on VM \"{}\" stopped", st.vm));
  } catch (const std::exception& e) {
    impl.log(LogLevel::warning, fmt::format("exe.dev: stopping the command on VM \"{}\" failed: {}", st.vm, e.what()));
  }
  co_return StopResult::unconfirmed;
}

// The recovery's next step after a request that failed with `error` (rethrown when it ends the
// run as it is); `abort` takes an error that must stop the remote command first.
detail::RunStep step_after_failure(detail::RunRecovery& recovery, const std::exception_ptr& error,
                                   bool launch_unstarted, std::exception_ptr& abort) {
  using F = detail::RequestFailure;
  switch (detail::classify_request_failure(error, launch_unstarted)) {
    case F::final: std::rethrow_exception(error);
    case F::deadline: return recovery.on_deadline();
    case F::unreadable:
      abort = error;
      return recovery.on_error(detail::StopReason::unreadable);
    case F::interrupted:
      abort = error;
      return recovery.on_error(detail::StopReason::interrupted);
  }
  throw std::logic_error("Client::run: unknown RequestFailure");
}

}  // namespace

// A request removes at most max_acks_per_request records per VM.
asio::awaitable<void> detail::remove_finished_records(std::shared_ptr<detail::ClientState> impl) {
  std::exception_ptr first_failure;
  std::vector<std::string> vms;
  for (const auto& entry : impl->acks) vms.push_back(entry.first);
  for (const std::string& vm : vms) {
    std::exception_ptr failure;
    try {
      // A request removes at most max_acks_per_request records: as many as it takes.
      for (bool left_over = true; left_over;) {
        RunState st;
        st.vm = vm;
        ClientRunOptions none;
        st.options = &none;
        auto request = script_request(*impl, st, detail::ScriptMode::cleanup, long_poll_seconds);
        if (request.acks.empty()) break;
        request.id = request.acks.front();
        auto outcome = co_await run_request(*impl, st, request, std::nullopt);  // a 429 waited for: send()
        const auto& left = impl->acks[vm];
        const bool removed = std::none_of(request.acks.begin(), request.acks.end(), [&](const std::string& id) {
          return std::find(left.begin(), left.end(), id) != left.end();
        });
        if (!removed && outcome.kind == Outcome::Kind::http_error && outcome.status == 422) {
          // exe.dev refused the VM itself (deleted, or paused): nothing to retry. A deleted VM
          // has no records left; a paused one keeps a few bytes until a later run removes them.
          impl->log(LogLevel::info, fmt::format("exe.dev: the records of finished runs on VM \"{}\" were left: {}", vm,
                                                detail::server_message(outcome.body, impl->secrets())));
          impl->acks.erase(vm);
          break;
        }
        if (!removed && outcome.kind == Outcome::Kind::http_error) {
          detail::throw_api_error(outcome.status, "ssh", outcome.body, impl->secrets(), outcome.retry_after);
        }
        if (!removed) {
          throw ConnectionError(fmt::format("removing the records of finished runs on VM \"{}\": the request ended "
                                            "before exe.dev answered",
                                            vm),
                                outcome.sent);
        }
        left_over = !left.empty();
      }
    } catch (...) {
      failure = std::current_exception();
    }
    if (!failure) continue;
    const auto* e = detail::exception_as<std::exception>(failure);
    if (e == nullptr) std::rethrow_exception(failure);
    impl->log(LogLevel::warning,
              fmt::format("exe.dev: removing the records of finished runs on VM \"{}\" failed: {}", vm, e->what()));
    if (!first_failure) first_failure = failure;
  }
  std::erase_if(impl->acks, [](const auto& entry) { return entry.second.empty(); });
  if (first_failure) std::rethrow_exception(first_failure);
}

Task<RunResult> Client::run(std::string vm, std::string shell_line) {
  return run(std::move(vm), std::move(shell_line), ClientRunOptions{});
}

Task<RunResult> Client::run(std::string vm, std::string shell_line, ClientRunOptions options) {
  auto impl = impl_;
  (void)lobby_quote(vm);  // rejects an empty or unsendable VM name before anything is sent
  if (!vm.empty() && vm.front() == '-') throw std::invalid_argument("run: invalid VM name");
  if (options.timeout && !(options.timeout->count() > 0)) throw std::invalid_argument("run: the timeout must be positive");
  // A timeout of a century or more is none: the clock could not hold it, nor `sleep` on the VM.
  if (options.timeout && *options.timeout >= detail::no_practical_limit) options.timeout.reset();
  RunState st;
  st.vm = std::move(vm);
  st.options = &options;

  std::optional<Clock::time_point> deadline = detail::deadline_after(options.timeout);
  if (deadline) *deadline += vm_report_grace;
  // Every decision (which request next, what an error may claim) is the recovery machine's;
  // this coroutine sends, waits and throws.
  detail::RunRecovery recovery(long_poll_seconds);
  const auto wait_seconds = [&] {
    if (!deadline) return recovery.poll_seconds();
    const auto left = std::chrono::duration_cast<std::chrono::seconds>(*deadline - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 1, recovery.poll_seconds()));
  };

  auto launch = script_request(*impl, st, detail::ScriptMode::launch, wait_seconds());
  launch.shell_line = std::move(shell_line);
  launch.env = options.env;
  launch.working_dir = options.working_dir;
  if (options.timeout) launch.timeout_seconds = options.timeout->count();
  // Build once up front so bad input (NUL bytes, env names, size) throws before anything runs.
  (void)detail::build_script(launch);

  std::vector<std::string> secrets;
  for (const auto& [k, v] : options.env) secrets.push_back(v);
  // Everything the run's result or error quotes (run_outcome.hpp decides which it is).
  const auto end_context = [&](StopResult stop, std::exception_ptr abort, Outcome answer) {
    detail::RunEndContext context;
    context.vm = st.vm;
    context.output = PartialOutput{std::move(st.out), std::move(st.err)};
    context.max_output_bytes = options.max_output_bytes;
    context.answer = std::move(answer);
    context.secrets = impl->secrets(secrets);
    context.stop = stop;
    context.abort = std::move(abort);
    return context;
  };
  const auto finish = [](std::variant<RunResult, std::exception_ptr> outcome) {
    if (outcome.index() == 1) std::rethrow_exception(std::get<1>(outcome));
    return std::get<0>(std::move(outcome));
  };

  std::chrono::milliseconds delay{0};
  detail::RunStep step;
  std::exception_ptr abort;  // a cancellation or error that must stop the remote command first
  for (;;) {
    const auto mode = recovery.mode();
    auto request = mode == detail::ScriptMode::launch ? launch : script_request(*impl, st, mode, wait_seconds());
    std::optional<Outcome> result;
    const Clock::time_point sent_at = Clock::now() + delay;
    std::exception_ptr error;
    try {
      result = co_await request_until(*impl, st, request, deadline, delay);
    } catch (...) {
      error = std::current_exception();
    }
    if (error) {
      step = step_after_failure(recovery, error, mode == detail::ScriptMode::launch && !st.started, abort);
    } else if (!result) {
      step = recovery.on_deadline();
    } else {
      const auto lasted = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - sent_at);
      step = recovery.on_answer(*result, st.started, lasted);
    }
    if (step.forget_record) impl->acks[st.vm].push_back(st.id);
    if (step.kind == detail::RunStep::Kind::stop) break;
    if (step.kind != detail::RunStep::Kind::send) {
      // (fail only follows an answer: `result` holds it.)
      co_return finish(detail::run_outcome(step, end_context(StopResult::unconfirmed, nullptr, result ? *result : Outcome{})));
    }
    delay = step.delay;
    if (delay.count() > 0) {
      impl->log(LogLevel::info, fmt::format("exe.dev: run on VM \"{}\": request ended without the result; "
                                            "reading its record again in {} ms", st.vm, delay.count()));
    }
  }

  // Cancelled, timed out locally, over the output limit, or failed after the launch request
  // went out: stop the remote command first, shielded from further cancellation (bounded by
  // stop_bound). Only this coroutine's throw_if_cancelled is touched (and restored): resetting
  // the cancellation state would switch cancellation off for the caller's whole coroutine chain.
  st.stopping = true;  // a callback that threw must not be called again
  StopResult stop = StopResult::unconfirmed;
  EXEDEV_AWAIT_DESPITE_CANCELLATION(stop_error, [](detail::ClientState& impl, RunState& st, StopResult& stop) -> asio::awaitable<void> {
    stop = co_await detail::shielded(stop_remote(impl, st));
  }(*impl, st, stop));
  if (stop_error) std::rethrow_exception(stop_error);
  co_return finish(detail::run_outcome(step, end_context(stop, abort, Outcome{})));
}

std::size_t run_request_bytes(const std::string& vm, const std::string& shell_line, const ClientRunOptions& options) {
  // Random parts at their real lengths; the most records of finished runs a request carries.
  const std::string random(2 * run_id_bytes, 'f');
  detail::ScriptRequest launch;
  launch.mode = detail::ScriptMode::launch;
  launch.id = random;
  launch.boundary = run_boundary(random);
  launch.acks.assign(max_acks_per_request, random);
  launch.shell_line = shell_line;
  launch.env = options.env;
  launch.working_dir = options.working_dir;
  if (options.timeout && *options.timeout < detail::no_practical_limit) launch.timeout_seconds = options.timeout->count();
  return run_lobby_line(vm, launch).size();
}


}  // namespace exedev
