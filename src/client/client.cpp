// exedev::Client: the typed lobby commands, run_script() and close(), and the one path every
// lobby request takes (client_state.hpp). The run() protocol is in client_run.cpp.
#include "client/client_state.hpp"

#include "client/api_response.hpp"
#include "client/lobby.hpp"
#include "client/script_exec.hpp"
#include "common/backoff.hpp"
#include "common/coroutines.hpp"
#include "common/random_ids.hpp"
#include "common/wait_notices.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <random>

namespace exedev {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using detail::sleep_for;

namespace {

// For calls whose arguments hold nothing to mask.
const std::vector<std::string> no_secrets;

}  // namespace

// ---- the lobby path ---------------------------------------------------------------------------

namespace {

std::string seconds_text(Clock::duration wait) {
  return fmt::format("{:.1f} s", std::chrono::duration<double>(wait).count());
}

}  // namespace

std::string detail::ClientState::request_token() const {
  if (minter && !settings.token) return minter->exec_token(std::chrono::system_clock::now());
  return detail::require_token(settings);
}

std::string detail::ClientState::rate_limit_identity() const {
  return minter && !settings.token ? "ssh key " + minter->key_description() : detail::require_token(settings);
}

void detail::ClientState::check_minted_answer(const detail::HttpResponse& response, std::string_view command) const {
  if (response.status != 401 || !minter || settings.token) return;
  throw AuthenticationError(
      401, std::string(command),
      fmt::format("{}; the token was minted with the SSH key {}: is that key registered with exe.dev (`ssh exe.dev "
                  "ssh-key list`), and is this machine's clock right (the token expires {} s after it is made)?",
                  detail::server_message(response.body, secrets()), minter->key_description(), options.minting->lifetime.count()));
}

asio::awaitable<detail::HttpResponse> detail::ClientState::send(const std::string& line, const detail::PostOptions& post,
                                                               std::string_view command,
                                                               std::optional<Clock::time_point> deadline) {
  const auto& limits = options.rate_limit;
  if (!limits.wait) {
    const std::string token = request_token();
    auto response = co_await https_pool->post(line, token, post);
    check_minted_answer(response, command);
    co_return response;
  }
  if (!rate_limit) {
    const detail::RateLimitNumbers numbers{limits.burst, limits.per_second, limits.overdraft};
    rate_limit = detail::shared_rate_limit_model(detail::rate_limit_key(settings.endpoint.text, rate_limit_identity()),
                                                 numbers, limits.pace_from_start);
  }
  for (bool refused = false;;) {
    for (;;) {
      const auto step = detail::next_rate_limit_step(*rate_limit, Clock::now(), deadline);
      using K = detail::RateLimitStep::Kind;
      if (step.kind == K::send) break;
      if (step.kind == K::give_up) {
        throw RateLimitedError(std::string(command),
                               fmt::format("exe.dev's rate limit: the request would have to wait {}, past the operation's "
                                           "deadline",
                                           seconds_text(step.wait)),
                               std::chrono::ceil<std::chrono::milliseconds>(step.wait));
      }
      if (step.wait > std::chrono::seconds(1)) {
        const auto text = fmt::format("exe.dev's rate limit: \"{}\" waits {} for the token's request budget{}", command,
                                      seconds_text(step.wait), refused ? " (refused with HTTP 429; sent again after)" : "");
        log(LogLevel::info, text);
        detail::publish_wait_notice(text);
      }
      co_await sleep_for(step.wait);
    }
    const std::string token = request_token();
    const auto sent_at = Clock::now();
    detail::HttpResponse response;
    try {
      response = co_await https_pool->post(line, token, post);
    } catch (...) {
      rate_limit->on_lost();
      throw;
    }
    if (response.status != 429) {
      rate_limit->on_answered(sent_at, response.status);
      check_minted_answer(response, command);
      co_return response;
    }
    // Refused before anything ran (exedev-api.md §1.5): always safe to send again.
    rate_limit->on_refused(Clock::now(), sent_at, response.retry_after);
    refused = true;
  }
}

asio::awaitable<detail::HttpResponse> detail::ClientState::lobby(const std::string& line, const std::string& command,
                                                                detail::BodySink sink) {
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
    try {
      response = co_await send(line, post, command, std::nullopt);
    } catch (const ConnectionError&) {
      if (!read_only) throw;
      failure = std::current_exception();
    }
    const bool retryable = read_only && detail::is_retryable_status(response.status);
    if (!failure && !retryable) co_return response;
    if (attempt >= max_retries) {
      if (failure) std::rethrow_exception(failure);
      co_return response;
    }
    // (A named string: GCC 12 destroys a temporary inside a co_await expression twice.)
    const std::string why = failure ? std::string("lost its connection") : fmt::format("got HTTP {}", response.status);
    co_await wait_before_retry(command, why, attempt, response.retry_after);
  }
}

asio::awaitable<void> detail::ClientState::wait_before_retry(std::string_view command, std::string_view why, int attempt,
                                                             std::optional<std::chrono::milliseconds> retry_after) {
  const double r = std::uniform_real_distribution<double>(0.0, 1.0)(detail::random_engine());
  const auto delay = detail::backoff_delay(options.retry, attempt, r, retry_after);
  log(LogLevel::info, fmt::format("exe.dev: \"{}\" {}; retry {} of {} in {} ms", command, why, attempt + 1,
                                  std::max(options.retry.max_retries, 0), delay.count()));
  co_await sleep_for(delay);
}

asio::awaitable<std::string> detail::ClientState::call(const detail::LobbyLine& line, const std::vector<std::string>& extra_secrets) {
  const auto text = line.str();
  auto response = co_await lobby(text, line.command());
  detail::check_lobby_answer(response.status, line.command(), response.body, secrets(extra_secrets), response.retry_after);
  co_return std::move(response.body);
}

// ---- Client -----------------------------------------------------------------------------------

Client::Client(asio::any_io_executor executor, ClientOptions options) : impl_(std::make_shared<detail::ClientState>()) {
  impl_->executor = executor;
  impl_->settings = detail::resolve_settings(options, detail::process_env);
  detail::HttpsPoolConfig config;
  config.endpoint = impl_->settings.endpoint;
  config.ca_file = impl_->settings.ca_file;
  config.connect_timeout = options.connect_timeout;
  config.handshake_timeout = options.handshake_timeout;
  config.max_connections = options.max_connections;
  config.user_agent = options.user_agent;
  config.logger = options.logger;
  config.max_body_bytes = options.max_response_bytes;
  impl_->https_pool = std::make_unique<detail::HttpsPool>(std::move(executor), std::move(config));
  if (options.minting) impl_->minter = std::make_shared<detail::TokenMinter>(*options.minting, options.logger);
  impl_->options = std::move(options);
}

std::string Client::mint_vm_token(const std::string& vm, std::chrono::seconds lifetime) const {
  if (!impl_->minter) throw std::logic_error("Client::mint_vm_token needs ClientOptions::minting");
  return impl_->minter->vm_token(vm, lifetime, std::chrono::system_clock::now());
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

Task<WhoAmI> Client::account() {
  auto impl = impl_;
  if (impl->account) co_return *impl->account;
  auto answer = co_await whoami();
  impl->account = answer;
  co_return answer;
}

void Client::forget_account() { impl_->account.reset(); }

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

Task<ShareInfo> Client::share_show(std::string name) {
  auto impl = impl_;
  const auto line = detail::share_line("show", name, {});
  co_return detail::parse_share_show_answer(co_await impl->call(line, no_secrets));
}

Task<ShareRoute> Client::share_port(std::string name) {
  auto impl = impl_;
  const auto line = detail::share_line("port", name, {});
  co_return detail::parse_share_route_answer(co_await impl->call(line, no_secrets), line.command());
}

Task<ShareRoute> Client::set_share_port(std::string name, std::uint16_t port) {
  auto impl = impl_;
  // exe.dev's own bounds (execore/ssh_share.go): refused here rather than sent.
  if (port < 3000 || port > 9999) throw std::invalid_argument("share port: exe.dev accepts ports 3000-9999 only");
  const auto line = detail::share_line("port", name, std::vector<std::string>{std::to_string(port)});
  co_return detail::parse_share_route_answer(co_await impl->call(line, no_secrets), line.command());
}

Task<ShareRoute> Client::share_set_public(std::string name) {
  auto impl = impl_;
  const auto line = detail::share_line("set-public", name, {});
  co_return detail::parse_share_route_answer(co_await impl->call(line, no_secrets), line.command());
}

Task<ShareRoute> Client::share_set_private(std::string name) {
  auto impl = impl_;
  const auto line = detail::share_line("set-private", name, {});
  co_return detail::parse_share_route_answer(co_await impl->call(line, no_secrets), line.command());
}

Task<ShareLinkCreated> Client::share_add_link(std::string name) {
  auto impl = impl_;
  const auto line = detail::share_line("add-link", name, {});
  co_return detail::parse_share_link_answer(co_await impl->call(line, no_secrets));
}

Task<ShareChange> Client::share_remove_link(std::string name, std::string token) {
  auto impl = impl_;
  const auto line = detail::share_line("remove-link", name, std::vector<std::string>{token});
  co_return detail::parse_share_change_answer(co_await impl->call(line, no_secrets), line.command());
}

Task<ShareChange> Client::share_add(std::string name, std::string email_or_team, std::string message) {
  auto impl = impl_;
  auto line = detail::share_line("add", name, std::vector<std::string>{email_or_team});
  if (!message.empty()) line.flag("message", message);
  co_return detail::parse_share_change_answer(co_await impl->call(line, no_secrets), line.command());
}

Task<ShareChange> Client::share_remove(std::string name, std::string email_or_team) {
  auto impl = impl_;
  const auto line = detail::share_line("remove", name, std::vector<std::string>{email_or_team});
  co_return detail::parse_share_change_answer(co_await impl->call(line, no_secrets), line.command());
}

Task<ShareRoute> Client::share_access(std::string name, bool allow) {
  auto impl = impl_;
  const auto line = detail::share_line(allow ? "access allow" : "access disallow", name, {});
  co_return detail::parse_share_route_answer(co_await impl->call(line, no_secrets), line.command());
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
    } catch (const Error& e) {
      if (e.code() == errc::connection_failed) {
        // Nothing sent: nothing ran, so any script may be sent again. Past the output limit the
        // request was abandoned on purpose (reported below).
        if (!over_limit && ((e.may_have_run() && !options.idempotent) || attempt >= max_retries)) throw;
      } else if (e.code() == errc::protocol_error) {
        if (!options.idempotent || attempt >= max_retries) throw;  // unreadable: it may have run
      } else {
        throw;
      }
      lost = std::current_exception();
    }
    if (over_limit) {
      throw OutputLimitError(fmt::format("run_script on VM \"{}\" wrote more than {} bytes", vm, options.max_output_bytes),
                             options.max_output_bytes, PartialOutput{std::move(stdout_bytes)});
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
      detail::throw_api_error(response.status, "ssh", response.body, impl_->secrets(), response.retry_after);
    }
    if (!output) {
      throw OutcomeUnknownError(fmt::format("run_script on VM \"{}\": the answer was cut; the script may have run", vm),
                                PartialOutput{std::move(stdout_bytes)});
    }
    if (reader.stdout_size() > options.max_output_bytes) {
      throw OutputLimitError(fmt::format("run_script on VM \"{}\" wrote more than {} bytes", vm, options.max_output_bytes),
                             options.max_output_bytes,
                             PartialOutput{std::move(stdout_bytes), std::move(output->stderr_bytes)});
    }
    co_return RunResult{output->exit_code, std::move(stdout_bytes), std::move(output->stderr_bytes)};
  }
}


std::size_t script_request_bytes(const std::string& vm, const std::string& script, const std::vector<std::string>& args) {
  return detail::script_lobby_line(vm, script, args, detail::script_boundary()).size();
}

Task<void> Client::close() {
  // Removing finished runs' records is cleanup: it finishes before a cancellation is delivered.
  EXEDEV_AWAIT_DESPITE_CANCELLATION(failure, detail::shielded(detail::remove_finished_records(impl_)));
  impl_->https_pool->close_idle();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace exedev
