// exedev::Client: typed lobby commands, retries, and the run() protocol on top of the transport.
#include <exedev/client.hpp>

#include "client/api_response.hpp"
#include "client/lobby.hpp"
#include "client/retry.hpp"
#include "client/run_protocol.hpp"
#include "client/run_recovery.hpp"
#include "client/script_exec.hpp"
#include "client/settings.hpp"
#include "client/transport.hpp"
#include "common/backoff.hpp"
#include "common/coroutines.hpp"
#include "common/random_ids.hpp"
#include "common/time_limits.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <random>
#include <variant>

namespace exedev {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;
using Clock = std::chrono::steady_clock;
using detail::is_cancellation;
using detail::sleep_for;

namespace {

// For calls whose arguments hold nothing to mask.
const std::vector<std::string> no_secrets;

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


}  // namespace

struct detail::ClientState {
  asio::any_io_executor executor;
  ClientOptions options;
  detail::Settings settings;
  std::unique_ptr<detail::Transport> transport;
  std::map<std::string, std::vector<std::string>> acks;  ///< VM → finished run records to remove
  std::optional<detail::TokenBucket> pacing;  ///< Made on first use, from the final options.

  void log(LogLevel level, std::string_view text) const {
    if (options.logger) options.logger(level, text);
  }

  std::vector<std::string> secrets(std::vector<std::string> extra = {}) const {
    if (settings.token) extra.push_back(*settings.token);
    return extra;
  }

  // Waits for a token of the pacing bucket (when pacing is on), then takes it.
  asio::awaitable<void> pace() {
    if (!options.pacing.enabled) co_return;
    if (!pacing) pacing.emplace(options.pacing.burst, options.pacing.per_second, Clock::now());
    const auto delay = pacing->take(Clock::now());
    if (delay > Clock::duration::zero()) co_await sleep_for(std::chrono::duration_cast<std::chrono::milliseconds>(delay));
  }

  // One lobby request with the retry policy: read-only commands are re-sent on 429, 5xx and
  // connection errors, every other command on 429 only (answered before anything runs, §1.5).
  // `sink` takes a 200 answer's body as it arrives.
  asio::awaitable<detail::HttpResponse> lobby(const std::string& line, const std::string& command,
                                              detail::BodySink sink = {}) {
    const auto& token = detail::require_token(settings);
    detail::check_body_size(line.size(), command);
    const bool read_only = detail::is_read_only(command);
    const int max_retries = std::max(options.retry.max_retries, 0);
    for (int attempt = 0;; ++attempt) {
      std::exception_ptr failure;
      detail::HttpResponse response;
      detail::PostOptions post;
      post.idempotent = read_only;
      post.timeout = options.request_timeout;
      post.sink = sink;
      co_await pace();
      try {
        response = co_await transport->post(line, token, post);
      } catch (const ConnectionError&) {
        if (!read_only) throw;
        failure = std::current_exception();
      }
      const bool retryable = read_only ? detail::is_retryable_status(response.status) : response.status == 429;
      if (!failure && !retryable) co_return response;
      if (attempt >= max_retries) {
        if (failure) std::rethrow_exception(failure);
        co_return response;
      }
      std::optional<std::chrono::milliseconds> retry_after;
      if (!failure && response.retry_after) {
        retry_after = detail::parse_retry_after(*response.retry_after, std::chrono::system_clock::now());
      }
      // (A named string: GCC 12 destroys a temporary inside a co_await expression twice.)
      const std::string why = failure ? std::string("lost its connection") : fmt::format("got HTTP {}", response.status);
      co_await wait_before_retry(command, why, attempt, retry_after);
    }
  }

  // The retry policy's backoff before retry number `attempt` (0-based), logged with `why`.
  asio::awaitable<void> wait_before_retry(std::string_view command, std::string_view why, int attempt,
                                          std::optional<std::chrono::milliseconds> retry_after) {
    const auto delay = retry_delay(attempt, retry_after);
    log(LogLevel::info, fmt::format("exe.dev: \"{}\" {}; retry {} of {} in {} ms", command, why, attempt + 1,
                                    std::max(options.retry.max_retries, 0), delay.count()));
    co_await sleep_for(delay);
  }

  // The retry policy's jittered backoff before retry number `attempt` (0-based).
  std::chrono::milliseconds retry_delay(int attempt, std::optional<std::chrono::milliseconds> retry_after) {
    const double r = std::uniform_real_distribution<double>(0.0, 1.0)(detail::random_engine());
    return detail::backoff_delay(options.retry, attempt, r, retry_after);
  }

  // A lobby command whose answer must be a success: returns the body.
  // GCC 12 destroys temporaries of a co_await full-expression twice: callers pass named objects.
  asio::awaitable<std::string> call(const detail::LobbyLine& line, const std::vector<std::string>& extra_secrets) {
    const auto text = line.str();
    auto response = co_await lobby(text, line.command());
    detail::check_lobby_answer(response.status, line.command(), response.body, secrets(extra_secrets));
    co_return std::move(response.body);
  }
};

// ---- run() ------------------------------------------------------------------------------------

namespace {

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

}  // namespace

namespace {

asio::awaitable<Outcome> run_request(detail::ClientState& impl, RunState& st, const detail::ScriptRequest& request) {
  const auto line = run_lobby_line(st.vm, request);
  detail::check_body_size(line.size(), "ssh");
  const auto& token = detail::require_token(impl.settings);

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
    co_await impl.pace();
    response = co_await impl.transport->post(line, token, post);
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
    if (response.retry_after) {
      outcome.retry_after = detail::parse_retry_after(*response.retry_after, std::chrono::system_clock::now());
    }
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
                                       std::chrono::milliseconds delay) {
  Attempt attempt;
  try {
    if (delay.count() > 0) co_await sleep_for(delay);
    attempt.outcome = co_await run_request(impl, st, request);
  } catch (...) {
    attempt.error = std::current_exception();
  }
  co_return attempt;
}

// Runs one request after `delay`, the whole cut short at `deadline` (nullopt when the deadline
// won: the request, if sent, is abandoned and its connection closed). Rethrows what the
// request threw.
asio::awaitable<std::optional<Outcome>> request_until(detail::ClientState& impl, RunState& st, detail::ScriptRequest request,
                                                      std::optional<Clock::time_point> deadline,
                                                      std::chrono::milliseconds delay = {}) {
  Attempt attempt;
  if (!deadline) {
    attempt = co_await request_after(impl, st, std::move(request), delay);
  } else {
    asio::steady_timer timer(impl.executor, *deadline);
    auto result = co_await (request_after(impl, st, std::move(request), delay) || timer.async_wait(asio::use_awaitable));
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
    const auto until = Clock::now() + stop_bound;
    auto outcome = co_await request_until(impl, st, request, until);
    // A 429 is answered before anything runs: sent again (within the stop's bound).
    for (int attempt = 0; outcome && outcome->kind == Outcome::Kind::http_error && outcome->status == 429 &&
                          attempt < std::max(impl.options.retry.max_retries, 0);
         ++attempt) {
      outcome = co_await request_until(impl, st, request, until, impl.retry_delay(attempt, outcome->retry_after));
    }
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

// Removes the records of finished runs, in requests of at most max_acks_per_request per VM.
// Records a request did not remove stay listed, so the next close() (or run on that VM) tries again. Throws the first failure
// once every VM was tried.
asio::awaitable<void> remove_finished_records(std::shared_ptr<detail::ClientState> impl) {
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
        auto outcome = co_await run_request(*impl, st, request);
        // A 429 is answered before anything runs: sent again under the retry policy.
        for (int attempt = 0; outcome.kind == Outcome::Kind::http_error && outcome.status == 429 &&
                              attempt < std::max(impl->options.retry.max_retries, 0);
             ++attempt) {
          co_await impl->wait_before_retry("ssh", "got HTTP 429", attempt, outcome.retry_after);
          outcome = co_await run_request(*impl, st, request);
        }
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
          detail::throw_api_error(outcome.status, "ssh", outcome.body, impl->secrets());
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
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      impl->log(LogLevel::warning,
                fmt::format("exe.dev: removing the records of finished runs on VM \"{}\" failed: {}", vm, e.what()));
    }
    if (!first_failure) first_failure = failure;
  }
  std::erase_if(impl->acks, [](const auto& entry) { return entry.second.empty(); });
  if (first_failure) std::rethrow_exception(first_failure);
}

}  // namespace

// ---- Client -----------------------------------------------------------------------------------

Client::Client(asio::any_io_executor executor, ClientOptions options) : impl_(std::make_shared<detail::ClientState>()) {
  impl_->executor = executor;
  impl_->settings = detail::resolve_settings(options, detail::process_env);
  detail::TransportConfig config;
  config.endpoint = impl_->settings.endpoint;
  config.ca_file = impl_->settings.ca_file;
  config.connect_timeout = options.connect_timeout;
  config.handshake_timeout = options.handshake_timeout;
  config.max_connections = options.max_connections;
  config.user_agent = options.user_agent;
  config.logger = options.logger;
  config.max_body_bytes = options.max_response_bytes;
  impl_->transport = std::make_unique<detail::Transport>(std::move(executor), std::move(config));
  impl_->options = std::move(options);
}

Client::~Client() = default;
Client::Client(asio::any_io_executor executor) : Client(std::move(executor), ClientOptions{}) {}

Client::Client(const Client&) = default;
Client& Client::operator=(const Client&) = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

asio::any_io_executor Client::get_executor() const { return impl_->executor; }
const std::string& Client::endpoint() const { return impl_->settings.endpoint.text; }

Task<ExecResponse> Client::exec(std::string command_line) {
  auto impl = impl_;
  const auto command = detail::command_name(command_line);
  auto response = co_await impl->lobby(command_line, command);
  ExecResponse answer{response.status, std::move(response.body), std::nullopt};
  if (response.exe_exit) {
    int code = -1;
    const auto& t = *response.exe_exit;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), code);
    if (ec == std::errc() && end == t.data() + t.size()) answer.exit_code = code;
  }
  co_return answer;
}

Task<VMInfo> Client::new_vm(NewVMOptions options) {
  auto impl = impl_;
  std::vector<std::string> env_values;
  for (const auto& [k, v] : options.env) env_values.push_back(v);
  const auto line = detail::new_vm_line(options);
  const auto body = co_await impl->call(line, env_values);
  co_return detail::parse_vm_answer(body, "new");
}

Task<VMInfo> Client::copy_vm(CopyVMOptions options) {
  auto impl = impl_;
  const auto line = detail::copy_vm_line(options);
  const auto body = co_await impl->call(line, no_secrets);
  co_return detail::parse_vm_answer(body, "cp");
}

Task<std::vector<VMInfo>> Client::list_vms(StringList patterns) {
  auto impl = impl_;
  const auto line = detail::list_vms_line(patterns.items());
  const auto body = co_await impl->call(line, no_secrets);
  co_return detail::parse_list_answer(body);
}

Task<RemoveResult> Client::remove_vms(StringList names) {
  auto impl = impl_;
  const auto line = detail::remove_vms_line(names.items());
  const auto body = co_await impl->call(line, no_secrets);
  auto result = detail::parse_remove_answer(body);
  for (const auto& name : result.deleted) impl->acks.erase(name);
  co_return result;
}

Task<void> Client::pause_vm(std::string name) {
  auto impl = impl_;
  const auto line = detail::vm_line("pause", name);
  detail::parse_object_answer(co_await impl->call(line, no_secrets), "pause");
}

Task<void> Client::resume_vm(std::string name) {
  auto impl = impl_;
  const auto line = detail::vm_line("resume", name);
  detail::parse_object_answer(co_await impl->call(line, no_secrets), "resume");
}

Task<void> Client::restart_vm(std::string name) {
  auto impl = impl_;
  const auto line = detail::vm_line("restart", name);
  detail::parse_object_answer(co_await impl->call(line, no_secrets), "restart");
}

Task<std::vector<std::string>> Client::add_tags(std::string name, StringList tags) {
  auto impl = impl_;
  const auto line = detail::tag_line(name, tags.items(), false);
  co_return detail::parse_tags_answer(co_await impl->call(line, no_secrets));
}

Task<std::vector<std::string>> Client::remove_tags(std::string name, StringList tags) {
  auto impl = impl_;
  const auto line = detail::tag_line(name, tags.items(), true);
  co_return detail::parse_tags_answer(co_await impl->call(line, no_secrets));
}

Task<void> Client::set_comment(std::string name, std::string comment) {
  auto impl = impl_;
  const auto line = detail::comment_line(name, comment);
  detail::parse_object_answer(co_await impl->call(line, no_secrets), "comment");
}

Task<void> Client::clear_comment(std::string name) { return set_comment(std::move(name), std::string()); }

Task<WhoAmI> Client::whoami() {
  auto impl = impl_;
  const detail::LobbyLine line("whoami");
  co_return detail::parse_whoami_answer(co_await impl->call(line, no_secrets));
}

Task<ResizeResult> Client::resize_vm(std::string name, ResizeVMOptions options) {
  auto impl = impl_;
  const auto line = detail::resize_vm_line(name, options);
  co_return detail::parse_resize_answer(co_await impl->call(line, no_secrets));
}

Task<void> Client::rename_vm(std::string name, std::string new_name) {
  auto impl = impl_;
  const auto line = detail::rename_vm_line(name, new_name);
  if (name == new_name) co_return;  // exe.dev answers in text, not JSON, and changes nothing
  detail::parse_object_answer(co_await impl->call(line, no_secrets), "rename");
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
  detail::RunRecovery recovery(long_poll_seconds, impl->options.retry.max_retries);
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
  const auto unknown = [&](const std::string& why, bool vm_gone = false) {
    return OutcomeUnknownError(fmt::format("run on VM \"{}\": {}; the command may have run", st.vm, why), st.out, st.err,
                               vm_gone);
  };

  std::chrono::milliseconds delay{0};
  detail::RunStep step;
  std::exception_ptr abort;  // a cancellation or error that must stop the remote command first
  for (;;) {
    const auto mode = recovery.mode();
    auto request = mode == detail::ScriptMode::launch ? launch : script_request(*impl, st, mode, wait_seconds());
    std::optional<Outcome> result;
    const Clock::time_point sent_at = Clock::now() + delay;
    try {
      result = co_await request_until(*impl, st, request, deadline, delay);
    } catch (...) {
      abort = std::current_exception();
    }
    if (abort) {
      bool unreadable = false;
      if (!is_cancellation(abort)) {
        try {
          std::rethrow_exception(abort);
        } catch (const ProtocolError&) {
          unreadable = true;
        } catch (...) {
        }
      }
      step = recovery.on_error(unreadable ? detail::StopReason::unreadable : detail::StopReason::interrupted);
    } else if (!result) {
      step = recovery.on_deadline();
    } else {
      const auto lasted = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - sent_at);
      step = recovery.on_answer(*result, st.started, lasted);
    }
    if (step.forget_record) impl->acks[st.vm].push_back(st.id);
    if (step.kind == detail::RunStep::Kind::stop) break;
    if (step.kind == detail::RunStep::Kind::finish) co_return RunResult{step.exit_code, std::move(st.out), std::move(st.err)};
    const Outcome& outcome = *result;
    if (step.kind == detail::RunStep::Kind::fail) {
      using F = detail::RunFailure;
      switch (step.failure) {
        case F::timed_out_on_vm:
          throw RunTimeoutError(fmt::format("run on VM \"{}\" passed its timeout; the command was stopped", st.vm),
                                std::move(st.out), std::move(st.err));
        case F::refused:
          detail::throw_api_error(outcome.status, "ssh", outcome.body, impl->secrets(secrets));  // not started
          break;
        case F::not_started:
          throw ConnectionError(
              fmt::format("run on VM \"{}\": the launch request failed and the command was not started", st.vm), false);
        case F::not_sent:
          throw ConnectionError(fmt::format("run on VM \"{}\": could not send the command; it was not started", st.vm), false);
        case F::record_lost: throw unknown("its record on the VM is lost");
        case F::record_not_created:
          throw ProtocolError(
              fmt::format("run on VM \"{}\": could not create the command's record; nothing was started", st.vm));
        case F::poll_refused: {
          const auto message = detail::server_message(outcome.body, impl->secrets(secrets));
          throw unknown(fmt::format("exe.dev answered: {}", message), message.find("not found") != std::string::npos);
        }
        case F::poll_status: throw unknown(fmt::format("polling failed with HTTP {}", outcome.status));
        case F::unreachable: throw unknown("the VM could not be reached to collect the result");
      }
    }
    delay = step.delay;
    if (step.retry > 0) {
      // The launch was refused before anything ran (429): the retry policy's backoff.
      delay = impl->retry_delay(step.retry - 1, outcome.retry_after);
      impl->log(LogLevel::info, fmt::format("exe.dev: run on VM \"{}\": the launch got HTTP {}; retry {} of {} in {} ms",
                                            st.vm, outcome.status, step.retry, impl->options.retry.max_retries,
                                            delay.count()));
    } else if (delay.count() > 0) {
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
  const std::string fate = detail::stop_fate(stop);
  using C = detail::RunConclusion;
  switch (detail::conclude(step.reason, stop)) {
    case C::timeout:
      throw RunTimeoutError(fmt::format("run on VM \"{}\" passed its timeout; {}", st.vm, fate), std::move(st.out),
                            std::move(st.err));
    case C::timeout_unknown: throw unknown("it passed its timeout and " + fate);
    case C::output_limit:
      throw OutputLimitError(fmt::format("run on VM \"{}\" wrote more than {} bytes of output; {}", st.vm,
                                         options.max_output_bytes, fate),
                             options.max_output_bytes, std::move(st.out), std::move(st.err));
    case C::unreadable_unknown:
      try {
        std::rethrow_exception(abort);
      } catch (const ProtocolError& e) {
        std::throw_with_nested(unknown(fmt::format("exe.dev's answer could not be read ({})", e.what())));
      }
      break;
    case C::unreadable:
      try {
        std::rethrow_exception(abort);
      } catch (const ProtocolError&) {
        std::throw_with_nested(
            ProtocolError(fmt::format("run on VM \"{}\": exe.dev's answer could not be read; {}", st.vm, fate)));
      }
      break;
    case C::rethrow: break;
  }
  std::rethrow_exception(abort);  // a cancellation, or an output callback's exception, as it is
}

// ---- run_script() -----------------------------------------------------------------------------

Task<RunResult> Client::run_script(std::string vm, std::string script) {
  return run_script(std::move(vm), std::move(script), ScriptOptions{});
}

Task<RunResult> Client::run_script(std::string vm, std::string script, ScriptOptions options) {
  const auto boundary = detail::script_boundary();
  const auto line = detail::script_lobby_line(vm, script, options.args, boundary);
  // The frames add a few hundred bytes and the stderr block at most ~88 KiB.
  const std::size_t max_body = options.max_output_bytes + 96 * 1024;
  const int max_retries = std::max(impl_->options.retry.max_retries, 0);
  for (int attempt = 0;; ++attempt) {
    // The answer is read as it arrives: stdout goes to on_stdout (from offset 0 again on each
    // attempt) or into the result, never held twice.
    std::string stdout_bytes;
    std::uint64_t streamed = 0;
    detail::ScriptOutputReader reader(boundary, [&](std::string_view bytes) {
      if (!options.on_stdout) {
        stdout_bytes.append(bytes);
        return;
      }
      options.on_stdout(streamed, bytes);
      streamed += bytes.size();
    });
    std::size_t body_bytes = 0;
    bool over_limit = false;
    auto sink = [&](std::string_view bytes) {
      if (body_bytes + bytes.size() > max_body) {
        over_limit = true;
        return false;
      }
      body_bytes += bytes.size();
      reader.feed(bytes);
      return true;
    };
    detail::HttpResponse response;
    std::exception_ptr lost;
    try {
      response = co_await impl_->lobby(line, "ssh", sink);
    } catch (const ConnectionError& e) {
      // Nothing sent: nothing ran, so any script may be sent again. Past the output limit the
      // request was abandoned on purpose (reported below).
      if (!over_limit && ((e.sent() && !options.idempotent) || attempt >= max_retries)) throw;
      lost = std::current_exception();
    } catch (const ProtocolError&) {
      if (!options.idempotent || attempt >= max_retries) throw;  // unreadable: it may have run
      lost = std::current_exception();
    }
    if (over_limit) {
      throw OutputLimitError(fmt::format("run_script on VM \"{}\" wrote more than {} bytes", vm, options.max_output_bytes),
                             options.max_output_bytes, std::move(stdout_bytes), {});
    }
    std::optional<detail::ScriptOutput> output;
    if (!lost && response.status == 200) output = reader.finish();
    // A 5xx or a cut answer: the script may have run. Only an idempotent one is sent again.
    const bool unknown = !lost && (response.status == 200 ? !output : detail::is_retryable_status(response.status));
    if ((lost || (unknown && options.idempotent)) && attempt < max_retries) {
      // (A named string: GCC 12 destroys a temporary inside a co_await expression twice.)
      const std::string why = lost ? std::string("lost its connection or its answer was unreadable")
                              : response.status == 200 ? std::string("answer was cut")
                                                       : fmt::format("got HTTP {}", response.status);
      co_await impl_->wait_before_retry("ssh", why, attempt, std::nullopt);
      continue;
    }
    if (response.status != 200) {
      detail::throw_api_error(response.status, "ssh", response.body, impl_->secrets());
    }
    if (!output) {
      throw OutcomeUnknownError(fmt::format("run_script on VM \"{}\": the answer was cut; the script may have run", vm),
                                std::move(stdout_bytes), {});
    }
    if (reader.stdout_size() > options.max_output_bytes) {
      throw OutputLimitError(fmt::format("run_script on VM \"{}\" wrote more than {} bytes", vm, options.max_output_bytes),
                             options.max_output_bytes, std::move(stdout_bytes), std::move(output->stderr_bytes));
    }
    co_return RunResult{output->exit_code, std::move(stdout_bytes), std::move(output->stderr_bytes)};
  }
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

std::size_t script_request_bytes(const std::string& vm, const std::string& script, const std::vector<std::string>& args) {
  return detail::script_lobby_line(vm, script, args, detail::script_boundary()).size();
}

Task<void> Client::close() {
  // Removing finished runs' records is cleanup: it finishes before a cancellation is delivered.
  EXEDEV_AWAIT_DESPITE_CANCELLATION(failure, detail::shielded(remove_finished_records(impl_)));
  impl_->transport->close_idle();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace exedev
