#include <exedev/sandbox/vms.hpp>

#include <algorithm>
#include <stdexcept>

#include "common/coroutines.hpp"
#include "sandbox/core.hpp"
#include "sandbox/provision.hpp"

namespace exedev {

VMTarget::VMTarget(const workspace::WorkspaceRef& ref) : name_(ref.id) {
  if (ref.provider != provider_name) {
    throw std::invalid_argument("WorkspaceRef of provider \"" + ref.provider + "\" does not name an exe.dev VM");
  }
  validate_vm_name(name_, "WorkspaceRef id");
}

VMTarget::VMTarget(std::string name) : name_(std::move(name)) { validate_vm_name(name_); }

VMTarget::VMTarget(const char* name) : VMTarget(std::string(name ? name : "")) {}

namespace {

// What a VMs is set up with.
struct Settings {
  std::optional<std::string> scope_tag;
  ReadinessOptions readiness;
};

// What one operation works with: the client (made on first use) and the settings.
struct Context {
  Client client;
  Settings settings;
};

}  // namespace

struct VMs::Impl {
  Settings settings;
  detail::ClientHolder client;
};

namespace {

// Runs one operation with access errors (401, 403, a tag-scope refusal, no token) turned into ExeDevAccessError,
// as the seed's error table has it. `holder` belongs to the VMs, which outlives the call.
template <typename T, typename... Args>
Task<T> access_mapped(detail::ClientHolder& holder, Settings settings, Task<T> (*operation)(Context, Args...),
                      Args... args) {
  std::exception_ptr error;
  try {
    auto client = co_await holder.get();
    Context context{std::move(client), std::move(settings)};  // an aggregate: named before the co_await (ADR 7)
    co_return co_await operation(std::move(context), std::move(args)...);
  } catch (...) {
    error = std::current_exception();
  }
  detail::rethrow_access_mapped(error);
}

Task<VMInfo> in_scope(const Context& c, const VMTarget& vm) {
  co_return co_await detail::find_in_scope(c.client, vm.name(), c.settings.scope_tag);
}

Task<LookupResult> lookup_in(Context c, VMSpec spec) {
  // `ls` matches a VM's name or any of its tags; one required tag is enough to list every
  // candidate, and the name (if any) finds a VM that lacks the tags (a conflict).
  auto patterns = detail::one(spec.tags().front());
  if (spec.name()) patterns.push_back(*spec.name());
  const auto listed = co_await c.client.list_vms(std::move(patterns));
  co_return classify_lookup(spec, c.settings.scope_tag, listed);
}

Task<VMState> initialize_in(Context c, VMTarget vm, VMSpec spec) {
  detail::ProvisionSubject subject(detail::ProvisionPlan::Kind::initialize, false, std::move(spec), c.settings.scope_tag,
                                   c.settings.readiness);
  subject.name = vm.name();
  co_await detail::walk_phases(c.client, subject);
  co_return VMState::from_info(*subject.state);
}

Task<VMState> inspect_in(Context c, VMTarget vm) { co_return VMState::from_info(co_await in_scope(c, vm)); }

Task<VMState> pause_in(Context c, VMTarget vm) {
  const auto info = co_await in_scope(c, vm);
  if (info.status.kind == VMStatus::Kind::paused) co_return VMState::from_info(info);
  // Flush first, so that what was written survives whatever happens to the paused VM.
  ClientRunOptions options;
  options.timeout = std::chrono::duration<double>(120);
  const auto flushed = co_await c.client.run(vm.name(), "sync", options);
  if (flushed.exit_code != 0) {
    throw workspace::WorkspaceError("the flush (sync) before pausing VM \"" + vm.name() + "\" exited with " +
                                    std::to_string(flushed.exit_code));
  }
  co_await c.client.pause_vm(vm.name());
  co_return VMState::from_info(co_await in_scope(c, vm));
}

Task<VMState> resume_in(Context c, VMTarget vm) {
  const auto info = co_await in_scope(c, vm);
  if (info.status.kind == VMStatus::Kind::paused) {
    co_await c.client.resume_vm(vm.name());
  }
  co_await detail::wait_ready(c.client, vm.name(), c.settings.readiness);
  co_return VMState::from_info(co_await in_scope(c, vm));
}

Task<VMHandle> get_vm_in(Context c, VMTarget vm) {
  co_await in_scope(c, vm);
  co_return VMHandle{c.client, vm.name()};
}

Task<bool> destroy_in(Context c, VMTarget vm) {
  try {
    co_await in_scope(c, vm);
  } catch (const VMNotFoundError&) {
    co_return false;
  }
  const auto removed = co_await c.client.remove_vms(detail::one(vm.name()));
  if (std::find(removed.deleted.begin(), removed.deleted.end(), vm.name()) != removed.deleted.end()) co_return true;
  // Refused: gone meanwhile (another caller deleted it), or exe.dev could not delete it.
  const auto listed = co_await c.client.list_vms(detail::one(vm.name()));
  const bool exists = std::any_of(listed.begin(), listed.end(), [&](const VMInfo& info) { return info.name == vm.name(); });
  if (!exists) co_return false;
  throw workspace::WorkspaceError("exe.dev did not delete VM \"" + vm.name() + "\"");
}

}  // namespace

VMs::VMs(std::optional<std::string> scope_tag, std::optional<Client> client)
    : VMs(VMsOptions{std::move(scope_tag), std::move(client), {}, {}}) {}

VMs::VMs(VMsOptions options)
    : impl_(std::make_unique<Impl>(Impl{Settings{options.scope_tag, options.readiness},
                                        detail::ClientHolder(std::move(options.client),
                                                             detail::with_minted_commands(std::move(options.client_options),
                                                                                          detail::vms_commands()))})) {
  if (impl_->settings.scope_tag) validate_tag(*impl_->settings.scope_tag, "scope_tag");
}

VMs::~VMs() = default;
VMs::VMs(VMs&&) noexcept = default;
VMs& VMs::operator=(VMs&&) noexcept = default;

const std::optional<std::string>& VMs::scope_tag() const noexcept { return impl_->settings.scope_tag; }

Task<Client> VMs::client() { co_return co_await impl_->client.get(); }

Task<VMState> VMs::provision(VMSpec spec) {
  detail::check_spec_scope(spec, impl_->settings.scope_tag);
  std::exception_ptr error;
  try {
    auto client = co_await impl_->client.get();
    // A cancelled provision deletes the VM it made.
    detail::ProvisionSubject subject(detail::ProvisionPlan::Kind::provision, true, std::move(spec),
                                     impl_->settings.scope_tag, impl_->settings.readiness);
    co_await detail::walk_phases(client, subject);
    co_return VMState::from_info(*subject.state);
  } catch (...) {
    error = std::current_exception();
  }
  detail::rethrow_access_mapped(error);
}

Task<LookupResult> VMs::lookup(VMSpec spec) {
  if (spec.tags().empty()) {
    throw std::invalid_argument("lookup needs a spec with tags: a name alone could belong to a VM made some other way");
  }
  co_return co_await access_mapped(impl_->client, impl_->settings, &lookup_in, std::move(spec));
}

Task<VMState> VMs::initialize(VMTarget vm, VMSpec spec) {
  return access_mapped(impl_->client, impl_->settings, &initialize_in, std::move(vm), std::move(spec));
}
Task<VMState> VMs::inspect(VMTarget vm) {
  return access_mapped(impl_->client, impl_->settings, &inspect_in, std::move(vm));
}
Task<VMState> VMs::pause(VMTarget vm) {
  return access_mapped(impl_->client, impl_->settings, &pause_in, std::move(vm));
}
Task<VMState> VMs::resume(VMTarget vm) {
  return access_mapped(impl_->client, impl_->settings, &resume_in, std::move(vm));
}
std::string proxy_url_for_port(const std::string& https_url, std::uint16_t proxy_port, std::uint16_t port) {
  const std::string scheme = "https://";
  const bool bare = https_url.size() > scheme.size() && https_url.compare(0, scheme.size(), scheme) == 0 &&
                    https_url.find_first_of("/:?#", scheme.size()) == std::string::npos;
  if (!bare) throw std::invalid_argument("a VM's proxy URL must be https://<host>, without port or path");
  if (port == proxy_port) return https_url + "/";
  if (port < 3000 || port > 9999) {
    throw std::invalid_argument("exe.dev's HTTPS proxy serves the proxy port (" + std::to_string(proxy_port) +
                                ") and ports 3000-9999 only, not " + std::to_string(port));
  }
  return https_url + ":" + std::to_string(port) + "/";
}

Task<VMHandle> VMs::get_vm(VMTarget vm) {
  return access_mapped(impl_->client, impl_->settings, &get_vm_in, std::move(vm));
}
Task<bool> VMs::destroy(VMTarget vm) {
  return access_mapped(impl_->client, impl_->settings, &destroy_in, std::move(vm));
}

Task<void> VMs::close() {
  // The close runs even if the caller was cancelled before it started (the holder shields it).
  EXEDEV_AWAIT_DESPITE_CANCELLATION(error, impl_->client.close());
  if (error) std::rethrow_exception(error);
}

}  // namespace exedev
