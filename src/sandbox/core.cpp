#include "sandbox/core.hpp"

#include "common/coroutines.hpp"
#include "common/exceptions.hpp"
#include "common/random_ids.hpp"

#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include <exedev/errors.hpp>
#include <exedev/sandbox/lookup.hpp>

namespace exedev::detail {
namespace asio = boost::asio;

namespace {

bool mentions(const std::string& text, std::string_view needle) { return text.find(needle) != std::string::npos; }

// exe.dev answers this way while a VM's sshd is not up yet.
bool is_not_ready(const APIError& error) {
  return mentions(error.server_message(), "failed to connect to VM") || mentions(error.server_message(), "SSH handshake failed");
}

// Whether a readiness probe that failed this way may succeed later: a connection, a timeout,
// an unreadable or lost result (echo is safe to repeat) while the VM comes up, or exe.dev's
// not-ready answer. A deleted VM never becomes ready.
bool worth_probing_again(const Error& error) {
  switch (static_cast<errc>(error.code().value())) {
    case errc::connection_failed: case errc::run_timeout: case errc::protocol_error: return true;
    case errc::command_failed: {
      const auto* refusal = dynamic_cast<const APIError*>(&error);
      return refusal != nullptr && is_not_ready(*refusal);
    }
    case errc::outcome_unknown: {
      const auto* unknown = dynamic_cast<const OutcomeUnknownError*>(&error);
      return unknown == nullptr || !unknown->vm_gone();
    }
    default: return false;
  }
}

}  // namespace

void raise_after_close(std::exception_ptr error, std::exception_ptr close_error) {
  if (error && close_error && is_cancellation(error)) {
    if (is_cancellation(close_error)) std::rethrow_exception(close_error);  // the close's error is nested already
    throw_cancelled(close_error);
  }
  if (error) std::rethrow_exception(error);
  if (close_error) std::rethrow_exception(close_error);
}

const std::vector<std::string>& vms_commands() {
  static const std::vector<std::string> commands = {"new", "cp", "tag", "comment", "ssh", "ls", "pause", "resume", "rm"};
  return commands;
}

const std::vector<std::string>& sandbox_backend_commands() {
  static const std::vector<std::string> commands = {"new", "cp", "tag", "comment", "ssh", "ls", "resume", "rm", "whoami",
                                                    "share show"};
  return commands;
}

ClientOptions with_minted_commands(ClientOptions options, const std::vector<std::string>& commands) {
  if (options.minting && !options.minting->cmds) options.minting->cmds = commands;
  return options;
}

ClientHolder::ClientHolder(std::optional<Client> given, ClientOptions options)
    : given_(std::move(given)), options_(std::move(options)) {}

Task<Client> ClientHolder::get() {
  if (given_) co_return *given_;
  if (!made_) made_.emplace(co_await asio::this_coro::executor, options_);
  co_return *made_;
}

Task<void> ClientHolder::close() {
  if (!made_) co_return;
  // The close runs even if the caller was cancelled before it started, and is not interrupted.
  EXEDEV_AWAIT_DESPITE_CANCELLATION(error, shielded(made_->close()));
  if (!error) made_.reset();  // after a failure the client is kept: close() again retries
  const auto cancellation = co_await asio::this_coro::cancellation_state;
  if (was_cancelled(cancellation)) throw_cancelled(error);
  if (error) std::rethrow_exception(error);
}

bool is_scope_refusal(const APIError& error) {
  // exe.dev's 422 texts when a tag-scoped key's deny-by-default rule refuses a command
  // (exemenu/command_system.go) or its tag scope refuses a tag (execore/ssh_new_command.go,
  // execore/ssh_tag_command.go), at the commit exedev-api.md §0 names.
  return error.status() == 422 && (mentions(error.server_message(), "not allowed by SSH key permissions") ||
                                   mentions(error.server_message(), "SSH key scoped to tag"));
}

void rethrow_access_mapped(std::exception_ptr error, const std::string& context) {
  if (const auto* e = exception_as<APIError>(error)) {
    const auto code = e->code();
    if (code == errc::authentication_failed) {
      if (e->status() == 0) throw_nested(error, ExeDevAccessError(std::nullopt, e->command(), context));
      throw_nested(error, ExeDevAccessError(401, e->command(), context, e->server_message()));
    }
    if (code == errc::permission_denied || (code == errc::command_failed && is_scope_refusal(*e))) {
      throw_nested(error, ExeDevAccessError(403, e->command(), context, e->server_message()));
    }
  }
  std::rethrow_exception(error);
}

bool is_unknown_create_outcome(const std::exception_ptr& error) {
  // Not an Error: a cancellation before anything was sent, or a failure of the caller's own.
  const auto* failure = exception_as<Error>(error);
  return failure != nullptr && failure->may_have_run();
}

Task<VMInfo> find_in_scope(Client client, std::string name, std::optional<std::string> scope_tag) {
  const auto listed = co_await client.list_vms(one(name));
  const auto it = std::find_if(listed.begin(), listed.end(), [&](const VMInfo& vm) { return vm.name == name; });
  if (it == listed.end()) throw VMNotFoundError(name);
  if (scope_tag && std::find(it->tags.begin(), it->tags.end(), *scope_tag) == it->tags.end()) {
    throw VMOutOfScopeError(name, *scope_tag);
  }
  co_return *it;
}

Task<void> wait_ready(Client client, std::string name, ReadinessOptions readiness) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + readiness.timeout;
  const std::string token = "exedev-ready-" + random_hex(16);
  asio::steady_timer timer(co_await asio::this_coro::executor);
  std::exception_ptr last_error;
  for (;;) {
    try {
      ClientRunOptions options;
      options.timeout = std::chrono::duration<double>(30);
      options.max_output_bytes = 64 * 1024;
      const auto result = co_await client.run(name, "echo " + token, options);
      // Anything else answered, but not the VM's own shell (exe.dev's lobby can answer first).
      if (result.exit_code == 0 && result.stdout_bytes == token + "\n") co_return;
      last_error = nullptr;
    } catch (const Error& e) {
      if (!worth_probing_again(e)) throw;
      last_error = std::current_exception();
    }
    if (clock::now() + readiness.poll_interval > deadline) {
      workspace::WorkspaceError timed_out("VM \"" + name + "\" did not run commands within " +
                                          std::to_string(readiness.timeout.count()) + " ms");
      if (last_error) throw_nested(last_error, timed_out);
      throw timed_out;
    }
    timer.expires_after(readiness.poll_interval);
    co_await timer.async_wait(asio::use_awaitable);
  }
}

void check_spec_scope(const VMSpec& spec, const std::optional<std::string>& scope_tag) {
  if (scope_tag) validate_tag(*scope_tag, "scope_tag");
  if (spec.is_copy() && scope_tag && !spec.copy_base_tags()) {
    throw std::invalid_argument("copy_base_tags=false can't be used with scope_tag \"" + *scope_tag +
                                "\": a copy gets the scope tag only from its base");
  }
}

}  // namespace exedev::detail
