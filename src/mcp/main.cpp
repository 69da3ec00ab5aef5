// exedev-mcp: an MCP server on stdin/stdout serving the FileSystem and Shell tool sets over one
// workspace: a local directory, an exe.dev VM (new or attached), or a VM on the bundled
// emulator. docs/mcp.md describes every flag.
#include "common/command_line.hpp"
#include "common/coroutines.hpp"
#include "mcp/server.hpp"

#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/exedev.hpp>
#include <exedev/tools/file_system.hpp>
#include <exedev/tools/shell.hpp>
#include <exedev/workspace/local_backend.hpp>
#include <exedev/workspace/workspace.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace exedev;

constexpr const char* usage = R"(usage: exedev-mcp WORKSPACE [options]

An MCP server (JSON-RPC 2.0 on stdin/stdout, one message per line) offering the FileSystem
tools (read_file, write_file, edit_file, ...) and the Shell tools (run_command, start_command,
check_command, stop_command; with --interactive start_session, send_to_session, read_session,
list_sessions, close_session) on one workspace. See docs/mcp.md.

Workspace (exactly one):
  --local=DIR               a directory on this machine
  --emulator                a new VM on the bundled exe.dev emulator, started in this process
                            (gone when the server exits)
  --exedev                  a new VM on exe.dev, made from the VM flags below on first use
  --vm=NAME                 an existing exe.dev VM
  --ref=JSON                an existing exe.dev VM by its workspace ref,
                            {"provider": "exedev", "id": "NAME"}
  exe.dev: its URL from EXE_BASE_URL (default https://exe.dev); an API token from
  EXE_TOKEN, else short-lived exe0 tokens signed with your SSH key registered there
  (--ssh-key, else as SSH chooses: EXE_SSH_KEY, ~/.ssh/config, ssh-agent, default files).

VM (--exedev and --emulator; --working-dir and --scope-tag also when attaching):
  --name=NAME  --image=IMAGE  --base=VM  --tag=TAG (repeatable)  --comment=TEXT
  --cpu=N  --memory=SIZE  --disk=SIZE
  --working-dir=DIR         where commands start: absolute, or relative to the VM user's home
  --scope-tag=TAG           touch only VMs carrying this tag
  --on-exit=keep|destroy    what becomes of a VM this server made (default keep: its ref is
                            printed on stderr at exit)

Transport (every exe.dev VM; lifecycle always uses exe.dev's HTTPS API):
  --transport=auto|ssh|exec commands and files over SSH to the VM, or exe.dev's /exec API
                            (default auto: SSH when a key is available and the VM answers)
  --ssh-key=PATH            the SSH private key (default: EXE_SSH_KEY, ssh-agent, ~/.ssh/id_ed25519,
                            ~/.ssh/id_rsa); with --emulator its PATH.pub is registered there
  --known-hosts=PATH        the known_hosts file that verifies VM host keys (default
                            ~/.ssh/known_hosts; with --emulator, the emulator's)

Trees (any workspace; REMOTE relative to the working directory, LOCAL without ':'):
  --upload=LOCAL:REMOTE     seed the workspace at start: make REMOTE equal to this machine's
                            LOCAL directory before serving (repeatable)
  --download=REMOTE:LOCAL   at exit, make this machine's LOCAL equal to REMOTE (repeatable)
  --exclude=PATTERN         .gitignore-style pattern left out of both (repeatable), e.g. .git/

Tools:
  --env=NAME=VALUE          environment of every command (repeatable)
  --redact-env=NAME         the value of variable NAME (given with --env, else this server's
                            own) is shown to the model as [redacted] in every tool's output
                            (repeatable)
  --read-only               only reading tools: no commands, no file changes
  --persistent-shell        also offer the `shell` tool (one shell session kept between calls)
  --interactive             also offer the session tools, for programs that talk back (a REPL, a
                            debugger, a prompt), and let commands start editors, pagers and logins
  --command-timeout=SECONDS run_command's timeout when the model gives none (default 30)

  --help                    this text
  --version                 the version
)";

enum class WorkspaceKind { none, local, emulator, exedev, attach };

struct Config {
  WorkspaceKind kind = WorkspaceKind::none;
  std::string local_dir{};
  std::optional<workspace::WorkspaceRef> ref{};
  VMSpecFields spec{};
  std::optional<std::string> scope_tag{};
  bool destroy_on_exit = false;
  workspace::Env env{};
  /// --redact-env: the values, taken once the flags are read.
  std::vector<std::string> redacted_values{};
  bool read_only = false;
  bool persistent_shell = false;
  bool interactive = false;
  std::optional<double> command_timeout{};
  Transport transport = Transport::automatic;
  std::optional<std::string> ssh_key{};
  std::optional<std::string> known_hosts{};
  /// --upload (local, remote) and --download (remote, local) pairs, in order.
  std::vector<std::pair<std::string, std::string>> uploads{}, downloads{};
  std::vector<std::string> excludes{};
};

[[noreturn]] void bad_usage(const std::string& message) {
  std::cerr << "exedev-mcp: " << message << "\n(--help for usage)\n";
  std::exit(2);
}

// The field of the VM spec that flag `name` (--name, --image, --base, --comment, --memory or
// --disk) sets.
std::optional<std::string>& spec_field(VMSpecFields& spec, const std::string& name) {
  if (name == "--name") return spec.name;
  if (name == "--image") return spec.image;
  if (name == "--base") return spec.base;
  if (name == "--comment") return spec.comment;
  if (name == "--memory") return spec.memory;
  return spec.disk;
}

// The values of the --redact-env variables: from `env` (the --env flags), else this server's own.
std::vector<std::string> values_to_redact(const std::vector<std::string>& variables, const workspace::Env& env) {
  std::vector<std::string> values;
  for (const auto& variable : variables) {
    const auto given = env.find(variable);
    const char* own = std::getenv(variable.c_str());
    std::string value = given != env.end() ? given->second : own != nullptr ? own : "";
    // The name only: the value is the secret.
    if (value.empty()) bad_usage("--redact-env=" + variable + ": no --env nor environment variable of that name has a value");
    values.push_back(std::move(value));
  }
  return values;
}

// The flags given together make sense: one workspace, and the VM flags only for a VM (the spec's
// only for one made here: `spec_given`).
void check_combination(const Config& config, bool spec_given) {
  if (config.kind == WorkspaceKind::none) bad_usage("choose a workspace: --local, --emulator, --exedev, --vm or --ref");
  if (config.kind == WorkspaceKind::local && (config.ssh_key || config.known_hosts || config.transport != Transport::automatic)) {
    bad_usage("--transport, --ssh-key and --known-hosts are for exe.dev VMs, not --local");
  }
  const bool vm = config.kind != WorkspaceKind::local;
  if (!vm && (spec_given || config.spec.working_dir || config.scope_tag))
    bad_usage("the VM flags need --emulator, --exedev, --vm or --ref");
  if (config.kind == WorkspaceKind::attach && spec_given)
    bad_usage("an attached VM keeps what it has: only --working-dir and --scope-tag apply");
}

Config parse(int argc, char** argv) {
  Config config;
  const auto choose = [&](WorkspaceKind kind) {
    if (config.kind != WorkspaceKind::none) bad_usage("choose one workspace: --local, --emulator, --exedev, --vm or --ref");
    config.kind = kind;
  };
  bool spec_given = false;
  std::vector<std::string> redact_env_names;  // resolved after the loop: an --env may come later
  for (int i = 1; i < argc; ++i) {
    const auto flag = exedev::detail::split_flag(argv[i]);
    const std::string& name = flag.name;
    const std::string value = flag.value.value_or("");
    const auto need_value = [&] {
      if (value.empty()) bad_usage(name + " needs a value (" + name + "=...)");
      return value;
    };
    const auto number = [&] {
      const auto parsed = exedev::detail::parse_number(need_value());
      if (!parsed || !(*parsed > 0)) bad_usage("invalid number for " + name);
      return *parsed;
    };
    if (name == "--help" || name == "-h") {
      std::cout << usage;
      std::exit(0);
    } else if (name == "--version") {
      std::cout << "exedev-mcp " << EXEDEV_VERSION << "\n";
      std::exit(0);
    } else if (name == "--local") {
      choose(WorkspaceKind::local);
      config.local_dir = need_value();
    } else if (name == "--emulator" || name == "--exedev") {
      if (flag.value) bad_usage(name + " takes no value");
      choose(name == "--emulator" ? WorkspaceKind::emulator : WorkspaceKind::exedev);
    } else if (name == "--vm") {
      choose(WorkspaceKind::attach);
      config.ref = workspace::WorkspaceRef{"exedev", need_value()};
    } else if (name == "--ref") {
      choose(WorkspaceKind::attach);
      try {
        config.ref = workspace::WorkspaceRef::from_json(need_value());
      } catch (const std::exception& e) {
        bad_usage(std::string("invalid --ref: ") + e.what());
      }
    } else if (name == "--name" || name == "--image" || name == "--base" || name == "--comment" ||
               name == "--memory" || name == "--disk") {
      spec_given = true;
      spec_field(config.spec, name) = need_value();
    } else if (name == "--working-dir") {
      config.spec.working_dir = need_value();
    } else if (name == "--tag") {
      spec_given = true;
      config.spec.tags.push_back(need_value());
    } else if (name == "--cpu") {
      spec_given = true;
      const double cpu = number();
      if (cpu != static_cast<unsigned>(cpu)) bad_usage("--cpu must be a whole number");
      config.spec.cpu = static_cast<unsigned>(cpu);
    } else if (name == "--scope-tag") {
      config.scope_tag = need_value();
    } else if (name == "--on-exit") {
      if (value != "keep" && value != "destroy") bad_usage("--on-exit is keep or destroy");
      config.destroy_on_exit = value == "destroy";
    } else if (name == "--env") {
      const std::string assignment = need_value();
      const auto equals = assignment.find('=');
      if (equals == std::string::npos || equals == 0) bad_usage("--env needs NAME=VALUE");
      config.env[assignment.substr(0, equals)] = assignment.substr(equals + 1);
    } else if (name == "--redact-env") {
      redact_env_names.push_back(need_value());
    } else if (name == "--transport") {
      const auto transport = parse_transport(need_value());
      if (!transport) bad_usage("--transport is auto, ssh or exec");
      config.transport = *transport;
    } else if (name == "--ssh-key") {
      config.ssh_key = need_value();
    } else if (name == "--known-hosts") {
      config.known_hosts = need_value();
    } else if (name == "--upload" || name == "--download") {
      const std::string pair = need_value();
      const auto colon = name == "--upload" ? pair.find(':') : pair.rfind(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == pair.size()) bad_usage(name + " needs FROM:TO");
      (name == "--upload" ? config.uploads : config.downloads).emplace_back(pair.substr(0, colon), pair.substr(colon + 1));
    } else if (name == "--exclude") {
      config.excludes.push_back(need_value());
    } else if (name == "--read-only") {
      config.read_only = true;
    } else if (name == "--persistent-shell") {
      config.persistent_shell = true;
    } else if (name == "--interactive") {
      config.interactive = true;
    } else if (name == "--command-timeout") {
      config.command_timeout = number();
    } else {
      bad_usage("unknown option " + name);
    }
  }
  check_combination(config, spec_given);
  config.redacted_values = values_to_redact(redact_env_names, config.env);
  return config;
}

// The workspace the tools work on, and how to end it.
class Environment {
 public:
  Environment(const Config& config, const emulator::Emulator* emulator) : config_(config) {
    if (config.kind == WorkspaceKind::local) {
      workspace_ = std::make_shared<workspace::Workspace>(
          std::make_shared<workspace::LocalBackend>(config.local_dir, config.env));
      description_ = "the local directory " + config.local_dir;
      return;
    }
    SandboxBackendOptions options;
    options.ref = config.ref;
    options.spec = VMSpec(config.spec);
    options.scope_tag = config.scope_tag;
    options.env = config.env;
    if (emulator != nullptr) {
      options.client_options = emulator::client_options(*emulator);
    } else {
      // Without EXE_TOKEN, the SSH key signs the API's tokens too: one credential.
      TokenMinting minting;
      if (config.ssh_key) minting.key.private_key_file = *config.ssh_key;
      options.client_options.minting = minting;
    }
    options.transport = config.transport;
    if (config.ssh_key) options.ssh.private_key_file = *config.ssh_key;
    if (config.known_hosts) {
      options.ssh.known_hosts_file = *config.known_hosts;
    } else if (emulator != nullptr) {
      options.ssh.known_hosts_file = emulator->ssh_known_hosts();
      options.ssh.hosts_file = emulator->ssh_hosts_file();
      options.ssh.host_key_policy = HostKeyPolicy::strict;
    }
    // The choice of transport, once, on stderr (stdout is the protocol).
    options.logger = [](LogLevel, std::string_view line) { std::cerr << "exedev-mcp: " << line << "\n"; };
    backend_ = std::make_shared<SandboxBackend>(options);
    workspace_ = std::make_shared<workspace::Workspace>(backend_);
    description_ = config.ref ? "the exe.dev VM " + config.ref->id
                              : std::string(emulator ? "a new VM on the exe.dev emulator" : "a new exe.dev VM");
  }

  [[nodiscard]] std::shared_ptr<workspace::Workspace> workspace() const {
    if (!config_.read_only) return workspace_;
    return std::make_shared<workspace::ReadOnlyWorkspace>(workspace_);
  }
  [[nodiscard]] const std::string& description() const { return description_; }
  /// The workspace without the read-only wrapper (for --upload and --download).
  [[nodiscard]] const std::shared_ptr<workspace::Workspace>& full_workspace() const { return workspace_; }

  /// Destroys a VM this server made when asked to, reports a kept one, closes the client.
  Task<void> close() {
    if (!backend_) co_return;
    const auto ref = backend_->ref();
    const bool made_here = !config_.ref && config_.kind == WorkspaceKind::exedev;
    if (ref && made_here) {
      if (config_.destroy_on_exit) {
        SandboxOptions options;
        options.scope_tag = config_.scope_tag;
        options.client = co_await backend_->client();
        co_await Sandbox(options).destroy(*ref);
        std::cerr << "exedev-mcp: destroyed VM " << ref->id << "\n";
      } else {
        std::cerr << "exedev-mcp: kept VM " << ref->id << "; attach again with --ref='" << ref->to_json() << "'\n";
      }
    }
    co_await backend_->close();
  }

 private:
  Config config_;
  std::shared_ptr<SandboxBackend> backend_;
  std::shared_ptr<workspace::Workspace> workspace_;
  std::string description_;
};

std::vector<std::shared_ptr<tools::Toolset>> make_toolsets(const Config& config,
                                                           const std::shared_ptr<workspace::Workspace>& workspace) {
  tools::ShellOptions shell;
  if (config.persistent_shell) shell.tools.push_back("shell");
  if (config.interactive) {
    shell.allow_interactive = true;
    shell.tools.insert(shell.tools.end(), tools::session_tool_names().begin(), tools::session_tool_names().end());
  }
  if (config.command_timeout) shell.default_timeout = workspace::Seconds(*config.command_timeout);
  shell.redacted_values = config.redacted_values;
  return {std::make_shared<tools::FileSystem>(workspace), std::make_shared<tools::Shell>(workspace, shell)};
}

workspace::TreeTransferOptions tree_options(const Config& config) {
  workspace::TreeTransferOptions options;
  options.excludes = config.excludes;
  return options;
}

void report_tree(const char* verb, const std::string& from, const std::string& to, const workspace::TreeTransferResult& result) {
  std::cerr << "exedev-mcp: " << verb << " " << from << " to " << to << ": " << result.files << " files, "
            << result.files_sent << " sent (" << result.archive_bytes << " archive bytes)";
  if (!result.refused.empty()) std::cerr << ", " << result.refused.size() << " refused (links leaving the tree, special files)";
  std::cerr << "\n";
}

// --upload: seeds the workspace before the tools are served.
Task<void> upload_trees(Config config, std::shared_ptr<workspace::Workspace> workspace) {
  for (const auto& pair : config.uploads) {
    const auto result = co_await workspace->upload_tree(pair.first, pair.second, tree_options(config));
    report_tree("uploaded", pair.first, pair.second, result);
  }
}

// --download: copies directories back at exit; each is tried, the first failure rethrown.
Task<void> download_trees(Config config, std::shared_ptr<workspace::Workspace> workspace) {
  std::exception_ptr first_failure;
  for (const auto& pair : config.downloads) {
    try {
      const auto result = co_await workspace->download_tree(pair.first, pair.second, tree_options(config));
      report_tree("downloaded", pair.first, pair.second, result);
    } catch (...) {
      std::cerr << "exedev-mcp: downloading " << pair.first << " failed: " << mcp::describe(std::current_exception()) << "\n";
      if (!first_failure) first_failure = std::current_exception();
    }
  }
  if (first_failure) std::rethrow_exception(first_failure);
}

Task<int> run(Config config, const emulator::Emulator* emulator) {
  Environment environment(config, emulator);
  mcp::ServeOptions options;
  options.info.version = EXEDEV_VERSION;
  options.info.instructions = "The tools work on one workspace: " + environment.description() +
                              ". Relative paths start in its working directory.";
  const auto toolsets = make_toolsets(config, environment.workspace());

  int status = 0;
  std::exception_ptr failure;
  bool seeded = false;
  try {
    co_await upload_trees(config, environment.full_workspace());
    seeded = true;
    status = co_await mcp::serve(toolsets, options);
  } catch (...) {
    failure = std::current_exception();
  }
  if (seeded) {
    // Also after SIGINT or SIGTERM: the session's results are what the caller asked for
    // (download_trees reports each failure).
    EXEDEV_AWAIT_DESPITE_CANCELLATION(download_error, exedev::detail::shielded(download_trees(config, environment.full_workspace())));
    if (download_error) status = status == 0 ? 1 : status;
  }
  // After SIGINT or SIGTERM (a cancellation of this coroutine) the workspace still closes.
  EXEDEV_AWAIT_DESPITE_CANCELLATION(close_error, exedev::detail::shielded(environment.close()));
  if (close_error) {
    std::cerr << "exedev-mcp: closing the workspace failed: " << mcp::describe(close_error) << "\n";
    status = status == 0 ? 1 : status;
  }
  if (failure) std::rethrow_exception(failure);
  co_return status;
}

// The bundled emulator accepts the public half of the key the server will use, when there is one
// to read (PATH.pub beside the private key), so that --emulator runs over SSH as exe.dev would.
emulator::Options emulator_options(const Config& config) {
  emulator::Options options;
  std::vector<std::filesystem::path> keys;
  if (config.ssh_key) {
    keys.emplace_back(*config.ssh_key);
  } else if (const char* key = std::getenv("EXE_SSH_KEY"); key != nullptr && *key != '\0') {
    keys.emplace_back(key);
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    keys.push_back(std::filesystem::path(home) / ".ssh" / "id_ed25519");
    keys.push_back(std::filesystem::path(home) / ".ssh" / "id_rsa");
  }
  for (const auto& key : keys) {
    std::ifstream in(key.string() + ".pub");
    std::string line;
    if (in && std::getline(in, line) && !line.empty()) options.ssh_authorized_keys.push_back(line);
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  // A client that goes away must not kill the server mid-cleanup: writes fail with EPIPE instead.
  std::signal(SIGPIPE, SIG_IGN);
  const Config config = parse(argc, argv);
  try {
    std::optional<emulator::Emulator> emulator;
    if (config.kind == WorkspaceKind::emulator) emulator.emplace(emulator_options(config));

    asio::io_context io;
    // SIGINT and SIGTERM end the session as the end of input does.
    asio::cancellation_signal stop;
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code& error, int) {
      if (!error) stop.emit(asio::cancellation_type::terminal);
    });
    int status = 1;
    std::exception_ptr failure;
    asio::co_spawn(io, run(config, emulator ? &*emulator : nullptr),
                   asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr error, int exit_status) {
                     failure = error;
                     status = exit_status;
                     signals.cancel();
                   }));
    io.run();
    if (failure) std::rethrow_exception(failure);
    return status;
  } catch (const std::exception& e) {
    std::cerr << "exedev-mcp: " << e.what() << "\n";
    return 1;
  }
}
