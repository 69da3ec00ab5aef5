// Connection::open: resolve, connect, handshake, host key, authentication.
#include "ssh/connection.hpp"
#include "ssh/connection_settings.hpp"
#include "ssh/hosts_file.hpp"
#include "ssh/key_sources.hpp"

#include "ssh/known_hosts.hpp"
#include "ssh/private_key.hpp"
#include "ssh/session_driver.hpp"
#include "ssh/ssh_errors.hpp"
#include "common/base64.hpp"
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
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <sys/file.h>
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
  // The hosts file first: an address there is resolved without the system's resolver.
  std::string address = endpoint.host;
  if (const auto hosts = hosts_file_to_use(options.hosts_file); !hosts.empty()) {
    const auto text = read_text_file(hosts);
    if (text.error != 0) {
      timer.cancel();
      throw ConnectionError(fmt::format("SSH: cannot read the hosts file {}", hosts.string()), false);
    }
    if (auto listed = address_in_hosts(text.text, endpoint.host)) address = std::move(*listed);
  }
  auto results = co_await resolver.async_resolve(address, port, asio::redirect_error(asio::use_awaitable, ec));
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

// The whole content of an open file.
std::optional<std::string> read_all(int fd) {
  std::string text;
  std::array<char, 8192> buffer{};
  for (off_t at = 0;;) {
    const ssize_t got = ::pread(fd, buffer.data(), buffer.size(), at);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return std::nullopt;
    if (got == 0) return text;
    text.append(buffer.data(), static_cast<std::size_t>(got));
    at += got;
  }
}

// Appends what line_to_record() decides, under an exclusive lock on the file: concurrent
// connections to several VMs of one domain record one line between them.
void record_host_key(const fs::path& file, const Endpoint& endpoint, const std::string& blob, const std::string& host_name,
                     const std::string& fingerprint) {
  const auto directory = file.parent_path();
  std::error_code ec;
  if (!directory.empty() && !fs::exists(directory, ec)) {
    fs::create_directories(directory, ec);
    if (!ec) ::chmod(directory.c_str(), 0700);
  }
  std::array<unsigned char, 20> salt{};
  const int fd = ::open(file.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  bool written = fd >= 0 && ::flock(fd, LOCK_EX) == 0 && ::RAND_bytes(salt.data(), static_cast<int>(salt.size())) == 1;
  const auto existing = written ? read_all(fd) : std::nullopt;
  written = written && existing.has_value();
  if (written) {
    const std::string_view salt_bytes(reinterpret_cast<const char*>(salt.data()), salt.size());
    if (const auto line = line_to_record(parse_known_hosts(*existing), endpoint.host, endpoint.port, blob, salt_bytes)) {
      const std::string text = (!existing->empty() && existing->back() != '\n') ? "\n" + *line : *line;
      written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    }
  }
  const int error = errno;
  if (fd >= 0) written = ::close(fd) == 0 && written;
  if (!written) {
    throw HostKeyError(fmt::format("SSH: cannot record the host key of {} ({}) in {}: {}", host_name, fingerprint,
                                   file.string(), std::strerror(error != 0 ? error : EIO)),
                       host_name, fingerprint, std::nullopt);
  }
}

// ssh-keyscan's name for a key type.
std::string keyscan_type(const std::string& key_type) {
  if (key_type == "ssh-rsa") return "rsa";
  if (key_type == "ssh-ed25519") return "ed25519";
  if (key_type.starts_with("ecdsa-")) return "ecdsa";
  return key_type;
}

std::string keyscan_command(const Endpoint& endpoint, const std::string& key_type) {
  const auto port = endpoint.port == 22 ? std::string() : fmt::format(" -p {}", endpoint.port);
  return fmt::format("ssh-keyscan -t {}{} {} | ssh-keygen -lf -", keyscan_type(key_type), port, endpoint.host);
}

void verify_host_key(const Endpoint& endpoint, const ConnectionSettings& settings, const SshOptions& options,
                     const std::string& blob, const std::string& fingerprint) {
  const auto host_name = known_hosts_name(endpoint.host, endpoint.port);
  const auto key_type = key_type_of_blob(blob).value_or("unknown");
  const fs::path& file = settings.known_hosts_file;
  const auto content = read_text_file(file);
  if (content.error != 0 && content.error != ENOENT) {
    throw HostKeyError(fmt::format("SSH: cannot read known_hosts file {}: {}", file.string(), std::strerror(content.error)),
                       host_name, fingerprint, std::nullopt);
  }
  const auto parsed = parse_known_hosts(content.text);
  if (!parsed.malformed.empty() && options.on_warning) options.on_warning(malformed_lines_warning(file.string(), parsed.malformed));
  const auto verdict = check_host_key(parsed.entries, host_name, blob);
  const std::optional<std::string> recorded =
      verdict.recorded_blob ? std::optional(sha256_fingerprint(*verdict.recorded_blob)) : std::nullopt;
  using Status = HostKeyVerdict::Status;
  if (verdict.status == Status::known) return;
  if (verdict.status == Status::revoked) {
    throw HostKeyError(fmt::format("SSH: the host key of {} ({} {}) is marked @revoked in {} line {}", host_name, key_type,
                                   fingerprint, file.string(), verdict.recorded_line),
                       host_name, fingerprint, std::nullopt);
  }
  if (settings.host_key_policy == HostKeyPolicy::callback) {
    const HostKeyCheck check{endpoint.host, endpoint.port, key_type, fingerprint, recorded};
    if (options.host_key_callback && options.host_key_callback(check)) return;
    throw HostKeyError(fmt::format("SSH: the host key of {} ({} {}{}) was refused by the host key callback", host_name,
                                   key_type, fingerprint, recorded ? ", recorded " + *recorded : std::string()),
                       host_name, fingerprint, recorded);
  }
  if (verdict.status == Status::changed) {
    throw HostKeyError(
        fmt::format("SSH: the host key of {} has changed: the server offers {} {}, {} line {} records {}. Nothing was sent. "
                    "Every exe.dev VM is reached through exe.dev's SSH proxy, which has one host key for all of them, so "
                    "a changed key means that exe.dev rotated its key or that the connection is intercepted. Check it "
                    "before trusting it: `{}` (from another network too) prints the key exe.dev serves, and exe.dev "
                    "publishes its trust line at https://exe.xyz/.well-known/ssh-known-hosts. Only when they agree "
                    "with {}, delete line {} of {} and connect again",
                    host_name, key_type, fingerprint, file.string(), verdict.recorded_line, *recorded,
                    keyscan_command(endpoint, key_type), fingerprint, verdict.recorded_line, file.string()),
        host_name, fingerprint, recorded);
  }
  if (settings.host_key_policy == HostKeyPolicy::strict && verdict.cert_authority_line != 0) {
    auto line = known_hosts_line(domain_host_pattern(endpoint.host, endpoint.port), blob);
    line.pop_back();
    throw HostKeyError(
        fmt::format("SSH: the host key of {} ({} {}) is not recorded in {}: line {} is a @cert-authority line for it, but "
                    "this library does not check host certificates (libssh2 1.10 negotiates no RSA or Ed25519 "
                    "certificate), so the server's own key must be recorded, and the policy is strict. Check it first: `{}` must print {} (and OpenSSH's `ssh` connects to the host "
                    "without a host key warning, checking the certificate against line {}). Then add this line to {}:\n{}",
                    host_name, key_type, fingerprint, file.string(), verdict.cert_authority_line,
                    keyscan_command(endpoint, key_type), fingerprint, verdict.cert_authority_line, file.string(), line),
        host_name, fingerprint, std::nullopt);
  }
  if (settings.host_key_policy == HostKeyPolicy::strict) {
    throw HostKeyError(fmt::format("SSH: the host key of {} ({} {}) is not recorded in {} and the policy is strict",
                                   host_name, key_type, fingerprint, file.string()),
                       host_name, fingerprint, std::nullopt);
  }
  record_host_key(file, endpoint, blob, host_name, fingerprint);
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
  Authenticator(SessionDriver& driver, const ConnectionSettings& settings, const SshOptions& options,
                const std::optional<AccountKeys>& account, Clock::time_point deadline)
      : driver_(driver), settings_(settings), endpoint_(settings.endpoint), options_(options), account_(account),
        deadline_(deadline) {}

  /// The key that authenticated, "SHA256:…" (empty when its fingerprint could not be read).
  [[nodiscard]] const std::string& accepted_fingerprint() const noexcept { return accepted_; }

  asio::awaitable<void> authenticate() {
    if (auto explicit_key = explicit_key_text()) {
      const auto problem = key_problem(*explicit_key, options_.passphrase.has_value());
      if (!problem.empty()) throw_unusable(explicit_key->source, problem);
      const auto fingerprint = fingerprint_of(*explicit_key);
      if (!admitted(fingerprint, explicit_key->source)) throw_failed();
      const long rc = co_await try_key(*explicit_key, options_.passphrase);
      if (rc == 0) {
        accepted_ = fingerprint.value_or("");
        co_return;
      }
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
    // ssh_config's IdentityFile keys first: the user chose them for this host.
    const bool by_config = co_await try_files(settings_.keys.identity_files, true);
    if (by_config) co_return;
    if (settings_.keys.use_agent) {
      const bool accepted = co_await try_agent();
      if (accepted) co_return;
    }
    const bool by_default = co_await try_files(settings_.keys.default_key_files, false);
    if (by_default) co_return;
    throw_failed();
  }

 private:
  std::optional<KeyText> explicit_key_text() const {
    if (options_.private_key_pem) return KeyText{*options_.private_key_pem, "private_key_pem"};
    const auto& path = settings_.keys.explicit_key_file;
    if (!path) return std::nullopt;
    auto content = read_text_file(*path);
    if (content.error != 0) throw_unusable(path->string(), fmt::format("it cannot be read: {}", std::strerror(content.error)));
    return KeyText{std::move(content.text), path->string()};
  }

  // Tries each key file in order; a missing one is skipped (named when ssh_config names it).
  asio::awaitable<bool> try_files(const std::vector<fs::path>& files, bool named_in_config) {
    for (const auto& path : files) {
      auto text = key_file_text(path, named_in_config, tried_);
      if (!text) continue;
      const KeyText key{std::move(*text), path.string()};
      if (const auto problem = key_problem(key, false); !problem.empty()) {
        tried_.push_back(fmt::format("{} (skipped: {})", path.string(), problem));
        continue;
      }
      const auto fingerprint = fingerprint_of(key);
      if (!admitted(fingerprint, key.source)) continue;
      const long rc = co_await try_key(key, std::nullopt);
      if (rc == 0) {
        accepted_ = fingerprint.value_or("");
        co_return true;
      }
      tried_.push_back(rc == LIBSSH2_ERROR_FILE ? fmt::format("{} (libssh2 could not load it)", path.string()) : path.string());
    }
    co_return false;
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
    const auto socket = agent_socket();
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
      const auto fingerprint = sha256_fingerprint(std::string(reinterpret_cast<const char*>(identity->blob), identity->blob_len));
      if (!admitted(fingerprint, "agent key")) continue;
      const long rc = co_await driver_.run(
          call, [&] { return static_cast<long>(::libssh2_agent_userauth(agent, user.c_str(), identity)); });
      if (rc == 0) {
        accepted_ = fingerprint;
        co_return true;
      }
      tried_.push_back(fmt::format("agent key {}", fingerprint));
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

  // The key's fingerprint: from the private key when it carries its public half in the clear,
  // else from the `.pub` file beside it; nullopt when neither says.
  static std::optional<std::string> fingerprint_of(const KeyText& key) {
    if (auto blob = inspect_private_key(key.text).public_blob; !blob.empty()) return sha256_fingerprint(blob);
    const auto line = read_text_file(key.source + ".pub");
    if (line.error != 0) return std::nullopt;
    std::istringstream fields(line.text);
    std::string type, base64;
    fields >> type >> base64;
    const auto blob = detail::base64_decode(base64);
    if (!blob || key_type_of_blob(*blob) != type) return std::nullopt;
    return sha256_fingerprint(*blob);
  }

  // Whether a key may be offered: with the account's keys known, only one of them (exe.dev's
  // front lets the first key offered decide where the connection lands). A key not offered is
  // listed with why.
  bool admitted(const std::optional<std::string>& fingerprint, const std::string& label) {
    if (!account_) return true;
    if (!fingerprint) {
      tried_.push_back(fmt::format("{} (not offered: its fingerprint is unknown, no .pub file beside it)", label));
      return false;
    }
    const auto& held = account_->fingerprints;
    if (std::find(held.begin(), held.end(), *fingerprint) != held.end()) return true;
    tried_.push_back(fmt::format("{} {} (not offered: not a key of the exe.dev account)", label, *fingerprint));
    return false;
  }

  [[noreturn]] void throw_failed() const {
    std::string list;
    for (const auto& attempt : tried_) list += (list.empty() ? "" : "; ") + attempt;
    if (list.empty()) list = "no key (no explicit key, no ssh_config IdentityFile, no agent, no default key file)";
    if (account_) {
      throw SshAuthenticationError(
          fmt::format("SSH: none of the keys tried is registered with the exe.dev account ({} key(s) listed by whoami), "
                      "and exe.dev lands any other key in its registration shell: {}. Register one with "
                      "`ssh exe.dev ssh-key add \"$(cat ~/.ssh/id_ed25519.pub)\"` (or Client::exec(\"ssh-key add '<public "
                      "key>'\")), or name a registered key (SshOptions::private_key_file, ~/.ssh/config IdentityFile)",
                      account_->fingerprints.size(), list),
          tried_);
    }
    throw SshAuthenticationError(
        fmt::format("SSH: {}@{}:{} accepted none of the keys tried: {}", endpoint_.user, endpoint_.host, endpoint_.port, list),
        tried_);
  }

  SessionDriver& driver_;
  const ConnectionSettings& settings_;
  const Endpoint& endpoint_;
  const SshOptions& options_;
  const std::optional<AccountKeys>& account_;
  Clock::time_point deadline_;
  std::vector<std::string> tried_;
  std::string accepted_;
};

}  // namespace

asio::awaitable<std::shared_ptr<Connection>> Connection::open(Endpoint given, SshOptions options) {
  co_return co_await open(std::move(given), std::move(options), std::nullopt);
}

asio::awaitable<std::shared_ptr<Connection>> Connection::open(Endpoint given, SshOptions options,
                                                              std::optional<AccountKeys> account) {
  if (options.max_sessions == 0) throw std::invalid_argument("SSH: max_sessions must be at least 1");
  const auto settings = connection_settings(given, options);
  Endpoint endpoint = settings.endpoint;
  const auto where = fmt::format("{}@{}:{}", endpoint.user, endpoint.host, endpoint.port);
  auto socket = co_await connect_socket(endpoint, options, where);
  const int fd = socket.native_handle();
  auto driver = std::make_shared<SessionDriver>(std::move(socket), where);
  driver->start_pump(options.keepalive_interval);
  // Whatever fails from here on, the pump must end, or it would keep the session alive.
  std::exception_ptr failure;
  std::shared_ptr<Connection> connection;
  bool authenticating = false;
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
    verify_host_key(endpoint, settings, options, blob, fingerprint);
    Authenticator authenticator(*driver, settings, options, account, Clock::now() + options.auth_timeout);
    authenticating = true;
    co_await authenticator.authenticate();
    authenticating = false;
    connection = std::make_shared<Connection>(driver, std::move(endpoint), std::move(options), fingerprint,
                                              authenticator.accepted_fingerprint());
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure) {
    // The server, not a timeout, ended the connection while keys were offered: exe.dev's SSH
    // front does that for a VM that is not running. A refusal of authentication, not a network
    // failure (the sandbox's recovery then looks at the VM).
    const bool closed_during_authentication =
        authenticating && driver->dropped() && driver->drop_cause() != std::errc::timed_out;
    driver->stop("was abandoned");
    if (closed_during_authentication) {
      exedev::detail::throw_nested(failure, SshAuthenticationError(fmt::format("SSH: {} closed the connection during "
                                                                               "authentication (exe.dev's SSH front does "
                                                                               "so for a VM that is not running)", where),
                                                                   {}));
    }
    std::rethrow_exception(failure);
  }
  co_return connection;
}

}  // namespace exedev::ssh
