#include "sandbox/core.hpp"

#include "common/coroutines.hpp"
#include "common/random_ids.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include <exedev/errors.hpp>
#include <exedev/sandbox/lookup.hpp>

// GCC 12 destroys the temporaries of a co_await full-expression twice when the awaited
// coroutine throws. So no call below is awaited with temporaries: each coroutine is created
// as a named task first (its arguments are copied into its frame then), and the task awaited.

namespace exedev::detail {
namespace asio = boost::asio;

namespace {

bool mentions(const std::string& text, std::string_view needle) { return text.find(needle) != std::string::npos; }

// exe.dev answers this way while a VM's sshd is not up yet.
bool is_not_ready(const CommandFailedError& error) {
  return mentions(error.server_message(), "failed to connect to VM") || mentions(error.server_message(), "SSH handshake failed");
}

[[noreturn]] void throw_nested(std::exception_ptr cause, auto&& error) {
  try {
    std::rethrow_exception(std::move(cause));
  } catch (...) {
    std::throw_with_nested(std::forward<decltype(error)>(error));
  }
}

}  // namespace

bool was_cancelled(const asio::cancellation_state& state) {
  return state.cancelled() != asio::cancellation_type::none;
}

void throw_cancelled(std::exception_ptr cause) {
  boost::system::system_error cancelled(asio::error::operation_aborted);
  if (cause) throw_nested(std::move(cause), cancelled);
  throw cancelled;
}

void raise_after_close(std::exception_ptr error, std::exception_ptr close_error) {
  if (error && close_error && is_cancellation(error)) {
    if (is_cancellation(close_error)) std::rethrow_exception(close_error);  // the close's error is nested already
    throw_cancelled(close_error);
  }
  if (error) std::rethrow_exception(error);
  if (close_error) std::rethrow_exception(close_error);
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
  if (was_cancelled(co_await asio::this_coro::cancellation_state)) throw_cancelled(error);
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
  try {
    std::rethrow_exception(error);
  } catch (const AuthenticationError& e) {
    throw_nested(error,
                 ExeDevAccessError(e.status() == 0 ? std::nullopt : std::optional<unsigned>(401), e.command(), context));
  } catch (const PermissionError& e) {
    throw_nested(error, ExeDevAccessError(403, e.command(), context));
  } catch (const CommandFailedError& e) {
    if (!is_scope_refusal(e)) throw;
    throw_nested(error, ExeDevAccessError(403, e.command(), context));
  }
}

bool is_unknown_create_outcome(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const ConnectionError& e) {
    return e.sent();
  } catch (const ProtocolError&) {
    return true;
  } catch (const APIError& e) {
    return e.status() >= 500;
  } catch (...) {
    return false;
  }
}

Task<VMInfo> find_in_scope(Client client, std::string name, std::optional<std::string> scope_tag) {
  auto listing = client.list_vms(one(name));
  const auto listed = co_await std::move(listing);
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
      RunOptions options;
      options.timeout = std::chrono::duration<double>(30);
      options.max_output_bytes = 64 * 1024;
      auto probe = client.run(name, "echo " + token, options);
      const auto result = co_await std::move(probe);
      // Anything else answered, but not the VM's own shell (exe.dev's lobby can answer first).
      if (result.exit_code == 0 && result.stdout_bytes == token + "\n") co_return;
      last_error = nullptr;
    } catch (const ConnectionError&) {
      last_error = std::current_exception();
    } catch (const RunTimeoutError&) {
      last_error = std::current_exception();
    } catch (const CommandFailedError& e) {
      if (!is_not_ready(e)) throw;
      last_error = std::current_exception();
    } catch (const OutcomeUnknownError& e) {
      if (e.vm_gone()) throw;  // a deleted VM never becomes ready
      last_error = std::current_exception();  // the probe's result was lost; echo is safe to repeat
    } catch (const ProtocolError&) {
      last_error = std::current_exception();  // an unreadable answer while the VM comes up
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

namespace {

Task<VMInfo> create_request(Client client, VMSpec spec, std::optional<std::string> scope_tag) {
  if (spec.is_copy()) {
    CopyVMOptions options;
    options.source = *spec.base();
    options.name = spec.name();
    options.copy_tags = spec.copy_base_tags();
    options.cpu = spec.cpu();
    options.memory = spec.memory();
    options.disk = spec.disk();
    if (spec.egress()) options.egress = std::string(to_string(*spec.egress()));
    options.standalone = spec.standalone();
    auto copying = client.copy_vm(std::move(options));
    co_return co_await std::move(copying);
  }
  NewVMOptions options;
  options.name = spec.name();
  options.image = spec.image();
  options.cpu = spec.cpu();
  options.memory = spec.memory();
  options.disk = spec.disk();
  options.tags = required_tags(spec, scope_tag);
  options.comment = spec.comment();
  options.integrations = spec.integrations();
  if (spec.egress()) options.egress = std::string(to_string(*spec.egress()));
  options.standalone = spec.standalone();
  auto creating = client.new_vm(std::move(options));
  co_return co_await std::move(creating);
}

// Runs one initialization step, turning its failure (not a cancellation) into
// VMInitializationError naming the VM.
Task<void> step(const std::string& name, const char* what, Task<void> body) {
  std::exception_ptr error;
  try {
    co_await std::move(body);
  } catch (...) {
    error = std::current_exception();
  }
  if (!error) co_return;
  if (is_cancellation(error) || was_cancelled(co_await asio::this_coro::cancellation_state)) {
    std::rethrow_exception(error);
  }
  throw_nested(error, VMInitializationError(vm_ref(name), what));
}

Task<void> run_checked(Client client, std::string name, std::string line, std::string what) {
  RunOptions options;
  options.timeout = std::chrono::duration<double>(120);
  auto running = client.run(name, line, options);
  const auto result = co_await std::move(running);
  if (result.exit_code != 0) {
    throw workspace::WorkspaceError(what + " on VM \"" + name + "\" exited with " + std::to_string(result.exit_code));
  }
}

Task<void> apply_tags_and_comment(Client client, std::string name, VMSpec spec) {
  auto listing = client.list_vms(one(name));
  const auto listed = co_await std::move(listing);
  const auto it = std::find_if(listed.begin(), listed.end(), [&](const VMInfo& vm) { return vm.name == name; });
  if (it == listed.end()) throw VMNotFoundError(name);
  std::vector<std::string> missing;
  for (const auto& tag : spec.tags()) {
    if (std::find(it->tags.begin(), it->tags.end(), tag) == it->tags.end()) missing.push_back(tag);
  }
  if (!missing.empty()) {
    auto tagging = client.add_tags(name, std::move(missing));
    co_await std::move(tagging);
  }
  if (spec.comment() && it->comment != *spec.comment()) {
    auto commenting = client.set_comment(name, *spec.comment());
    co_await std::move(commenting);
  }
}

}  // namespace

Task<void> initialize_steps(Client client, std::string name, VMSpec spec, ReadinessOptions readiness,
                            bool set_tags_and_comment) {
  auto ready = step(name, "waiting until it runs commands", wait_ready(client, name, readiness));
  co_await std::move(ready);
  if (set_tags_and_comment) {
    auto tagged = step(name, "setting its tags and comment", apply_tags_and_comment(client, name, spec));
    co_await std::move(tagged);
  }
  if (spec.working_dir()) {
    auto made = step(name, "making its working directory",
                     run_checked(client, name, "mkdir -p -- " + workspace::shell_quote(*spec.working_dir()),
                                 "mkdir of the working directory"));
    co_await std::move(made);
  }
}

Task<VMState> provision(Client client, VMSpec spec, std::optional<std::string> scope_tag, ReadinessOptions readiness,
                        ProvisionHooks hooks) {
  check_spec_scope(spec, scope_tag);
  if (spec.is_copy()) {
    auto finding = find_in_scope(client, *spec.base(), scope_tag);
    const auto base = co_await std::move(finding);
    // Flush the base so that the copy gets what was written; a paused base can't run `sync`
    // and only resume() resumes a VM.
    if (base.status.kind == VMStatus::Kind::running) {
      auto flushing = run_checked(client, base.name, "sync", "the flush (sync) before the copy");
      co_await std::move(flushing);
    }
  }

  // The request itself is never interrupted: a cancelled create would leave a VM nobody knows.
  std::optional<VMInfo> created;
  std::exception_ptr create_error;
  try {
    auto creating = shielded(create_request(client, spec, scope_tag));
    created = co_await std::move(creating);
  } catch (...) {
    create_error = std::current_exception();
  }
  if (create_error) {
    if (is_unknown_create_outcome(create_error)) {
      throw_nested(create_error, ProvisionOutcomeUnknownError(spec.name(), required_tags(spec, scope_tag)));
    }
    std::rethrow_exception(create_error);  // a definite refusal (4xx) or nothing sent
  }

  const std::string name = created->name;
  if (hooks.on_created) hooks.on_created(vm_ref(name));

  std::exception_ptr error;
  bool initialized = false;
  try {
    if (was_cancelled(co_await asio::this_coro::cancellation_state)) throw_cancelled(nullptr);
    auto initializing = initialize_steps(client, name, spec, readiness, spec.is_copy());
    co_await std::move(initializing);
    initialized = true;
    auto finding = find_in_scope(client, name, std::nullopt);
    const auto info = co_await std::move(finding);
    co_return VMState::from_info(info);
  } catch (...) {
    error = std::current_exception();
  }
  // A cancellation at any point after the create, including the final state read, leaves no VM.
  const bool cancelled = is_cancellation(error) || was_cancelled(co_await asio::this_coro::cancellation_state);
  if (cancelled && hooks.delete_on_cancel) {
    // The delete runs although the caller is cancelled, then the cancellation is raised. A failed
    // delete is not reported: the cancellation is what the caller asked about, and lookup(spec)
    // finds a VM left behind.
    EXEDEV_AWAIT_DESPITE_CANCELLATION(ignored, shielded(client.remove_vms(one(name))));
    throw_cancelled(nullptr);
  }
  if (!initialized || is_cancellation(error)) std::rethrow_exception(error);
  throw_nested(error, VMInitializationError(vm_ref(name), "reading its state"));
}

}  // namespace exedev::detail
