#include "sandbox/vm_route.hpp"

#include <boost/asio/this_coro.hpp>

#include <chrono>

#include "common/coroutines.hpp"
#include "sandbox/core.hpp"
#include "sandbox/route_proof.hpp"
#include "sandbox/ssh_commands.hpp"
#include "sandbox/ssh_vm.hpp"
#include "ssh/key_sources.hpp"

namespace exedev::detail {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

// What exe.dev named (a user or port it left out is settled by the SSH layer).
std::string endpoint_text(const ssh::Endpoint& endpoint) {
  return (endpoint.user.empty() ? "" : endpoint.user + "@") + endpoint.host +
         (endpoint.port == 0 ? "" : ":" + std::to_string(endpoint.port));
}

}  // namespace

VmRoute::VmRoute(Transport transport, SshOptions ssh, std::shared_ptr<SharedEndpointMemory> memory, Logger logger)
    : transport_(transport), ssh_(std::move(ssh)), memory_(std::move(memory)), logger_(std::move(logger)) {
  if (transport_ == Transport::exec) in_use_ = Transport::exec;
  if (!ssh_.on_warning && logger_) {
    ssh_.on_warning = [logger = logger_](std::string_view line) { logger(LogLevel::warning, line); };
  }
}

std::optional<Transport> VmRoute::in_use() const noexcept { return in_use_; }

void VmRoute::log(LogLevel level, const std::string& line) const {
  if (logger_) logger_(level, line);
}

void VmRoute::choose_exec(const std::string& reason) {
  const bool switching = in_use_ == Transport::ssh;
  in_use_ = Transport::exec;
  connection_.reset();
  sftp_.reset();
  log(switching ? LogLevel::warning : LogLevel::info,
      std::string(switching ? "SandboxBackend: switching to /exec: " : "SandboxBackend: using /exec: ") + reason);
}

void VmRoute::fall_back(const std::string& reason) { choose_exec(reason); }

void VmRoute::reconnecting(const std::string& why, std::chrono::milliseconds delay) const {
  log(LogLevel::debug, "SandboxBackend: " + why + "; connecting over SSH again in " + std::to_string(delay.count()) + " ms");
}

Task<std::shared_ptr<ssh::Connection>> VmRoute::connection(Client client, ProvisionSubject& target) {
  bool waited = false;
  for (;;) {
    if (in_use_ == Transport::exec) co_return nullptr;
    if (connection_ && connection_->is_open()) co_return connection_;
    if (!opening_) {
      // The opening waited for failed: that failure is this attempt's too.
      if (waited && opening_failure_) std::rethrow_exception(opening_failure_);
      break;
    }
    co_await opened_.wait();
    waited = true;
    co_await throw_if_cancelled();
  }
  opening_ = true;
  opening_failure_ = nullptr;
  std::shared_ptr<ssh::Connection> opened;
  try {
    opened = co_await open(client, target);
  } catch (...) {
    opening_failure_ = std::current_exception();
  }
  opening_ = false;
  opened_.notify();
  if (opening_failure_) std::rethrow_exception(opening_failure_);
  co_return opened;
}

Task<std::shared_ptr<ssh::Connection>> VmRoute::open(Client client, ProvisionSubject& target) {
  const std::string name = *target.name;
  const bool reconnecting = in_use_ == Transport::ssh;
  // Where the VM's sshd is: exe.dev's description from provisioning, attaching or the last
  // `ls` of a recovery, else `ls` now.
  std::optional<ssh::Endpoint> endpoint;
  if (target.state) endpoint = ssh_endpoint(*target.state);
  if (!endpoint) {
    target.state = co_await find_in_scope(client, name, std::nullopt);
    endpoint = ssh_endpoint(*target.state);
  }
  if (!endpoint) {
    const std::string reason = "exe.dev names no SSH host for VM \"" + name + "\"";
    if (transport_ == Transport::ssh) throw ConnectionError("SSH: " + reason, false);
    choose_exec(reason);
    co_return nullptr;
  }
  // Which keys can be offered depends on the host (ssh_config's IdentityFile for it).
  if (!reconnecting) {
    if (auto missing = ssh::missing_credentials(*endpoint, ssh_)) {
      if (transport_ == Transport::ssh) throw SshAuthenticationError("SSH to VM \"" + name + "\": " + *missing, {});
      choose_exec(*missing);
      co_return nullptr;
    }
  }
  endpoint_ = endpoint_text(*endpoint);
  // The endpoint as exe.dev named it: ssh_config settles it the same way for every backend.
  memory_key_ = endpoint_text(ssh::Endpoint{endpoint->host, endpoint->port, {}});
  {
    const std::lock_guard lock(memory_->mutex);
    const auto now = Clock::now();
    if (const auto since = memory_->endpoints.timed_out_since(memory_key_, now, ssh_.recovery.unanswered_memory)) {
      const auto ago = std::chrono::duration_cast<std::chrono::seconds>(now - *since).count();
      throw ConnectionError("SSH: " + memory_key_ + " did not answer within its timeouts " + std::to_string(ago) +
                                " s ago (not tried again for " +
                                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(ssh_.recovery.unanswered_memory).count()) +
                                " s)",
                            false, std::make_error_code(std::errc::timed_out));
    }
  }
  if (!account_keys_learned_) co_await learn_account_keys(client);
  std::shared_ptr<ssh::Connection> opened;
  std::exception_ptr not_opened;
  try {
    opened = co_await ssh::Connection::open(*endpoint, ssh_, account_keys_);
  } catch (...) {
    not_opened = std::current_exception();
  }
  if (not_opened) {
    // Remembered for every backend sharing the memory: each further try would cost the whole timeout.
    if (classify_failure(not_opened, RouteStep::connecting).kind == RouteFailure::connect_timed_out) note_unanswered();
    std::rethrow_exception(not_opened);
  }
  // Only the named VM passes; anything else is SshMisrouteError before any work ran there.
  std::exception_ptr misroute;
  try {
    co_await prove_route(client, name, opened, route_mark_);
  } catch (...) {
    misroute = std::current_exception();
  }
  if (misroute) {
    co_await opened->close();
    std::rethrow_exception(misroute);
  }
  connection_ = std::move(opened);
  // Every command and script is the same exec request (its program follows on stdin), so a
  // channel can wait with it started: a command then skips the channel's opening and its exec
  // request (two round trips).
  connection_->keep_ready(std::string(ssh_exec_command));
  sftp_.reset();
  sftp_refused_ = false;
  if (!reconnecting) {
    log(LogLevel::info, "SandboxBackend: VM \"" + name + "\" over SSH (" + endpoint_text(connection_->endpoint()) +
                            ", host key " + connection_->host_key_fingerprint() + ")");
  }
  in_use_ = Transport::ssh;
  co_return connection_;
}

Task<void> VmRoute::learn_account_keys(Client& client) {
  account_keys_learned_ = true;
  std::string unknown_why;
  try {
    const auto account = co_await client.account();
    if (!account.ssh_keys.empty()) {
      account_keys_.emplace();
      for (const auto& key : account.ssh_keys) account_keys_->fingerprints.push_back(key.fingerprint);
      co_return;
    }
    unknown_why = "whoami lists no SSH key (a tag-scoped token sees only its tag's keys)";
  } catch (const Error& e) {
    unknown_why = std::string("whoami failed: ") + e.what();
  }
  log(LogLevel::info, "SandboxBackend: the account's SSH keys are unknown (" + unknown_why +
                          "): keys are offered in order, and the route check guards where they land");
}

void VmRoute::note_unanswered() {
  if (memory_key_.empty()) return;
  const std::lock_guard lock(memory_->mutex);
  memory_->endpoints.note(memory_key_, Clock::now());
}

bool VmRoute::sftp_open() const noexcept {
  return sftp_ != nullptr && sftp_->usable() && connection_ != nullptr && connection_->is_open();
}

Task<std::shared_ptr<ssh::Sftp>> VmRoute::sftp(std::shared_ptr<ssh::Connection> connection) {
  const bool current = connection == connection_;
  if (current && sftp_refused_) co_return nullptr;
  // A session retired after a call passed its deadline is replaced by a new one.
  if (current && sftp_ && sftp_->usable()) co_return sftp_;
  auto opened = co_await connection->sftp();  // the connection keeps its one session
  if (connection == connection_) sftp_ = opened;
  co_return opened;
}

void VmRoute::without_sftp(const std::string& vm_name) {
  if (sftp_refused_) return;
  sftp_refused_ = true;
  log(LogLevel::info, "SandboxBackend: VM \"" + vm_name + "\" serves no SFTP; file data travels through commands");
}

void VmRoute::drop(const std::shared_ptr<ssh::Connection>& connection) {
  if (connection && connection == connection_) {
    connection_.reset();
    sftp_.reset();
  }
}

Task<void> VmRoute::close() {
  auto connection = std::move(connection_);
  sftp_.reset();
  if (!connection) co_return;
  co_await connection->close();
}

}  // namespace exedev::detail
