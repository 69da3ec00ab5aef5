#include "sandbox/provision.hpp"

#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <chrono>

#include <exedev/errors.hpp>
#include <exedev/sandbox/errors.hpp>
#include <exedev/sandbox/vm_state.hpp>

#include "common/coroutines.hpp"
#include "sandbox/core.hpp"

namespace exedev::detail {
namespace asio = boost::asio;

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
    co_return co_await client.copy_vm(std::move(options));
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
  co_return co_await client.new_vm(std::move(options));
}

Task<void> run_checked(Client client, std::string name, std::string line, std::string what) {
  ClientRunOptions options;
  options.timeout = std::chrono::duration<double>(120);
  const auto result = co_await client.run(name, line, options);
  if (result.exit_code != 0) {
    throw workspace::WorkspaceError(what + " on VM \"" + name + "\" exited with " + std::to_string(result.exit_code));
  }
}

Task<void> apply_tags_and_comment(Client client, std::string name, VMSpec spec) {
  const auto listed = co_await client.list_vms(one(name));
  const auto it = std::find_if(listed.begin(), listed.end(), [&](const VMInfo& vm) { return vm.name == name; });
  if (it == listed.end()) throw VMNotFoundError(name);
  std::vector<std::string> missing;
  for (const auto& tag : spec.tags()) {
    if (std::find(it->tags.begin(), it->tags.end(), tag) == it->tags.end()) missing.push_back(tag);
  }
  if (!missing.empty()) {
    co_await client.add_tags(name, std::move(missing));
  }
  if (spec.comment() && it->comment != *spec.comment()) {
    co_await client.set_comment(name, *spec.comment());
  }
}

// Carries out one step, recording in `subject` and `result` what it learned.
Task<void> carry_out(Client client, ProvisionSubject& subject, ProvisionStep step, StepResult& result) {
  using S = ProvisionStep;
  switch (step) {
    case S::find_base: {
      const auto base = co_await find_in_scope(client, *subject.spec.base(), subject.scope_tag);
      // A paused base can't run `sync`, and only resume() resumes a VM: it is copied as it is.
      result.base_running = base.status.kind == VMStatus::Kind::running;
      break;
    }
    case S::flush_base: {
      co_await run_checked(client, *subject.spec.base(), "sync", "the flush (sync) before the copy");
      break;
    }
    case S::create: {
      const auto created = co_await create_request(client, subject.spec, subject.scope_tag);
      subject.name = created.name;
      subject.state = created;  // where its sshd is, until a later `ls` reads it again
      break;
    }
    case S::find_vm:
    case S::read_state: {
      // The VM a provision made has the scope tag by construction. The tag chosen before the
      // co_await: GCC 12 destroys a conditional's class temporary there twice (ADR 7).
      const std::optional<std::string> scope = step == S::find_vm ? subject.scope_tag : std::nullopt;
      subject.state = co_await find_in_scope(client, *subject.name, scope);
      break;
    }
    case S::wait_ready: {
      co_await wait_ready(client, *subject.name, subject.readiness);
      break;
    }
    case S::tag_and_comment: {
      co_await apply_tags_and_comment(client, *subject.name, subject.spec);
      break;
    }
    case S::make_working_dir: {
      co_await run_checked(client, *subject.name, "mkdir -p -- " + workspace::shell_quote(*subject.spec.working_dir()),
                                "mkdir of the working directory");
      break;
    }
    case S::delete_vm: {
      // Its answer is not looked at: the cancellation is what the caller asked about, and
      // lookup(spec) finds a VM left behind.
      co_await client.remove_vms(one(*subject.name));
      break;
    }
  }
}

const char* initialization_stage(ProvisionStep step) {
  switch (step) {
    case ProvisionStep::wait_ready: return "waiting until it runs commands";
    case ProvisionStep::tag_and_comment: return "setting its tags and comment";
    case ProvisionStep::make_working_dir: return "making its working directory";
    default: break;
  }
  return "reading its state";
}

// Throws what the machine decided after `error`, the last step's.
[[noreturn]] void raise_failure(const ProvisionAction& action, ProvisionSubject& subject, std::exception_ptr error) {
  switch (action.failure) {
    case ProvisionFailure::rethrow: std::rethrow_exception(error);
    case ProvisionFailure::outcome_unknown: {
      ProvisionOutcomeUnknownError unknown(subject.spec.name(), required_tags(subject.spec, subject.scope_tag));
      try {
        throw_nested(error, std::move(unknown));
      } catch (...) {
        subject.unknown_outcome = std::current_exception();
      }
      std::rethrow_exception(subject.unknown_outcome);
    }
    case ProvisionFailure::repeat_outcome_unknown: std::rethrow_exception(subject.unknown_outcome);
    case ProvisionFailure::initialization:
      throw_nested(error, VMInitializationError(vm_ref(*subject.name), initialization_stage(action.step)));
    case ProvisionFailure::cancelled: break;
  }
  throw_cancelled(nullptr);
}

ProvisionPlan plan_for(ProvisionPlan::Kind kind, const VMSpec& spec, bool delete_on_cancel) {
  ProvisionPlan plan;
  plan.kind = kind;
  plan.copy = spec.is_copy();
  plan.working_dir = spec.working_dir().has_value();
  plan.delete_on_cancel = delete_on_cancel;
  return plan;
}

}  // namespace

ProvisionSubject::ProvisionSubject(ProvisionPlan::Kind kind, bool delete_on_cancel, VMSpec spec,
                                   std::optional<std::string> scope_tag, ReadinessOptions readiness)
    : spec(std::move(spec)), scope_tag(std::move(scope_tag)), readiness(readiness),
      phases(plan_for(kind, this->spec, delete_on_cancel)) {}

Task<void> walk_phases(Client client, ProvisionSubject& subject) {
  using K = ProvisionAction::Kind;
  ProvisionAction action = subject.phases.begin();
  std::exception_ptr error;  // the last step's
  for (;;) {
    if (action.kind == K::finish) co_return;
    if (action.kind == K::fail) raise_failure(action, subject, error);
    if (action.kind == K::wait) {
      co_await subject.phase_changed.wait();
      co_await throw_if_cancelled();
      action = subject.phases.begin();
      continue;
    }
    StepResult result;
    const auto before = co_await asio::this_coro::cancellation_state;
    if (action.despite_cancellation) {
      EXEDEV_AWAIT_DESPITE_CANCELLATION(failure, shielded(carry_out(client, subject, action.step, result)));
      error = failure;
    } else if (was_cancelled(before)) {
      error = std::make_exception_ptr(boost::system::system_error(asio::error::operation_aborted));
    } else {
      auto stepping = action.shielded ? shielded(carry_out(client, subject, action.step, result))
                                      : carry_out(client, subject, action.step, result);
      error = co_await capture(std::move(stepping));
    }
    result.done = !error;
    if (error) {
      const auto after = co_await asio::this_coro::cancellation_state;
      result.cancelled = is_cancellation(error) || was_cancelled(after);
      result.outcome_unknown = action.step == ProvisionStep::create && is_unknown_create_outcome(error);
    }
    action = subject.phases.on_result(result);
    if (action.kind == K::finish || action.kind == K::fail) subject.phase_changed.notify();
  }
}

}  // namespace exedev::detail
