#include "sandbox/vm_route.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <chrono>

#include "common/backoff.hpp"
#include "common/coroutines.hpp"
#include "sandbox/core.hpp"
#include "sandbox/ssh_commands.hpp"
#include "sandbox/ssh_vm.hpp"
#include "ssh/key_sources.hpp"

namespace exedev::detail {

namespace asio = boost::asio;

namespace {

// Reconnecting after a drop: attempts, and the first wait between them (doubled each time).
constexpr int kReconnectAttempts = 3;
constexpr auto kReconnectBackoff = std::chrono::milliseconds(500);

// What exe.dev named (a user or port it left out is settled by the SSH layer).
std::string endpoint_text(const ssh::Endpoint& endpoint) {
  return (endpoint.user.empty() ? "" : endpoint.user + "@") + endpoint.host +
         (endpoint.port == 0 ? "" : ":" + std::to_string(endpoint.port));
}

}  // namespace

VmRoute::VmRoute(Transport transport, SshOptions ssh, Logger logger)
    : transport_(transport), ssh_(std::move(ssh)), logger_(std::move(logger)) {
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

Task<std::shared_ptr<ssh::Connection>> VmRoute::connection(Client client, ProvisionSubject& target) {
  for (;;) {
    if (in_use_ == Transport::exec) co_return nullptr;
    if (connection_ && connection_->is_open()) co_return connection_;
    if (!opening_) break;
    co_await opened_.wait();
    // The state named first: GCC 12 mishandles a throw's temporaries in a statement that awaits.
    const auto cancellation = co_await asio::this_coro::cancellation_state;
    if (was_cancelled(cancellation)) throw_cancelled();
  }
  opening_ = true;
  std::exception_ptr error;
  std::shared_ptr<ssh::Connection> opened;
  try {
    opened = co_await open(client, target);
  } catch (...) {
    error = std::current_exception();
  }
  opening_ = false;
  opened_.notify();
  if (error) std::rethrow_exception(error);
  co_return opened;
}

Task<std::shared_ptr<ssh::Connection>> VmRoute::open(Client client, ProvisionSubject& target) {
  const std::string name = *target.name;
  const bool reconnecting = in_use_ == Transport::ssh;
  // Where the VM's sshd is: exe.dev's description from provisioning or attaching, else `ls`.
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
  bool resumed = false;
  for (int attempt = 0;; ++attempt) {
    std::exception_ptr failure;
    std::string failure_text;
    try {
      connection_ = co_await ssh::Connection::open(*endpoint, ssh_);
      // Every command and script is the same exec request (its program follows on stdin), so
      // a channel can wait with it started: a command then skips the channel's opening and its
      // exec request (two round trips).
      connection_->keep_ready(std::string(ssh_exec_command));
      sftp_.reset();
      sftp_refused_ = false;
      if (!reconnecting) {
        log(LogLevel::info, "SandboxBackend: VM \"" + name + "\" over SSH (" + endpoint_text(connection_->endpoint()) +
                                ", host key " + connection_->host_key_fingerprint() + ")");
      }
      in_use_ = Transport::ssh;
      co_return connection_;
    } catch (const Error& e) {
      if (e.code() == errc::host_key_rejected) throw;  // never a reason to fall back
      if (e.code() != errc::connection_failed) {
        // The key was refused or can't be used: /exec still works with the token.
        if (transport_ == Transport::ssh) throw;
        choose_exec(std::string("SSH authentication to VM \"") + name + "\" failed: " + e.what());
        co_return nullptr;
      }
      failure = std::current_exception();
      failure_text = e.what();
    }
    // The endpoint did not answer: a paused VM is resumed once, a removed one is gone.
    const auto listed = co_await client.list_vms(one(name));
    const auto it = std::find_if(listed.begin(), listed.end(), [&](const VMInfo& vm) { return vm.name == name; });
    if (it == listed.end()) throw VMNotFoundError(name);
    target.state = *it;
    if (auto fresh = ssh_endpoint(*it)) endpoint = fresh;
    if (it->status.kind == VMStatus::Kind::paused && !resumed) {
      resumed = true;
      std::exception_ptr resume_error;
      try {
        co_await client.resume_vm(name);
      } catch (...) {
        resume_error = std::current_exception();
      }
      if (resume_error) rethrow_access_mapped(resume_error, "VM \"" + name + "\" is paused and can't be resumed for SSH");
      co_await wait_ready(client, name, target.readiness);
      continue;
    }
    if (reconnecting && attempt + 1 < kReconnectAttempts) {
      co_await sleep_for(doubled_delay(std::chrono::steady_clock::duration(kReconnectBackoff), attempt,
                                             std::chrono::steady_clock::duration(std::chrono::seconds(4))));
      continue;
    }
    if (transport_ == Transport::ssh) std::rethrow_exception(failure);
    choose_exec("the SSH endpoint of VM \"" + name + "\" (" + endpoint_text(*endpoint) + ") did not answer: " + failure_text);
    co_return nullptr;
  }
}

bool VmRoute::sftp_open() const noexcept {
  return sftp_ != nullptr && sftp_->usable() && connection_ != nullptr && connection_->is_open();
}

Task<std::shared_ptr<ssh::Sftp>> VmRoute::sftp(Client client, ProvisionSubject& target) {
  auto connected = co_await connection(client, target);
  if (!connected || sftp_refused_) co_return nullptr;
  // A session retired after a call passed its deadline is replaced by a new one.
  if (sftp_ && connected == connection_ && sftp_->usable()) co_return sftp_;
  std::exception_ptr error;
  try {
    sftp_ = co_await connected->sftp();
    co_return sftp_;
  } catch (...) {
    error = std::current_exception();
  }
  if (!connected->is_open() || is_cancellation(error)) std::rethrow_exception(error);
  // The connection stands but its sshd serves no SFTP: the scripts carry the data instead.
  sftp_refused_ = true;
  log(LogLevel::info, "SandboxBackend: VM \"" + *target.name + "\" serves no SFTP; file data travels through commands");
  co_return nullptr;
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
