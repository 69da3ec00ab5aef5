#pragma once
// exedev::Client: exe.dev's `POST /exec` API over HTTPS.
//
// A Client is a cheap, copyable handle; copies share one connection pool. It runs on the
// executor given at construction and starts no threads. Every operation honours Asio
// per-operation cancellation (terminal); what a cancelled operation leaves behind is
// documented on the operation.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <exedev/errors.hpp>

namespace exedev {

template <typename T>
using Task = boost::asio::awaitable<T>;

/// Which requests are re-sent, and how long to wait in between. Only read-only commands
/// (`ls`, `whoami`, `help`) are ever retried: on 429, 5xx and connection errors.
struct RetryPolicy {
  int max_retries = 3;  ///< 0 disables retries.
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{8000};
};

enum class LogLevel { debug, info, warning, error };

/// A log line. Never contains a token, an environment value or a response body.
using Logger = std::function<void(LogLevel, std::string_view)>;

struct ClientOptions {
  /// API token; when empty, EXE_TOKEN. A client with neither throws AuthenticationError
  /// on its first request (the message says how to create a token).
  std::optional<std::string> token;
  /// Base URL; when empty, EXE_BASE_URL, else https://exe.dev.
  std::optional<std::string> endpoint;
  /// PEM file of trusted CAs, in addition to the system trust store.
  std::optional<std::string> ca_file;
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds handshake_timeout{10'000};
  /// Most connections open at once; further requests wait for one.
  std::size_t max_connections = 8;
  RetryPolicy retry;
  std::string user_agent = "exedev-cpp";
  Logger logger;
};

/// A VM's status. `raw` keeps the server's word, for values this library does not know.
struct VMStatus {
  enum class Kind { creating, starting, pending, running, paused, stopped, failed, building, unknown, other };
  Kind kind = Kind::unknown;
  std::string raw;
  [[nodiscard]] static VMStatus parse(std::string_view text);
  friend bool operator==(const VMStatus&, const VMStatus&) = default;
};

/// One VM as `ls` (or `new`/`cp`) describes it. Fields the server left out stay empty.
struct VMInfo {
  std::string name;
  VMStatus status;
  std::vector<std::string> tags;
  std::string comment;
  std::string image;
  std::string region;
  std::string created_at;  ///< RFC 3339, as sent.
  std::string ssh_dest;
  std::string ssh_host;
  std::string ssh_user;
  std::string https_url;
  std::optional<std::uint64_t> disk_capacity_bytes;
  std::optional<std::uint64_t> memory_capacity_bytes;
  std::optional<unsigned> allocated_cpus;
};

struct NewVMOptions {
  std::optional<std::string> name;
  std::optional<std::string> image;
  std::optional<unsigned> cpu;
  std::optional<std::string> memory;  ///< e.g. "8G".
  std::optional<std::string> disk;
  std::vector<std::string> tags;
  std::optional<std::string> comment;
  std::map<std::string, std::string> env;  ///< VM-level environment.
  std::vector<std::string> integrations;
  std::optional<std::string> egress;       ///< "all" or "integrations".
  bool standalone = false;
};

struct CopyVMOptions {
  std::string source;
  std::optional<std::string> name;
  bool copy_tags = true;
  std::optional<unsigned> cpu;
  std::optional<std::string> memory;
  std::optional<std::string> disk;
  std::optional<std::string> egress;
  bool standalone = false;
};

struct RemoveResult {
  std::vector<std::string> deleted;
  std::vector<std::string> failed;
};

struct WhoAmI {
  std::string email;
  std::string region;
};

/// The raw answer to one /exec request.
struct ExecResponse {
  unsigned status = 0;
  std::string body;
};

/// Options of Client::run.
struct RunOptions {
  std::map<std::string, std::string> env;       ///< Exported before the command.
  std::optional<std::string> working_dir;       ///< `cd` before the command.
  std::optional<std::chrono::duration<double>> timeout;  ///< Enforced on the VM and locally.
  std::size_t max_output_bytes = 8 * 1024 * 1024;  ///< stdout + stderr; over it the command is stopped.
  /// Called with output as it arrives (optional).
  std::function<void(std::string_view)> on_stdout;
  std::function<void(std::string_view)> on_stderr;
};

/// A finished command: exact bytes, separate streams, the real exit code.
struct RunResult {
  int exit_code = 0;
  std::string stdout_bytes;
  std::string stderr_bytes;
};

class Client {
 public:
  Client(boost::asio::any_io_executor executor, ClientOptions options = {});
  ~Client();
  Client(const Client&);
  Client& operator=(const Client&);
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;

  [[nodiscard]] boost::asio::any_io_executor get_executor() const;
  /// The endpoint in use (no credentials).
  [[nodiscard]] const std::string& endpoint() const;

  /// Sends one lobby command line as is and returns the answer (any status).
  Task<ExecResponse> exec(std::string command_line);

  Task<VMInfo> new_vm(NewVMOptions options);
  Task<VMInfo> copy_vm(CopyVMOptions options);
  /// `ls [patterns...]`: names, globs or tags.
  Task<std::vector<VMInfo>> list_vms(std::vector<std::string> patterns = {});
  Task<RemoveResult> remove_vms(std::vector<std::string> names);
  Task<void> pause_vm(std::string name);
  Task<void> resume_vm(std::string name);
  Task<void> restart_vm(std::string name);
  /// Returns the VM's tags afterwards.
  Task<std::vector<std::string>> add_tags(std::string name, std::vector<std::string> tags);
  Task<std::vector<std::string>> remove_tags(std::string name, std::vector<std::string> tags);
  Task<void> set_comment(std::string name, std::string comment);
  Task<void> clear_comment(std::string name);
  Task<WhoAmI> whoami();

  /// Runs a POSIX shell line on a VM in its user's login shell. Commands that outlive one
  /// request are collected over several; a command is never started twice.
  /// Cancellation stops the remote process group with a follow-up request.
  Task<RunResult> run(std::string vm, std::string shell_line, RunOptions options = {});

  /// Closes idle connections. The client stays usable; the next request reconnects.
  Task<void> close();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

/// Quotes a word for the lobby lexer so that it arrives exactly (empty strings included).
[[nodiscard]] std::string lobby_quote(std::string_view word);

}  // namespace exedev
