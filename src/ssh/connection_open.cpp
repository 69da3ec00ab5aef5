// Connection::open: resolve, connect, handshake, host key, authentication.
#include "ssh/connection.hpp"
#include "ssh/key_sources.hpp"

#include "ssh/known_hosts.hpp"
#include "ssh/private_key.hpp"
#include "ssh/session_driver.hpp"
#include "ssh/ssh_errors.hpp"
#include "common/coroutines.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <fmt/format.h>
#include <libssh2.h>

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace exedev::ssh {

namespace asio = boost::asio;
using asio::ip::tcp;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

using exedev::detail::throw_cancelled;

// ---- resolve and connect ----

asio::awaitable<tcp::socket> connect_socket(const Endpoint& endpoint, const SshOptions& options, const std::string& where) {
  const auto executor = co_await asio::this_coro::executor;
  tcp::resolver resolver(executor);
  tcp::socket socket(executor);
  asio::steady_timer timer(executor, options.connect_timeout);
  bool timed_out = false;
  // Neither the resolver nor the connect has a timeout of its own.
  timer.async_wait([&](const boost::system::error_code& ec) {
    if (ec) return;
    timed_out = true;
    resolver.cancel();
    boost::system::error_code ignored;
    socket.close(ignored);
  });
  boost::system::error_code ec;
  const auto port = std::to_string(endpoint.port);
  auto results = co_await resolver.async_resolve(endpoint.host, port, asio::redirect_error(asio::use_awaitable, ec));
  if (ec == asio::error::operation_aborted && !timed_out) throw_cancelled();
  if (ec || timed_out) {
    timer.cancel();
    throw ConnectionError(fmt::format("SSH: cannot resolve {}: {}", endpoint.host, timed_out ? "timed out" : ec.message()),
                          false, timed_out ? std::make_error_code(std::errc::timed_out) : std::error_code(ec));
  }
  co_await asio::async_connect(socket, results, asio::redirect_error(asio::use_awaitable, ec));
  timer.cancel();
  if (ec == asio::error::operation_aborted && !timed_out) throw_cancelled();
  if (ec || timed_out) {
    throw ConnectionError(fmt::format("SSH: cannot connect to {}: {}", where, timed_out ? "timed out" : ec.message()), false,
                          timed_out ? std::make_error_code(std::errc::timed_out) : std::error_code(ec));
  }
  socket.set_option(tcp::no_delay(true), ec);
  co_return socket;
}

// ---- host key ----

void record_host_key(const fs::path& file, const std::string& existing_text, const std::string& line,
                     const std::string& host_name, const std::string& fingerprint) {
  const auto directory = file.parent_path();
  std::error_code ec;
  if (!directory.empty() && !fs::exists(directory, ec)) {
    fs::create_directories(directory, ec);
    if (!ec) ::chmod(directory.c_str(), 0700);
  }
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  std::string text = (!existing_text.empty() && existing_text.back() != '\n') ? "\n" + line : line;
  bool written = fd >= 0;
  if (written) {
    // One write of one short line with O_APPEND: concurrent writers never interleave within it.
    written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    written = ::close(fd) == 0 && written;
  }
  if (!written) {
    throw HostKeyError(fmt::format("SSH: cannot record the host key of {} ({}) in {}: {}", host_name, fingerprint,
                                   file.string(), std::strerror(errno)),
                       host_name, fingerprint, std::nullopt);
  }
}

void verify_host_key(const Endpoint& endpoint, const SshOptions& options, const std::string& blob,
                     const std::string& fingerprint) {
  const auto host_name = known_hosts_name(endpoint.host, endpoint.port);
  const auto key_type = key_type_of_blob(blob).value_or("unknown");
  const fs::path file = options.known_hosts_file.empty() ? home_directory() / ".ssh" / "known_hosts" : options.known_hosts_file;
  const auto content = read_text_file(file);
  if (content.error != 0 && content.error != ENOENT) {
    throw HostKeyError(fmt::format("SSH: cannot read known_hosts file {}: {}", file.string(), std::strerror(content.error)),
                       host_name, fingerprint, std::nullopt);
  }
  auto parsed = parse_known_hosts(content.text);
  if (const auto* error = std::get_if<KnownHostsParseError>(&parsed)) {
    throw HostKeyError(fmt::format("SSH: known_hosts file {} line {} does not parse: {}", file.string(), error->line,
                                   error->reason),
                       host_name, fingerprint, std::nullopt);
  }
  const auto& entries = std::get<std::vector<KnownHostEntry>>(parsed);
  const auto verdict = check_host_key(entries, host_name, blob);
  const std::optional<std::string> recorded =
      verdict.recorded_blob ? std::optional(sha256_fingerprint(*verdict.recorded_blob)) : std::nullopt;
  using Status = HostKeyVerdict::Status;
  if (verdict.status == Status::known) return;
  if (verdict.status == Status::revoked) {
    throw HostKeyError(fmt::format("SSH: the host key of {} ({} {}) is marked @revoked in {} line {}", host_name, key_type,
                                   fingerprint, file.string(), verdict.recorded_line),
                       host_name, fingerprint, std::nullopt);
  }
  if (options.host_key_policy == HostKeyPolicy::callback) {
    const HostKeyCheck check{endpoint.host, endpoint.port, key_type, fingerprint, recorded};
    if (options.host_key_callback && options.host_key_callback(check)) return;
    throw HostKeyError(fmt::format("SSH: the host key of {} ({} {}{}) was refused by the host key callback", host_name,
                                   key_type, fingerprint, recorded ? ", recorded " + *recorded : std::string()),
                       host_name, fingerprint, recorded);
  }
  if (verdict.status == Status::changed) {
    throw HostKeyError(fmt::format("SSH: the host key of {} has changed: the server offers {} {}, {} line {} records {}. "
                                   "If the VM was recreated, remove the old line (ssh-keygen -R '{}' -f {})",
                                   host_name, key_type, fingerprint, file.string(), verdict.recorded_line, *recorded,
                                   host_name, file.string()),
                       host_name, fingerprint, recorded);
  }
  if (options.host_key_policy == HostKeyPolicy::strict) {
    throw HostKeyError(fmt::format("SSH: the host key of {} ({} {}) is not recorded in {} and the policy is strict",
                                   host_name, key_type, fingerprint, file.string()),
                       host_name, fingerprint, std::nullopt);
  }
  record_host_key(file, content.text, known_hosts_line(host_name, blob), host_name, fingerprint);
}

// ---- authentication ----

struct KeyText {
  std::string text;
  std::string source;  // a path, "private_key_pem" or "EXE_SSH_KEY"
};

// Why a key cannot be used, or empty when it looks usable.
std::string key_problem(const KeyText& key, bool have_passphrase) {
  const auto info = inspect_private_key(key.text);
  if (!info.problem.empty()) return info.problem;
  if (info.encrypted && !have_passphrase) return "it is encrypted and no passphrase was given";
  return {};
}

class Authenticator {
 public:
  Authenticator(SessionDriver& driver, const Endpoint& endpoint, const SshOptions& options, Clock::time_point deadline)
      : driver_(driver), endpoint_(endpoint), options_(options), deadline_(deadline) {}

  asio::awaitable<void> authenticate() {
    if (auto explicit_key = explicit_key_text()) {
      const auto problem = key_problem(*explicit_key, options_.passphrase.has_value());
      if (!problem.empty()) throw_unusable(explicit_key->source, problem);
      const long rc = co_await try_key(*explicit_key, options_.passphrase);
      if (rc == 0) co_return;
      // libssh2 says FILE when it cannot load the key (a wrong passphrase, a format it lacks);
      // a key the server refuses is AUTHENTICATION_FAILED or PUBLICKEY_UNVERIFIED.
      if (rc == LIBSSH2_ERROR_FILE) {
        throw_unusable(explicit_key->source, options_.passphrase ? "libssh2 could not load it (a wrong passphrase?)"
                                                                 : "libssh2 could not load it");
      }
      // With an encrypted key, a wrong passphrase also ends here: libssh2 1.10 cannot tell it apart.
      tried_.push_back(info_suffix(*explicit_key));
      throw_failed();
    }
    if (options_.use_agent) {
      const bool accepted = co_await try_agent();
      if (accepted) co_return;
    }
    for (const auto& path : default_key_files(key_source_of(options_))) {
      auto content = read_text_file(path);
      if (content.error == ENOENT) continue;
      if (content.error != 0) {
        tried_.push_back(fmt::format("{} (unreadable: {})", path.string(), std::strerror(content.error)));
        continue;
      }
      const KeyText key{std::move(content.text), path.string()};
      if (const auto problem = key_problem(key, false); !problem.empty()) {
        tried_.push_back(fmt::format("{} (skipped: {})", path.string(), problem));
        continue;
      }
      const long rc = co_await try_key(key, std::nullopt);
      if (rc == 0) co_return;
      tried_.push_back(rc == LIBSSH2_ERROR_FILE ? fmt::format("{} (libssh2 could not load it)", path.string()) : path.string());
    }
    throw_failed();
  }

 private:
  std::optional<KeyText> explicit_key_text() const {
    if (options_.private_key_pem) return KeyText{*options_.private_key_pem, "private_key_pem"};
    const auto path = explicit_key_file(key_source_of(options_));
    if (!path) return std::nullopt;
    auto content = read_text_file(*path);
    if (content.error != 0) throw_unusable(path->string(), fmt::format("it cannot be read: {}", std::strerror(content.error)));
    return KeyText{std::move(content.text), path->string()};
  }

  asio::awaitable<long> try_key(const KeyText& key, const std::optional<std::string>& passphrase) {
    const SessionDriver::Call call{"authentication", true, false, deadline_};
    const auto& user = endpoint_.user;
    const char* secret = passphrase ? passphrase->c_str() : nullptr;
    // The public key is derived from the private one (libssh2 1.10 does for OpenSSH and PEM keys).
    co_return co_await driver_.run(call, [&] {
      return static_cast<long>(::libssh2_userauth_publickey_frommemory(driver_.session(), user.data(), user.size(), nullptr,
                                                                       0, key.text.data(), key.text.size(), secret));
    });
  }

  // The agent's socket is a local unix socket; libssh2 talks to it blocking (a short exchange per key).
  asio::awaitable<bool> try_agent() {
    const auto socket = agent_socket(key_source_of(options_));
    if (!socket) co_return false;
    const char* socket_path = socket->c_str();
    LIBSSH2_AGENT* agent = ::libssh2_agent_init(driver_.session());
    if (agent == nullptr) co_return false;
    struct AgentGuard {
      LIBSSH2_AGENT* agent;
      ~AgentGuard() {
        ::libssh2_agent_disconnect(agent);
        ::libssh2_agent_free(agent);
      }
    } guard{agent};
    if (::libssh2_agent_connect(agent) != 0) {
      tried_.push_back(fmt::format("agent at {} (cannot connect)", socket_path));
      co_return false;
    }
    if (::libssh2_agent_list_identities(agent) != 0) {
      tried_.push_back(fmt::format("agent at {} (cannot list its keys)", socket_path));
      co_return false;
    }
    libssh2_agent_publickey* identity = nullptr;
    libssh2_agent_publickey* previous = nullptr;
    const SessionDriver::Call call{"authentication", true, false, deadline_};
    const auto& user = endpoint_.user;
    std::size_t keys = 0;
    while (::libssh2_agent_get_identity(agent, &identity, previous) == 0) {
      previous = identity;
      ++keys;
      const long rc = co_await driver_.run(
          call, [&] { return static_cast<long>(::libssh2_agent_userauth(agent, user.c_str(), identity)); });
      if (rc == 0) co_return true;
      const std::string blob(reinterpret_cast<const char*>(identity->blob), identity->blob_len);
      tried_.push_back(fmt::format("agent key {}", sha256_fingerprint(blob)));
    }
    if (keys == 0) tried_.push_back(fmt::format("agent at {} (no keys)", socket_path));
    co_return false;
  }

  // The key's name for the tried list; an encrypted key's failure may be its passphrase.
  static std::string info_suffix(const KeyText& key) {
    return inspect_private_key(key.text).encrypted ? key.source + " (encrypted: refused, or a wrong passphrase)" : key.source;
  }

  [[noreturn]] void throw_unusable(const std::string& source, const std::string& problem) const {
    throw SshKeyUnusableError(fmt::format("SSH: the private key {} cannot be used: {}", source, problem), source);
  }

  [[noreturn]] void throw_failed() const {
    std::string list;
    for (const auto& attempt : tried_) list += (list.empty() ? "" : "; ") + attempt;
    if (list.empty()) list = "no key (no explicit key, no agent, no default key file)";
    throw SshAuthenticationError(
        fmt::format("SSH: {}@{}:{} accepted none of the keys tried: {}", endpoint_.user, endpoint_.host, endpoint_.port, list),
        tried_);
  }

  SessionDriver& driver_;
  const Endpoint& endpoint_;
  const SshOptions& options_;
  Clock::time_point deadline_;
  std::vector<std::string> tried_;
};

}  // namespace

asio::awaitable<std::shared_ptr<Connection>> Connection::open(Endpoint endpoint, SshOptions options) {
  if (endpoint.user.empty()) throw std::invalid_argument("SSH: the endpoint names no user");
  if (options.max_sessions == 0) throw std::invalid_argument("SSH: max_sessions must be at least 1");
  const auto where = fmt::format("{}@{}:{}", endpoint.user, endpoint.host, endpoint.port);
  auto socket = co_await connect_socket(endpoint, options, where);
  const int fd = socket.native_handle();
  auto driver = std::make_shared<SessionDriver>(std::move(socket), where);
  driver->start_pump(options.keepalive_interval);
  // Whatever fails from here on, the pump must end, or it would keep the session alive.
  std::exception_ptr failure;
  std::shared_ptr<Connection> connection;
  try {
    const SessionDriver::Call handshake{"the handshake", true, false, Clock::now() + options.handshake_timeout};
    const long rc = co_await driver->run(handshake, [&] { return static_cast<long>(::libssh2_session_handshake(driver->session(), fd)); });
    if (rc != 0) {
      throw ConnectionError(fmt::format("SSH: handshake with {} failed: {}", where, driver->last_error_message()), false,
                            libssh2_error(static_cast<int>(rc)));
    }
    std::size_t length = 0;
    int type = 0;
    const char* key = ::libssh2_session_hostkey(driver->session(), &length, &type);
    if (key == nullptr) throw ConnectionError(fmt::format("SSH: {} sent no host key", where), false);
    const std::string blob(key, length);
    const auto fingerprint = sha256_fingerprint(blob);
    verify_host_key(endpoint, options, blob, fingerprint);
    Authenticator authenticator(*driver, endpoint, options, Clock::now() + options.auth_timeout);
    co_await authenticator.authenticate();
    connection = std::make_shared<Connection>(driver, std::move(endpoint), std::move(options), fingerprint);
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure) {
    driver->stop("was abandoned");
    std::rethrow_exception(failure);
  }
  co_return connection;
}

}  // namespace exedev::ssh
