#include <exedev/sandbox/sandbox.hpp>

#include <boost/asio/this_coro.hpp>

#include "common/coroutines.hpp"
#include "sandbox/core.hpp"

namespace exedev {
namespace asio = boost::asio;

Sandbox::Sandbox(SandboxOptions options) : options_(std::move(options)) {
  detail::check_spec_scope(options_.spec, options_.scope_tag);
  (void)exedev_shell_filesystem_limits(options_.env, options_.spec.working_dir());
}

Sandbox::Sandbox(VMSpec spec, std::optional<std::string> scope_tag, workspace::Env env, std::optional<Client> client)
    : Sandbox(SandboxOptions{std::move(spec), std::move(scope_tag), std::move(env), std::move(client), {}, {}}) {}

SandboxRun Sandbox::open_run(std::optional<workspace::WorkspaceRef> ref, bool fresh) const {
  SandboxBackendOptions backend;
  if (ref && !fresh) backend.ref = std::move(ref);
  backend.spec = options_.spec;
  backend.scope_tag = options_.scope_tag;
  backend.client = options_.client;
  backend.client_options = options_.client_options;
  backend.env = options_.env;
  backend.readiness = options_.readiness;
  backend.transport = options_.transport;
  backend.ssh = options_.ssh;
  backend.logger = options_.logger;
  backend.ssh_endpoints = ssh_endpoints_;
  auto made = std::make_shared<SandboxBackend>(std::move(backend));
  return SandboxRun{made, std::make_shared<workspace::Workspace>(made)};
}

Task<void> Sandbox::finish_run(SandboxRun& run) const {
  if (run.backend) co_await run.backend->close();
}

Task<void> Sandbox::with_run(std::optional<workspace::WorkspaceRef> ref, std::function<Task<void>(SandboxRun&)> body,
                             bool fresh) const {
  SandboxRun run = open_run(std::move(ref), fresh);
  std::exception_ptr body_error;
  try {
    co_await body(run);
  } catch (...) {
    body_error = std::current_exception();
  }
  // The run's end closes its client however the body ended, cancellation included.
  EXEDEV_AWAIT_DESPITE_CANCELLATION(close_error, finish_run(run));
  detail::raise_after_close(body_error, close_error);
}

VMs Sandbox::vms() const {
  return VMs(VMsOptions{options_.scope_tag, options_.client, options_.client_options, options_.readiness});
}

Task<bool> Sandbox::destroy(workspace::WorkspaceRef ref) const {
  VMs manager = vms();
  std::exception_ptr error;
  bool deleted = false;
  try {
    const VMTarget target(ref);
    deleted = co_await manager.destroy(target);
  } catch (...) {
    error = std::current_exception();
  }
  EXEDEV_AWAIT_DESPITE_CANCELLATION(close_error, manager.close());
  detail::raise_after_close(error, close_error);
  co_return deleted;
}

}  // namespace exedev
